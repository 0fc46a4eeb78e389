"""Configuration: `moscopt.yaml` loaded into pydantic models with `extra="forbid"`.

Every hyperparameter of MOSCOPT has the paper's default. Precedence: built-in defaults, then the
file, then command-line flags (`overrides`, dotted keys such as `pool.k`). Secrets are never
configuration: API keys come from the usual environment variables and are never written to disk,
and an `api_base` URL with a user name or password in it is refused.

YAML is read with `moscopt.yamlio.StrictLoader` (anchors and aliases refused: an alias bomb is
one line naming the file, at once) and written without them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from moscopt import yamlio
from moscopt.errors import UserError
from moscopt.fsio import read_text
from moscopt.validation import describe

CONFIG_FILE = "moscopt.yaml"
DEFAULT_MODEL = "local/smollm2"
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


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class PoolConfig(_Section):
    n: int = Field(10, ge=1, description="pool size N")
    k: int = Field(3, ge=1, description="skills activated per task K")

    @model_validator(mode="after")
    def _check_k(self) -> PoolConfig:
        if self.k > self.n:
            raise ValueError(
                f"K ({self.k}) must not exceed N ({self.n}): lower pool.k or raise pool.n"
            )
        return self


class GatingConfig(_Section):
    granularity: Literal["task", "step"] = "task"
    # `llm` is MOSCOPT's gate; `random` and `all` (K = N) are ablations; `familiarity` is the
    # learned router (no LLM call, adaptive K: `router`), `hybrid` its shortlist + the LLM gate.
    policy: Literal["llm", "random", "all", "familiarity", "hybrid"] = "llm"
    enrich_epoch: int = Field(
        2, ge=0, description="epoch from which Q-scores join the summary table"
    )
    edit_steps: int = Field(1, ge=0, description="gate edit steps per epoch (phase 2)")
    # text: the `ACTIVATE: ...` line; json: schema-constrained ids; auto: json for local/ models
    output: Literal["auto", "text", "json"] = "auto"
    rebuild_threshold: float = Field(0.3, ge=0.0, le=1.0)
    rebuild_window: int = Field(
        3, ge=1, description="consecutive steps the failure rate is taken over"
    )


class RouterConfig(_Section):
    """The familiarity router (`gating.policy: familiarity` or `hybrid`; moscopt.routing)."""

    k_min: int = Field(1, ge=1, description="fewest skills activated per task")
    k_max: int = Field(3, ge=1, description="most skills activated per task")
    theta: float = Field(0.5, gt=0.0, description="cumulative familiarity that ends the set")
    tau: float = Field(1.0, gt=0.0, description="familiarity = exp(-distance / tau)")
    margin: float = Field(2.0, gt=0.0, description="distance up to which failures push a head")
    lr: float = Field(2.0, gt=0.0, description="learning rate of the predictor heads")
    exploration: float = Field(0.5, ge=0.0, description="weight of the training-time bonus")
    feature_dim: int = Field(12, ge=1, description="principal directions the heads read")
    # contrast: a skill's success rate near the task when active minus when not; relative: the
    # paper's, minus the mean of the skills active with it
    credit: Literal["contrast", "relative"] = "contrast"
    # a sentence-transformers model (the offline MiniLM by default) or "hashing" (no model)
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    shortlist: int = Field(4, ge=1, description="hybrid: skills the LLM gate chooses K from")

    @model_validator(mode="after")
    def _check_k(self) -> RouterConfig:
        if self.k_min > self.k_max:
            raise ValueError(f"k_min ({self.k_min}) must not exceed k_max ({self.k_max})")
        return self


class CreditConfig(_Section):
    beta: float = Field(0.3, gt=0.0, le=1.0, description="EMA coefficient of Q-scores")
    c_min: int = Field(5, ge=0, description="activations before a skill is ranked")
    synergy_protect: int = Field(3, ge=0, description="pairs with C(i,j) above this are protected")


class OptimizerConfig(_Section):
    """EditAdam."""

    schedule: Literal["constant", "linear", "cosine", "autonomous"] = "linear"
    l_max: int = Field(8, ge=1)
    l_min: int = Field(2, ge=1)
    minibatch: int = Field(4, ge=1, description="M_b: trajectories per reflection")
    batch: int | None = Field(
        None, ge=1, description="tasks rolled out per skill-editing step (None: M_b)"
    )
    max_targets: int | None = Field(
        None, ge=1, description="skills edited per minibatch, most implicated first (None: K)"
    )
    merge_batch: int = Field(8, ge=2, description="M_g: analyses merged per merge call")
    rejection_capacity: int = Field(10, ge=0, description="R")
    summary_chars: int = Field(200, ge=20)
    p_val: float = Field(1.0, gt=0.0, le=1.0, description="fraction of the validation split used")
    rejection_buffer: bool = True  # False: rejected edits are not shown to the next proposal
    long_term_memory: bool = True
    # reflect_edit: the "EditAdam -> simple reflect-edit" ablation (no step buffer, no
    # rejection buffer, no long-term memory: each proposal sees only this step's analysis)
    method: Literal["editadam", "reflect_edit"] = "editadam"
    # strict: one sample, accept on a strictly higher mean (the paper); paired: the sequential
    # paired test of moscopt.policies.acceptance
    acceptance: Literal["strict", "paired"] = "paired"
    max_val_samples: int = Field(5, ge=1, description="sample indices per acceptance decision")
    confidence: float = Field(0.95, gt=0.5, lt=1.0, description="of the paired acceptance test")

    @model_validator(mode="after")
    def _check_budget(self) -> OptimizerConfig:
        if self.l_min > self.l_max:
            raise ValueError(f"l_min ({self.l_min}) must not exceed l_max ({self.l_max})")
        return self


class EvolutionConfig(_Section):
    enabled: bool = True
    every: int = Field(1, ge=1, description="E: epochs between evolution cycles")
    eliminate: int = Field(1, ge=0, description="M: skills eliminated per cycle")
    diversity_threshold: float = Field(0.85, ge=0.0, le=1.0)
    mutation_fraction: float = Field(0.5, gt=0.0, le=1.0)
    fresh_skills: int = Field(2, ge=0, le=10)
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    cobreed: bool = True  # False: the "no co-breeding" ablation (offspring only by mutation)
    # collective: the paper's cycle (moscopt.evolve); lifecycle: fork/merge/prune/seed with a
    # pool size in [niches.lifecycle.n_min, n_max] (moscopt.niches.lifecycle)
    policy: Literal["collective", "lifecycle"] = "collective"


class LifecycleConfig(_Section):
    """The lifecycle evolution policy (`evolution.policy: lifecycle`)."""

    n_min: int = Field(2, ge=1, description="the pool never shrinks below this")
    n_max: int = Field(16, ge=1, description="the pool never grows above this")
    fork_top: float = Field(0.1, gt=0.0, le=1.0, description="forks come from this top share by Q")
    fork_lead: float = Field(0.2, ge=0.0, description="a fork's parent leads its niche by this")
    merge_cosine: float = Field(0.95, ge=0.0, le=1.0, description="competence profiles this alike")
    merge_min_tasks: int = Field(10, ge=1, description="rollouts each before a merge")
    prune_ratio: float = Field(0.8, gt=0.0, le=1.0, description="below this x the pool's mean Q")
    prune_window: int = Field(10, ge=1, description="for this many consecutive evaluations")
    seed_below: float = Field(0.5, ge=0.0, le=1.0, description="a niche with no skill above this")

    @model_validator(mode="after")
    def _check_sizes(self) -> LifecycleConfig:
        if self.n_min > self.n_max:
            raise ValueError(f"n_min ({self.n_min}) must not exceed n_max ({self.n_max})")
        return self


class NichesConfig(_Section):
    """Niches, competence and CODREAM transfer (moscopt.niches). Off by default."""

    enabled: bool = False  # track each task's niche and each skill's competence there
    transfer: bool = False  # CODREAM after failures (implies enabled)
    # auto: the benchmark's niche field (or the offline family), else k-means over embeddings
    source: Literal["auto", "kmeans"] = "auto"
    k: int = Field(4, ge=1, description="clusters when tasks have no niche field")
    embedding_model: str | None = None  # None: evolution.embedding_model; "hashing": no model
    beta: float = Field(0.3, gt=0.0, le=1.0, description="EMA coefficient of competence")
    min_count: int = Field(3, ge=1, description="rollouts on a niche before a skill counts there")
    margin: float = Field(0.2, ge=0.0, le=1.0, description="recipients: below the best by this")
    min_shared: int = Field(5, ge=1, description="shared tasks before a pair's synergy is trusted")
    max_sessions: int = Field(2, ge=0, description="CODREAM sessions per minibatch")
    max_insights: int = Field(2, ge=1, le=5, description="insights distilled per session")
    exemplars: int = Field(2, ge=1, description="successful trajectories contrasted per session")
    retrieve: int = Field(3, ge=0, description="archive lessons shown per session")
    dedup: float = Field(0.9, gt=0.0, le=1.0, description="cosine above which insights merge")
    archive_size: int = Field(200, ge=1)
    pending_cap: int = Field(4, ge=1, description="insights waiting per recipient (FIFO)")
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)

    @property
    def active(self) -> bool:
        return self.enabled or self.transfer


class TrainingConfig(_Section):
    epochs: int = Field(3, ge=1)
    max_steps_per_epoch: int | None = Field(
        None, ge=1, description="cap on skill-editing minibatches per epoch (None: all)"
    )
    interleave: bool = True  # False: the "simultaneous updates" ablation


class SamplingConfig(_Section):
    temperature: float = Field(0.8, ge=0.0, le=2.0)
    top_p: float = Field(0.6, gt=0.0, le=1.0)
    max_tokens: int = Field(1024, ge=1)


class DeploymentConfig(_Section):
    """One endpoint serving `Config.model` behind litellm's Router (see `LLMConfig.deployments`)."""

    model: str = Field(description="litellm model string of this endpoint, e.g. hosted_vllm/qwen3")
    api_base: str | None = None
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


