"""The count: how many LLM calls each phase of a run makes, expected and at most, and in how
many sequential waves (the critical path), from the run's `Shape` and the pilot's `Measures`.

Where the bound comes from (an uninterrupted run; a resumed run replays from the cache):

- a rollout makes at most T agent calls and one gate call per selection (one selection with
  task-level gating, T with step-level gating); the external agent's own calls are not ours;
- a phase start scores the pool on sample 0 of the validation split (|V| rollouts); the evolve
  phase's start is always answered by the validator's cache (same pool, same frozen view as the
  gate phase's), so it is expected free, but counted in the bound;
- a decision asks the candidate for at most `max_samples` sample indices and the incumbent for
  the same indices but sample 0, which is cached (the phase start, or the candidate it was):
  at most (2·s_max - 1)·|V| rollouts; `strict` is s_max = 1; a candidate it accepts is then
  scored on a look no decision has seen (`Validator.adopt`: its fresh evidence, which the next
  decision reuses as its sample 0), one more |V|: 2·s_max·|V| in all, in the bound only (the
  expected count cannot know how many edits a run will accept);
- an EditAdam step reflects on ceil(B / M_b) groups, merges M_g at a time, proposes once; an
  autonomous budget adds one call per step;
- evolution asks each offspring, backup and injected skill at most twice (`evolve.ATTEMPTS`);
  its decisions (and the lifecycle's) are non-inferiority tests, bounded like any decision;
- the certificate rolls the final and the seed pool out once per held-out task and sample.

The expected count replaces each "at most" by what the pilot saw (calls per rollout, targets
per step, the share of proposals that changed their skill) and by averages that do not depend
on the model: a paired decision evaluates 1.9 x |V| rollouts on average (candidate and
incumbent together; `scripts/bench_acceptance.py`), a strict one |V|; an offspring is asked once.
Every epoch is assumed to fail as the pilot's minibatch did, so once training fixes the failures
(fewer targets, no proposals) a long run makes fewer calls than expected, never more than the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

ATTEMPTS = 2  # moscopt.optimizer.evolve.ATTEMPTS (kept here so the count needs no engine import)
PAIRED_EVALUATIONS = 1.9  # rollouts per validation task per paired decision, on average
PAIRED_LOOKS = 1.45  # sample indices looked at per paired decision (1.9 = looks + looks - 1)
# a non-inferiority decision (evolution, restoration, lifecycle) looks longer: about 3 looks,
# 5 rollouts per validation task (scripts/bench_acceptance.py)
NON_INFERIOR_EVALUATIONS = 5.0
CODREAM_CALLS = 4  # diagnose, contrast, imagine, distil


@dataclass(frozen=True)
class Shape:
    """What the config, the splits and the starting pool fix about a run."""

    n: int  # skills in the starting pool
    k: int
    epochs: int
    batch_sizes: tuple[int, ...]  # tasks per skill-editing minibatch, one epoch
    val: int  # |V|: validation tasks per look (optimizer.val_look, at most the split's p_val)
    steps: int  # T: agent steps per task
    gate_calls: int  # gate calls per rollout (0: no LLM gate; T: step-level gating)
    llm_gate: bool  # the gate is an editable LLM gate (gate phase, restoration)
    interleave: bool
    gate_edit_steps: int
    max_targets: int
    minibatch: int  # M_b
    merge_batch: int  # M_g
    max_samples: int  # 1 under strict acceptance
    autonomous: bool  # the optimizer chooses L: one budget call per step
    memory: bool  # long-term memory is condensed at each epoch's end
    evolution_epochs: int  # epochs whose end runs an evolution cycle
    lifecycle: bool
    eliminate: int
    cobreed: bool
    fresh_skills: int
    codream_sessions: int  # CODREAM sessions per minibatch (0: transfer off)
    concurrency: int
    external_agent: bool = False
    aggregate_calls: int = 0  # 1: an LLM aggregator ends each rollout (memory.halting)
    judge_calls: int = 0  # 1: a judge model scores each rollout's rubric (task files)
    overlap: bool = True  # optimizer.overlap: independent optimizer calls asked at once
    certificate: int = 0  # held-out tasks x samples of the end-of-run certificate (0: off)
    val_pool: int = 0  # validation tasks decisions draw from (0: `val`, every look repeats them)

    @property
    def rollout_calls(self) -> int:
        """At most this many calls per rollout."""
        agent = 0 if self.external_agent else self.steps
        return agent + self.gate_calls + self.aggregate_calls + self.judge_calls

    @property
    def train_steps(self) -> int:
        return len(self.batch_sizes)

    @property
    def batch(self) -> int:
        return max(self.batch_sizes, default=0)


@dataclass(frozen=True)
class Measures:
    """What a pilot minibatch measured (or, without a pilot, the worst case)."""

    calls_per_rollout: float
    targets_per_step: float
    applied: float  # share of proposals that changed their skill (so a decision follows)
    failure_rate: float
    reflect_calls: float  # reflect + merge calls per target
    measured: bool = False


def worst_case(shape: Shape) -> Measures:
    return Measures(
        calls_per_rollout=float(shape.rollout_calls),
        targets_per_step=float(min(shape.max_targets, shape.n)),
        applied=1.0,
        failure_rate=1.0,
        reflect_calls=float(reflect_bound(shape.batch, shape.minibatch, shape.merge_batch)),
    )


def reflect_bound(trajectories: int, minibatch: int, merge_batch: int) -> int:
    """Reflection calls on `trajectories` in groups of M_b, then merges M_g at a time."""
    return _reflection(trajectories, minibatch, merge_batch)[0]


def _reflection(trajectories: int, minibatch: int, merge_batch: int) -> tuple[int, int]:
    """(calls, sequential waves) of one reflection: the groups at once, then each merge level."""
    groups = max(1, math.ceil(trajectories / minibatch))
    calls, waves = groups, 1
    while groups > 1:
        groups = math.ceil(groups / merge_batch)
        calls, waves = calls + groups, waves + 1
    return calls, waves


@dataclass
class Part:
    """One line of the plan: calls by role, expected and at most, and sequential waves."""

    phase: str
    part: str
    agent: float = 0.0  # expected agent-model calls (agent and gate)
    optimizer: float = 0.0  # expected optimizer-model calls
    bound: int = 0
    agent_waves: float = 0.0
    optimizer_waves: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def calls(self) -> float:
        return self.agent + self.optimizer


def count(shape: Shape, m: Measures) -> list[Part]:
    """The plan's lines, for the whole run (every epoch)."""
    s, c = shape, max(1, shape.concurrency)
    E, V, r, r_max = s.epochs, s.val, m.calls_per_rollout, s.rollout_calls
    S = s.train_steps
    evals_max = 2 * s.max_samples - 1
    evals = 1.0 if s.max_samples == 1 else min(PAIRED_EVALUATIONS, evals_max)
    looks = 1.0 if s.max_samples == 1 else PAIRED_LOOKS
    decision_bound = (evals_max + 1) * V * r_max  # + the adopted pool's fresh look
    decision_waves = (math.ceil(V / c) + (looks - 1) * math.ceil(2 * V / c)) * r
    start_waves = math.ceil(V / c) * r
    t_max = min(s.max_targets, s.n)
    t = min(m.targets_per_step, t_max)
    budget = 1 if s.autonomous else 0
    reflect_max, depth = _reflection(s.batch, s.minibatch, s.merge_batch)

    roll = Part("skills", "rollouts", agent=E * sum(s.batch_sizes) * r)
    roll.bound = E * sum(s.batch_sizes) * r_max
    roll.agent_waves = E * sum(math.ceil(b / c) for b in s.batch_sizes) * r
    if s.codream_sessions:
        dream = S * s.codream_sessions * CODREAM_CALLS
        roll.optimizer = E * dream * (1.0 if m.failure_rate > 0 else 0.0)
        roll.bound += E * dream
        roll.optimizer_waves = E * S * CODREAM_CALLS * (1.0 if m.failure_rate > 0 else 0.0)
        roll.notes.append("CODREAM after failed minibatches")

    prop = Part("skills", "reflect/propose")
    per_target = m.reflect_calls + 1
    extra_gate = 0 if s.interleave or not s.llm_gate else min(S, s.gate_edit_steps)
    prop.optimizer = E * (S * (budget + t * per_target) + extra_gate * 2)
    prop.bound = E * (S * (budget + t_max * (reflect_max + 1)) + extra_gate * 2)
    # every target of a minibatch is reflected on and proposed for at once (optimizer.overlap)
    in_turn = 1.0 if s.overlap else t
    prop.optimizer_waves = E * S * (budget + (depth + 1) * in_turn if t > 0 else budget)

    val = Part("skills", "validation")
    decisions = S * t * m.applied if s.interleave else S * min(1.0, t * m.applied)
    decisions_max = S * t_max if s.interleave else S
    val.agent = E * (V * r + decisions * evals * V * r)
    val.bound = E * (V * r_max + decisions_max * decision_bound)
    val.agent_waves = E * (start_waves + decisions * decision_waves)
    val.notes.append("phase start + one decision per changed candidate, in order")
    if s.llm_gate:
        val.bound += E * S * decision_bound  # a gate restoration after any minibatch
        val.notes.append("gate restorations: in the bound only")

    gate = Part("gate", "start, reflect/propose, validation")
    if s.llm_gate and s.interleave:  # else no gate phase (the trainer's `_gate_phase_runs`)
        gate.agent, gate.bound, gate.agent_waves = E * V * r, E * V * r_max, E * start_waves
    if s.llm_gate and s.interleave and s.gate_edit_steps:
        g = s.gate_edit_steps * (1.0 if m.failure_rate > 0 else 0.0)
        gate.optimizer = E * g * (budget + 2)
        gate.agent += E * g * m.applied * evals * V * r
        gate.bound += E * s.gate_edit_steps * (budget + 2 + decision_bound)
        gate.optimizer_waves = E * g * (budget + 2)
        gate.agent_waves += E * g * m.applied * decision_waves

    kept = 1.0 if s.max_samples == 1 else min(NON_INFERIOR_EVALUATIONS, evals_max)
    kept_waves = (math.ceil(V / c) + (kept - 1) / 2 * math.ceil(2 * V / c)) * r
    evo = Part("evolution", "start, offspring, validation")
    evo.bound = E * V * r_max  # the evolve phase's start (expected from the validator's cache)
    cycles = s.evolution_epochs
    if cycles and s.lifecycle:
        evo.optimizer = cycles * 1.0
        evo.agent = cycles * kept * V * r
        evo.bound += cycles * 4 * (ATTEMPTS + decision_bound)
        evo.optimizer_waves = cycles * 1.0
        evo.agent_waves = cycles * kept_waves
        evo.notes.append("lifecycle: one operator expected, four at most")
    elif cycles:
        plan = 1 + (1 if s.cobreed and s.n >= 2 else 0)
        jobs = s.eliminate if plan else 0  # exactly M offspring per cycle
        evo.optimizer = cycles * jobs
        evo.agent = cycles * (kept * V * r if jobs else 0.0)
        drafts = 2 * jobs * ATTEMPTS + ATTEMPTS + s.fresh_skills * ATTEMPTS
        evo.bound += cycles * (drafts + decision_bound)
        # offspring concurrently, then backups, the forced mutation and fresh skills
        evo.optimizer_waves = cycles * (min(1, jobs) if s.overlap else jobs)
        evo.agent_waves = cycles * (kept_waves if jobs else 0.0)
        evo.notes.append("non-inferiority decisions: about 3 looks each")
        evo.notes.append("diversity repairs (forced mutation, fresh skills): in the bound only")

    mem = Part("memory", "condensation")
    if s.memory:
        edited = S * t + (s.gate_edit_steps if s.llm_gate else 0)
        most = S * t_max + (s.gate_edit_steps if s.llm_gate else 0)
        low = min(float(s.n), t) + (1.0 if s.llm_gate and s.gate_edit_steps else 0.0)
        mem.optimizer = E * (low + min(float(s.n), edited)) / 2  # distinct targets per epoch
        mem.bound = E * min(s.n + 1, most)
        mem.optimizer_waves = E * (1.0 if t > 0 else 0.0)  # every target at once
        if not s.overlap:
            mem.optimizer_waves = mem.optimizer
        mem.notes.append("one call per target edited in the epoch, all at once")
    cert = Part("end", "certificate")
    if s.certificate:
        cert.agent = 2 * s.certificate * r  # final and seed pool, every held-out task
        cert.bound = 2 * s.certificate * r_max
        cert.agent_waves = 2 * math.ceil(s.certificate / c) * r
        cert.notes.append("final vs seed pool on held-out tasks (--no-certificate: none)")
    return [roll, prop, val, gate, evo, mem, cert]
