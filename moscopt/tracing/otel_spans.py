"""The `otel` observer: OpenTelemetry spans of a run, made from its ledger events.

    moscopt train                    root: one per process (attributes: run, benchmark, models;
    |                                 at the end the final metrics; ERROR if the run failed)
    +- step skills                   one per step of the trainer: (epoch, step, phase), from its
    |  |                              first event's start to its last one's end; its rollouts,
    |  |                              validations and notices as span events
    |  +- chat openai/gpt-4.1-mini   one per LM call (GenAI semantic conventions: model, input
    |  |                              and output tokens; moscopt.purpose, cache_hit, cost_usd,
    |  |                              retries; ERROR with error.type when it failed)
    |  +- decide edit                one per decision (edit, evolution, lifecycle, gate
    |                                 restoration): verdict, scores, the policy's evidence
    +- chat ...                      calls outside any step (an evaluation's)

A call's span runs from when it was asked (its event's time less its latency) to its answer. A
decision's span runs from the previous decision of its step (or the step's start) to its
verdict. A step's spans are made when the step is over (its events are held until then), so
each step span covers its children.

Where spans go: the tracer provider the embedding program installed (`trace.set_tracer_provider`)
if any; else one made here from the standard environment variables: `OTEL_TRACES_EXPORTER`
(`otlp`, the default, over HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT`, else localhost:4318;
`console`; `none`), `OTEL_SERVICE_NAME` (default `moscopt`), `OTEL_RESOURCE_ATTRIBUTES`, and the
exporter's own `OTEL_EXPORTER_OTLP_*` settings. Prompts and answers are never recorded.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Span, Status, StatusCode

from moscopt.run.ledger import (
    BaseEvent,
    CertificateEvent,
    EditEvent,
    EvolutionEvent,
    GateRestored,
    LifecycleEvent,
    LLMCall,
)
from moscopt.tracing.base import RunEnd, RunInfo

DECISIONS = (EditEvent, EvolutionEvent, LifecycleEvent, GateRestored)
STEP_EVENTS = ("validation", "rollout", "notice", "transfer", "codream")  # as span events


@dataclass
class _Child:
    name: str
    start: int | None  # ns since the epoch; None: a decision (from the previous one)
    end: int
    attributes: dict[str, Any]
    error: str | None = None


@dataclass
class _Step:
    key: tuple[int, int, str]
    children: list[_Child] = field(default_factory=list)
    marks: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)  # span events


class OtelObserver:
    name = "otel"

    def __init__(self, provider: Any = None) -> None:
        """`provider`: the tracer provider to use (default: as the module docstring says)."""
        self._provider = provider
        self._own = False
        self._root: Span | None = None
        self._step: _Step | None = None

    def start(self, run: RunInfo) -> None:
        if self._provider is None:
            self._provider, self._own = _provider()
        self._tracer = self._provider.get_tracer("moscopt")
        attributes = {
            "moscopt.kind": run.kind,
            "moscopt.run": run.name,
            "moscopt.run_id": run.id,
            "moscopt.resumed": run.resumed,
            **{f"moscopt.{k}": v for k, v in run.attributes.items()},
        }
        if run.path is not None:
            attributes["moscopt.run_path"] = str(run.path)
        self._root = self._tracer.start_span(
            f"moscopt {run.kind}", attributes=_attrs(attributes), start_time=_ns(run.started)
        )

    def event(self, event: BaseEvent) -> None:
        assert self._root is not None
        key = _key(event)
        if key is None:  # outside any step: on the root
            self._on_root(event)
            return
        if self._step is not None and self._step.key != key:
            self._flush()
        if self._step is None:
            self._step = _Step(key)
        end = _time(event)
        kind = getattr(event, "type", "")
        if isinstance(event, LLMCall):
            self._step.children.append(_call(event, end))
        elif isinstance(event, DECISIONS):
            self._step.children.append(_decision(event, end))
        elif kind in STEP_EVENTS:
            self._step.marks.append((kind, end, _fields(event)))

    def progress(self, update: Mapping[str, Any]) -> None:
        return None  # the ledger says it all

    def finish(self, end: RunEnd) -> None:
        if self._root is None:
            return
        self._flush()
        root = self._root
        root.set_attributes(_attrs({f"moscopt.{k}": v for k, v in end.metrics.items()}))
        root.set_attribute("moscopt.status", end.status)
        if end.status != "done":
            root.set_status(Status(StatusCode.ERROR, end.error or end.status))
        root.end()
        self._root = None
        flush = getattr(self._provider, "force_flush", None)
        if flush is not None:
            flush()
        if self._own:
            self._provider.shutdown()

    # -- spans -----------------------------------------------------------------------------------

    def _on_root(self, event: BaseEvent) -> None:
        assert self._root is not None
        end = _time(event)
        if isinstance(event, LLMCall):
            self._emit(_call(event, end), trace.set_span_in_context(self._root), end)
            return
        if isinstance(event, CertificateEvent):
            fields = _fields(event)
            self._root.set_attributes(_attrs({f"moscopt.certificate.{k}": v
                                              for k, v in fields.items()}))  # fmt: skip
        self._root.add_event(getattr(event, "type", "event"), _attrs(_fields(event)), end)

    def _flush(self) -> None:
        step, self._step = self._step, None
        if step is None or not (step.children or step.marks):
            return
        assert self._root is not None
        known = [c.start for c in step.children if c.start is not None]
        times = known + [c.end for c in step.children] + [t for _, t, _ in step.marks]
        start, stop = min(times), max(times)
        epoch, number, phase = step.key
        calls = [c for c in step.children if c.name.startswith("chat ")]
        decisions = [c for c in step.children if not c.name.startswith("chat ")]
        attributes = {
            "moscopt.epoch": epoch,
            "moscopt.step": number,
            "moscopt.phase": phase,
            "moscopt.llm_calls": len(calls),
            "moscopt.tokens": sum(
                c.attributes.get("gen_ai.usage.input_tokens", 0)
                + c.attributes.get("gen_ai.usage.output_tokens", 0)
                for c in calls
            ),
            "moscopt.cost_usd": sum(c.attributes.get("moscopt.cost_usd", 0.0) for c in calls),
            "moscopt.decisions": len(decisions),
            "moscopt.accepted": sum(bool(c.attributes.get("moscopt.accepted")) for c in decisions),
        }
        span = self._tracer.start_span(
            f"step {phase or 'run'}",
            context=trace.set_span_in_context(self._root),
            attributes=_attrs(attributes),
            start_time=start,
        )
        for name, at, fields in step.marks:
            span.add_event(name, _attrs(fields), at)
        context = trace.set_span_in_context(span)
        since = start
        for child in step.children:
            self._emit(child, context, since)
            if child.start is None:
                since = child.end
        span.end(end_time=stop)

    def _emit(self, child: _Child, context: Any, since: int) -> None:
        start = child.start if child.start is not None else min(since, child.end)
        span = self._tracer.start_span(
            child.name, context=context, attributes=_attrs(child.attributes), start_time=start
        )
        if child.error is not None:
            span.set_status(Status(StatusCode.ERROR, child.error))
        span.end(end_time=child.end)


def _call(event: LLMCall, end: int) -> _Child:
    provider, _, _ = event.model.partition("/")
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider if "/" in event.model else None,
        "gen_ai.request.model": event.model,
        "gen_ai.usage.input_tokens": event.prompt_tokens,
        "gen_ai.usage.output_tokens": event.completion_tokens,
        "moscopt.purpose": event.purpose,
        "moscopt.sample": event.sample,
        "moscopt.cache_hit": event.cache_hit,
        "moscopt.cached_tokens": event.cached_tokens,
        "moscopt.cost_usd": event.cost,
        "moscopt.latency_s": event.latency,
        "moscopt.retries": event.retries,
        "moscopt.deployment": event.deployment,
        "error.type": event.error,
        "http.response.status_code": event.status,
    }
    start = end - int(event.latency * 1e9)
    error = None if event.ok else (event.error or "failed")
    return _Child(f"chat {event.model}", start, end, attributes, error)


def _decision(event: BaseEvent, end: int) -> _Child:
    kind = getattr(event, "type", "decision")
    fields = _fields(event)
    if isinstance(event, EditEvent):
        accepted = event.status == "accepted"
        fields = {k: fields.get(k) for k in ("target", "status", "before", "after", "reason")}
    else:
        accepted = bool(getattr(event, "accepted", False))
        fields = {k: v for k, v in fields.items() if not isinstance(v, list | dict)}
    decision = getattr(event, "decision", None)
    evidence = decision.model_dump() if decision is not None else {}
    attributes = {
        "moscopt.decision.kind": kind,
        "moscopt.accepted": accepted,
        **{f"moscopt.{k}": v for k, v in fields.items() if k not in ("epoch", "step", "phase")},
        **{f"moscopt.decision.{k}": v for k, v in evidence.items()},
    }
    return _Child(f"decide {kind}", None, end, attributes)


def _key(event: BaseEvent) -> tuple[int, int, str] | None:
    step = getattr(event, "step", None)
    if step is None or isinstance(event, CertificateEvent) or not hasattr(event, "phase"):
        return None
    return (int(getattr(event, "epoch", 0) or 0), int(step), str(getattr(event, "phase", "")))


def _fields(event: BaseEvent) -> dict[str, Any]:
    """The event's fields, without model text (response, answer, reasoning, insight, the
    grader's detail) or bulky ones (diff, patch, outcomes, samples)."""
    skip = {"t", "type", "response", "diff", "patch", "reasoning", "outcomes", "samples", "answer",
            "detail", "insight"}  # fmt: skip
    data = event.model_dump(mode="json", exclude_defaults=True)
    return {k: v for k, v in data.items() if k not in skip}


