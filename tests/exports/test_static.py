"""The static export: the routing table reproduces the gate's training decisions."""

from __future__ import annotations

import json
from collections import Counter

from export_env import APPLES, FERRIES, Trained, expected_route

from moscopt.app.benchmark import resolve_benchmark
from moscopt.exports.static import gate_decisions
from moscopt.routing.table import RoutingTable
from moscopt.run.rundir import RunDir


def test_static_table_routes_training_tasks_as_the_gate_did(trained: Trained) -> None:
    result = trained.invoke("export", "--mode", "static", "--run", str(trained.run), "--json")
    assert result.exit_code == 0, result.output
    out = trained.root / trained.run / "exports/static"
    table = RoutingTable.load(out / "ROUTING.md")
    run = RunDir.open(trained.root / trained.run)
    state = run.load_state()
    config = run.load_config()
    _, splits = resolve_benchmark(config, state.benchmark)
    tasks = {t.id: t for t in splits["all"]}
    found = gate_decisions(run, state, run.load_pool(state), tasks)
    # every training task the gate routed (all but the one whose answer was unusable)
    train_ids = state.splits["train"]
    fallback = [t for t in train_ids if "Compute 5 + 5" in tasks[t].prompt]
    assert len(found.decisions) == len(train_ids) - len(fallback)
    assert found.excluded == ({"routed by fallback": 1} if fallback else {})
    topics = Counter(expected_route(d.text) for d in found.decisions)
    for d in found.decisions:
        assert d.skills == expected_route(d.text)  # what the scripted gate answered
        if topics[d.skills] >= 2:  # a general rule (two tasks or more) routes it
            assert table.match(d.text).skills == d.skills, d.task_id
    manifest = json.loads((out / "moscopt-export.json").read_text())
    summary = manifest["static"]
    lone = sum(n for skills, n in topics.items() if n < 2 and skills != table.default)
    assert summary["gate_decisions"] == len(found.decisions)
    assert summary["unmatched"] == lone and summary["agreeing"] == len(found.decisions) - lone
    assert "IF TEXT" not in (out / "ROUTING.md").read_text().split("## Rules")[1]
    assert summary["default_only"] is None  # it has rules: nothing to warn about
    # the word rules generalize to tasks the gate never saw
    assert table.match("How many apples are there in 40 + 2?").skills == APPLES
    assert table.match("Ferries: compute 40 + 2").skills == FERRIES
    text = (out / "ROUTING.md").read_text()
    assert "IF WORDS apples THEN ACTIVATE: cautious-planner, detail-verifier" in text
    counts = Counter(d.skills for d in found.decisions)
    assert counts[table.default] == max(counts.values())  # DEFAULT: the most common decision
    assert f"DEFAULT: {', '.join(table.default)}  # {counts[table.default]} training tasks" in text
    # the static export ships the skills, not the gate
    assert sorted(p.name for p in (out / "skills").iterdir()) == [
        "careful-computation",
        "cautious-planner",
        "detail-verifier",
    ]


