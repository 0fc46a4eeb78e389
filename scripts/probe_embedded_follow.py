"""Which skill sentences the embedded model (SmolLM2-135M) follows: follow rates with vs without.

    python scripts/probe_embedded_follow.py [--prompts 20] [--samples 1] [--only closing,fact-qa]
                                            [--variants none,first,last,k2,plain,user]
                                            [--temperature 0.2]

The agent's system prompt is built exactly as the harness builds it (`system_prompt`: the
`agent_system` preamble, then `## Skill: <name>` and the body), the task is the user message,
and the call goes through moscopt's own LM seam (`build_lm`, model `local/smollm2`, the default
temperature and top_p, `max_tokens` 128 as in README command 1, one thread). For each candidate
requirement (a fact to copy, a closing line, an opening line, a template, a heading, a field)
and each variant, the table gives the share of answers that pass the candidate's rule check:

- none:  the deficient seed skill (the generic support skill, without the sentence);
- first: the sentence as the first line of the seed skill's body;
- last:  the sentence after the seed skill's other lines;
- k2:    `first`, with a second selected skill (the seed library's answer-formatting) before it;
- plain: an optimizer-style wording of the same requirement, as the first line;
- user:  the sentence appended to the task (the user turn), seed skill in the system prompt:
         not something a skill can do today; it says whether the position is what matters.

Each cell is over `--prompts` task prompts x `--samples` sample indices; the load average is
printed with the figures. A cache (default a temporary directory) makes a rerun free.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from moscopt.agent.harness import system_prompt
from moscopt.config import Config, LLMConfig, SamplingConfig
from moscopt.core.resources import seed_skills_dir
from moscopt.core.skills import Pool, Skill
from moscopt.lm import build_lm
from moscopt.lm.base import Message

SEED_LINES = [
    "Read the customer's message and answer the question they ask.",
    "Keep the reply short: two or three sentences.",
    "Be polite and do not promise what you cannot check.",
]

PROMPTS = [
    "Customer message: 'Can I change the delivery address of my order?' Write a short reply.",
    "Customer message: 'My invoice shows the wrong company name.' Write a short reply.",
    "Customer message: 'How do I reset my password?' Write a short reply.",
    "Customer message: 'The app crashes when I open the settings page.' Write a short reply.",
    "Customer message: 'Do you ship to Canada?' Write a short reply.",
    "Customer message: 'I was charged twice this month.' Write a short reply.",
    "Customer message: 'Can I get a refund for an unused subscription?' Write a short reply.",
    "Customer message: 'Where can I download last year's invoices?' Write a short reply.",
    "Customer message: 'My package arrived damaged.' Write a short reply.",
    "Customer message: 'How do I add a second user to my account?' Write a short reply.",
    "Customer message: 'Is there a discount for non-profits?' Write a short reply.",
    "Customer message: 'I cannot log in since the last update.' Write a short reply.",
    "Customer message: 'Can I pause my plan for two months?' Write a short reply.",
    "Customer message: 'The export to CSV is missing a column.' Write a short reply.",
    "Customer message: 'How long does delivery to Germany take?' Write a short reply.",
    "Customer message: 'Please delete my account and my data.' Write a short reply.",
    "Customer message: 'Can I upgrade to the Pro plan mid-month?' Write a short reply.",
    "Customer message: 'The confirmation email never arrived.' Write a short reply.",
    "Customer message: 'Do you offer phone support?' Write a short reply.",
    "Customer message: 'My discount code does not work.' Write a short reply.",
    "Customer message: 'Can I change the email address on my account?' Write a short reply.",
    "Customer message: 'The dashboard shows yesterday's numbers.' Write a short reply.",
    "Customer message: 'Is my data stored in the EU?' Write a short reply.",
    "Customer message: 'I ordered the wrong size, can I swap it?' Write a short reply.",
]


@dataclass(frozen=True)
class Candidate:
    name: str
    sentence: str  # the skill line that carries the requirement
    plain: str  # an optimizer-style wording of it
    pattern: str  # the rule check: a regex searched in the answer (re.MULTILINE)
    ignore_case: bool = False
    prompts: tuple[str, ...] = tuple(PROMPTS)


CANDIDATES = [
    Candidate(
        "fact",
        "Our support email is help@acme.example: give it in every reply.",
        "Always include the support email help@acme.example in the reply.",
        re.escape("help@acme.example"),
    ),
    Candidate(
        "closing",
        "End every reply with: -- The Acme Team",
        "Always sign off the reply with '-- The Acme Team'.",
        re.escape("The Acme Team"),
    ),
    Candidate(
        "opening",
        "Start every reply with: Hello from Acme!",
        "Always begin the reply with 'Hello from Acme!'.",
        r"\A\W*Hello from Acme",
    ),
    Candidate(
        "template",
        "Reply in this form:\nTicket: ACME-<number>\nAnswer: <one sentence>",
        "Always write the ticket reference as 'Ticket: ACME-<number>' on the first line.",
        r"Ticket:\s*ACME-\d+",
    ),
    Candidate(
        "heading",
        "Begin every reply with the heading ## Summary",
        "Always start the reply with a '## Summary' heading.",
        r"^#{1,6}\s*Summary",
        ignore_case=True,
    ),
    Candidate(
        "field",
        "End every reply with the line: Confidence: high",
        "Always add a 'Confidence: high' line at the end.",
        r"Confidence:",
    ),
]

EMAIL_QUESTIONS = (
    "What is the email address of Acme support?",
    "What is Acme's support email?",
    "Which email address should I write to for help with my Acme account?",
    "Customer question: 'What email do I use to reach Acme support?' Answer it.",
    "How do I contact Acme support by email?",
    "Where do I send an email about a billing problem with Acme?",
    "I need Acme's customer support email address, please.",
    "Give me the email of Acme's help desk.",
    "What address do I email to report a bug in the Acme app?",
    "Customer question: 'Is there an email for Acme support?' Answer it.",
    "Tell the customer the Acme support email address.",
    "What email can I use to ask Acme about a refund?",
    "Who do I email at Acme about a damaged package?",
    "What is the contact email for Acme customer service?",
    "Which email should a customer use to reach Acme?",
    "Customer question: 'How can I email you about my order?' Answer it.",
    "Where can I email Acme to delete my account?",
    "What's the support email for Acme customers?",
    "A customer asks for Acme's support email. Reply in one sentence.",
    "Customer question: 'Where should I send my invoice question?' Answer it.",
    "What email address handles Acme support tickets?",
    "How do I write to Acme's support team?",
    "Customer question: 'What is your email?' Answer it as Acme support.",
    "What is the best email to contact Acme support?",
)

CANDIDATES.append(
    Candidate(
        "fact-qa",
        "Acme's support email is help@acme.example.",
        "Always give the support email help@acme.example when asked how to contact Acme.",
        re.escape("help@acme.example"),
        prompts=EMAIL_QUESTIONS,
    )
)

VARIANTS = ("none", "first", "last", "k2", "plain", "user")


def skill(body_lines: list[str]) -> Skill:
    return Skill(
        name="support-replies",
        description="Write short replies to Acme customers' messages.",
        body="\n".join(body_lines),
    )


def messages(candidate: Candidate, variant: str, prompt: str, other: Skill) -> list[Message]:
    """The agent's messages for one (candidate, variant, prompt), as the harness builds them."""
    lines, task, skills = list(SEED_LINES), prompt, []
    if variant in ("first", "k2"):
        lines.insert(0, candidate.sentence)
    elif variant == "last":
        lines.append(candidate.sentence)
    elif variant == "plain":
        lines.insert(0, candidate.plain)
    elif variant == "user":
        task = f"{prompt}\n\n{candidate.sentence}"
    if variant == "k2":
        skills.append(other)
    skills.append(skill(lines))
    system = system_prompt(skills, [])
    assert system is not None
    return [{"role": "system", "content": system}, {"role": "user", "content": task}]


