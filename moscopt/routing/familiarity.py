"""The familiarity estimator (CERA-MoA, seeds/cera-moa.txt) over frozen task features.

Features z: the task's sentence embedding through the fixed `Projection` (centered, top
principal directions, unit norm; dimension q). Per skill i: a trainable linear predictor head
p_i(z) = W_i z and a frozen random target head t_i(z) = T_i z into a reference space of
dimension r; distance d_i = ‖p_i - t_i‖² / ‖t_i‖² (normalized: every skill starts at exactly
1, since the predictors start at zero); familiarity f_i = exp(-d_i / τ), in (0, 1].

Target heads are seeded by (run seed, skill name) through a `numpy.random.Generator`; each is
orthonormal (times √q), and orthogonal to the blocks of the skills added before it while they
leave room (N · r ≤ q). With the defaults (q = 12, r = 8) no two blocks fit: keeping all skills'
targets orthogonal needs q ≥ N · r, and more feature directions cost held-out accuracy
(`scripts/bench_router.py --feature-dim 64` shows it; see `moscopt.routing.projection`).

Training, after each minibatch (`replay`, the default): the predictors restart from zero and
take one SGD step per (buffered rollout, active skill), oldest first, each advantage estimated
against the whole buffer as it is now, in float32 (saved state continues bit for bit). So a
credit given on little evidence is revised when the evidence grows: early on, a skill that
rode along in a successful pair with the task's specialist looks as good as the specialist
(nothing shows it fails alone yet) and its head is pulled toward the task's family; once the
buffer holds its failures there, the refit no longer pulls it (`scripts/bench_router.py`: the
seed that missed the oracle by 10 points misses by 4; see its docstring). The heads then
reflect the last `buffer` rollouts. Without `replay`, one step per rollout of the new
minibatch only, on the heads as they are. Advantage A: a skill active alone gets 2R - 1
(positive when it succeeds). In a set, the K skills share one reward, so each skill's part is
estimated from the buffered rollouts, weighted by the similarity of their task to this one
(max(0, cos)²), and `credit` says how:

- `contrast` (the default): the weighted success rate of the rollouts in which the skill was
  active minus that of the rollouts in which it was not;
- `relative` (the paper's form): the skill's weighted success rate minus the mean of those of
  the skills active with it. Skills that are always active together get equal rates and no
  signal; on the router benchmark it left K near k_max after an epoch.

A failed rollout also pushes every member by `failure_push` x (1 - R). A > 0 pulls p_i toward
t_i (loss A · d_i), A < 0 pushes it away up to the margin (loss |A| · max(0, m - d_i)); a step
never moves the error on its own task by more than its size (normalized LMS).

Routing (cumulative-threshold adaptive K): rank by score = f_i + c · √(ln(1 + n) / (1 + n_i))
(the exploration bonus; n rollouts observed, n_i with skill i; training only), then take the
smallest top-ranked set whose cumulative *familiarity* reaches θ, within [k_min, k_max]
(`k_max` when θ is never reached).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from moscopt.routing.arrays import decode_array, encode_array
from moscopt.routing.projection import Projection

if TYPE_CHECKING:
    import numpy.typing as npt

    Array = npt.NDArray[np.float32]

FORMAT = 1


@dataclass(frozen=True)
class Hyper:
    """The estimator's hyperparameters (`RouterConfig` without the embedding model)."""

    k_min: int = 1
    k_max: int = 3
    theta: float = 0.5
    tau: float = 1.0
    margin: float = 2.0
    lr: float = 2.0
    exploration: float = 0.5
    reference_dim: int = 8
    feature_dim: int = 12
    buffer: int = 512
    failure_push: float = 0.5
    credit: Literal["contrast", "relative"] = "contrast"
    replay: bool = True

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Observation:
    """One rollout as the router learns from it: the task, the skills active in it, the reward."""

    key: str
    skills: tuple[str, ...]
    reward: float


