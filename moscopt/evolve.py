"""Collective evolution: elimination, reproduction by mutation, co-breeding, fresh skills.

Selection is pure (`eliminate`, `best_pair`); making offspring asks the optimizer LLM for a new
skill as JSON ``{"name", "description", "body"}`` (`new_skill` parses it strictly). A failed or
invalid offspring is reported as None: evolution then simply adds fewer skills.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from moscopt.config import Config
from moscopt.lm.base import LM
from moscopt.lm.errors import LMFatalError, LMOutputError, LMRequestError
from moscopt.prompting import render
from moscopt.similarity import mean_pairwise_similarity, most_similar_pair
from moscopt.skills import Pool, Skill, slugify
from moscopt.state import RunState

NEW_SKILL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 60},
        "description": {"type": "string", "maxLength": 500},
        "body": {"type": "string", "maxLength": 5000},
    },
    "required": ["name", "description", "body"],
    "additionalProperties": False,
}


def protected(names: Sequence[str], synergy: Mapping[str, int], threshold: int) -> set[str]:
    """Skills in a pair with C(i, j) above `threshold`: never eliminated."""
    out: set[str] = set()
    for key, count in synergy.items():
        if count > threshold:
            a, b = key.split("|")
            if a in names and b in names:
                out.update((a, b))
    return out


def eliminate(
    names: Sequence[str],
    q: Mapping[str, float],
    activations: Mapping[str, int],
    synergy: Mapping[str, int],
    *,
    m: int,
    c_min: int,
    protect_above: int,
) -> list[str]:
    """The M lowest-Q skills with ≥ c_min activations that are in no high-synergy pair."""
    keep = protected(names, synergy, protect_above)
    eligible = [n for n in names if activations.get(n, 0) >= c_min and n not in keep]
    return sorted(eligible, key=lambda n: (q.get(n, 0.0), n))[:m]


def best_pair(names: Sequence[str], synergy: Mapping[str, int]) -> tuple[str, str] | None:
    """The pair with the highest C(i, j) > 0 among `names` (ties by name)."""
    best: tuple[int, str] | None = None
    for key, count in synergy.items():
        a, b = key.split("|")
        if count > 0 and a in names and b in names and (best is None or (-count, key) < best):
            best = (-count, key)
    if best is None:
        return None
    a, b = best[1].split("|")
    return (a, b)


def top_skill(names: Sequence[str], q: Mapping[str, float]) -> str:
    return min(names, key=lambda n: (-q.get(n, 0.0), n))


def new_skill(data: Any, taken: Collection[str], origin: str) -> Skill:
    """A valid `Skill` from the LLM's JSON, renamed to a fresh slug if needed; raises ValueError."""
    if isinstance(data, str):
        data = json.loads(data)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    name, description, body = data.get("name"), data.get("description"), data.get("body")
    if not all(isinstance(v, str) and v.strip() for v in (name, description, body)):
        raise ValueError("name, description and body must be non-empty strings")
    assert isinstance(name, str) and isinstance(body, str) and isinstance(description, str)
    if body.count("\n") < 3:
        raise ValueError("the body is too short to be a skill")
    slug = Pool(skills=()).fresh_name(slugify(name), taken=taken)
    return Skill(name=slug, description=description[:1024], body=body, metadata={"origin": origin})


def pool_listing(pool: Pool) -> str:
    return "\n".join(f"- {s.name}: {' '.join(s.description.split())}" for s in pool)


async def offspring(
    lm: LM, prompt_name: str, taken: Collection[str], origin: str, **values: Any
) -> tuple[Skill | None, str | None]:
    """Ask for a new skill; (skill, None) or (None, reason)."""
    try:
        completion = await lm.acomplete(
            [{"role": "user", "content": render(prompt_name, **values)}],
            schema=NEW_SKILL_SCHEMA,
            purpose=f"evolve-{prompt_name}",
            max_tokens=2400,
        )
        return new_skill(
            completion.data if completion.data is not None else completion.text, taken, origin
        ), None
    except LMFatalError:
        raise
    except (LMOutputError, LMRequestError, ValueError) as e:
        return None, str(e)[:200]


