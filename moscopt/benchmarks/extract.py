"""Answer extraction from a model's response: pure functions of text, never raising.

The answer a response gives is, in order of preference, the content of whichever comes last of
`\\boxed{...}` (balanced braces) and a `FINAL ANSWER: ...` line. Multiple choice letters,
numbers and code blocks have their own extractors built on top.
"""

from __future__ import annotations

import re

# "FINAL ANSWER: x", "**Final answer:** x", "The final answer is x" (a bare "final answer"
# inside a sentence is not a marker).
_FINAL_RE = re.compile(r"(?i)\**\s*final\s+answer\s*\**\s*(?:[:\uff1a]|is\b\s*:?)\s*\**[ \t]*")
_BOXED_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
_NUMBER_RE = re.compile(
    r"[-\u2212]?\s?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?|[-\u2212]?\.\d+"
)
_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n")


def last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` with balanced braces (None if absent or unclosed)."""
    found = None
    for m in _BOXED_RE.finditer(text):
        content = _balanced(text, m.end())
        if content is not None:
            found = (m.start(), content)
    return found[1].strip() if found else None


def _balanced(text: str, start: int) -> str | None:
    """Text from `start` up to the brace closing the one just before `start`."""
    depth = 1
    i = start
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in "{}":
            i += 2  # an escaped brace does not count
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
        i += 1
    return None


def final_answer_line(text: str) -> str | None:
    """The rest of the line after the last `FINAL ANSWER:` marker (None if absent or empty)."""
    matches = list(_FINAL_RE.finditer(text))
    if not matches:
        return None
    rest = text[matches[-1].end() :]
    line = rest.split("\n", 1)[0]
    if not line.strip() and "\n" in rest:  # "FINAL ANSWER:\n42"
        line = next((ln for ln in rest.split("\n") if ln.strip()), "")
    cleaned = _strip_decoration(line)
    return cleaned or None


def _strip_decoration(s: str) -> str:
    s = s.strip().strip("*").strip()
    if s.startswith("`") and s.endswith("`") and len(s) > 1:
        s = s.strip("`").strip()
    return s


def extract_answer(text: str) -> str | None:
    """The final answer: the later of the last `\\boxed{}` and the last `FINAL ANSWER:` line."""
    final = list(_FINAL_RE.finditer(text))
    boxed = list(_BOXED_RE.finditer(text))
    final_pos = final[-1].start() if final else -1
    boxed_pos = max((m.start() for m in boxed if _balanced(text, m.end()) is not None), default=-1)
    if final_pos < 0 and boxed_pos < 0:
        return None
    if final_pos > boxed_pos:
        line = final_answer_line(text)
        if line is not None and (inner := last_boxed(line)) is not None:
            return inner
        return line
    return last_boxed(text)


def last_number(text: str) -> str | None:
    """The last number written in `text` (commas, `$` and a unicode minus are normalized)."""
    matches = _NUMBER_RE.findall(text)
    if not matches:
        return None
    return normalize_number_text(matches[-1])


def normalize_number_text(s: str) -> str:
    return s.replace("\u2212", "-").replace("$", "").replace(",", "").replace(" ", "")


def extract_number(text: str) -> str | None:
    """A number from the final answer if there is one, else the last number in the text."""
    answer = extract_answer(text)
    if answer is not None:
        found = _NUMBER_RE.search(answer.replace("\\!", "").replace("{,}", ","))
        if found:
            return normalize_number_text(found.group(0))
    return last_number(text)


def extract_choice(text: str, letters: str = "ABCD") -> str | None:
    """The multiple-choice letter a response settles on (robust to "(B)", "Answer: B", "**B**")."""
    cls = "[" + re.escape(letters) + "]"
    answer = extract_answer(text)
    if answer is not None:
        m = re.search(rf"(?<![A-Za-z]){cls}(?![A-Za-z])", answer)
        if m:
            return m.group(0)
    # Patterns from most to least explicit; within one pattern the last match wins.
    patterns = [
        rf"(?i:answer)\s*(?:(?i:is)\s*)?[:\-]?\s*(?:(?i:option)\s*)?[*_]*\(?({cls})\)?(?![A-Za-z])",
        rf"\*\*\s*\(?({cls})\)?\s*\*\*",
        rf"(?m)^\s*\(?({cls})\)?[.)]?\s*$",
        rf"\(({cls})\)",
    ]
    for p in patterns:
        found = re.findall(p, text)
        if found:
            return str(found[-1])
    return None


def extract_code(text: str) -> str:
    """The last ```python block (else the last fenced block, else the whole text).

    A response cut off inside a block (no closing fence) yields the rest of the text after the
    opening fence.
    """
    blocks: list[tuple[str, str]] = []
    pos = 0
    while True:
        m = _FENCE_RE.search(text, pos)
        if m is None:
            break
        end = text.find("```", m.end())
        if end < 0:
            blocks.append((m.group(1).lower(), text[m.end() :]))
            break
        blocks.append((m.group(1).lower(), text[m.end() : end]))
        pos = end + 3
    python = [b for lang, b in blocks if lang in ("python", "py", "python3")]
    if python:
        return python[-1]
    if blocks:
        return blocks[-1][1]
    return text


