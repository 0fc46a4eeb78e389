"""What the user said after an answer, read without a model: corrections and re-asks, and the
requirements they state.

A user turn that follows an answer is a *correction* when it rejects or amends it ("no —
always put the risks first", "use our logger, not print", "that's wrong", "don't use
`eval`"), a *re-ask* when it repeats the request (most of its words again), else a new
request. Each correction sentence becomes a requirement: a rule check (task-file `CHECK`) when
it names something literal (a `code` span, a quoted string, an identifier, a number of words,
JSON, a heading), else a rubric criterion in the user's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from moscopt.lm.redact import MASK

_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be by can could do for from how i in is it me my of on or our please "
        "should so that the this to up us we what with would you your",
    )
)
_DASHES = "\u2014\u2013"  # em and en dash
_OPENERS = re.compile(
    r"^\s*(?:no+|nope|wrong|incorrect|not (?:like )?that|that'?s (?:not right|wrong|incorrect)|"
    r"this is (?:wrong|incorrect)|that is (?:wrong|incorrect|not right)|actually|again|stop|"
    r"don'?t|do not|never|always|you (?:forgot|missed|didn'?t|did not|need to|should)|"
    r"i (?:said|asked|told you|meant)|why did you|please don'?t|make sure|remember|keep it|"
    r"too (?:long|short|verbose)|shorter|you forgot)\b",
    re.IGNORECASE,
)
_ANYWHERE = re.compile(
    r"\b(?:instead of|rather than|that'?s wrong|i told you|not what i asked)\b|,\s*not\s+\S",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^\s*(?:(?:no+|nope|wrong|incorrect|actually|again|that'?s (?:not right|wrong|incorrect)|"
    r"(?:this|that) is (?:wrong|incorrect|not right))\b[\s,.;:!" + _DASHES + "-]*)+",
    re.IGNORECASE,
)
_BARE_REJECTION = re.compile(
    r"^\s*(?:no+|nope|wrong|incorrect|that'?s (?:not right|wrong|incorrect)|"
    r"(?:this|that) is (?:wrong|incorrect|not right)|try again)[\s.!]*$",
    re.IGNORECASE,
)
_USE_NOT = re.compile(
    r"^(?:please\s+)?(?:always\s+)?use\s+(.+?)(?:,?\s+not\s+|\s+instead\s+of\s+|\s+rather\s+than\s+)"
    r"(.+?)[.!]?$",
    re.IGNORECASE,
)
_NEVER = re.compile(
    r"^(?:please\s+)?(?:never|don'?t|do not|stop|no more)\s+(?:use|using|add|adding|write|"
    r"writing|include|including|mention|mentioning|call|calling|print|printing)?\s*(.+?)[.!]?$",
    re.IGNORECASE,
)
_INCLUDE = re.compile(
    r"^(?:please\s+)?(?:always\s+)?(?:include|add|mention|use|put in|write)\s+(.+?)[.!]?$",
    re.IGNORECASE,
)
_SECTION = re.compile(
    r"(?:an?|the)\s+(?:\"([^\"]+)\"|'([^']+)'|`([^`]+)`|([A-Z][\w ]{0,40}?))\s+(?:section|heading)"
    r"|(?:section|heading)\s+(?:called|named|titled)\s+\"?'?([\w ]{1,40}?)\"?'?[.!]?$",
)
_LENGTH = re.compile(
    r"\b(under|at most|no more than|less than|fewer than|max(?:imum)?(?: of)?|at least|"
    r"min(?:imum)?(?: of)?)\s+(\d{1,6})\s+(words|characters|chars)\b",
    re.IGNORECASE,
)
_JSON = re.compile(r"\b(?:valid|only|as|in|return|output)\s+json\b", re.IGNORECASE)
# a later sentence of a correction counts only when it asks for something
_DIRECTIVE = re.compile(
    r"\b(?:always|never|don'?t|do not|use|add|include|put|keep|make|should|must|need|remove|"
    r"avoid|write|start|end|return|only|instead|rather|not|no more|section|heading)\b",
    re.IGNORECASE,
)
_VAGUE = re.compile(r"^too (?:long|short|verbose|wordy|terse|vague)$", re.IGNORECASE)
# a quoted or code span, alone or followed by where it goes ("`Owner:` in it")
_QUOTED = re.compile(
    r"^(?:`([^`]+)`|\"([^\"]+)\"|'([^']+)')(?:\s+(?:in|into|to|at|anywhere|everywhere)\b.*)?$"
)
_CODEISH = re.compile(r"[()._/:=<>\[\]]|^[a-z]+_[a-z_]+$|^[a-z]+[A-Z]\w*$|^[A-Z0-9_]{3,}$")
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+|\s+[" + _DASHES + r"]\s+")


def words(text: str) -> set[str]:
    """The content words of `text` (lower case, stop words out)."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def jaccard(a: set[str], b: set[str]) -> float:
    """|a & b| / |a | b|; 0 when either is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the content words of `a` and `b` (0 when either has none)."""
    return jaccard(words(a), words(b))


