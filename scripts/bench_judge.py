"""What a biased rubric judge does to the rewards moscopt computes, and what moscopt does about it.

    python scripts/bench_judge.py [--answers 200] [--criteria 4] [--seed 0]

A loopback world (`moscopt.testing.FakeServer`) plays the judge model; `moscopt.benchmarks.rubric`
asks it, through the ordinary LM client, to score `--answers` answers against rubrics of
`--criteria` criteria. Each answer truly meets a random half of its criteria (a criterion quotes
a token; the answer holds the tokens it meets), so the true reward is known. Three judges:

- fair: marks a criterion met when its token is in the answer;
- position-biased: also marks met whichever criterion it is shown first;
- length-biased: also marks every criterion met when the answer is over 400 characters
  (half the answers are padded to that length).

For each judge, the table shows the mean reward error (judged - true), the false-pass rate of
each criterion (judged met while truly unmet), and the same with the criteria in their file
order instead of the order moscopt draws per answer (the ablation). No cache: every call made.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
from typing import Any

from moscopt.benchmarks import rubric
from moscopt.benchmarks.judges import RubricJudge
from moscopt.config import Config
from moscopt.lm import build_lm
from moscopt.testing import FakeServer

LONG = 400


def judge_world(bias: str) -> Any:
    def respond(body: dict[str, Any]) -> str:
        import json

        text = body["messages"][-1]["content"]
        criteria_part, _, rest = text.partition("## The answer")
        answer = rest.split("## What to write", 1)[0]
        criteria = re.findall(r"^\d+\. (.+)$", criteria_part, re.MULTILINE)
        verdicts = []
        for i, c in enumerate(criteria):
            token = re.findall(r'"([^"]+)"', c)[0]
            leaning = (bias == "position" and i == 0) or (bias == "length" and len(answer) > LONG)
            met = token in answer or leaning
            verdicts.append({"why": "-", "met": met})
        return json.dumps({"verdicts": verdicts})

    return respond


def cases(n: int, k: int, seed: int) -> list[tuple[RubricJudge, str, list[bool]]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        tokens = [f"T{i}x{j}" for j in range(k)]
        truth = [rng.random() < 0.5 for _ in range(k)]
        judge = RubricJudge(kind="rubric", criteria=[f'Mentions "{t}"' for t in tokens])  # type: ignore[arg-type]
        answer = "Answer: " + " ".join(t for t, ok in zip(tokens, truth, strict=True) if ok)
        if i % 2:
            answer += "\n" + "padding " * (LONG // 8 + 1)
        out.append((judge, answer, truth))
    return out


async def measure(lm: Any, items: list[tuple[RubricJudge, str, list[bool]]]) -> dict[str, Any]:
    k = len(items[0][2])
    error, false_pass, unmet = 0.0, [0] * k, [0] * k
    grades = await asyncio.gather(*(rubric.judge_rubric(lm, j, a) for j, a, _ in items))
    for (judge, _, truth), grade in zip(items, grades, strict=True):
        met = [c.criterion not in grade.detail.partition("not met:")[2] for c in judge.criteria]
        error += grade.reward - sum(truth) / k
        for j in range(k):
            if not truth[j]:
                unmet[j] += 1
                false_pass[j] += met[j]
    return {
        "error": error / len(items),
        "false_pass": [f / max(1, u) for f, u in zip(false_pass, unmet, strict=True)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--criteria", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    items = cases(args.answers, args.criteria, args.seed)
    drawn = rubric.criteria_order
    print(f"{args.answers} answers, {args.criteria} criteria each, half truly met at random")
    print(f"{'judge':<16}{'order':<11}{'reward error':>13}   false-pass rate by criterion")
    for bias in ("fair", "position", "length"):
        with FakeServer(responder=judge_world(bias)) as server:
            config = Config.model_validate(
                {"model": "openai/judge", "api_base": server.url, "llm": {"cache": False}}
            )
            lm = build_lm(config, api_key="sk-bench")
            try:
                for order in ("moscopt", "file order"):
                    if order == "file order":
                        rubric.criteria_order = lambda j, a: list(range(len(j.criteria)))  # type: ignore[assignment]
                    try:
                        row = asyncio.run(measure(lm, items))
                    finally:
                        rubric.criteria_order = drawn
                    rates = "  ".join(f"{r:.2f}" for r in row["false_pass"])
                    print(f"{bias:<16}{order:<11}{row['error']:>+13.3f}   {rates}")
            finally:
                lm.close()


if __name__ == "__main__":
    main()
