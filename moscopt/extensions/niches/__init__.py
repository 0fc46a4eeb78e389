"""Niches: what kind of task each task is, how good each skill is at each kind, and the
asymmetric transfer of insights from the skills strong on a niche to the ones weak on it
(CODREAM, from EvoChamber), a lifecycle policy for the pool, and learning on a task stream.

Modules: `records` (the run-state models), `assign`
(a task's niche: the benchmark's field or k-means), `competence` (per skill and niche),
`routing` (givers and recipients), `archive` (the experience archive), `codream` (the LLM
phases), `observer` (the engine hook), `hook` (insights as EditAdam evidence), `lifecycle`,
`stream`. Importing this package imports nothing else: `moscopt.run.state` imports `records`.
"""
