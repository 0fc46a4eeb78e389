"""Studies: the paper's ablation and deployment tables, and other optimizers, at one budget.

`run_study(StudySpec(...), path)` trains every configuration under every seed with the same
budget of LLM calls (the runs at once, under one cap on requests in flight), evaluates each on
the same test split with the same repeats rule, pairs each with the full method and writes the
table (`moscopt ablate`, `moscopt compare`). The pieces: `configurations` (the rows, as data),
`layout` (the study folder), `accounting` (calls spent, across kills), `execute` (the runs),
`schedule` (which run goes when, and where the study stands), `gepa_side` (GEPA's side),
`paired` (the statistics), `table` and `plot` (the output).
"""

from __future__ import annotations

from moscopt.study.execute import StudyOutcome, StudySpec, run_study

__all__ = ["StudyOutcome", "StudySpec", "run_study"]