class RoutingConfig(_Section):
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


class LLMConfig(_Section):
    concurrency: int = Field(16, ge=1)
    timeout: float = Field(120.0, gt=0.0, description="seconds per request")
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


class SearchToolConfig(_Section):
    """The agent's `search` tool (moscopt.tools.search)."""

    # offline: BM25 over a local corpus (the task's own `corpus_field`, else `corpus`);
    # brave: the Brave Search API, its key from $BRAVE_API_KEY (never written anywhere)
    provider: Literal["offline", "brave"] = "offline"
    corpus: str | None = None  # a JSONL file of documents ({"title", "text"} or {"text"})
    corpus_field: str = "search_corpus"  # a task meta key holding that task's documents
    top_k: int = Field(5, ge=1, le=50)
    snippet_chars: int = Field(400, ge=50)


class AgentConfig(_Section):
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
    # The external-agent harness (moscopt.external): your agent's command line (`claude -p`, a
    # script), run once per task in a fresh folder holding the activated skills; null: built in.
    command: str | list[str] | None = None
    # where that agent looks for skills, relative to its folder (null: .claude/skills and
    # .agents/skills)
    skills_path: str | list[str] | None = None
    timeout: float = Field(600.0, gt=0.0, description="seconds per task for the external agent")
    answer_file: str | None = None  # the answer is this file in its folder (null: its stdout)
    parallel: int = Field(4, ge=1, description="external agents running at once")

    @field_validator("skills_path", "answer_file")
    @classmethod
    def _inside_workdir(cls, v: str | list[str] | None) -> str | list[str] | None:
        for p in [v] if isinstance(v, str) else v or []:
            if not p.strip() or Path(p).is_absolute() or ".." in Path(p).parts:
                raise ValueError(f"{p!r} must be a relative path inside the agent's folder")
        return v


