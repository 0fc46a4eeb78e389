"""The code grader's reward cannot be forged: only a solution that passes the tests scores 1.

Each attack is what a model could learn from an optimizer that accepts it: exit early with
status 0, exit from an ``atexit`` handler, patch ``assert``'s exception, the builtins or the
modules the tests use, return an object that equals everything, or print the token that proves
success (the run's token is made known here, through `secrets.token_hex`, so the attack can
print exactly the right one).
"""

from __future__ import annotations

import pytest

from moscopt.agent.tools import sandbox
from moscopt.benchmarks.graders.code import build_program, make_code_grader, solution_program
from moscopt.benchmarks.tasks import Task

TOKEN = "0123456789abcdef0123456789abcdef"
HIDDEN = "hidden-test-marker-5f3a"

HUMANEVAL = Task(
    id="HumanEval/x",
    benchmark="humaneval",
    prompt="",
    gold={
        "prefix": (
            "import math\n\n\ndef scale(x: float) -> float:\n    return 2.0 * x\n\n\n"
            'def add_one(x: int) -> int:\n    """Return x + 1."""\n'
        ),
        "setup": "",
        "tests": (
            f"METADATA = {{'note': {HIDDEN!r}}}\n\n\ndef check(candidate):\n"
            "    assert candidate(1) == 2\n    assert candidate(41) == 42\n"
            "    assert abs(candidate(0) - 1) < 1e-9\n"
            "    assert math.isclose(scale(candidate(1)), 4.0)\n\n\ncheck(add_one)\n"
        ),
    },
)
MBPP = Task(
    id="mbpp-x",
    benchmark="mbpp",
    prompt="",
    gold={
        "prefix": "",
        "setup": "",
        "tests": (
            "assert add_one(1) == 2\nassert add_one(41) == 42\nassert sum([add_one(0)]) == 1\n"
        ),
    },
    meta={"reference": "def add_one(x):\n    return x + 1\n"},
)
CORRECT = {"humaneval": "    return x + 1\n", "mbpp": "def add_one(x):\n    return x + 1\n"}
STUB = "def add_one(x):\n    return 0\n"
# A module in the work dir that forges the verdict if the judge ever imports it: the solution
# exports it (as a module and as the home of add_one) so that the judge would.
FORGE_SOURCE = """
import os, sys
frame = sys._getframe()
while frame is not None:
    found = frame.f_locals
    if "status_fd" in found and "self" in found:
        token = found["self"]._secret["token"]
        os.write(found["status_fd"], ("verdict\\t" + token + "\\n").encode())
        os._exit(0)
    frame = frame.f_back
"""
FORGE_MODULE = (
    f"open('forge.py', 'w').write({FORGE_SOURCE!r})\n"
    "import forge\nadd_one.__module__ = 'forge'\nforge.add_one = add_one\n"
)

ATTACKS = {
    "wrong-answer": STUB,
    "os-exit-at-import": STUB + "import os\nos._exit(0)\n",
    "os-exit-in-the-call": "import os\ndef add_one(x):\n    os._exit(0)\n",
    "sys-exit-at-import": STUB + "import sys\nsys.exit(0)\n",
    "sys-exit-in-atexit": STUB + "import atexit, sys\natexit.register(lambda: sys.exit(0))\n",
    "os-exit-in-atexit": STUB + "import atexit, os\natexit.register(os._exit, 0)\n",
    "patched-assertion-error": STUB
    + "import builtins\nclass Quiet(BaseException):\n    pass\n"
    + "builtins.AssertionError = Quiet\n__builtins__ = {}\n",
    "patched-builtins": STUB + "import builtins\nbuiltins.abs = lambda x: 0\n"
    "builtins.sum = lambda *a: 1\nbuiltins.isinstance = lambda *a: True\n",
    "shadowed-builtins": STUB + "def abs(x):\n    return 0\ndef sum(*a):\n    return 1\n",
    "patched-modules": STUB + "import math\nmath.isclose = lambda *a, **k: True\n",
    "equals-everything": (
        "class Any(int):\n    def __eq__(self, other):\n        return True\n"
        "    def __sub__(self, other):\n        return 0\n    __hash__ = int.__hash__\n"
        "def add_one(x):\n    return Any(0)\n"
    ),
    "equals-everything-object": (  # passed the old grader: every check is answered by Any
        "class Any:\n    def __eq__(self, other):\n        return True\n"
        "    __lt__ = __le__ = __gt__ = __ge__ = __eq__\n"
        "    def __add__(self, other):\n        return self\n"
        "    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __add__\n"
        "    def __abs__(self):\n        return self\n"
        "    def __float__(self):\n        return 4.0\n"
        "def add_one(x):\n    return Any()\n"
    ),
    "print-the-token": STUB + f"print('verdict\\t{TOKEN}')\nprint('tests passed')\n",
    "write-the-token-everywhere": STUB
    + "import os\nfor fd in range(1, 64):\n    try:\n"
    + f"        os.write(fd, b'verdict\\t{TOKEN}\\n')\n    except OSError:\n        pass\n",
    "module-run-by-the-judge": STUB + FORGE_MODULE,
    "crafted-messages-to-the-judge": STUB
    + "import sys\nframe = sys._getframe()\nwhile frame is not None:\n"
    + "    me = frame.f_locals.get('self')\n"
    + "    if me is not None and hasattr(me, '_exports'):\n"
    + "        me._exports = lambda: [('__builtins__', 'value', ('D', [])),\n"
    + "                               ('add_one', 'attr', ('operator', 'truth'))]\n"
    + "    frame = frame.f_back\n",
    "patch-the-harness": STUB
    + "import sys\nframe = sys._getframe()\nwhile frame is not None:\n"
    + "    for name, value in list(frame.f_globals.items()):\n"
    + "        if callable(value) and name.startswith('_') and not name.startswith('__'):\n"
    + "            frame.f_globals[name] = lambda *a, **k: None\n"
    + "    frame = frame.f_back\n",
}


