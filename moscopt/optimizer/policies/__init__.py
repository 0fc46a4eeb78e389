"""The trainer's decisions, one small policy object per module, each with its contract in its
docstring: `acceptance` (keep a candidate pool or not), `edit_targets` (which skills a minibatch
edits), `edit_budget` (how many edits a step may make), `gate_restoration` (when and to what the
gate is restored), `evolution_selection` (who is eliminated, reproduced and replaced)."""