class HaltingConfig(_Section):
    """Adaptive halting (moscopt.memory.halting). Off by default."""

    enabled: bool = False
    agree: int = Field(2, ge=1, description="untrained rule: halt when this many answers agree")
    threshold: float = Field(0.5, gt=0.0, lt=1.0, description="fitted: halt at this probability")
    learned: bool = True  # False: the untrained agreement rule even when a model is fitted
    price: float = Field(
        0.02, ge=0.0, description="reward given up per LLM call (the cost-aware objective)"
    )
    aggregator: Literal["last", "vote", "llm"] = "last"
    ask_confidence: bool = True  # ask each step for a CONFIDENCE line (a halting feature)


class MemoryConfig(_Section):
    """Gated execution memory for multi-step agents (moscopt.memory). Off by default."""

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


class DataConfig(_Section):
    path: str | None = None
    limit: int | None = Field(None, ge=1)


class Config(_Section):
    model: str = DEFAULT_MODEL
    optimizer_model: str | None = None
    api_base: str | None = None
    seed: int = 42
    benchmark: str | None = None
    skills_dir: str = "skills"
    runs_dir: str = "runs"
    pool: PoolConfig = Field(default_factory=PoolConfig)
    gating: GatingConfig = Field(default_factory=GatingConfig)
    router: RouterConfig = Field(default_factory=RouterConfig)
    credit: CreditConfig = Field(default_factory=CreditConfig)
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig)
    evolution: EvolutionConfig = Field(default_factory=EvolutionConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    niches: NichesConfig = Field(default_factory=NichesConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)

    @field_validator("api_base")
    @classmethod
    def _no_credentials(cls, v: str | None) -> str | None:
        return check_api_base(v)

    @property
    def effective_optimizer_model(self) -> str:
        return self.optimizer_model or self.model

    def to_yaml(self) -> str:
        """The fully resolved config, deterministic (field order fixed by the models)."""
        return yamlio.dump(
            self.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=2**31 - 1
        )


def load_config(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> Config:
    """Defaults <- file at `path` (if given) <- `overrides` (dotted keys; None values ignored)."""
    data: dict[str, Any] = {}
    text = ""
    if path is not None:
        path = Path(path)
        text = read_text(path)
        try:
            loaded = yamlio.load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise UserError(
                problem if problem == yamlio.ALIASES_REFUSED else f"not valid YAML: {problem}",
                path=path,
                line=min(mark.line + 1, max(text.count("\n"), 1)) if mark is not None else None,
            ) from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise UserError("must be a YAML mapping (key: value)", path=path, line=1)
        data = loaded
    file_data = data
    data = _deep_copy(data)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(data, dotted, value)
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        field, msg = describe(e)
        flag_set = any(
            d == field or d.startswith(field + ".") or field.startswith(d + ".")
            for d in overrides or {}
        )
        in_file = _lookup(file_data, field) is not _MISSING
        line = _line_of(text, field) if (path is not None and in_file) else None
        if flag_set and not in_file:
            raise UserError(msg, field=field) from None
        raise UserError(msg, path=path, line=line, field=field) from None


_MISSING = object()


def _deep_copy(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _deep_copy(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_deep_copy(v) for v in d]
    return d


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for key in parents:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[leaf] = value


def _lookup(data: Any, dotted: str) -> Any:
    node = data
    for key in dotted.split("."):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return _MISSING
    return node


def _line_of(text: str, dotted: str) -> int | None:
    """1-based line of the key `dotted` in YAML `text`, if it can be found."""
    try:
        node: Any = yaml.compose(text, Loader=yamlio.StrictLoader)
    except yaml.YAMLError:
        return None
    line = None
    for key in dotted.split("."):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == key:
                    line = k.start_mark.line + 1
                    node = v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            node = node.value[int(key)]
            line = node.start_mark.line + 1
        else:
            return line
    return line
