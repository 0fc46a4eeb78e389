"""`Policies`: the decision rules the engine receives from the application layer
(`moscopt.app.workspace.policies_for`), each a small object of `moscopt.optimizer.policies`:
which candidate pools are kept, how many edits a step may make, which skills a minibatch
edits, when the gate is restored."""

from __future__ import annotations

from dataclasses import dataclass

from moscopt.optimizer.policies.acceptance import Acceptance
from moscopt.optimizer.policies.edit_budget import EditBudget
from moscopt.optimizer.policies.edit_targets import EditTargets
from moscopt.optimizer.policies.gate_restoration import GateRestoration


@dataclass(frozen=True)
class Policies:
    """`restoration` starts with an empty window: the gate phase resumes it from the state."""

    acceptance: Acceptance
    budget: EditBudget
    targets: EditTargets
    restoration: GateRestoration
