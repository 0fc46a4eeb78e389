"""The router export: the trained heads beside the mixture, loaded back, routing as the run did
with no LLM call; and the run's specialization index."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from moscopt.embedding.hashing import HashingEmbedder
from moscopt.errors import UserError
from moscopt.exports import export_run, open_export
from moscopt.exports.router import ROUTER_FILE, route_with_router
from moscopt.routing.engine import stored_router
from moscopt.routing.familiarity import FamiliarityModel
from moscopt.routing.specialization import run_specialization
from moscopt.testing.router_world import make_router_run, trained_router_run


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("router")
    seed_dir = Path(__file__).resolve().parents[2] / "skills"
    run, world = trained_router_run(root, seed_dir)
    return run.path, [t.prompt for t in world.tasks]


def test_the_export_holds_the_mixture_and_the_heads_and_routes_as_the_run(
    trained: tuple[Path, list[str]], tmp_path: Path
) -> None:
    run_path, texts = trained
    result = export_run(run_path=run_path, mode="router", out=tmp_path / "r")
    assert ROUTER_FILE in result.files and "skills/gate/SKILL.md" in result.files
    m = result.manifest
    assert m.mode == "router" and m.router is not None
    assert m.router["embedding_model"] == "hashing-256" and m.router["skills"] == m.n == 7
    doc = json.loads((tmp_path / "r" / ROUTER_FILE).read_text())
    assert set(doc) == {
        "format", "embedding_model", "embedding_dim", "boilerplate", "skills", "hyper",
        "heads", "allocated", "routed",
    }  # fmt: skip
    (boilerplate,) = doc["boilerplate"]  # the benchmark's answer instructions
    assert boilerplate and all(boilerplate in t for t in texts)
    deployment = open_export(tmp_path / "r")
    assert deployment.mode == "router" and deployment.router is not None
    router = deployment.router.router(deployment.pool)
    # the run's trained heads, with no exploration
    from moscopt.run.rundir import RunDir

    state = RunDir.open(run_path).load_state()
    saved = stored_router(state)
    assert saved is not None
    trained_model = FamiliarityModel.from_json(saved["model"])
    embed = HashingEmbedder()
    for text in texts[:12]:
        activation = asyncio.run(router.select(text))
        assert activation.source == "familiarity" and activation.usage is None
        own_words = text.replace(boilerplate, "").strip()  # what the heads read
        assert activation.skills == trained_model.route(embed.encode(own_words)).skills
    first = (tmp_path / "r" / ROUTER_FILE).read_bytes()
    export_run(run_path=run_path, mode="router", out=tmp_path / "r", force=True)
    assert (tmp_path / "r" / ROUTER_FILE).read_bytes() == first  # deterministic


def test_route_with_the_router_prints_every_familiarity_and_the_cutoff(
    trained: tuple[Path, list[str]], tmp_path: Path
) -> None:
    run_path, texts = trained
    export_run(run_path=run_path, mode="router", out=tmp_path / "r")
    out = route_with_router(texts[0], tmp_path / "r")
    assert out["mode"] == "router" and out["source"] == "familiarity"
    assert len(out["familiarity"]) == 7 and out["ranked"][: len(out["skills"])] == out["skills"]
    assert out["k_min"] <= len(out["skills"]) <= out["k_max"]
    assert out["reached"] == (out["cumulative"] >= out["theta"])
    with pytest.raises(UserError, match="empty"):
        route_with_router("  ", tmp_path / "r")


def test_a_run_without_a_router_or_a_bad_router_file_is_a_clear_error(
    tmp_path: Path, trained: tuple[Path, list[str]]
) -> None:
    seed_dir = Path(__file__).resolve().parents[2] / "skills"
    run = make_router_run(tmp_path / "untrained", seed_dir)[0]
    with pytest.raises(UserError, match="no familiarity router"):
        export_run(run_path=run.path, mode="router", out=tmp_path / "x")
    export_run(run_path=trained[0], mode="router", out=tmp_path / "r")
    (tmp_path / "r" / ROUTER_FILE).write_text('{"format": 1, "heads": {}}')
    with pytest.raises(UserError, match=ROUTER_FILE):
        open_export(tmp_path / "r")


def test_the_run_specialization_index(trained: tuple[Path, list[str]]) -> None:
    from moscopt.run.rundir import RunDir

    spec = run_specialization(RunDir.open(trained[0]))
    assert 0.0 <= spec["index"] <= 1.0
    assert set(spec["niches"]) == {"arithmetic", "basics", "counting", "dates", "reversal", "units"}
    assert set(spec["by_epoch"]) == {"0", "1"}
    top = spec["niches"]["units"]
    assert top["activations"] >= 4 and 0 < top["share"] <= 1
    by_id = run_specialization(RunDir.open(trained[0]), niche_of=lambda task_id: "one")
    assert by_id["index"] == 0.0 and list(by_id["niches"]) == ["one"]
