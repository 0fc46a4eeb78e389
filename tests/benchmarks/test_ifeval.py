from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moscopt.benchmarks import Task, get_benchmark
from moscopt.benchmarks.graders.ifeval import make_ifeval_grader
from moscopt.benchmarks.graders.ifeval.checks import CHECKS
from moscopt.benchmarks.graders.ifeval.language import detect_language
from moscopt.benchmarks.graders.ifeval.text import count_sentences, count_words

# (instruction id, kwargs, a response that follows it, a response that does not)
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "change_case:capital_word_frequency",
        {"capital_relation": "at least", "capital_frequency": 2},
        "THE BIG dog",
        "The Big dog",
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_relation": "less than", "capital_frequency": 2},
        "ONE capital",
        "TWO CAPITALS",
    ),
    ("change_case:english_capital", {}, "THIS IS ALL IN CAPITALS.", "This is not."),
    ("change_case:english_lowercase", {}, "this is all lowercase.", "This is not."),
    (
        "combination:repeat_prompt",
        {"prompt_to_repeat": "Write a poem."},
        "write a poem. Roses are red.",
        "Roses are red.",
    ),
    ("combination:two_responses", {}, "first answer ****** second answer", "same ****** same"),
    (
        "detectable_content:number_placeholders",
        {"num_placeholders": 2},
        "Dear [name], at [address].",
        "Dear [name].",
    ),
    (
        "detectable_content:postscript",
        {"postscript_marker": "P.S."},
        "Hello.\n\nP.S. see you",
        "Hello. See you.",
    ),
    (
        "detectable_content:postscript",
        {"postscript_marker": "P.P.S"},
        "Hello.\nP.P.S more",
        "Hello. P.S. more",
    ),
    ("detectable_format:constrained_response", {}, "My answer is yes.", "Yes."),
    ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```', "{a: 1}"),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\nintro\nSection 2\nbody",
        "Section 1\nonly one",
    ),
    (
        "detectable_format:number_bullet_lists",
        {"num_bullets": 2},
        "* one\n* two",
        "* one\n- two\n* three",
    ),
    (
        "detectable_format:number_highlighted_sections",
        {"num_highlights": 2},
        "*first* and **second**",
        "*first* only",
    ),
    ("detectable_format:title", {}, "<<My Title>>\nText", "My Title\nText"),
    ("keywords:existence", {"keywords": ["apple", "pie"]}, "Apple PIE is good", "apple only"),
    ("keywords:forbidden_words", {"forbidden_words": ["bad"]}, "badge is fine", "this is Bad"),
    (
        "keywords:frequency",
        {"keyword": "cat", "relation": "at least", "frequency": 2},
        "cat and Cat",
        "one cat",
    ),
    (
        "keywords:frequency",
        {"keyword": "cat", "relation": "less than", "frequency": 2},
        "one cat",
        "cat cat",
    ),
    (
        "keywords:letter_frequency",
        {"letter": "z", "let_relation": "at least", "let_frequency": 2},
        "Zigzag",
        "zebra",
    ),
    (
        "language:response_language",
        {"language": "de"},
        "Das ist ein kurzer Satz, und er ist auf Deutsch geschrieben.",
        "This is a short sentence, and it is written in English.",
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "First part.\n\nThen, the second.",
        "First part.\n\nAnd the second.",
    ),
    (
        "length_constraints:number_paragraphs",
        {"num_paragraphs": 2},
        "one\n***\ntwo",
        "one\n***\n***\ntwo",
    ),
    (
        "length_constraints:number_sentences",
        {"relation": "less than", "num_sentences": 3},
        "One. Two.",
        "One. Two. Three.",
    ),
    (
        "length_constraints:number_sentences",
        {"relation": "at least", "num_sentences": 2},
        "Dr. Smith came. He left!",
        "Dr. Smith came at 3.5 p.m. today.",
    ),
    (
        "length_constraints:number_words",
        {"relation": "at least", "num_words": 3},
        "one two three",
        "one two",
    ),
    (
        "length_constraints:number_words",
        {"relation": "less than", "num_words": 3},
        "one two",
        "one two three",
    ),
    ("punctuation:no_comma", {}, "no commas here", "a, b"),
    (
        "startend:end_checker",
        {"end_phrase": "Is there anything else?"},
        "Done. Is there anything else?",
        "Is there anything else? Done.",
    ),
    ("startend:quotation", {}, '"quoted"', 'not "quoted"'),
]


@pytest.mark.parametrize(("instruction", "kwargs", "good", "bad"), CASES)
def test_check_semantics(instruction: str, kwargs: dict[str, Any], good: str, bad: str) -> None:
    check = CHECKS[instruction]
    assert check(good, kwargs) is True
    assert check(bad, kwargs) is False


def test_every_check_has_a_case() -> None:
    assert {c[0] for c in CASES} == set(CHECKS)


def test_text_measures() -> None:
    assert count_words("Hello, world! It's 2024.") == 5
    assert count_sentences("Mr. Smith went to Washington. He saw e.g. the U.S. Capitol. Wow!") == 3
    assert count_sentences("No end mark") == 1
    assert count_sentences("") == 0


SAMPLES = {
    "en": "This is a sentence written in English and it is about the weather in the city.",
    "de": "Das ist ein Satz, der auf Deutsch geschrieben ist, und er handelt von dem Wetter.",
    "fi": "Tämä on suomeksi kirjoitettu lause, ja se kertoo kaupungin säästä.",
    "it": "Questa è una frase scritta in italiano e parla del tempo nella città.",
    "pt": "Esta é uma frase escrita em português e fala sobre o tempo na cidade.",
    "sw": "Hii ni sentensi iliyoandikwa kwa Kiswahili na inazungumzia hali ya hewa katika mji.",
    "vi": "Đây là một câu được viết bằng tiếng Việt và nói về thời tiết của thành phố.",
    "ru": "Это предложение написано на русском языке, и оно о погоде в городе.",  # noqa: RUF001
    "bg": "Това е изречение на български език и то е за времето в града.",  # noqa: RUF001
    "hi": "यह हिंदी में लिखा गया एक वाक्य है और यह शहर के मौसम के बारे में है।",
    "mr": "हे मराठी भाषेत लिहिलेले एक वाक्य आहे आणि ते शहराच्या हवामानाबद्दल आहे.",
    "ne": "यो नेपाली भाषामा लेखिएको एउटा वाक्य हो र यो सहरको मौसमको बारेमा छ।",
    "ar": "هذا نص مكتوب باللغة العربية وهو يتحدث عن الطقس الجميل في المدينة.",
    "fa": "این یک متن فارسی است که درباره هوای خوب شهر صحبت می‌کند.",
    "ur": "یہ اردو میں لکھا گیا ایک جملہ ہے اور یہ شہر کے موسم کے بارے میں ہے۔",  # noqa: RUF001
    "bn": "এটি বাংলায় লেখা একটি বাক্য।",
    "gu": "આ ગુજરાતીમાં લખાયેલું એક વાક્ય છે.",
    "pa": "ਇਹ ਪੰਜਾਬੀ ਵਿੱਚ ਲਿਖਿਆ ਇੱਕ ਵਾਕ ਹੈ।",
    "ta": "இது தமிழில் எழுதப்பட்ட ஒரு வாக்கியம்.",
    "te": "ఇది తెలుగులో వ్రాసిన ఒక వాక్యం.",
    "kn": "ಇದು ಕನ್ನಡದಲ್ಲಿ ಬರೆದ ಒಂದು ವಾಕ್ಯ.",
    "th": "นี่คือประโยคที่เขียนเป็นภาษาไทย",
    "ko": "이것은 한국어로 쓰인 문장입니다.",
}


@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_language_detection(lang: str) -> None:
    assert detect_language(SAMPLES[lang]) == lang


def test_language_unknown_is_none() -> None:
    assert detect_language("12345 !!!") is None


def _task(ids: list[str], kwargs: list[dict[str, Any]]) -> Task:
    return Task("t", "ifeval", "p", {"instruction_id_list": ids, "kwargs": kwargs})


def test_fraction_and_all_or_nothing_scoring() -> None:
    task = _task(["punctuation:no_comma", "keywords:existence"], [{}, {"keywords": ["sun"]}])
    partial = make_ifeval_grader(all_or_nothing=False)(task, "no commas, but no keyword")
    assert partial.reward == 0.0
    half = make_ifeval_grader(all_or_nothing=False)(task, "no commas and no keyword")
    assert half.reward == 0.5 and "missed existence" in half.detail
    assert make_ifeval_grader(all_or_nothing=True)(task, "no commas and no keyword").reward == 0.0
    assert make_ifeval_grader(all_or_nothing=True)(task, "the sun shines").reward == 1.0


def test_unknown_instruction_is_a_grader_error_not_a_pass() -> None:
    bench = get_benchmark("ifeval")
    grade = bench.grade(_task(["made_up:rule"], [{}]), "anything")
    assert grade.reward == 0.0
    assert grade.error is not None and "made_up:rule" in grade.error


def test_bad_kwargs_are_a_grader_error() -> None:
    bench = get_benchmark("ifeval")
    grade = bench.grade(_task(["length_constraints:number_words"], [{"relation": "about"}]), "x")
    assert grade.error is not None and grade.reward == 0.0


def test_every_instruction_in_the_data_is_implemented(shared_data: Path) -> None:
    bench = get_benchmark("ifeval")
    tasks = bench.tasks(data=shared_data)
    assert len(tasks) == 541
    for task in tasks:
        for response in ("", "A short reply, with a comma.\n\n* one\n* two"):
            grade = bench.grade(task, response)
            assert grade.error is None, (task.id, grade.error)
            assert 0.0 <= grade.reward <= 1.0