Notes = list[dict[str, Any]]


async def next_generation(
    lm: LM, pool: Pool, state: RunState, config: Config, seeds: Pool, fresh_rng: random.Random
) -> tuple[Pool, Notes]:
    """The candidate pool of one evolution cycle (the trainer validates it) and what was done.

    Eliminate the M lowest-Q eligible skills, replace each by an offspring (alternately a child
    of the highest-synergy pair and a mutation of the top skill), then restore diversity.
    """
    cfg = config.evolution
    removed = eliminate(
        pool.names,
        state.q,
        state.activations,
        state.synergy,
        m=cfg.eliminate,
        c_min=config.credit.c_min,
        protect_above=config.credit.synergy_protect,
    )
    notes: Notes = [{"kind": "eliminate", "skill": n, "q": state.q.get(n)} for n in removed]
    taken = set(state.names_used) | set(pool.names)
    for name in removed:
        pool = pool.remove(name)
    for i in range(len(removed)):
        pair = best_pair(pool.names, state.synergy)
        if pair is not None and i % 2 == 0:
            kind, origin = "crossover", "crossover"
            values = {"first": pool.get(pair[0]).dumps(), "second": pool.get(pair[1]).dumps()}
        else:
            kind, origin = "mutate", "mutation"
            parent = pool.get(top_skill(pool.names, state.q))
            values = {"skill": parent.dumps(), "fraction": f"{cfg.mutation_fraction:.0%}"}
        child, why = await offspring(lm, kind, taken, origin, pool=pool_listing(pool), **values)
        if child is not None:
            pool = pool.add(child)
            taken.add(child.name)
        notes.append({"kind": kind, "skill": child.name if child else None, "error": why})
    pool, more = await restore_diversity(lm, pool, state, config, seeds, taken, fresh_rng)
    return pool, notes + more


async def restore_diversity(
    lm: LM,
    pool: Pool,
    state: RunState,
    config: Config,
    seeds: Pool,
    taken: set[str],
    rng: random.Random,
) -> tuple[Pool, Notes]:
    """Above the similarity threshold: mutate one of the closest pair, inject fresh skills."""
    cfg = config.evolution
    skills = list(pool)
    bodies = [x.body for x in skills]
    sim, method = await asyncio.to_thread(mean_pairwise_similarity, bodies, cfg.embedding_model)
    notes: Notes = [{"kind": "diversity", "similarity": round(sim, 4), "method": method}]
    if sim <= cfg.diversity_threshold or len(skills) < 2:
        return pool, notes
    victim = skills[most_similar_pair(bodies)[0]]
    fraction = f"{cfg.mutation_fraction:.0%}"
    mutant, why = await offspring(
        lm, "mutate", taken, "forced-mutation",
        skill=victim.dumps(), pool=pool_listing(pool), fraction=fraction,
    )  # fmt: skip
    if mutant is not None:
        pool = pool.remove(victim.name).add(mutant)
        taken.add(mutant.name)
    notes.append({"kind": "forced_mutation", "replaced": victim.name,
                  "skill": mutant.name if mutant else None, "error": why})  # fmt: skip
    candidates = [x for x in seeds if x.name not in pool.names]
    for seed in rng.sample(candidates, min(cfg.fresh_skills, len(candidates))):
        worst = min(pool.names, key=lambda n: (state.q.get(n, 0.0), n))
        child, why = await offspring(
            lm, "fresh", taken, "fresh", seed=seed.dumps(), pool=pool_listing(pool)
        )
        if child is not None and len(pool) > 1:
            pool = pool.remove(worst).add(child)
            taken.add(child.name)
        notes.append({"kind": "fresh", "replaced": worst,
                      "skill": child.name if child else None, "error": why})  # fmt: skip
    return pool, notes