def passes(candidate: Candidate, text: str) -> bool:
    flags = re.MULTILINE | (re.IGNORECASE if candidate.ignore_case else 0)
    return re.search(candidate.pattern, text, flags) is not None


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=20)
    ap.add_argument("--samples", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated candidate names")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=None, help="default: the config's")
    ap.add_argument("--cache", default="", help="cache directory (default: a temporary one)")
    ap.add_argument("--show", type=int, default=0, help="print this many answers per cell")
    args = ap.parse_args()
    chosen = [c for c in CANDIDATES if not args.only or c.name in args.only.split(",")]
    variants = [v for v in args.variants.split(",") if v]
    cache = Path(args.cache) if args.cache else Path(tempfile.mkdtemp(prefix="probe-follow-"))
    config = Config(
        sampling=SamplingConfig(
            max_tokens=args.max_tokens,
            **({} if args.temperature is None else {"temperature": args.temperature}),
        ),
        llm=LLMConfig(threads=1),
    )
    lm = build_lm(config, cache_dir=cache)
    other = Pool.load(seed_skills_dir()).get("answer-formatting")
    print(f"model {config.model}, {config.sampling}, threads 1; {load()}")
    print(f"{'candidate':10} " + " ".join(f"{v:>9}" for v in variants) + "   s/call")
    started, calls = time.perf_counter(), 0
    for candidate in chosen:
        cells, spent, made = [], 0.0, 0
        for variant in variants:
            hits = total = 0
            for p, prompt in enumerate(candidate.prompts[: args.prompts]):
                for sample in range(args.samples):
                    t = time.perf_counter()
                    done = lm.complete(messages(candidate, variant, prompt, other), sample=sample)
                    if not done.cache_hit:
                        spent, made = spent + time.perf_counter() - t, made + 1
                    hit = passes(candidate, done.text)
                    hits, total = hits + hit, total + 1
                    if p < args.show and sample == 0:
                        print(
                            f"  [{candidate.name}/{variant} {'PASS' if hit else 'fail'}] "
                            + done.text.strip().replace("\n", " | ")[:300]
                        )
            cells.append(f"{hits:>3}/{total:<3}  ")
        calls += made
        per = f"{spent / made:.2f}" if made else "-"
        print(f"{candidate.name:10} " + " ".join(cells) + f"   {per}  ({load()})", flush=True)
    print(f"{calls} calls in {time.perf_counter() - started:.0f} s; {load()}")


if __name__ == "__main__":
    main()