# -- the answer a reply states (a step's proposal, not its grade) ---------------------------------

_CODE_BLOCK_RE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
# "The answer is 42", "So the final answer is: 42", "**Answer:** 42", "Answer = 42"
_ANSWER_IS_RE = re.compile(
    r"(?i)(?<![\w-])(?:the\s+)?(?:final\s+|correct\s+)?answer\s*\**\s*(?:is\b\s*:?|[:=])\s*\**"
    r"[ \t]*(?P<rest>[^\n]*)"
)
# a JSON field: {"answer": 42} or {"final_answer": "x"}
_JSON_FIELD_RE = re.compile(
    r"""(?i)["'](?:final_)?answer["']\s*:\s*(?:"(?P<s>(?:[^"\\\n]|\\.)*)"|(?P<v>[^,}\s\n]+))"""
)
_HEDGE_RE = re.compile(r"(?i)^(?:probably|likely|approximately|about|around|roughly)\s+")
_SENTENCE_END_RE = re.compile(
    r"(?<!\d)\.(?:\s|$)|[.;!?](?=\s+[A-Z])|\s+\((?!\d)|\s[-\u2014]\s"
    r"|,?\s+(?=(?:since|because|as|which|but|though|although|given|so|and\s+(?:I|we))\b)"
)
_BARE_LINE_RE = re.compile(r"^[-\u2212+$]?\s?[\d.,/%]+$")
# what follows "the answer is" when no answer is stated: "not 42", "still unclear", "what we..."
_NO_ANSWER_RE = re.compile(
    r"(?i)^(?:not|no\s+longer|unclear|unknown|uncertain|undetermined|still|yet|we|i|it|that|"
    r"what|which|whether|to|being|going|in\s+the|somewhere|between|either|one\s+of)\b"
)
_ASKING_RE = re.compile(r"(?i)\b(?:what|whether|if|how)\s+(?:\w+\s+){0,3}$")
MAX_PHRASE_WORDS = 12  # "the answer is" followed by more words is a sentence, not an answer
MAX_STATED_CHARS = 200  # a longer "answer" is a sentence, not an answer


def stated_answer(text: str) -> str | None:
    """The answer a reply states, in the forms models write, whether or not it also asks for a
    tool: what `extract_answer` reads (`\\boxed{}`, a `FINAL ANSWER:` line), else the last
    "the answer is X" / "Answer: X", else a JSON `"answer"` field, else a final line that is
    only a number or an emphasised value (`**42**`). Code blocks are never read (a reply that
    calls a tool shows its code); a hedge ("probably") is dropped. None when it states none.
    """
    prose = _CODE_BLOCK_RE.sub("\n", text)
    found = extract_answer(prose)
    if found is None:
        found = _last_phrase(prose)
    if found is None:
        found = _json_field(prose)
    if found is None:
        found = _bare_final_line(prose)
    if found is None:
        return None
    previous = None
    while found != previous:  # "**1,234**." -> "1,234"
        previous = found
        found = _strip_decoration(found.strip().rstrip(".,;:"))
    return found if found and len(found) <= MAX_STATED_CHARS else None


def _last_phrase(prose: str) -> str | None:
    """The value of the last "the answer is X" that states one (not a question, a negation or
    a wondering "what the answer is")."""
    for m in reversed(list(_ANSWER_IS_RE.finditer(prose))):
        line_start = prose.rfind("\n", 0, m.start()) + 1
        if _ASKING_RE.search(prose[line_start : m.start()]):
            continue  # "let me check what the answer is"
        rest = _HEDGE_RE.sub("", m.group("rest").strip().lstrip("*").strip())
        end = _SENTENCE_END_RE.search(rest)
        value = (rest[: end.start()] if end else rest).strip()
        if value.endswith("?") or (end is None and rest.rstrip().endswith("?")):
            continue  # a question
        value = value.rstrip(".,;:").strip()
        if value.startswith("\\boxed") and (inner := last_boxed(value)) is not None:
            value = inner
        if value and not _NO_ANSWER_RE.match(value) and len(value.split()) <= MAX_PHRASE_WORDS:
            return value
    return None


def _json_field(prose: str) -> str | None:
    import json

    matches = list(_JSON_FIELD_RE.finditer(prose))
    if not matches:
        return None
    m = matches[-1]
    if m.group("s") is None:
        return m.group("v").strip().strip("\"'") or None
    try:
        return str(json.loads(f'"{m.group("s")}"'))
    except ValueError:
        return m.group("s")


def _bare_final_line(prose: str) -> str | None:
    lines = [ln.strip() for ln in prose.strip().splitlines() if ln.strip()]
    if not lines:
        return None
    last = lines[-1]
    emphasised = len(last) > 4 and last.startswith("**") and last.endswith("**")
    if emphasised or _BARE_LINE_RE.match(last):
        return last.strip("*").strip() or None
    return None
