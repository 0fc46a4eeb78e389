"""The mixture export, determinism, --force, eval on an export and the mixture route."""

from __future__ import annotations

import json
from pathlib import Path

from export_env import APPLES, PLAIN, Trained

from moscopt.core.skills import Pool


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_mixture_export_is_a_deterministic_skills_tree(trained: Trained) -> None:
    run = str(trained.run)
    result = trained.invoke("export", "--mode", "mixture", "--run", run, "--json")
    assert result.exit_code == 0, result.output
    out = trained.root / run / "exports/mixture"
    pool = Pool.load(out / "skills", require_gate=True)
    assert pool.names == ["careful-computation", "cautious-planner", "detail-verifier"]
    manifest = json.loads((out / "moscopt-export.json").read_text())
    assert manifest["mode"] == "mixture" and manifest["k"] == 2 and manifest["n"] == 3
    assert manifest["model"] == "openai/scripted"
    assert manifest["benchmark"].endswith("addition.yaml")
    assert manifest["validation_score"] == 0.75  # the gate fails 5 + 5 (and 8 + 8 falls back)
    assert manifest["provenance"]["run"] == trained.run.name
    assert manifest["skills"] == [*pool.names, "gate"]
    assert "/" not in json.dumps(manifest["provenance"])  # the run by name, not by local path
    # same bytes into another folder, and the run's skills are the exported ones
    again = trained.invoke("export", "--mode", "mixture", "--run", run, "-o", "elsewhere")
    assert again.exit_code == 0, again.output
    assert tree(trained.root / "elsewhere") == tree(out)
    assert Pool.load(trained.root / run / "skills").digest() == pool.digest()


def test_force_is_needed_to_overwrite_and_never_clobbers_other_folders(trained: Trained) -> None:
    run = str(trained.run)
    assert trained.invoke("export", "--mode", "mixture", "--run", run).exit_code == 0
    out = trained.root / run / "exports/mixture"
    (out / "skills/gate/SKILL.md").write_text("tampered")
    before = tree(out)
    refused = trained.invoke("export", "--mode", "mixture", "--run", run)
    assert refused.exit_code == 2 and "pass --force" in refused.output
    assert tree(out) == before  # nothing touched
    forced = trained.invoke("export", "--mode", "mixture", "--run", run, "--force")
    assert forced.exit_code == 0, forced.output
    assert (out / "skills/gate/SKILL.md").read_text().startswith("---\nname: gate\n")
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no leftovers
    # a folder that is not an export is never replaced, even with --force
    other = trained.root / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    result = trained.invoke("export", "--mode", "mixture", "--run", run, "-o", "notes", "--force")
    assert result.exit_code == 2 and "not a moscopt export" in result.output
    assert (other / "keep.txt").read_text() == "mine"


def test_eval_mixture_export_matches_the_run(trained: Trained) -> None:
    run = str(trained.run)
    assert trained.invoke("export", "--mode", "mixture", "--run", run).exit_code == 0
    from_run = trained.invoke("eval", "--run", run, "--split", "test", "--json")
    from_export = trained.invoke(
        "eval", "--run", run, "--export", f"{run}/exports/mixture", "--split", "test", "--json"
    )
    assert from_run.exit_code == 0 and from_export.exit_code == 0, from_export.output
    a, b = json.loads(from_run.output), json.loads(from_export.output)
    assert b["mode"] == "mixture" and a["score"] == b["score"] and a["tasks"] == b["tasks"] == 2


def test_route_mixture_calls_the_gate_once_then_hits_the_cache(trained: Trained) -> None:
    run = str(trained.run)
    before = len(trained.server.log)
    first = trained.invoke("route", "Compute 40 + 40. Count the apples.", "--run", run, "--json")
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    assert data["skills"] == list(APPLES) and data["source"] == "gate"
    assert data["fallback"] is False and data["cache_hit"] is False
    assert len(trained.server.log) == before + 1
    again = trained.invoke("route", "Compute 40 + 40. Count the apples.", "--run", run)
    assert again.exit_code == 0
    assert again.output.splitlines() == [
        f"ACTIVATE: {', '.join(APPLES)}",
        "chosen by the gate (openai/scripted) (cached)",
    ]
    assert len(trained.server.log) == before + 1
    fallback = trained.invoke("route", "Compute 5 + 5.", "--run", run, "--json")
    data = json.loads(fallback.output)
    assert data["source"] == "fallback" and data["fallback"] is True
    assert "ACTIVATE" in data["error"] and len(data["skills"]) == 2
    text = trained.invoke("route", "Compute 5 + 5.", "--run", run)
    assert "fallback to the top K by Q-score: the gate's answer was unusable" in text.output
    plain = trained.invoke("route", "Compute 40 + 40.", "--run", run, "--mode", "mixture", "--json")
    assert json.loads(plain.output)["skills"] == list(PLAIN)


def test_bad_input_is_one_clear_line(trained: Trained) -> None:
    cases = [
        (
            ["export", "--mode", "mixture", "--run", "runs/none"],
            "runs/none: run directory not found",
        ),
        (
            ["export", "--mode", "mixture", "--run", "addition.yaml"],
            "addition.yaml: not a directory",
        ),
        (["export", "--mode", "mixture", "--run", "."], "not a moscopt run directory"),
        (["export", "--mode", "blend", "--run", str(trained.run)], "'blend' is not one of"),
        (["route", "x", "--run", "runs/none"], "run directory not found"),
        (["route", "x", "--run", "addition.yaml"], "addition.yaml: not a directory"),
        (["eval", "--export", "runs/none"], "runs/none: export not found"),
        (["eval", "--export", "skills"], "not a moscopt export (no moscopt-export.json)"),
        (["eval", "--mode", "distilled", "--run", str(trained.run)], "no distilled export yet"),
    ]
    for args, message in cases:
        result = trained.invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    assert trained.invoke("export", "--mode", "mixture", "--run", str(trained.run)).exit_code == 0
    manifest = trained.root / trained.run / "exports/mixture/moscopt-export.json"
    manifest.write_text(manifest.read_text().replace('"k": 2', '"k": "two"'))
    result = trained.invoke("eval", "--export", f"{trained.run}/exports/mixture")
    assert result.exit_code == 2 and "moscopt-export.json: field 'k'" in result.output