def _attrs(data: Mapping[str, Any]) -> dict[str, Any]:
    """Attribute values OpenTelemetry takes: None dropped, lists of scalars kept, the rest
    as text."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if value is None:
            continue
        scalars = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if scalars or isinstance(value, bool | int | float | str):
            out[key] = value
        else:
            out[key] = str(value)
    return out


def _time(event: BaseEvent) -> int:
    return _ns(datetime.fromisoformat(event.t).timestamp())


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _provider() -> tuple[Any, bool]:
    """The installed tracer provider (not ours to shut down), else a new one from the
    environment (ours)."""
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return current, False
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "moscopt"}))
    provider = TracerProvider(resource=resource)
    for exporter in exporters():
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, True


def exporters() -> list[SpanExporter]:
    """The exporters `OTEL_TRACES_EXPORTER` names (default `otlp`)."""
    out: list[SpanExporter] = []
    names = os.environ.get("OTEL_TRACES_EXPORTER", "otlp")
    for name in (n.strip().lower() for n in names.split(",")):
        if name == "console":
            out.append(ConsoleSpanExporter())
        elif name == "otlp":
            out.append(_otlp())
        elif name not in ("none", ""):
            raise ValueError(f"OTEL_TRACES_EXPORTER: unknown exporter '{name}'")
    return out


def _otlp() -> SpanExporter:
    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    )
    if protocol == "grpc":  # its exporter is not in the extra: installed by the user
        grpc = importlib.import_module("opentelemetry.exporter.otlp.proto.grpc.trace_exporter")
        exporter: SpanExporter = grpc.OTLPSpanExporter()
        return exporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()