@dataclass(frozen=True)
class Routing:
    """One routing decision and why: every skill's familiarity and score, ranked."""

    skills: tuple[str, ...]
    ranked: tuple[str, ...]  # every skill, best routing score first
    familiarity: dict[str, float]
    score: dict[str, float]
    cumulative: float  # familiarity of the chosen set
    reached: bool  # whether the cumulative familiarity reached θ


@dataclass
class LearnStats:
    pulls: int = 0
    pushes: int = 0
    neutral: int = 0
    advantages: list[float] = field(default_factory=list)


def cutoff(familiarity: Sequence[float], theta: float, k_min: int, k_max: int) -> tuple[int, bool]:
    """(how many of the ranked skills to activate, whether θ was reached): `familiarity` is in
    ranking order; the smallest k in [k_min, k_max] whose cumulative familiarity reaches θ."""
    n = len(familiarity)
    lo, hi = max(1, min(k_min, n)), max(1, min(k_max, n))
    total = 0.0
    for k, f in enumerate(familiarity[:hi], start=1):
        total += f
        if k >= lo and total >= theta:
            return k, True
    return hi, False


def exploration_bonus(allocated: int, routed: int, c: float) -> float:
    return c * math.sqrt(math.log1p(routed) / (1 + allocated))


def target_block(seed: int, name: str, earlier: Array, r: int, q: int) -> Array:
    """The frozen r x q target head of skill `name`: orthonormal rows times √q, orthogonal to
    the rows of `earlier` when they leave room for r more."""
    digest = hashlib.sha256(name.encode()).digest()
    rng = np.random.default_rng([seed & 0xFFFFFFFF, int.from_bytes(digest[:8], "little")])
    g = rng.standard_normal((q, r))
    rows = earlier.reshape(-1, q).astype(np.float64)
    if len(rows) and len(rows) + r <= q:
        basis, _ = np.linalg.qr(rows.T)
        for _ in range(2):  # twice is enough (Kahan)
            g -= basis @ (basis.T @ g)
    if r > q:
        raise ValueError(f"reference_dim ({r}) must not exceed the feature dimension ({q})")
    qmat, _ = np.linalg.qr(g)
    block: Array = (math.sqrt(q) * qmat.T).astype(np.float32)
    return block


