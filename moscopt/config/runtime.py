"""The sections of `moscopt.yaml` that shape how calls and agents run: sampling, the LLM
endpoints and their limits, the agent and its tools, execution memory and halting, data."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveInt, field_validator, model_validator

from moscopt.config.sections import Section

_AUTHORITY = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:)?//([^/?#]*)")


def check_api_base(url: str | None) -> str | None:
    """`url` unchanged, or ValueError if it carries a user name or password (`user:pw@host`).

    Credentials in the URL would be frozen into the run's moscopt.yaml and sent as Basic auth
    instead of the key. The message never repeats the URL.
    """
    if url is None:
        return None
    m = _AUTHORITY.match(url.strip())
    authority = m.group(1) if m else re.split(r"[/?#]", url.strip(), maxsplit=1)[0]
    if "@" in authority:
        raise ValueError(
            "must not contain a user name or password (user:password@host): give the URL "
            "without them and put the key in the provider's environment variable "
            "(e.g. OPENAI_API_KEY)"
        )
    return url


class SamplingConfig(Section):
    temperature: float = Field(0.8, ge=0.0, le=2.0, description="the agent's sampling temperature")
    top_p: float = Field(0.6, gt=0.0, le=1.0, description="the agent's nucleus sampling mass")
    max_tokens: int = Field(1024, ge=1, description="the most tokens of one agent answer")


class DeploymentConfig(Section):
    """One endpoint serving `Config.model` behind litellm's Router (see `LLMConfig.deployments`)."""

    model: str = Field(description="litellm model string of this endpoint, e.g. hosted_vllm/qwen3")
    api_base: str | None = Field(None, description="this endpoint's URL (no user or password)")
    # The name of the environment variable holding this endpoint's key: never the key itself.
    api_key_env: str | None = None
    rpm: int | None = Field(None, ge=1, description="requests per minute this endpoint allows")
    tpm: int | None = Field(None, ge=1, description="tokens per minute this endpoint allows")
    weight: int | None = Field(None, ge=1, description="share of traffic (simple-shuffle)")
    fallback: bool = Field(False, description="used only when every other deployment fails")
    name: str | None = Field(None, description="label in events (default: model@host)")

    @field_validator("api_base")
    @classmethod
    def _no_credentials(cls, v: str | None) -> str | None:
        return check_api_base(v)


class RoutingConfig(Section):
    strategy: Literal[
        "simple-shuffle",
        "least-busy",
        "usage-based-routing",
        "latency-based-routing",
        "cost-based-routing",
    ] = "simple-shuffle"
    retries: int = Field(2, ge=0, description="router retries on another deployment")
    allowed_fails: int = Field(3, ge=0, description="failures before a cooldown")
    cooldown: float = Field(30.0, ge=0.0, description="seconds a failing deployment rests")


class LLMConfig(Section):
    concurrency: int = Field(16, ge=1)
    timeout: float = Field(120.0, gt=0.0, description="seconds per request")
    max_response_bytes: int = Field(
        16 * 1024 * 1024,
        ge=1024,
        description="bytes of one response body at most (a larger one fails)",
    )
    max_retries: int = Field(6, ge=0)
    cache: bool = True
    # None: <project>/.moscopt/cache (else the user-level cache); relative: to the project.
    cache_dir: str | None = None
    max_calls: int | None = Field(None, ge=1)
    max_cost: float | None = Field(None, gt=0.0)
    backoff_base: float = Field(0.5, ge=0.0, description="seconds before the first retry")
    backoff_max: float = Field(30.0, ge=0.0, description="longest wait between retries")
    # `auto`: OpenAI-compatible endpoints (openai/ and hosted_vllm/ at an api_base) are called
    # directly over HTTP, everything else through litellm; `litellm`: always through litellm.
    transport: Literal["auto", "litellm"] = "auto"
    # Several endpoints of `model` (or several providers of it) behind litellm's Router; empty:
    # the one endpoint that `model` and `api_base` name.
    deployments: list[DeploymentConfig] = Field(default_factory=list)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    # the embedded model's (local/) threads; auto: the cores idle when it loads (lm/local.py)
    threads: PositiveInt | Literal["auto"] = "auto"
    # Provider batch mode for waves that can wait (evaluation, validation): moscopt.lm.batch
    batch: bool = False
    batch_poll: float = Field(30.0, gt=0.0, description="seconds before a batch's first poll")
    batch_size: int = Field(1000, ge=1, description="requests per batch at most")
    max_error_rate: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="the run stops when more than this fraction of a step's LLM calls fail",
    )

    @model_validator(mode="after")
    def _check_deployments(self) -> LLMConfig:
        if self.deployments and all(d.fallback for d in self.deployments):
            raise ValueError("llm.deployments: at least one deployment must not be a fallback")
        return self


class SearchToolConfig(Section):
    """The agent's `search` tool (moscopt.agent.tools.search)."""

    # offline: BM25 over a local corpus (the task's own `corpus_field`, else `corpus`);
    # brave: the Brave Search API, its key from $BRAVE_API_KEY (never written anywhere)
    provider: Literal["offline", "brave"] = "offline"
    corpus: str | None = None  # a JSONL file of documents ({"title", "text"} or {"text"})
    corpus_field: str = "search_corpus"  # a task meta key holding that task's documents
    top_k: int = Field(5, ge=1, le=50)
    snippet_chars: int = Field(400, ge=50)


