"""Collective evolution: one cycle turns the pool into a candidate pool of the same size N.

1. Parents: the top skill (highest Q among skills with ≥ c_min activations) and, unless
   `evolution.cobreed` is off, the highest-synergy pair. The plan is [mutate top, crossover pair].
2. Eliminate exactly M = `evolution.eliminate` of the lowest-Q eligible skills (never a parent;
   fewer if fewer are eligible), as the paper does (M = 1: one skill replaced per cycle); M = 0
   turns reproduction off. Each freed place gets one offspring, following the plan from the
   cycle's turn in it (cycle c = epoch // E starts at plan[c mod len(plan)]: with M = 1 and
   co-breeding, cycles alternate mutation and crossover) and round it again with new sample
   indices when M > len(plan).
3. Offspring are asked for concurrently; each request is tried twice (sample k, then k + 1). A
   place still empty gets a fresh skill from a seed, else an elimination is undone (the
   highest-Q eliminated skill comes back), so the pool keeps its size N.
4. Diversity: above the similarity threshold, one skill of the most similar pair (never a
   protected skill or a newborn) is rewritten, and fresh seed skills replace the lowest-Q
   eligible skills (skipped, and noted, when none is eligible). A cycle replaces at most M
   skills in all: the diversity step takes only the places reproduction left (with M = 1 and
   an offspring born, none: the step is noted as skipped; raise M to make room for it).
Selection rules live in `moscopt.optimizer.policies.evolution_selection`. Names are assigned in plan
order after the requests return, so the result does not depend on which answer came first.
Notes (one dict per decision) have the kinds eliminate, eliminate_undone, mutate, crossover,
diversity, forced_mutation and fresh; `generated_names` and `newborns` read them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from moscopt.config import Config
from moscopt.core.drafts import COMPACT_TOKENS, draft_fields, draft_schema
from moscopt.core.prompting import render
from moscopt.core.skill_format import clean_description, slugify
from moscopt.core.skills import Pool, Skill
from moscopt.lm.base import LM
from moscopt.lm.errors import LMFatalError, LMOutputError, LMRequestError
from moscopt.lm.local import is_embedded
from moscopt.optimizer.policies.evolution_selection import EvolutionSelection
from moscopt.optimizer.similarity import mean_pairwise_similarity, similar_pairs, threshold_for
from moscopt.run.state import RunState

BODY_MAX, DESCRIPTION_MAX, DRAFT_TOKENS = 5000, 500, 2400
ATTEMPTS = 2  # each request for a skill: the first sample, then one retry with the next
# Note kinds that add a skill; their "skill" key is the new slug (None when nothing was added).
OFFSPRING_KINDS = ("crossover", "mutate", "forced_mutation", "fresh")

Notes = list[dict[str, Any]]
T = TypeVar("T")


@dataclass(frozen=True)
class Draft:
    """A parsed, valid offspring before it gets its slug."""

    name: str
    description: str
    body: str

    def named(self, taken: Collection[str], origin: str) -> Skill:
        """The `Skill`, renamed to a slug not in `taken`."""
        slug = Pool(skills=()).fresh_name(slugify(self.name), taken=taken)
        description = clean_description(self.description)  # one line, no '---', <= 1024
        return Skill(
            name=slug, description=description, body=self.body, metadata={"origin": origin}
        )


@dataclass(frozen=True)
class Job:
    """One request for a skill: the prompt `kind` (mutate, crossover, fresh) and its values."""

    kind: str
    values: dict[str, str]
    sample: int = 0


def parse_draft(data: Any) -> Draft:
    """The LLM's JSON `{"name", "description", "body"}` (or a compact answer's `lines`, see
    `moscopt.core.drafts`) checked strictly; raises ValueError."""
    data = draft_fields(data)
    name, description, body = data.get("name"), data.get("description"), data.get("body")
    if not all(isinstance(v, str) and v.strip() for v in (name, description, body)):
        raise ValueError("name, description and body must be non-empty strings")
    assert isinstance(name, str) and isinstance(body, str) and isinstance(description, str)
    if body.count("\n") < 3:
        raise ValueError("the body is too short to be a skill")
    return Draft(name=name, description=description, body=body)


def new_skill(data: Any, taken: Collection[str], origin: str) -> Skill:
    """A valid `Skill` from the LLM's JSON, renamed to a fresh slug if needed; raises ValueError."""
    return parse_draft(data).named(taken, origin)


