"""The `otel` observer against OpenTelemetry's own in-memory exporter: a short training run and
an evaluation on the loopback server, and the spans they leave (names, parents, attributes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder
from moscopt.tracing import otel_spans

from .helpers import eval_args, logged, train_args

runner = CliRunner()


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """The spans of the run, as an embedding program's provider would receive them."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    yield memory
    provider.shutdown()


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_a_training_run_leaves_a_tree_of_steps_calls_and_decisions(
    project: Path, exporter: InMemorySpanExporter
) -> None:
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, train_args(server.url, "--trace", "otel"))
    assert result.exit_code == 0, result.output
    run = project / "runs/r1"
    spans = exporter.get_finished_spans()
    (root,) = by_name(spans, "moscopt train")
    assert root.parent is None and root.status.status_code is not StatusCode.ERROR
    a = attrs(root)
    assert a["moscopt.run"] == "r1" and a["moscopt.benchmark"] == "addition"
    assert a["moscopt.model"] == "openai/scripted" and a["moscopt.status"] == "done"
    assert a["moscopt.val_after"] == 1.0 and a["moscopt.certificate.verdict"]
    assert {e.name for e in root.events} >= {"train_start", "epoch_end", "certificate"}
    trace_ids = {s.context.trace_id for s in spans}
    assert trace_ids == {root.context.trace_id}  # one trace per run process
    # steps: children of the root, one per (epoch, step, phase), covering their children
    steps = by_name(spans, "step ")
    assert {s.name for s in steps} >= {"step skills", "step gate", "step memory"}
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in steps)
    step_of = {s.context.span_id: s for s in steps}
    # one span per LM call of the ledger, under its step, GenAI conventions
    calls = by_name(spans, "chat ")
    assert len(calls) == len(logged(run, "llm_call"))
    for call in calls:
        assert call.parent is not None
        step = step_of[call.parent.span_id]
        assert step.start_time <= call.start_time <= call.end_time <= step.end_time
        c = attrs(call)
        assert c["gen_ai.request.model"] == "openai/scripted"
        assert c["gen_ai.provider.name"] == "openai"
        assert c["gen_ai.usage.input_tokens"] >= 0 and "moscopt.cache_hit" in c
        assert c["moscopt.purpose"] and c["moscopt.latency_s"] >= 0
    purposes = {attrs(c)["moscopt.purpose"] for c in calls}
    assert {"agent", "gate", "reflect-skill", "propose-skill", "propose-gate"} <= purposes
    assert any(attrs(c)["moscopt.cache_hit"] for c in calls)  # validation replays answers
    # one span per decision, with its verdict and evidence
    decisions = by_name(spans, "decide ")
    edits = logged(run, "edit")
    assert len(decisions) == len(edits)
    verdicts = sorted(attrs(d)["moscopt.status"] for d in decisions)
    assert verdicts == sorted(e["status"] for e in edits)
    accepted = [d for d in decisions if attrs(d)["moscopt.accepted"]]
    assert len(accepted) == sum(e["status"] == "accepted" for e in edits) >= 1
    d = attrs(accepted[0])
    assert d["moscopt.after"] == 1.0 and d["moscopt.decision.policy"] == "paired"
    assert all(s.parent is not None and s.parent.span_id in step_of for s in decisions)
    skills = next(s for s in steps if attrs(s)["moscopt.accepted"] == 1)
    assert attrs(skills)["moscopt.llm_calls"] > 0 and "rollout" in {e.name for e in skills.events}


def test_a_failed_call_and_a_stopped_run_are_errors(
    project: Path, exporter: InMemorySpanExporter
) -> None:
    with FakeServer(responder=server_responder) as server:
        server.script("ok", "401")  # a bad key after the first call: the run stops
        result = runner.invoke(app, train_args(server.url, "--trace", "otel"))
    assert result.exit_code == 1, result.output
    spans = exporter.get_finished_spans()
    (root,) = by_name(spans, "moscopt train")
    assert root.status.status_code is StatusCode.ERROR
    assert attrs(root)["moscopt.status"] == "stopped"
    failed = [s for s in by_name(spans, "chat ") if s.status.status_code is StatusCode.ERROR]
    assert len(failed) == 1
    assert attrs(failed[0])["error.type"] == "LMAuthError"
    assert attrs(failed[0])["http.response.status_code"] == 401


def test_an_evaluation_has_its_calls_under_its_root(
    project: Path, exporter: InMemorySpanExporter
) -> None:
    with FakeServer(responder=server_responder) as server:
        result = runner.invoke(app, eval_args(server.url, "--trace", "otel", "--json"))
        asked = server.count()
    assert result.exit_code == 0, result.output
    spans = exporter.get_finished_spans()
    (root,) = by_name(spans, "moscopt eval")
    a = attrs(root)
    assert a["moscopt.split"] == "test" and a["moscopt.mode"] == "mixture"
    assert 0.0 <= a["moscopt.score"] <= 1.0 and a["moscopt.tasks"] >= 1
    calls = by_name(spans, "chat ")
    assert len(calls) == asked > 0
    assert all(c.parent is not None and c.parent.span_id == root.context.span_id for c in calls)


def test_the_exporter_comes_from_the_standard_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert [type(e) for e in otel_spans.exporters()] == [ConsoleSpanExporter]
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert otel_spans.exporters() == []
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")  # made, not connected
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    (otlp,) = otel_spans.exporters()
    assert type(otlp).__name__ == "OTLPSpanExporter"
    otlp.shutdown()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    with pytest.raises(ValueError, match="zipkin"):
        otel_spans.exporters()


def test_a_provider_of_its_own_is_named_moscopt_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    provider, own = otel_spans._provider()
    assert own and provider.resource.attributes["service.name"] == "moscopt"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "team-agents")
    provider, _ = otel_spans._provider()
    assert provider.resource.attributes["service.name"] == "team-agents"
