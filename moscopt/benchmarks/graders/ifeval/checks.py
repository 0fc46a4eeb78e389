"""The IFEval instruction checks, one function per instruction id (strict variant).

Each check is `(response, kwargs) -> bool` and follows the published semantics of the
instruction (google-research/instruction_following_eval): e.g. `at least` means `>=`,
`less than` means `<`, bullet lists must have exactly N items. A missing or malformed kwarg
raises (the grader reports it as a grader error, never as a pass).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from moscopt.benchmarks.graders.ifeval.language import is_language
from moscopt.benchmarks.graders.ifeval.text import count_sentences, count_words, words
from moscopt.core import jsonio

Check = Callable[[str, Mapping[str, Any]], bool]


def _compare(value: int, relation: str, threshold: int) -> bool:
    if relation == "less than":
        return value < threshold
    if relation == "at least":
        return value >= threshold
    raise ValueError(f"unknown relation {relation!r} (expected 'less than' or 'at least')")


def _int(kw: Mapping[str, Any], key: str) -> int:
    value = kw[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"argument {key} must be a number, got {value!r}")
    return int(value)


def _str(kw: Mapping[str, Any], key: str) -> str:
    value = kw[key]
    if not isinstance(value, str):
        raise TypeError(f"argument {key} must be text, got {value!r}")
    return value


def _strs(kw: Mapping[str, Any], key: str) -> list[str]:
    value = kw[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"argument {key} must be a list of strings, got {value!r}")
    return value


# --- change_case ---------------------------------------------------------------------------


def capital_word_frequency(response: str, kw: Mapping[str, Any]) -> bool:
    capitals = sum(1 for w in words(response) if w.isupper())
    return _compare(capitals, _str(kw, "capital_relation"), _int(kw, "capital_frequency"))


def english_capital(response: str, kw: Mapping[str, Any]) -> bool:
    return response.isupper() and is_language(response, "en")


def english_lowercase(response: str, kw: Mapping[str, Any]) -> bool:
    return response.islower() and is_language(response, "en")


# --- combination ---------------------------------------------------------------------------


def repeat_prompt(response: str, kw: Mapping[str, Any]) -> bool:
    return response.strip().lower().startswith(_str(kw, "prompt_to_repeat").strip().lower())


def two_responses(response: str, kw: Mapping[str, Any]) -> bool:
    parts = response.split("******")
    kept: list[str] = []
    for i, part in enumerate(parts):
        if not part.strip():
            if 0 < i < len(parts) - 1:  # an empty answer between two separators
                return False
            continue
        kept.append(part.strip())
    return len(kept) == 2 and kept[0] != kept[1]


# --- detectable_content --------------------------------------------------------------------


def number_placeholders(response: str, kw: Mapping[str, Any]) -> bool:
    return len(re.findall(r"\[.*?\]", response)) >= _int(kw, "num_placeholders")


def postscript(response: str, kw: Mapping[str, Any]) -> bool:
    marker = _str(kw, "postscript_marker").strip()
    if marker.upper() == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker.upper() == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + re.escape(marker.lower()) + r".*$"
    return re.search(pattern, response.lower(), flags=re.MULTILINE) is not None


# --- detectable_format ---------------------------------------------------------------------

_CONSTRAINED = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def constrained_response(response: str, kw: Mapping[str, Any]) -> bool:
    text = response.strip()
    return any(option in text for option in _CONSTRAINED)


def json_format(response: str, kw: Mapping[str, Any]) -> bool:
    text = response.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        if text.startswith(fence):
            text = text[len(fence) :]
            break
    text = text.removesuffix("```").strip()
    try:
        jsonio.loads(text)
    except ValueError:
        return False
    return True


def multiple_sections(response: str, kw: Mapping[str, Any]) -> bool:
    splitter = _str(kw, "section_spliter").strip()
    sections = re.split(r"\s?" + re.escape(splitter) + r"\s?\d+\s?", response)
    return len(sections) - 1 >= _int(kw, "num_sections")


def number_bullet_lists(response: str, kw: Mapping[str, Any]) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", response, flags=re.MULTILINE)
    return len(stars) + len(dashes) == _int(kw, "num_bullets")


def number_highlighted_sections(response: str, kw: Mapping[str, Any]) -> bool:
    single = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    double = [h for h in re.findall(r"\*\*[^\n\*]*\*\*", response) if h.strip("*").strip()]
    return len(single) + len(double) >= _int(kw, "num_highlights")


def title(response: str, kw: Mapping[str, Any]) -> bool:
    return any(t.strip("<>").strip() for t in re.findall(r"<<[^\n]+>>", response))


# --- keywords ------------------------------------------------------------------------------


def keyword_existence(response: str, kw: Mapping[str, Any]) -> bool:
    return all(
        re.search(re.escape(k), response, flags=re.IGNORECASE) for k in _strs(kw, "keywords")
    )


def forbidden_words(response: str, kw: Mapping[str, Any]) -> bool:
    return not any(
        re.search(r"\b" + re.escape(w) + r"\b", response, flags=re.IGNORECASE)
        for w in _strs(kw, "forbidden_words")
    )


def keyword_frequency(response: str, kw: Mapping[str, Any]) -> bool:
    count = len(re.findall(re.escape(_str(kw, "keyword")), response, flags=re.IGNORECASE))
    return _compare(count, _str(kw, "relation"), _int(kw, "frequency"))


def letter_frequency(response: str, kw: Mapping[str, Any]) -> bool:
    letter = _str(kw, "letter").lower()
    if len(letter) != 1:
        raise ValueError(f"argument letter must be one character, got {letter!r}")
    count = response.lower().count(letter)
    return _compare(count, _str(kw, "let_relation"), _int(kw, "let_frequency"))


# --- language ------------------------------------------------------------------------------


def response_language(response: str, kw: Mapping[str, Any]) -> bool:
    return is_language(response, _str(kw, "language"))


# --- length_constraints --------------------------------------------------------------------


def nth_paragraph_first_word(response: str, kw: Mapping[str, Any]) -> bool:
    paragraphs = re.split(r"\n\n", response)
    non_empty = sum(1 for p in paragraphs if p.strip())
    nth = _int(kw, "nth_paragraph")
    if nth > non_empty or nth < 1:
        return False
    paragraph = paragraphs[nth - 1].strip()
    if not paragraph:
        return False
    first = paragraph.split()[0].strip().lstrip("'\"")
    word = ""
    for ch in first:
        if ch in ".,?!'\"":
            break
        word += ch.lower()
    return non_empty == _int(kw, "num_paragraphs") and word == _str(kw, "first_word").lower()


def number_paragraphs(response: str, kw: Mapping[str, Any]) -> bool:
    paragraphs = re.split(r"\s?\*\*\*\s?", response)
    count = len(paragraphs)
    for i, p in enumerate(paragraphs):
        if not p.strip():
            if 0 < i < len(paragraphs) - 1:  # an empty paragraph between two separators
                return False
            count -= 1
    return count == _int(kw, "num_paragraphs")


def number_sentences(response: str, kw: Mapping[str, Any]) -> bool:
    return _compare(count_sentences(response), _str(kw, "relation"), _int(kw, "num_sentences"))


def number_words(response: str, kw: Mapping[str, Any]) -> bool:
    return _compare(count_words(response), _str(kw, "relation"), _int(kw, "num_words"))


# --- punctuation / startend ----------------------------------------------------------------


def no_comma(response: str, kw: Mapping[str, Any]) -> bool:
    return "," not in response


def end_checker(response: str, kw: Mapping[str, Any]) -> bool:
    end = _str(kw, "end_phrase").strip().lower()
    return response.strip().strip('"').lower().endswith(end)


def quotation(response: str, kw: Mapping[str, Any]) -> bool:
    text = response.strip()
    return len(text) > 1 and text[0] == '"' and text[-1] == '"'


CHECKS: dict[str, Check] = {
    "change_case:capital_word_frequency": capital_word_frequency,
    "change_case:english_capital": english_capital,
    "change_case:english_lowercase": english_lowercase,
    "combination:repeat_prompt": repeat_prompt,
    "combination:two_responses": two_responses,
    "detectable_content:number_placeholders": number_placeholders,
    "detectable_content:postscript": postscript,
    "detectable_format:constrained_response": constrained_response,
    "detectable_format:json_format": json_format,
    "detectable_format:multiple_sections": multiple_sections,
    "detectable_format:number_bullet_lists": number_bullet_lists,
    "detectable_format:number_highlighted_sections": number_highlighted_sections,
    "detectable_format:title": title,
    "keywords:existence": keyword_existence,
    "keywords:forbidden_words": forbidden_words,
    "keywords:frequency": keyword_frequency,
    "keywords:letter_frequency": letter_frequency,
    "language:response_language": response_language,
    "length_constraints:nth_paragraph_first_word": nth_paragraph_first_word,
    "length_constraints:number_paragraphs": number_paragraphs,
    "length_constraints:number_sentences": number_sentences,
    "length_constraints:number_words": number_words,
    "punctuation:no_comma": no_comma,
    "startend:end_checker": end_checker,
    "startend:quotation": quotation,
}
