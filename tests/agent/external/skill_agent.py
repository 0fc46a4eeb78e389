"""A script agent for the external-agent harness tests: it reads its skills folder.

It answers `Compute a + b.` tasks correctly only when one of the skills in its folder contains
the rule `MAGIC` (as a real agent follows a skill it was given), and says on stderr which
skills it saw. Options: --skills DIR (default .claude/skills), --task TEXT (default: stdin),
--answer-file PATH (default: stdout), --sleep SECONDS, --spam BYTES (of stdout), --exit CODE.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

MAGIC = "Always double-check the final number."


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--skills", default=".claude/skills")
    p.add_argument("--task")
    p.add_argument("--answer-file")
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--spam", type=int, default=0)
    p.add_argument("--exit", type=int, default=0)
    args = p.parse_args()
    task = args.task if args.task is not None else sys.stdin.read()
    folder = Path(args.skills)
    names = sorted(d.name for d in folder.iterdir() if (d / "SKILL.md").is_file())
    follows = any(MAGIC in (folder / n / "SKILL.md").read_text() for n in names)
    print(f"skills seen: {', '.join(names) or 'none'}", file=sys.stderr)
    if args.sleep:
        time.sleep(args.sleep)
    if args.spam:
        sys.stdout.write("x" * args.spam + "\n")
    m = re.search(r"Compute (\d+) \+ (\d+)", task)
    gold = int(m.group(1)) + int(m.group(2)) if m else -1
    answer = f"Checked twice.\nFINAL ANSWER: {gold}" if follows else "FINAL ANSWER: 0"
    if args.answer_file:
        Path(args.answer_file).write_text(answer + "\n")
        print("wrote the answer file")
    else:
        print(answer)
    return args.exit


if __name__ == "__main__":
    sys.exit(main())
