from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from moscopt.benchmarks.extract import (
    extract_answer,
    extract_choice,
    extract_code,
    extract_number,
    final_answer_line,
    last_boxed,
    stated_answer,
)

# Text that contains none of the markers the extractors look for.
plain_text = st.text(alphabet=string.ascii_lowercase + " .,;\n0123456789", max_size=200).filter(
    lambda s: "final answer" not in s
)
balanced = st.recursive(
    st.text(alphabet=string.ascii_letters + string.digits + "+-*/^ ,.", max_size=10),
    lambda inner: st.tuples(inner, inner, inner).map(lambda t: f"{t[0]}{{{t[1]}}}{t[2]}"),
    max_leaves=6,
)


def test_boxed_takes_the_last_one_with_nested_braces() -> None:
    text = r"first \boxed{1} then \boxed{\frac{1}{2}} done"
    assert last_boxed(text) == r"\frac{1}{2}"


def test_boxed_unclosed_is_ignored() -> None:
    assert last_boxed(r"\boxed{12} and \boxed{3") == "12"
    assert last_boxed(r"no box here") is None


@given(prefix=plain_text, content=balanced, suffix=plain_text)
def test_boxed_round_trips_any_balanced_content(prefix: str, content: str, suffix: str) -> None:
    assert last_boxed(f"{prefix}\\boxed{{{content}}}{suffix}") == content.strip()


@given(
    prefix=plain_text,
    answer=st.text(alphabet=string.ascii_letters + "0123456789-/ ", min_size=1, max_size=30).filter(
        str.strip
    ),
)
def test_final_answer_line_round_trips(prefix: str, answer: str) -> None:
    text = f"{prefix}\nFINAL ANSWER: {answer}\n"
    assert final_answer_line(text) == answer.strip()
    assert extract_answer(text) == answer.strip()


def test_final_answer_variants() -> None:
    assert extract_answer("**Final Answer:** 42") == "42"
    assert extract_answer("final answer: 7\nFINAL ANSWER: 8") == "8"
    assert extract_answer("FINAL ANSWER:\n\n  19") == "19"
    assert extract_answer("FINAL ANSWER: $\\boxed{3}$") == "3"
    assert extract_answer("nothing to see") is None
    assert extract_answer("So the final answer is 12.") == "12."
    assert extract_answer("Before my final answer, I check.") is None


def test_later_marker_wins() -> None:
    assert extract_answer("\\boxed{1}\nFINAL ANSWER: 2") == "2"
    assert extract_answer("FINAL ANSWER: 2\nActually \\boxed{3}") == "3"


def test_numbers() -> None:
    assert extract_number("so 3 + 4 = 7 apples") == "7"
    assert extract_number("FINAL ANSWER: $1,234.50 total, not 9") == "1234.50"
    assert extract_number("the result is \u22125") == "-5"
    assert extract_number("no digits") is None


@given(
    st.sampled_from("ABCD"),
    st.sampled_from(
        [
            "{}",
            "({})",
            "Answer: {}",
            "answer is ({})",
            "**{}**",
            "FINAL ANSWER: {}",
            "FINAL ANSWER: ({}) because",
            "The answer is **({})**.",
            "\\boxed{{{}}}",
        ]
    ),
    plain_text,
)
def test_choice_formats(letter: str, form: str, reasoning: str) -> None:
    text = reasoning.upper().replace("A", "x").replace("B", "x").replace("C", "x").replace("D", "x")
    assert extract_choice(text + "\n" + form.format(letter)) == letter


def test_choice_prefers_explicit_answer_over_mentions() -> None:
    text = "Option (A) is tempting but wrong.\nAnswer: C\nUnlike (B)."
    assert extract_choice(text) == "C"
    assert extract_choice("I cannot decide.") is None
    assert extract_choice("FINAL ANSWER: (G)", letters="ABCDEFGH") == "G"


@given(code=st.text(alphabet=string.printable.replace("`", ""), max_size=200), noise=plain_text)
def test_code_block_round_trips(code: str, noise: str) -> None:
    text = f"{noise}\n```python\n{code}\n```\n{noise}"
    assert extract_code(text) == code + "\n"


def test_code_block_choice() -> None:
    text = "```text\nnot code\n```\n```python\ndef f():\n    return 1\n```\n```\nlast\n```"
    assert extract_code(text) == "def f():\n    return 1\n"
    assert extract_code("```\nx = 1\n```") == "x = 1\n"
    assert extract_code("def g(): pass") == "def g(): pass"
    assert extract_code("```python\ndef h():\n    return 2") == "def h():\n    return 2"


numbers = st.builds(
    lambda n, frac, comma: f"{n:,}" if comma else (f"{n}.{frac}" if frac else str(n)),
    st.integers(-(10**7), 10**7),
    st.sampled_from(["", "5", "25"]),
    st.booleans(),
)
STATED_FORMS = [
    "The answer is {}.",
    "So the final answer is: **{}**.",
    "**Answer:** {}",
    "answer = {}",
    "I think the answer is probably {} (checking below).",
    '{{"answer": "{}"}}',
    '{{"final_answer": "{}", "checked": true}}',
    "Everything checks out.\n\n**{}**",
    "Everything checks out.\n\n{}",
    "FINAL ANSWER: {}",
    "\\boxed{{{}}}",
]


@given(number=numbers, form=st.sampled_from(STATED_FORMS), reasoning=plain_text)
def test_stated_answer_reads_the_forms_models_write(number: str, form: str, reasoning: str) -> None:
    reasoning = reasoning.replace("answer", "")
    code = "```python\nanswer = 12345\nprint(answer)\n```"
    text = f"{reasoning}\n\nLet me verify:\n\n{code}\n\n{form.format(number)}"
    assert stated_answer(text) == number


@given(reasoning=plain_text, code=st.text(alphabet=string.printable.replace("`", ""), max_size=80))
def test_stated_answer_never_reads_code_or_plain_prose(reasoning: str, code: str) -> None:
    prose = " ".join(w for w in reasoning.split(" ") if "answer" not in w) + " words"
    assert stated_answer(prose) is None  # a line ending in a word states no answer
    assert stated_answer(f"{prose}\n```python\n{code}\nThe answer is 3\n```") is None


def test_stated_answer_variants() -> None:
    assert stated_answer("The answer is B, since the others fail.") == "B"
    assert stated_answer("The answer is $18.00. Next I check.") == "$18.00"
    assert stated_answer("the answer is \\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    assert stated_answer("My first estimate is that the answer is 392. Let me compute.") == "392"
    assert stated_answer('{"final_answer": -1234.5, "steps": 3}') == "-1234.5"
    assert stated_answer("answer-key: none") is None
    # no answer stated: a question, a negation, a wondering, an undecided sentence
    assert stated_answer("Is the answer 42? Let me check.") is None
    assert stated_answer("So the answer is 12?") is None
    assert stated_answer("The answer is not 42, so I recompute.") is None
    assert stated_answer("Let me check what the answer is: run the code.") is None
    assert stated_answer("The answer is still unclear.") is None
    assert stated_answer("I wonder whether the answer is 7.") is None
    assert stated_answer("The answer is " + "very long " * 40) is None  # a sentence, not an answer
