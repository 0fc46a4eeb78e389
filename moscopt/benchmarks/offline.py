"""The offline benchmark: procedurally generated, seeded, exactly gradable, no download.

Six task families, each easy to state and (but the first) easy to get wrong without a method,
so that a written strategy (compute step by step, use the Python tool, count letter by letter,
check the calendar) can move the score: one-step basics, multi-step arithmetic, unit
conversions, date arithmetic, letter counting and word/letter reversal. Answers are short
numbers, weekday names, ISO dates or a few words, compared canonically by the `exact` grader.
Family in `meta["family"]`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass

from moscopt.benchmarks.records import stable_seed


@dataclass(frozen=True)
class OfflineItem:
    id: str
    family: str
    question: str
    answer: str


def _basics(rng: random.Random) -> tuple[str, str]:
    """One-step arithmetic on small numbers: the floor that even a tiny model can reach."""
    a, b = rng.randint(2, 20), rng.randint(2, 12)
    op = rng.choice("+-*")
    value = a + b if op == "+" else a - b if op == "-" else a * b
    return f"What is {a} {op} {b}?", str(value)


def _arithmetic(rng: random.Random) -> tuple[str, str]:
    a, b, c, d = rng.randint(12, 99), rng.randint(3, 29), rng.randint(3, 9), rng.randint(5, 60)
    form = rng.randrange(3)
    if form == 0:
        expr, value = f"{a} + {b} * {c} - {d}", a + b * c - d
    elif form == 1:
        expr, value = f"({a} + {b}) * {c} - {d}", (a + b) * c - d
    else:
        expr, value = f"{a} * {c} - {b} * {d % 9 + 2}", a * c - b * (d % 9 + 2)
    return f"Compute {expr}.", str(value)


_CONVERSIONS = [
    ("kilometers", "meters", 1000),
    ("meters", "centimeters", 100),
    ("hours", "minutes", 60),
    ("minutes", "seconds", 60),
    ("kilograms", "grams", 1000),
    ("days", "hours", 24),
    ("weeks", "days", 7),
    ("feet", "inches", 12),
    ("yards", "feet", 3),
    ("days", "minutes", 24 * 60),
    ("hours", "seconds", 3600),
    ("yards", "inches", 36),
]


def _units(rng: random.Random) -> tuple[str, str]:
    src, dst, factor = rng.choice(_CONVERSIONS)
    if rng.random() < 0.4:
        value = rng.randint(1, 12) + 0.5  # e.g. 3.5 hours
        amount = f"{value:g}"
        result = value * factor
    else:
        value_i = rng.randint(2, 40)
        amount, result = str(value_i), value_i * factor
    return f"Convert {amount} {src} to {dst}.", f"{result:g}"


_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _dates(rng: random.Random) -> tuple[str, str]:
    start = dt.date(2019, 1, 1) + dt.timedelta(days=rng.randrange(365 * 6))
    form = rng.randrange(3)
    if form == 0:
        when = start.strftime("%B %d, %Y").replace(" 0", " ")
        return f"What day of the week was {when}?", _WEEKDAYS[start.weekday()]
    span = rng.randint(10, 120)
    end = start + dt.timedelta(days=span)
    if form == 1:
        return (
            f"How many days are there from {start.isoformat()} to {end.isoformat()}?",
            str(span),
        )
    return (
        f"What date is {span} days after {start.isoformat()}? Answer as YYYY-MM-DD.",
        end.isoformat(),
    )


_WORDS = [
    "strawberry",
    "bookkeeper",
    "mississippi",
    "banana",
    "committee",
    "assessment",
    "parallel",
    "successful",
    "millennium",
    "occurrence",
    "possession",
    "referee",
    "tennessee",
    "balloon",
    "cappuccino",
    "necessary",
    "embarrass",
    "accommodate",
    "address",
    "coffee",
    "giraffe",
    "hippopotamus",
    "pepper",
    "raspberry",
    "seventeen",
    "engineer",
    "illinois",
    "difference",
    "programming",
    "bubblegum",
]


def _counting(rng: random.Random) -> tuple[str, str]:
    word = rng.choice(_WORDS)
    letter = rng.choice(sorted(set(word)))
    return (
        f'How many times does the letter "{letter}" appear in the word "{word}"?',
        str(word.count(letter)),
    )


_VOCAB = [
    "apple",
    "river",
    "stone",
    "cloud",
    "lamp",
    "forest",
    "tiger",
    "window",
    "silver",
    "garden",
    "rocket",
    "pencil",
    "ocean",
    "marble",
    "candle",
    "violin",
    "desert",
    "bridge",
    "orange",
    "planet",
]


def _reversal(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        picked = rng.sample(_VOCAB, rng.randint(4, 6))
        return (
            "Reverse the order of these words: " + " ".join(picked),
            " ".join(reversed(picked)),
        )
    word = rng.choice(_VOCAB + _WORDS[:10])
    return f'Write the word "{word}" backwards, letter by letter reversed.', word[::-1]


FAMILIES: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "basics": _basics,
    "arithmetic": _arithmetic,
    "units": _units,
    "dates": _dates,
    "counting": _counting,
    "reversal": _reversal,
}


def generate_items(count: int, seed: int) -> list[OfflineItem]:
    """`count` distinct items, families in turn; the same (count, seed) gives the same items,
    and a larger count only adds items (item i depends on seed and i alone)."""
    names = list(FAMILIES)
    items: list[OfflineItem] = []
    seen: set[str] = set()
    i = 0
    while len(items) < count:
        family = names[i % len(names)]
        rng = random.Random(stable_seed(f"offline:{seed}:{i}"))
        i += 1
        question, answer = FAMILIES[family](rng)
        digest = hashlib.sha256(question.encode("utf-8")).hexdigest()[:10]
        item_id = f"offline-{family}-{digest}"
        if item_id in seen:
            continue
        seen.add(item_id)
        items.append(OfflineItem(item_id, family, question, answer))
    return items
