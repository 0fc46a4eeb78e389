"""The sections of `moscopt.yaml` that shape the optimizer: pool, gate, router, credit,
EditAdam, evolution, lifecycle, niches and training."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from moscopt.core.choices import Acceptance, GatePolicy, Granularity


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class PoolConfig(Section):
    n: int = Field(10, ge=1, description="pool size N")
    k: int = Field(3, ge=1, description="skills activated per task K")

    @model_validator(mode="after")
    def _check_k(self) -> PoolConfig:
        if self.k > self.n:
            raise ValueError(
                f"K ({self.k}) must not exceed N ({self.n}): lower pool.k or raise pool.n"
            )
        return self


class GatingConfig(Section):
    granularity: Granularity = "task"
    # `llm` is MOSCOPT's gate; `random` and `all` (K = N) are ablations; `familiarity` is the
    # learned router (no LLM call, adaptive K: `router`), `hybrid` its shortlist + the LLM gate.
    policy: GatePolicy = "llm"
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


class RouterConfig(Section):
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
    # after each minibatch, refit the heads from zero on the whole buffer of rollouts (each
    # credit re-estimated on all the evidence); false: one step on the new minibatch only
    replay: bool = True
    # a sentence-transformers model (the offline MiniLM by default) or "hashing" (no model)
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    shortlist: int = Field(4, ge=1, description="hybrid: skills the LLM gate chooses K from")

    @model_validator(mode="after")
    def _check_k(self) -> RouterConfig:
        if self.k_min > self.k_max:
            raise ValueError(f"k_min ({self.k_min}) must not exceed k_max ({self.k_max})")
        return self


class CreditConfig(Section):
    beta: float = Field(0.3, gt=0.0, le=1.0, description="EMA coefficient of Q-scores")
    q_prior: float = Field(0.5, ge=0.0, le=1.0, description="Q of a skill before its first batch")
    c_min: int = Field(5, ge=0, description="activations before a skill is ranked")
    synergy_protect: int = Field(3, ge=0, description="pairs with C(i,j) above this are protected")


class OptimizerConfig(Section):
    """EditAdam."""

    schedule: Literal["constant", "linear", "cosine", "autonomous"] = "linear"
    l_max: int = Field(
        8, ge=1, description="L_max: the most edits one step may make (the schedule's start)"
    )
    l_min: int = Field(2, ge=1, description="L_min: the fewest the schedule decays to")
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
    # paired test of moscopt.optimizer.policies.acceptance
    acceptance: Acceptance = "paired"
    max_val_samples: int = Field(5, ge=1, description="looks per acceptance decision")
    # tasks per look (None: the whole validation split, every look a new sample index); smaller
    # than the split: later looks draw tasks of the split not yet seen (engine.validation)
    val_look: int | None = Field(None, ge=1, description="validation tasks per look")
    confidence: float = Field(0.95, gt=0.5, lt=1.0, description="of the paired acceptance test")
    # the loss (in the reward's units) a change that buys something other than score may hide:
    # evolution, gate restoration and lifecycle operators are kept only when the paired test
    # bounds their loss within it (moscopt.optimizer.policies.noninferiority; docs/acceptance.md)
    margin: float = Field(0.1, ge=0.0, lt=1.0, description="non-inferiority margin")
    # True: a minibatch's proposals, the epoch's memory condensations and evolution's offspring
    # are asked concurrently; False: one after another (same decisions; scripts/bench_train.py)
    overlap: bool = True

    @model_validator(mode="after")
    def _check_budget(self) -> OptimizerConfig:
        if self.l_min > self.l_max:
            raise ValueError(f"l_min ({self.l_min}) must not exceed l_max ({self.l_max})")
        return self


class EvolutionConfig(Section):
    enabled: bool = True
    every: int = Field(1, ge=1, description="E: epochs between evolution cycles")
    eliminate: int = Field(1, ge=0, description="M: skills eliminated per cycle")
    diversity_threshold: float = Field(0.85, ge=0.0, le=1.0)
    mutation_fraction: float = Field(0.5, gt=0.0, le=1.0)
    fresh_skills: int = Field(2, ge=0, le=10)
    embedding_model: str = Field(
        "sentence-transformers/all-MiniLM-L6-v2",
        description="the diversity check's embedder: a sentence-transformers model or difflib",
    )
    cobreed: bool = True  # False: the "no co-breeding" ablation (offspring only by mutation)
    # collective: the paper's cycle (moscopt.optimizer.evolve); lifecycle: fork/merge/prune/seed
    # with a pool size in [niches.lifecycle.n_min, n_max] (moscopt.extensions.niches.lifecycle)
    policy: Literal["collective", "lifecycle"] = "collective"


class LifecycleConfig(Section):
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


class NichesConfig(Section):
    """Niches, competence and CODREAM transfer (moscopt.extensions.niches). Off by default."""

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


class TrainingConfig(Section):
    epochs: int = Field(3, ge=1, description="passes over the training split")
    max_steps_per_epoch: int | None = Field(
        None, ge=1, description="cap on skill-editing minibatches per epoch (None: all)"
    )
    interleave: bool = True  # False: the "simultaneous updates" ablation
    # the certificate at the end of a run (moscopt.optimizer.engine.certificate): the final pool
    # against the starting pool on held-out tasks, this many sample indices per task; 0: no
    # certificate (`moscopt train --no-certificate`)
    certificate_samples: int = Field(1, ge=0, le=20, description="0 turns the certificate off")
