"""`moscopt status` on a run reads only what it shows: the familiarity router's and execution
memory's modules (numpy, their models) are imported only for a run that kept their parts, the
certificate's only for a run that has one (issue 41: status on a 1,000-step run under a second)."""

from __future__ import annotations

import subprocess
import sys

from moscopt.report import summary
from moscopt.run.rundir import RunDir


def test_the_part_names_are_the_add_ons_own() -> None:
    from moscopt.extensions.memory.params import NAME as MEMORY
    from moscopt.routing.engine import NAME as ROUTER

    assert (summary.ROUTER_PART, summary.MEMORY_PART) == (ROUTER, MEMORY)


def test_status_of_a_run_without_router_or_memory_never_imports_numpy(
    scripted_run: RunDir,
) -> None:
    assert not scripted_run.load_state().extensions  # the scripted run keeps no add-on part
    code = (
        "import sys\n"
        "from moscopt.report.summary import run_summary\n"
        "from moscopt.run.rundir import RunDir\n"
        f"data = run_summary(RunDir.open({str(scripted_run.path)!r}))\n"
        "assert data['step'] >= 1 and data['specialization'] is None and data['memory'] is None\n"
        "heavy = {'numpy', 'moscopt.routing.engine', 'moscopt.routing.familiarity'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