class AgentConfig(Section):
    max_steps: int | None = Field(
        None, ge=1, description="T: agent steps per task (None: 1 without tools, 4 with)"
    )
    # None: the benchmark's own tools. `shell` runs in the python tool's sandbox and is never
    # on unless listed here or by the benchmark.
    tools: list[Literal["python", "shell", "search"]] | None = None
    # auto: native tool definitions where the model supports function calling (litellm says);
    # the text protocol (code blocks) otherwise and for the embedded model; text: always it
    native_tools: Literal["auto", "text"] = "auto"
    tool_output_chars: int = Field(4000, ge=100, description="bound on one tool result")
    search: SearchToolConfig = Field(default_factory=SearchToolConfig)
    # Run model-written code even where nothing isolates it from the user's files (no
    # bubblewrap, no Landlock); the run must then say so in its events and report.
    allow_unsandboxed: bool = False
    # False: the "no progressive disclosure" ablation (every skill body in context; the gate
    # still selects, and credit still goes to the selected skills)
    progressive_disclosure: bool = True
    # vote: on tasks with a deterministic answer the `vote_m` skills the familiarity router
    # ranks first each run as a separate agent and the familiarity-weighted majority answer
    # wins (vote_m agent runs per task; needs a familiarity router); none: one agent
    aggregate: Literal["none", "vote"] = "none"
    vote_m: int = Field(3, ge=1, description="agent.aggregate vote: skills that vote")
    # The external-agent harness (moscopt.agent.external): your agent's command line (`claude -p`, a
    # script), run once per task in a fresh folder holding the activated skills; null: built in.
    command: str | list[str] | None = None
    # where that agent looks for skills, relative to its folder (null: .claude/skills and
    # .agents/skills)
    skills_path: str | list[str] | None = None
    timeout: float = Field(600.0, gt=0.0, description="seconds per task for the external agent")
    answer_file: str | None = None  # the answer is this file in its folder (null: its stdout)
    parallel: int = Field(4, ge=1, description="external agents running at once")
    # Environment variables the external agent sees beyond the basic ones (PATH, HOME, LANG,
    # TERM, TMPDIR...: moscopt.agent.external.environment): names or shell patterns, e.g.
    # [ANTHROPIC_API_KEY] for `claude -p`. Nothing else of moscopt's environment is passed.
    env: list[str] = Field(default_factory=list)
    # Replay a finished task's answer from the response cache; the key holds the command (with
    # {cwd} resolved) and a digest of every file it names. false: run the agent every time
    # (an agent whose answers depend on files its command line does not name).
    cache: bool = True

    @field_validator("skills_path", "answer_file")
    @classmethod
    def _inside_workdir(cls, v: str | list[str] | None) -> str | list[str] | None:
        for p in [v] if isinstance(v, str) else v or []:
            if not p.strip() or Path(p).is_absolute() or ".." in Path(p).parts:
                raise ValueError(f"{p!r} must be a relative path inside the agent's folder")
        return v


class HaltingConfig(Section):
    """Adaptive halting (moscopt.extensions.memory.halting). Off by default."""

    enabled: bool = Field(False, description="stop a task's agent loop once its answer settles")
    agree: int = Field(2, ge=1, description="untrained rule: halt when this many answers agree")
    threshold: float = Field(0.5, gt=0.0, lt=1.0, description="fitted: halt at this probability")
    learned: bool = True  # False: the untrained agreement rule even when a model is fitted
    price: float = Field(
        0.02, ge=0.0, description="reward given up per LLM call (the cost-aware objective)"
    )
    aggregator: Literal["last", "vote", "llm"] = "last"
    ask_confidence: bool = True  # ask each step for a CONFIDENCE line (a halting feature)


class MemoryConfig(Section):
    """Gated execution memory for multi-step agents (moscopt.extensions.memory). Off by default."""

    enabled: bool = False  # the next step reads the retrieved memory instead of the transcript
    # what step-level gating reads besides the task: auto (memory when enabled, else progress),
    # progress (the last step: today's), full (the whole transcript), query (nothing), memory
    route_on: Literal["auto", "progress", "full", "query", "memory"] = "auto"
    embedding_model: str | None = None  # None: evolution.embedding_model; "hashing": no model
    write_gate: bool = True  # False: every record is committed (ablation)
    redundant_above: float = Field(0.92, ge=0.0, le=1.0, description="cosine of a redundant record")
    write_threshold: float = Field(0.5, ge=0.0, le=1.0, description="learned score to commit")
    learned_write: bool = True
    retrieval_gate: bool = True  # False: every committed record is shown (ablation)
    learned_retrieval: bool = True
    retrieve: int = Field(3, ge=1, description="records shown to each step")
    context_chars: int = Field(2000, ge=200, description="bound on the memory shown per step")
    conclusion_chars: int = Field(400, ge=50, description="bound on one record's conclusion")
    train: bool = True  # fit the gates and halting from the trainer's rollouts
    examples: int = Field(4000, ge=50, description="examples kept per learned model")
    halting: HaltingConfig = Field(default_factory=HaltingConfig)

    @property
    def active(self) -> bool:
        return self.enabled or self.halting.enabled or self.route_on not in ("auto", "progress")


class DataConfig(Section):
    path: str | None = None
    limit: int | None = Field(None, ge=1)
    # the split sizes and seed of the benchmark's spec, replaced (e.g. {train: 20, test: 200})
    split_sizes: dict[Literal["train", "val", "test"], NonNegativeInt] | None = None
    split_seed: int | None = None
