"""Normal behaviour of `run_python`: output, stdin, files, exceptions, exit codes, truncation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from moscopt.agent.tools.sandbox import ExecResult, run_python

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def test_prints_and_exits_cleanly(sandbox_tmp: Path) -> None:
    result = run_python("print(6 * 7)")
    assert result.stdout == "42\n"
    assert result.stderr == ""
    assert result.exit_code == 0
    assert result.ok
    assert result.killed_reason is None
    assert not result.timed_out
    assert result.duration > 0
    assert list(sandbox_tmp.iterdir()) == []  # the run dir is gone


def test_stdin_is_passed() -> None:
    result = run_python("import sys\nprint(sys.stdin.read()[::-1])", stdin="abc\n")
    assert result.stdout == "\ncba\n"
    assert result.ok


def test_files_are_written_first_and_importable() -> None:
    files = {"helper.py": "def double(x):\n    return 2 * x\n", "data/in.txt": "hello"}
    code = "import helper\nprint(helper.double(21), open('data/in.txt').read())"
    result = run_python(code, files=files)
    assert result.stdout == "42 hello\n"
    assert result.ok


@pytest.mark.parametrize("name", ["/etc/passwd", "../x.py", "a/../../x", ""])
def test_bad_file_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError):
        run_python("pass", files={name: "x"})


def test_uncaught_exception_gives_traceback_with_source_lines() -> None:
    result = run_python("def f():\n    raise ValueError('boom')\n\nf()\n")
    assert result.exit_code == 1
    assert not result.ok
    assert result.killed_reason is None
    assert result.stderr.startswith("Traceback (most recent call last):")
    assert "raise ValueError('boom')" in result.stderr
    assert result.stderr.rstrip().endswith("ValueError: boom")
    assert "_bootstrap" not in result.stderr


def test_failed_assertion_like_a_unit_test() -> None:
    code = "def add(a, b):\n    return a - b\n\nassert add(2, 2) == 4, 'add is wrong'\n"
    result = run_python(code)
    assert result.exit_code == 1
    assert "AssertionError: add is wrong" in result.stderr


def test_syntax_error_is_reported() -> None:
    result = run_python("def (:\n")
    assert result.exit_code == 1
    assert "SyntaxError" in result.stderr


def test_exit_codes_are_kept() -> None:
    assert run_python("raise SystemExit(3)").exit_code == 3
    assert run_python("import sys; sys.exit('bye')").stderr == "bye\n"


def test_benchmark_style_code_runs_with_the_stdlib() -> None:
    code = (
        "import math, re, collections, itertools, heapq, hashlib, json, fractions, decimal\n"
        "import datetime, functools, string, statistics, bisect, random, typing, dataclasses\n"
        "from dataclasses import dataclass\n"
        "@dataclass\nclass P:\n    x: int\n"
        "print(math.comb(5, 2), heapq.nsmallest(2, [3, 1, 2]), hashlib.md5(b'').hexdigest()[:6],\n"
        "      collections.Counter('aab')['a'], list(itertools.pairwise('abc'))[0], P(1),\n"
        "      'é'.encode('cp1252'), re.findall(r'\\d+', 'a1b22'))\n"
    )
    result = run_python(code)
    assert result.stderr == ""
    assert result.stdout == ("10 [1, 2] d41d8c 2 ('a', 'b') P(x=1) b'\\xe9' ['1', '22']\n")


def test_unicode_output_round_trips() -> None:
    result = run_python("print('héllo ✓ 日本')")
    assert result.stdout == "héllo ✓ 日本\n"


def test_output_is_truncated_with_a_marker() -> None:
    result = run_python("print('x' * 5000)", max_output=100)
    assert result.ok  # truncation alone is not a failure
    assert result.stdout.startswith("x" * 100 + "\n[... output truncated")
    assert "5001 bytes in total" in result.stdout
    assert len(result.stdout) < 200


def test_stderr_is_separate_and_bounded() -> None:
    result = run_python("import sys\nsys.stderr.write('e' * 500)\nprint('out')", max_output=50)
    assert result.stdout == "out\n"
    assert result.stderr.startswith("e" * 50 + "\n[... output truncated")


def test_work_dir_is_fresh_cwd_home_and_tmpdir() -> None:
    code = (
        "import os, tempfile\n"
        "cwd = os.getcwd()\n"
        "open('note.txt', 'w').write('x')\n"
        "print(os.listdir(cwd) == ['note.txt'], os.environ['HOME'] == cwd,\n"
        "      tempfile.gettempdir() == cwd)\n"
    )
    first = run_python(code)
    second = run_python(code)
    assert first.stdout == second.stdout == "True True True\n"


def test_threads_work_inside_the_sandbox() -> None:
    code = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(4) as pool:\n"
        "    print(sum(pool.map(lambda x: x * x, range(10))))\n"
    )
    assert run_python(code).stdout == "285\n"


def test_many_concurrent_calls_from_threads(sandbox_tmp: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def job(i: int) -> ExecResult:
        return run_python(f"import sys\nprint(sys.stdin.read() * {i})", stdin="ab")

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(job, range(16)))
    assert [r.stdout for r in results] == ["ab" * i + "\n" for i in range(16)]
    assert all(r.ok for r in results)
    assert list(sandbox_tmp.iterdir()) == []


def test_invalid_limits_raise() -> None:
    with pytest.raises(ValueError):
        run_python("pass", timeout=0)
    with pytest.raises(ValueError):
        run_python("pass", memory_mb=0)


def test_ok_property() -> None:
    base = {"stdout": "", "stderr": "", "duration": 0.1}
    assert ExecResult(exit_code=0, timed_out=False, killed_reason=None, **base).ok  # type: ignore[arg-type]
    assert not ExecResult(exit_code=0, timed_out=False, killed_reason="memory", **base).ok  # type: ignore[arg-type]
    assert not ExecResult(exit_code=None, timed_out=True, killed_reason="timeout", **base).ok  # type: ignore[arg-type]
    assert not ExecResult(exit_code=1, timed_out=False, killed_reason=None, **base).ok  # type: ignore[arg-type]


def test_parent_environment_is_untouched() -> None:
    before = dict(os.environ)
    run_python("import os\nos.environ['X'] = '1'")
    assert dict(os.environ) == before


def test_std_streams_can_be_reopened_by_path() -> None:
    code = "open('/dev/stdout', 'w').write('out\\n')\nprint('err', file=open('/dev/stderr', 'w'))"
    result = run_python(code)
    assert (result.stdout, result.stderr) == ("out\n", "err\n")


def test_deep_recursion_traceback_is_bounded() -> None:
    code = "def f(n):\n    return f(n + 1)\n\nf(0)\n"
    result = run_python(code)
    assert result.stderr.endswith("RecursionError: maximum recursion depth exceeded\n")
    assert "Previous line repeated" in result.stderr
    assert len(result.stderr) < 5000


def test_everyday_code_runs_under_every_layer(attack_mode: str) -> None:
    # What model code commonly does must keep working under bubblewrap, Landlock and seccomp.
    code = (
        "import asyncio, datetime, decimal, json, os, random, sqlite3, tempfile, threading, time\n"
        "import numpy\n"
        "db = sqlite3.connect(':memory:')\n"
        "db.execute('create table t (x)')\n"
        "file_db = sqlite3.connect('local.db')\n"
        "file_db.execute('create table t (x)')\n"
        "file_db.commit()\n"
        "results = []\n"
        "thread = threading.Thread(target=lambda: results.append(sum(range(10))))\n"
        "thread.start()\n"
        "thread.join()\n"
        "async def main():\n"
        "    await asyncio.sleep(0)\n"
        "    return 'async'\n"
        "with tempfile.NamedTemporaryFile('w') as handle:\n"
        "    handle.write('x')\n"
        "with open('/dev/stdout', 'w') as out:\n"
        "    out.write('reopened stdout\\n')\n"
        "print(results, asyncio.run(main()), len(os.urandom(8)), numpy.arange(3).sum(),\n"
        "      json.dumps({'a': decimal.Decimal('1.5').as_integer_ratio()}),\n"
        "      time.localtime().tm_year > 2000, datetime.date(2024, 1, 1).isoformat(),\n"
        "      random.Random(1).randint(1, 6))\n"
    )
    result = run_python(code)
    assert result.ok, result.stderr
    assert result.stdout.splitlines()[-1] == ('[45] async 8 3 {"a": [3, 2]} True 2024-01-01 2')
    assert "reopened stdout" in result.stdout
