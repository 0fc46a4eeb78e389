"""LiveMathematicianBench (`LiveMathematicianBench/LiveMathematicianBench` on the hub): research
mathematics from recent arXiv papers as multiple choice, one JSON array per month
(`data/<YYYYMM>/qa_<YYYYMM>_final.json`).

Each item holds `month`, `no`, `theorem_type` and `mcq`: the `question`, the distractors in
`choices` and the right option in `correct_choice`, each option `{"label", "text"}`. `flatten`
gives the spec an id (`<month>:<no>`, as the benchmark numbers its items), the question, every
option in label order and the correct option's text; the spec shuffles the options per task,
so a position the generator favours gives nothing away.
"""

from __future__ import annotations

from typing import Any


def _option(value: Any, where: str) -> tuple[str, str]:
    if not isinstance(value, dict):
        raise TypeError(f"{where} must be an object with label and text")
    label, text = value.get("label"), value.get("text")
    if not isinstance(label, str) or not isinstance(text, str) or not text.strip():
        raise ValueError(f"{where} needs a text label and a non-empty text")
    return label.strip().upper().rstrip(".):"), text.strip()


def flatten(row: dict[str, Any]) -> dict[str, Any]:
    mcq = row["mcq"]
    if not isinstance(mcq, dict):
        raise TypeError("mcq must be an object")
    correct = _option(mcq["correct_choice"], "mcq.correct_choice")
    distractors = mcq["choices"]
    if not isinstance(distractors, list) or not distractors:
        raise ValueError("mcq.choices must be a non-empty list")
    options = {correct[0]: correct[1]}
    for i, item in enumerate(distractors):
        label, text = _option(item, f"mcq.choices[{i}]")
        if options.setdefault(label, text) != text:
            raise ValueError(f"two options are labelled {label}")
    kinds = row.get("theorem_type") or []
    kinds = [kinds] if isinstance(kinds, str) else [str(k) for k in kinds]
    return {
        "id": f"{row['month']}:{row['no']}",
        "month": str(row["month"]),
        "theorem_type": ", ".join(kinds),
        "question": mcq["question"],
        "choices": [options[label] for label in sorted(options)],
        "answer": correct[1],
    }
