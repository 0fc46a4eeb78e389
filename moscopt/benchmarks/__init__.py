"""Benchmarks: declarative specs, data loading, splits, answer extraction and graders.

Public API: `Task`, `Grade`, `Splits`, `Benchmark`, `BenchmarkSpec`, `list_benchmarks`,
`get_benchmark`. Importing this package imports no heavy library: `datasets`, `math_verify` and
the sandbox are imported only by the functions that use them.
"""

from __future__ import annotations

from moscopt.benchmarks.benchmark import Benchmark
from moscopt.benchmarks.registry import get_benchmark, list_benchmarks, load_benchmark_file
from moscopt.benchmarks.spec import BenchmarkSpec
from moscopt.benchmarks.tasks import Grade, Splits, Task

__all__ = [
    "Benchmark",
    "BenchmarkSpec",
    "Grade",
    "Splits",
    "Task",
    "get_benchmark",
    "list_benchmarks",
    "load_benchmark_file",
]
