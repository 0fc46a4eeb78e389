"""Gated execution memory for multi-step agents: records, the write and retrieval gates,
adaptive halting, and their training from the trainer's rollouts (see
`moscopt.extensions.memory.tracker` for how the agent loop uses them)."""

from __future__ import annotations

from moscopt.extensions.memory.gates import RetrievalGate, WriteGate
from moscopt.extensions.memory.halting import HaltDecision, HaltingController
from moscopt.extensions.memory.params import MemoryState, ModelParams
from moscopt.extensions.memory.records import ExecutionMemory, MemoryRecord
from moscopt.extensions.memory.tracker import MemorySettings, StepMemory

__all__ = [
    "ExecutionMemory",
    "HaltDecision",
    "HaltingController",
    "MemoryRecord",
    "MemorySettings",
    "MemoryState",
    "ModelParams",
    "RetrievalGate",
    "StepMemory",
    "WriteGate",
]