class FamiliarityModel:
    """Heads for a list of skills, the projection, the allocation counts and the buffer."""

    def __init__(
        self,
        *,
        projection: Projection,
        seed: int,
        hyper: Hyper,
        names: Sequence[str] = (),
        weight: Array | None = None,
        target: Array | None = None,
        allocated: Mapping[str, int] | None = None,
        routed: int = 0,
        buffer: Sequence[Observation] = (),
    ) -> None:
        self.projection, self.seed, self.hyper = projection, seed, hyper
        r, q = min(hyper.reference_dim, projection.dim), projection.dim
        self.r = r
        self.names: list[str] = []
        self.weight: Array = np.zeros((0, r, q), np.float32)
        self.target: Array = np.zeros((0, r, q), np.float32)
        if target is None:  # fresh heads: zero predictors, seeded targets
            self._add(list(names))
        else:
            self.names = list(names)
            self.target = target
            self.weight = np.zeros_like(target) if weight is None else weight
        self.allocated: dict[str, int] = dict(allocated or {})
        self.routed = routed
        self.buffer: list[Observation] = list(buffer)

    @property
    def dim(self) -> int:
        """The embedding dimension this model reads."""
        return self.projection.embedding_dim

    # -- skills ----------------------------------------------------------------------------------

    def _add(self, names: Sequence[str]) -> None:
        q = self.projection.dim
        for name in names:
            block = target_block(self.seed, name, self.target, self.r, q)
            self.names.append(name)
            self.target = np.concatenate([self.target, block[None]], axis=0)
            self.weight = np.concatenate([self.weight, np.zeros((1, self.r, q), np.float32)])

    def synced(self, names: Sequence[str]) -> FamiliarityModel:
        """This model with heads for exactly `names`, in that order: heads of skills that left
        are dropped first, then new skills get fresh heads in the order given. Self when
        nothing changes, else a new model (self is left as it was)."""
        if list(names) == self.names:
            return self
        wanted = set(names)
        out = self.copy([i for i, n in enumerate(self.names) if n in wanted])
        out._add([n for n in names if n not in set(out.names)])
        return out.copy([out.names.index(n) for n in names])

    def copy(self, indices: Sequence[int] | None = None) -> FamiliarityModel:
        idx = list(range(len(self.names))) if indices is None else list(indices)
        return FamiliarityModel(
            projection=self.projection,
            seed=self.seed,
            hyper=self.hyper,
            names=[self.names[i] for i in idx],
            weight=self.weight[idx].copy(),
            target=self.target[idx].copy(),
            allocated=self.allocated,
            routed=self.routed,
            buffer=self.buffer,
        )

    # -- familiarity and routing -----------------------------------------------------------------

    def features(self, x: Array) -> Array:
        return self.projection.apply(x)

    def familiarity_z(self, z: Array) -> Array:
        """f_i for features `z` (already projected), in `names` order."""
        t = np.einsum("nrq,q->nr", self.target, z)
        e = np.einsum("nrq,q->nr", self.weight, z) - t
        scale = np.maximum(np.einsum("nr,nr->n", t, t), np.float32(1e-12))
        d = np.einsum("nr,nr->n", e, e) / scale
        out: Array = np.exp(-d / np.float32(self.hyper.tau))
        return out

    def familiarity(self, x: Array) -> Array:
        """f_i for the raw embedding `x`, in `names` order."""
        return self.familiarity_z(self.features(x))

    def route(self, x: Array, *, explore: bool = False) -> Routing:
        h = self.hyper
        fam = [float(f) for f in self.familiarity(x)]
        score = list(fam)
        if explore and h.exploration > 0:
            for i, name in enumerate(self.names):
                n_i = self.allocated.get(name, 0)
                score[i] += exploration_bonus(n_i, self.routed, h.exploration)
        order = sorted(range(len(self.names)), key=lambda i: (-score[i], self.names[i]))
        ranked = [fam[i] for i in order]
        k, reached = cutoff(ranked, h.theta, h.k_min, h.k_max)
        names = tuple(self.names[i] for i in order)
        return Routing(
            skills=names[:k],
            ranked=names,
            familiarity={self.names[i]: fam[i] for i in order},
            score={self.names[i]: score[i] for i in order},
            cumulative=sum(ranked[:k]),
            reached=reached,
        )

    # -- learning --------------------------------------------------------------------------------

    def learn(self, batch: Sequence[Observation], vectors: Mapping[str, Array]) -> LearnStats:
        """Learn from one minibatch of rollouts: counts, buffer, then one step per (rollout,
        active skill) of the buffer (`replay`) or of the batch. `vectors` maps task keys (of
        the batch and the buffer) to embeddings; a rollout whose key it lacks only counts.
        The statistics returned are the batch's steps."""
        stats = LearnStats()
        known = set(self.names)
        for ob in batch:
            self.routed += 1
            for name in dict.fromkeys(ob.skills):
                if name in known:
                    self.allocated[name] = self.allocated.get(name, 0) + 1
        self.buffer = [*self.buffer, *batch][-self.hyper.buffer :]
        past = [ob for ob in self.buffer if ob.key in vectors]
        if not past:
            return stats
        zs = np.stack([self.features(vectors[ob.key]) for ob in past])
        rewards = np.array([ob.reward for ob in past], np.float32)
        members = {n: np.array([n in ob.skills for ob in past]) for n in self.names}
        steps, first_new = list(batch), 0
        if self.hyper.replay:  # refit from zero on the buffer; the batch is its tail
            self.weight = np.zeros_like(self.weight)
            steps, first_new = self.buffer, len(self.buffer) - len(batch)
        replayed = LearnStats()  # the buffer's older rollouts: not this minibatch's statistics
        for j, ob in enumerate(steps):
            active = [n for n in dict.fromkeys(ob.skills) if n in known]
            if not active or ob.key not in vectors:
                continue
            z = self.features(vectors[ob.key])
            weights = np.square(np.maximum(zs @ z, np.float32(0.0)))
            into = stats if j >= first_new else replayed
            for name, a in zip(
                active, self.advantages(ob, active, weights, rewards, members), strict=True
            ):
                into.advantages.append(a)
                self._step(self.names.index(name), z, a, into)
        return stats

    def advantages(
        self,
        ob: Observation,
        active: Sequence[str],
        weights: Array,
        rewards: Array,
        members: Mapping[str, npt.NDArray[np.bool_]],
    ) -> list[float]:
        """The advantage of each active skill of rollout `ob` (see the module docstring);
        `weights` are the buffered rollouts' similarity weights to its task."""
        reward = float(ob.reward)
        if len(active) == 1:
            return [2.0 * reward - 1.0]
        zero = np.float32(0.0)

        def rate(w: Array, default: float) -> float:
            total = float(w.sum())
            return float(w @ rewards) / total if total > 1e-9 else default

        overall = rate(weights, reward)
        inside = [rate(np.where(members[n], weights, zero), reward) for n in active]
        if self.hyper.credit == "relative":
            base = [sum(inside) / len(inside)] * len(active)
        else:
            base = [rate(np.where(members[n], zero, weights), overall) for n in active]
        push = self.hyper.failure_push * (1.0 - reward)
        return [a - b - push for a, b in zip(inside, base, strict=True)]

    def _step(self, i: int, z: Array, advantage: float, stats: LearnStats) -> None:
        h = self.hyper
        t = self.target[i] @ z
        e = self.weight[i] @ z - t
        scale = max(float(t @ t), 1e-12)
        if advantage > 0:
            stats.pulls += 1
        elif advantage < 0 and float(e @ e) / scale < h.margin:
            stats.pushes += 1  # gradient ascent on the distance, up to the margin
        else:
            stats.neutral += 1
            return
        step = min(1.0, h.lr * abs(advantage) * 2.0 / scale) * (1.0 if advantage > 0 else -1.0)
        self.weight[i] -= np.outer(np.float32(step) * e, z).astype(np.float32)

    # -- plain data ------------------------------------------------------------------------------

    def heads_json(self) -> dict[str, Any]:
        """The heads and the projection: what routing needs."""
        return {
            "format": FORMAT,
            "seed": self.seed,
            "hyper": self.hyper.to_json(),
            "projection": self.projection.to_json(),
            "names": list(self.names),
            "weight": encode_array(self.weight),
            "target": encode_array(self.target),
        }

    def to_json(self) -> dict[str, Any]:
        """Everything, for the run state (the counts and the buffer too)."""
        return {
            **self.heads_json(),
            "allocated": dict(sorted(self.allocated.items())),
            "routed": self.routed,
            "buffer": [[ob.key, list(ob.skills), ob.reward] for ob in self.buffer],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], hyper: Hyper | None = None) -> FamiliarityModel:
        """What `to_json` or `heads_json` wrote (`ValueError` or `KeyError` if it is not);
        `hyper` replaces the stored hyperparameters, except the shapes'."""
        if data.get("format") != FORMAT:
            raise ValueError(f"router format {data.get('format')!r} is not {FORMAT}")
        stored = Hyper(**data["hyper"])
        projection = Projection.from_json(data["projection"])
        names = [str(n) for n in data["names"]]
        weight = decode_array(data["weight"]).astype(np.float32)
        target = decode_array(data["target"]).astype(np.float32)
        r = min(stored.reference_dim, projection.dim)
        if weight.shape != (len(names), r, projection.dim) or target.shape != weight.shape:
            raise ValueError("head shapes do not match the skills and the projection")
        if hyper is not None:
            stored = replace(hyper, reference_dim=stored.reference_dim)
        return cls(
            projection=projection,
            seed=int(data["seed"]),
            hyper=stored,
            names=names,
            weight=weight,
            target=target,
            allocated={str(k): int(v) for k, v in data.get("allocated", {}).items()},
            routed=int(data.get("routed", 0)),
            buffer=[Observation(str(k), tuple(s), float(w)) for k, s, w in data.get("buffer", [])],
        )