def test_eval_static_makes_no_gate_call(trained: Trained) -> None:
    missing = trained.invoke("eval", "--run", str(trained.run), "--mode", "static")
    assert missing.exit_code == 2
    assert (
        "no static export yet" in missing.output
        and "moscopt export --mode static" in missing.output
    )
    assert trained.invoke("export", "--mode", "static", "--run", str(trained.run)).exit_code == 0
    before = len(trained.server.log)
    result = trained.invoke(
        "eval", "--run", str(trained.run), "--mode", "static", "--split", "all", "--json"
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["mode"] == "static" and summary["tasks"] == 16
    gate_prompts = [
        r for r in trained.server.log[before:]
        if "## Available skills" in r.body["messages"][-1]["content"]
    ]  # fmt: skip
    assert gate_prompts == []
    rollouts = [
        json.loads(line) for line in (trained.root / summary["results"]).read_text().splitlines()
    ]
    assert {r["activation"] for r in rollouts} == {"static"}
    # the careful-computation skill (with the magic rule) solves exactly the non-apple tasks
    for r in rollouts:
        assert (r["reward"] == 1.0) == ("careful-computation" in r["skills"])


def test_route_static_names_the_rule(trained: Trained) -> None:
    assert trained.invoke("export", "--mode", "static", "--run", str(trained.run)).exit_code == 0
    result = trained.invoke(
        "route", "Count the apples: 40 + 2", "--run", str(trained.run), "--mode", "static", "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["skills"] == list(APPLES) and data["rule"] is not None
    assert data["rule_text"].startswith(f"rule {data['rule']}: IF WORDS apples")
    # an export folder on its own routes with no run and no model
    folder = f"{trained.run}/exports/static"
    alone = trained.invoke("route", "Count the apples: 40 + 2", "--export", folder, "--json")
    assert alone.exit_code == 0 and json.loads(alone.output)["skills"] == list(APPLES)
    plain = trained.invoke("route", "What is 2 + 2?", "--run", str(trained.run), "--mode", "static")
    assert plain.exit_code == 0
    table = RoutingTable.load(trained.root / trained.run / "exports/static/ROUTING.md")
    default = ", ".join(table.default)
    assert plain.output.splitlines() == [
        f"ACTIVATE: {default}",
        f"static table {trained.run}/exports/static: DEFAULT: {default}",
    ]


def test_corrupt_routing_table_is_one_clear_error(trained: Trained) -> None:
    assert trained.invoke("export", "--mode", "static", "--run", str(trained.run)).exit_code == 0
    path = trained.root / trained.run / "exports/static/ROUTING.md"
    lines = path.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if line.startswith("1. IF WORDS"))
    lines[n] = "1. IF WORDZ apples THEN ACTIVATE: a, b"
    path.write_text("\n".join(lines) + "\n")
    result = trained.invoke("eval", "--run", str(trained.run), "--mode", "static")
    assert result.exit_code == 2
    assert f"ROUTING.md:{n + 1}: expected 'N. IF WORDS" in result.output
    assert "Traceback" not in result.output
    lines[n] = "1. IF WORDS apples THEN ACTIVATE: nobody, detail-verifier"
    path.write_text("\n".join(lines) + "\n")
    result = trained.invoke("route", "apples", "--run", str(trained.run), "--mode", "static")
    assert result.exit_code == 2 and f"ROUTING.md:{n + 1}: unknown skill 'nobody'" in result.output


def test_topq_export_is_the_papers_static_mode(trained: Trained) -> None:
    """Table 3's "static top-Q routing": every task activates the K skills of highest Q (the
    learned `static` table cannot reproduce that row)."""
    result = trained.invoke("export", "--mode", "topq", "--run", str(trained.run), "--json")
    assert result.exit_code == 0, result.output
    run = RunDir.open(trained.root / trained.run)
    state = run.load_state()
    k = run.load_config().pool.k
    ranked = sorted(state.q, key=lambda n: (-state.q[n], n))
    out = trained.root / trained.run / "exports/topq"
    table = RoutingTable.load(out / "ROUTING.md")
    assert table.rules == () and sorted(table.default) == sorted(ranked[:k])
    assert json.loads(result.output)["static"]["routing"] == "top-Q"
    before = len(trained.server.log)
    evaluated = trained.invoke(
        "eval", "--run", str(trained.run), "--mode", "topq", "--split", "all", "--json"
    )
    assert evaluated.exit_code == 0, evaluated.output
    summary = json.loads(evaluated.output)
    assert summary["mode"] == "topq" and summary["tasks"] == 16
    asked = [r.body["messages"][-1]["content"] for r in trained.server.log[before:]]
    assert not [m for m in asked if "## Available skills" in m]  # no gate call
    rollouts = [
        json.loads(line) for line in (trained.root / summary["results"]).read_text().splitlines()
    ]
    assert {tuple(sorted(r["skills"])) for r in rollouts} == {tuple(sorted(table.default))}
