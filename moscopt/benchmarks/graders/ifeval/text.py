"""Text measures the IFEval checks share: words, sentences, paragraphs."""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"\w+")
# Abbreviations after which a period does not end a sentence.
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "a.m",
        "p.m",
        "u.s",
        "u.k",
        "no",
        "fig",
        "approx",
        "inc",
        "ltd",
        "co",
        "dept",
        "mt",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    ]
)
_CLOSERS = "\"'\u201d\u2019)]"  # quotes and brackets that may follow the end mark
_SENTENCE_END = re.compile(r"[.!?]+[" + re.escape(_CLOSERS) + r"]*(?=\s|$)")


def words(text: str) -> list[str]:
    """Runs of word characters (letters, digits, underscore), as IFEval counts words."""
    return _WORD_RE.findall(text)


def count_words(text: str) -> int:
    return len(words(text))


def split_sentences(text: str) -> list[str]:
    """Sentences ending in . ! or ? followed by space or the end (abbreviations, initials and
    decimals do not end a sentence). A trailing fragment without punctuation counts as one."""
    sentences: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        before = text[start : m.start()]
        last = before.split()[-1].lower() if before.split() else ""
        single_period = m.group(0).rstrip(_CLOSERS) == "."
        if single_period and (
            last.rstrip(".") in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())
        ):
            continue
        piece = text[start : m.end()].strip()
        if _WORD_RE.search(piece):
            sentences.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if _WORD_RE.search(tail):
        sentences.append(tail)
    return sentences


def count_sentences(text: str) -> int:
    return len(split_sentences(text))