@pytest.fixture(autouse=True)
def _known_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.secrets, "token_hex", lambda n=16: TOKEN)


def _respond(code: str) -> str:
    return f"Here you go.\n```python\n{code}```\n"


@pytest.mark.parametrize("task", [HUMANEVAL, MBPP], ids=["humaneval", "mbpp"])
def test_a_correct_solution_scores_one(task: Task) -> None:
    grade = make_code_grader(10.0)(task, _respond(CORRECT[task.benchmark]))
    assert (grade.reward, grade.detail) == (1.0, "tests passed")


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("task", [HUMANEVAL, MBPP], ids=["humaneval", "mbpp"])
def test_a_forged_pass_scores_zero(task: Task, attack: str) -> None:
    grade = make_code_grader(10.0)(task, _respond(ATTACKS[attack]))
    assert grade.reward == 0.0, grade.detail
    assert grade.detail.startswith(("tests failed", "timed out"))


def test_the_solution_cannot_read_the_tests() -> None:
    # Reading every descriptor, the code file and the process's own memory map: the tests (and
    # with them the expected answers) are only in the judge's process.
    probe = STUB + (
        "import os, sys\nfound = []\nfor fd in range(64):\n    try:\n"
        "        found.append(os.pread(fd, 1 << 16, 0))\n    except OSError:\n        pass\n"
        "for path in ('main.py', '../main.py', '/proc/self/cmdline', '/proc/self/environ'):\n"
        "    try:\n        found.append(open(path, 'rb').read())\n    except OSError:\n"
        "        pass\nprint(repr(b''.join(found)))\n"
    )
    result = sandbox.run_python(
        solution_program(MBPP.gold, probe),
        tests=sandbox.TestSpec(tests=f"# {HIDDEN}\n" + MBPP.gold["tests"]),
    )
    assert result.tests_passed is False
    assert HIDDEN not in result.stdout + result.stderr
    assert TOKEN not in result.stdout + result.stderr


def test_values_cross_as_plain_data_only() -> None:
    # Counters, namedtuples and numpy scalars compare as the plain values they hold; modules
    # and names the solution imported (built-in ones too) are the judge's own copies.
    code = (
        "import collections, itertools\nimport numpy as np\nfrom itertools import chain\n"
        "Point = collections.namedtuple('Point', 'x y')\n"
        "def count(xs):\n    return collections.Counter(xs)\n"
        "def point():\n    return Point(1, 2)\n"
        "def total(xs):\n    return np.int64(sum(xs))\n"
    )
    tests = (
        "assert count('aab') == {'a': 2, 'b': 1}\nassert point() == (1, 2)\n"
        "assert total([1, 2]) == 3 and type(total([1])) is int\n"
        "assert list(chain([1], itertools.repeat(2, 1))) == [1, 2]\n"  # the solution's imports
    )
    result = sandbox.run_python(code, tests=sandbox.TestSpec(tests=tests))
    assert result.tests_passed, result.stderr


def test_the_whole_program_still_reads_in_order() -> None:
    program = build_program(HUMANEVAL.gold, CORRECT["humaneval"])
    assert program.index("def add_one") < program.index("return x + 1") < program.index("check(")


def test_without_read_isolation_nothing_is_graded(monkeypatch: pytest.MonkeyPatch) -> None:
    none = sandbox.Layers(bwrap=False, namespaces=False, landlock=False, uid_drop=False)
    monkeypatch.setattr(sandbox, "_LAYERS", none)
    grade = make_code_grader(10.0)(MBPP, _respond(CORRECT["mbpp"]))
    assert grade.reward == 0.0
    assert grade.detail == "not run: " + sandbox.UNSANDBOXED_REFUSED
    allowed = make_code_grader(10.0, allow_unsandboxed=True)(MBPP, _respond(CORRECT["mbpp"]))
    assert allowed.reward == 1.0