def pool_listing(pool: Pool) -> str:
    return "\n".join(f"- {s.name}: {' '.join(s.description.split())}" for s in pool)


async def draft(lm: LM, job: Job) -> tuple[Draft | None, list[str]]:
    """Ask for `job`'s skill, retrying once with the next sample index (a cached failure is not
    asked again); (draft, errors of the failed attempts) or (None, errors). Fatal LM errors
    propagate."""
    errors: list[str] = []
    compact = is_embedded(lm.model)  # a small model writes a short skill, line by line
    schema = draft_schema(compact=compact, body_max=BODY_MAX, description_max=DESCRIPTION_MAX)
    for attempt in range(ATTEMPTS):
        try:
            completion = await lm.acomplete(
                [{"role": "user", "content": render(job.kind, **job.values)}],
                schema=schema,
                sample=job.sample + attempt,
                purpose=f"evolve-{job.kind}",
                max_tokens=COMPACT_TOKENS if compact else DRAFT_TOKENS,
            )
            data = completion.data if completion.data is not None else completion.text
            return parse_draft(data), errors
        except LMFatalError:
            raise
        except (LMOutputError, LMRequestError, ValueError) as e:
            errors.append(str(e)[:200] or type(e).__name__)
    return None, errors


async def gather_all(aws: Iterable[Awaitable[T]], *, overlap: bool = True) -> list[T]:
    """`asyncio.gather`, results in input order; on an error the others are cancelled.
    `overlap=False` awaits them one after another (`optimizer.overlap`)."""
    if not overlap:
        return [await a for a in aws]
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def generated_names(notes: Notes) -> list[str]:
    """Every slug this cycle gave a skill, in order: the engine reserves them (`names_used`)
    whether or not the cycle is accepted."""
    return [str(n["skill"]) for n in notes if n.get("kind") in OFFSPRING_KINDS and n.get("skill")]


def newborns(notes: Notes) -> list[str]:
    """The skills this cycle added to the candidate pool (they have no Q-score yet)."""
    gone = {n.get("replaced") for n in notes if n.get("kind") in OFFSPRING_KINDS and n.get("skill")}
    return [n for n in generated_names(notes) if n not in gone]


def pick_seeds(
    seeds: Pool, exclude: Collection[str], count: int, rng: random.Random
) -> list[Skill]:
    """Up to `count` distinct seeds whose names are not in `exclude`, drawn with `rng`."""
    candidates = [s for s in seeds if s.name not in exclude]
    return rng.sample(candidates, min(max(0, count), len(candidates)))


def fresh_job(seed: Skill, pool: Pool) -> Job:
    return Job("fresh", {"seed": seed.dumps(), "pool": pool_listing(pool)})


@dataclass
class Cycle:
    """What one evolution cycle has handed out so far: slugs, newborns, seeds."""

    taken: set[str]  # slugs never to give again (the run's names and this cycle's)
    index: int = 0  # the cycle's number (epoch // E): its turn in the reproduction plan
    born: set[str] = field(default_factory=set)
    used_seeds: set[str] = field(default_factory=set)

    def birth(self, got: Draft, origin: str) -> Skill:
        child = got.named(self.taken, origin)
        self.taken.add(child.name)
        self.born.add(child.name)
        return child