REASK = 0.6  # a user turn this similar to the request asks it again


def kind_of(text: str, request: str | None) -> str:
    """ "correction", "reask" or "request": what a user turn after an answer is."""
    if _OPENERS.search(text) or _ANYWHERE.search(text):
        return "correction"  # even when it repeats the request: it says what was wrong
    if request is not None and similarity(text, request) >= REASK:
        return "reask"
    return "request"


def literal(phrase: str) -> str | None:
    """The literal string `phrase` names (a quoted or code span, or an identifier-like token),
    else None."""
    phrase = phrase.strip().strip(",.;:!")
    m = _QUOTED.match(phrase)
    if m:
        return next(g for g in m.groups() if g)
    if " " not in phrase and _CODEISH.search(phrase):
        return phrase
    return None


@dataclass(frozen=True)
class Requirement:
    """One thing a good answer must do: a rule `check` or a rubric `criterion`."""

    check: dict[str, Any] | None = None
    criterion: str | None = None

    @property
    def key(self) -> str:
        if self.check is not None:
            return f"{self.check['op']}:{str(self.check.get('arg', '')).lower()}"
        return "criterion:" + " ".join(sorted(words(self.criterion or "")))


def _check(op: str, arg: Any, description: str, **extra: Any) -> Requirement:
    check = {"op": op, "description": description, **extra}
    if arg is not None:
        check["arg"] = arg
    return Requirement(check=check)


def _sentence_requirements(sentence: str) -> list[Requirement]:
    said = sentence.strip()
    out: list[Requirement] = []
    m = _USE_NOT.match(said)
    if m:
        good, bad = literal(m.group(1)), literal(m.group(2))
        if good is not None:
            out.append(_check("contains", good, f"uses {good}"))
        if bad is not None:
            if re.fullmatch(r"[A-Za-z_]\w*", bad):
                bad += "("  # a bare function name: its calls
            out.append(_check("not_contains", bad, f"does not use {bad}"))
        if good is None or bad is None:
            out.append(Requirement(criterion=_criterion(said)))
        return out
    m = _LENGTH.search(said)
    if m:
        most = not m.group(1).lower().startswith(("at least", "min"))
        unit = "words" if m.group(3).lower() == "words" else "chars"
        op = f"{'max' if most else 'min'}_{unit}"
        out.append(_check(op, int(m.group(2)), said))
    if _JSON.search(said):
        out.append(_check("json_valid", None, "the answer is valid JSON"))
    m = _SECTION.search(said)
    if m:
        heading = next(g for g in m.groups() if g).strip()
        out.append(_check("section_present", heading, f"has a '{heading}' heading"))
    if out:
        return out
    m = _NEVER.match(said)
    if m and (bad := literal(m.group(1))) is not None:
        return [_check("not_contains", bad, f"does not contain {bad}")]
    m = _INCLUDE.match(said)
    if m and (good := literal(m.group(1))) is not None:
        return [_check("contains", good, f"contains {good}")]
    return [Requirement(criterion=_criterion(said))]


_FORGOT = re.compile(
    r"^you (?:forgot|missed|left out|didn'?t (?:include|add|mention)|"
    r"did not (?:include|add|mention))"
    r"\s+(?:to (?:include|add|mention)\s+)?",
    re.IGNORECASE,
)


def _criterion(said: str) -> str:
    text = said.strip().rstrip(".!") + "."
    if _FORGOT.match(text):
        text = "Includes " + _FORGOT.sub("", text)
    return text[0].upper() + text[1:]


def requirements(correction: str, rejected: str = "") -> list[Requirement]:
    """The requirements a correction states; a bare rejection ("no, that's wrong") asks that
    the rejected answer (`rejected`, an excerpt) not be given again."""
    if _BARE_REJECTION.match(correction):
        gist = " ".join(rejected.split())[:160]
        if not gist:
            return []
        return [Requirement(criterion=f'Does not repeat an answer the user rejected: "{gist}".')]
    rest = _LEAD.sub("", correction).strip()
    out: list[Requirement] = []
    vague: list[Requirement] = []
    for i, sentence in enumerate(_SENTENCES.split(rest)):
        sentence = sentence.strip(" \t,;:-" + _DASHES)
        if not words(sentence) or len(sentence) < 3 or MASK in sentence:
            continue  # a sentence that held a secret is never a requirement
        if _VAGUE.match(sentence):
            vague.append(Requirement(criterion=f"Is not {sentence.lower()} (the user said so)."))
        elif i == 0 or _DIRECTIVE.search(sentence):
            out.extend(_sentence_requirements(sentence))
    return out or vague  # "too long" says less than the "under 80 words" beside it
