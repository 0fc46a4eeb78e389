"""Gated execution memory for multi-step agents: records, the write and retrieval gates,
adaptive halting, and their training from the trainer's rollouts (see `moscopt.memory.tracker`
for how the agent loop uses them)."""

from __future__ import annotations

from moscopt.memory.gates import RetrievalGate, WriteGate
from moscopt.memory.halting import HaltDecision, HaltingController
from moscopt.memory.params import MemoryState, ModelParams
from moscopt.memory.records import ExecutionMemory, MemoryRecord
from moscopt.memory.tracker import MemorySettings, StepMemory

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