async def next_generation(
    lm: LM, pool: Pool, state: RunState, config: Config, seeds: Pool, fresh_rng: random.Random
) -> tuple[Pool, Notes]:
    """The candidate pool of one evolution cycle and what was done (see the module docstring).

    The candidate has exactly `len(pool)` skills (the pool the trainer loaded, normally
    `config.pool.n`): each offspring fills the place of one eliminated skill, and forced
    mutations and fresh skills replace one skill each. Newborns are never replaced in the cycle
    that made them. The engine validates the candidate; `newborns(notes)` and
    `generated_names(notes)` tell it which skills are new and which slugs are spent.
    """
    select = EvolutionSelection.of(state, config)
    every = config.evolution.every
    cycle = Cycle(taken=set(state.names_used) | set(pool.names), index=state.epoch // every)
    pool, notes = await reproduce(lm, pool, select, config, seeds, fresh_rng, cycle)
    room = max(0, config.evolution.eliminate - len(cycle.born))  # M in all, whatever replaces
    pool, more = await restore_diversity(lm, pool, select, config, seeds, fresh_rng, cycle, room)
    return pool, notes + more


async def reproduce(
    lm: LM,
    pool: Pool,
    select: EvolutionSelection,
    config: Config,
    seeds: Pool,
    rng: random.Random,
    cycle: Cycle,
) -> tuple[Pool, Notes]:
    """Eliminate, then fill every freed place with an offspring, a fresh skill or the skill
    that was there (steps 1-3 of the module docstring)."""
    cfg = config.evolution
    top = select.top_skill(pool.names)
    pair = select.best_pair(pool.names) if cfg.cobreed else None
    plan: list[tuple[str, tuple[str, ...]]] = [("mutate", (top,))] if top is not None else []
    if pair is not None:
        plan.append(("crossover", pair))
    count = cfg.eliminate if plan else 0
    turn = cycle.index % len(plan) if plan else 0
    slots = [plan[(turn + i) % len(plan)] for i in range(count)]
    removed = select.eliminate(pool.names, count, keep={p for _, ps in slots for p in ps})
    survivors = Pool(skills=tuple(s for s in pool if s.name not in removed), gate=pool.gate)
    slots = slots[: len(removed)]
    jobs = [
        offspring_job(kind, ps, survivors, cfg.mutation_fraction, ATTEMPTS * (i // len(plan)))
        for i, (kind, ps) in enumerate(slots)
    ]
    overlap = config.optimizer.overlap
    drafts = await gather_all((draft(lm, job) for job in jobs), overlap=overlap)
    failed = [i for i, (got, _) in enumerate(drafts) if got is None]
    backup_seeds = pick_seeds(seeds, set(pool.names), len(failed), rng)
    cycle.used_seeds.update(s.name for s in backup_seeds)
    backups = await gather_all(
        (draft(lm, fresh_job(s, survivors)) for s in backup_seeds), overlap=overlap
    )
    backup = dict(zip(failed, zip(backup_seeds, backups, strict=True), strict=False))

    children: list[Skill] = []
    slot_notes: Notes = []
    for i, ((kind, ps), (got, errors)) in enumerate(zip(slots, drafts, strict=True)):
        note: dict[str, Any] = {"kind": kind, "skill": None, "parents": list(ps),
                                "error": errors[-1] if got is None and errors else None,
                                "attempts": len(errors) + (got is not None)}  # fmt: skip
        origin = "mutation" if kind == "mutate" else kind
        if got is None and i in backup:
            seed, (got, lost) = backup[i]
            origin = "fresh"
            note.update(fallback="fresh", seed=seed.name, fallback_error=lost[-1] if lost else None)
        if got is not None:
            children.append(cycle.birth(got, origin))
            note["skill"] = children[-1].name
        slot_notes.append(note)
    undone = set(removed[len(children) :])  # an empty place takes back the highest-Q eliminated
    gone = set(removed) - undone
    notes: Notes = [
        {
            "kind": "eliminate_undone" if n in undone else "eliminate",
            "skill": n,
            "q": select.q.get(n),
        }
        for n in removed
    ]
    new = Pool(skills=(*(s for s in pool if s.name not in gone), *children), gate=pool.gate)
    return new, notes + slot_notes


def offspring_job(
    kind: str, parents: tuple[str, ...], pool: Pool, fraction: float, sample: int
) -> Job:
    """The request for a child of `parents` (two for a crossover, one for a mutation)."""
    listing = pool_listing(pool)
    if kind == "crossover":
        first, second = (pool.get(p).dumps() for p in parents)
        return Job(kind, {"first": first, "second": second, "pool": listing}, sample)
    values = {"skill": pool.get(parents[0]).dumps(), "fraction": f"{fraction:.0%}"}
    return Job(kind, {**values, "pool": listing}, sample)


async def restore_diversity(
    lm: LM,
    pool: Pool,
    select: EvolutionSelection,
    config: Config,
    seeds: Pool,
    rng: random.Random,
    cycle: Cycle,
    room: int,
) -> tuple[Pool, Notes]:
    """Above the similarity threshold: rewrite one skill of the most similar pair, then inject
    fresh seed skills in place of the lowest-Q eligible skills (step 4), `room` skills at most
    (what is left of M)."""
    cfg = config.evolution
    bodies, names = [x.body for x in pool], list(pool.names)
    model = cfg.embedding_model
    sim, method = await asyncio.to_thread(
        mean_pairwise_similarity, bodies, model, names, cfg.diversity_threshold
    )
    limit = threshold_for(method, cfg.diversity_threshold)  # difflib ratios run lower
    notes: Notes = [
        {"kind": "diversity", "similarity": round(sim, 4), "method": method, "threshold": limit}
    ]
    if sim <= limit or len(pool) < 2:
        return pool, notes
    if room <= 0:
        notes.append({"kind": "forced_mutation", "replaced": None, "skill": None,
                      "error": f"skipped: this cycle already replaced M = {cfg.eliminate} "
                      "skill(s) (evolution.eliminate)"})  # fmt: skip
        return pool, notes
    pairs = await asyncio.to_thread(similar_pairs, names, bodies)
    victim = select.forced_mutation_victim(pairs, pool.names, cycle.born)
    note: dict[str, Any] = {"kind": "forced_mutation", "replaced": victim, "skill": None}
    if victim is None:
        note["error"] = "skipped: every skill of the similar pairs is protected or a newborn"
    else:
        fraction = f"{cfg.mutation_fraction:.0%}"
        values = {
            "skill": pool.get(victim).dumps(),
            "pool": pool_listing(pool),
            "fraction": fraction,
        }
        got, errors = await draft(lm, Job("mutate", values))
        note["error"] = errors[-1] if got is None and errors else None
        if got is not None:
            mutant = cycle.birth(got, "forced-mutation")
            pool = pool.remove(victim).add(mutant)
            note["skill"] = mutant.name
            room -= 1
    notes.append(note)
    wanted = min(cfg.fresh_skills, room)
    if cfg.fresh_skills > 0 and wanted <= 0:
        why = f"skipped: this cycle already replaced M = {cfg.eliminate} skill(s)"
        notes.append({"kind": "fresh", "skill": None, "replaced": None, "error": why})
        return pool, notes
    chosen = pick_seeds(seeds, set(pool.names) | cycle.used_seeds, wanted, rng)
    victims = select.fresh_victims(pool.names, len(chosen), cycle.born)
    if cfg.fresh_skills > 0 and not victims:
        why = "no seed left to inject" if not chosen else "no eligible skill to replace"
        notes.append({"kind": "fresh", "skill": None, "replaced": None, "error": f"skipped: {why}"})
        return pool, notes
    answers = await gather_all(
        (draft(lm, fresh_job(s, pool)) for s in chosen[: len(victims)]),
        overlap=config.optimizer.overlap,
    )
    for seed, worst, (got, errors) in zip(chosen, victims, answers, strict=False):
        fresh = None if got is None else cycle.birth(got, "fresh")
        if fresh is not None:
            pool = pool.remove(worst).add(fresh)
        notes.append({"kind": "fresh", "replaced": worst, "seed": seed.name,
                      "skill": fresh.name if fresh else None,
                      "error": errors[-1] if fresh is None and errors else None})  # fmt: skip
    return pool, notes
