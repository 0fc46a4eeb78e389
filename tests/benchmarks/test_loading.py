from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from moscopt.benchmarks import get_benchmark
from moscopt.errors import UserError

EXPECTED = {
    "aime": {"train": 50, "val": 10, "test": 30},
    "gsm8k": {"train": 100, "val": 20, "test": 50},
    "math500": {"train": 100, "val": 20, "test": 50},
    "gpqa-diamond": {"train": 100, "val": 20, "test": 50},
    "humaneval": {"train": 94, "val": 20, "test": 50},
    "mbpp": {"train": 100, "val": 20, "test": 50},
    "bbh": {"train": 100, "val": 20, "test": 50},
    "ifeval": {"train": 100, "val": 20, "test": 50},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_benchmark_loads_from_shared_data(name: str, shared_data: Path) -> None:
    bench = get_benchmark(name)
    splits = bench.load(data=shared_data)
    assert splits.sizes() == EXPECTED[name]
    assert splits.note == ""
    all_ids = [t.id for t in splits["all"]]
    assert len(set(all_ids)) == len(all_ids)
    for task in splits["all"]:
        assert task.benchmark == name and task.prompt and task.gold is not None
        if bench.answer_instructions:
            assert bench.answer_instructions in task.prompt
    # Loading again gives the same split (deterministic), and limit takes a prefix.
    assert bench.load(data=shared_data).ids() == splits.ids()
    limited = bench.load(data=shared_data, limit=3)
    assert limited.ids() == {k: v[:3] for k, v in splits.ids().items()}


def test_aime_covers_three_years(shared_data: Path) -> None:
    tasks = get_benchmark("aime").tasks(data=shared_data)
    assert len(tasks) == 90
    assert {t.meta["year"] for t in tasks} == {2024, 2025, 2026}
    assert any(t.id == "aime-2024-I-3" for t in tasks)


def test_data_dir_env_and_direct_file(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = get_benchmark("aime")
    by_arg = bench.load(data=shared_data).ids()
    assert bench.load(data=shared_data / "aime" / "aime_all.jsonl").ids() == by_arg
    assert bench.load(data=shared_data / "aime").ids() == by_arg
    monkeypatch.setenv("MOSCOPT_DATA_DIR", str(shared_data))
    assert bench.load().ids() == by_arg


JSONL_FILES = {
    "aime": "aime/aime_all.jsonl",
    "gsm8k": "gsm8k/test.jsonl",
    "math500": "math500/test.jsonl",
    "humaneval": "humaneval/test.jsonl",
    "mbpp": "mbpp/test.jsonl",
    "bbh": "bbh/test.jsonl",
    "ifeval": "ifeval/input_data.jsonl",
}


@pytest.mark.parametrize("name", sorted(JSONL_FILES))
def test_ids_and_splits_do_not_depend_on_line_order(
    name: str, shared_data: Path, tmp_path: Path
) -> None:
    source = shared_data / JSONL_FILES[name]
    lines = source.read_text(encoding="utf-8").splitlines()
    random.Random(3).shuffle(lines)
    shuffled = tmp_path / source.name
    shuffled.write_text("\n".join(lines) + "\n", encoding="utf-8")
    bench = get_benchmark(name)
    assert bench.load(data=shuffled).ids() == bench.load(data=shared_data).ids()


def test_gpqa_choices_shuffled_per_question_and_stable(shared_data: Path) -> None:
    bench = get_benchmark("gpqa-diamond")
    tasks = bench.tasks(data=shared_data)
    assert len(tasks) == 198
    letters = {t.gold for t in tasks}
    assert letters == {"A", "B", "C", "D"}
    again = {t.id: (t.gold, t.meta["choices"]) for t in bench.tasks(data=shared_data)}
    for t in tasks:
        assert again[t.id] == (t.gold, t.meta["choices"])
        assert len(t.meta["choices"]) == 4
        assert f"({t.gold}) " in t.prompt


def test_gpqa_order_does_not_depend_on_source_order(tmp_path: Path) -> None:
    """The same question with its options listed in another order gets the same letters."""
    rows = [
        {
            "id": "q1",
            "question": "Pick one",
            "choices": ["w", "x", "y", "z"],
            "answer": "B",
            "domain": "d",
            "subdomain": "s",
        },
    ]
    flipped = [{**rows[0], "choices": ["z", "y", "x", "w"], "answer": "C"}]
    bench = get_benchmark("gpqa-diamond")
    a = bench.tasks(data=_zip(tmp_path / "a.zip", rows))
    b = bench.tasks(data=_zip(tmp_path / "b.zip", flipped))
    assert a[0].meta["choices"] == b[0].meta["choices"]
    assert a[0].gold == b[0].gold
    assert a[0].meta["choices"][ord(a[0].gold) - ord("A")] == "x"


def _zip(path: Path, rows: list[dict[str, object]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("gpqa_diamond.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_gpqa_zip_is_read_in_memory(shared_data: Path, tmp_path: Path) -> None:
    before = set(Path(tmp_path).rglob("*"))
    get_benchmark("gpqa-diamond").load(data=shared_data)
    assert set(Path(tmp_path).rglob("*")) == before
    assert not list((shared_data / "gpqa").glob("*.jsonl"))


def _jsonl(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(rows) + "\n")
    return path


def test_missing_field_names_file_line_and_field(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "aime_all.jsonl",
        [
            json.dumps(
                {"id": "a", "question": "q", "answer": "1", "year": 1, "exam": "I", "number": 1}
            ),
            json.dumps({"id": "b", "question": "q2", "year": 1, "exam": "I", "number": 2}),
        ],
    )
    with pytest.raises(UserError) as info:
        get_benchmark("aime").load(data=path)
    assert str(info.value) == f"{path}:2: field 'answer': missing field"
    assert info.value.exit_code == 2


def test_bad_json_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "test.jsonl", ['{"id": "x", "question": "q", "answer": "1"}', "{oops"])
    with pytest.raises(UserError, match=r"test\.jsonl:2: bad JSON line"):
        get_benchmark("gsm8k").load(data=path)


def test_too_small_data_gives_an_empty_split_error(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "test.jsonl", ['{"id": "x", "question": "q", "answer": "1"}'])
    with pytest.raises(UserError, match="split is empty"):
        get_benchmark("gsm8k").load(data=path)


def test_small_data_scales_down(tmp_path: Path) -> None:
    rows = [json.dumps({"id": f"g{i}", "question": f"q{i}", "answer": str(i)}) for i in range(17)]
    splits = get_benchmark("gsm8k").load(data=_jsonl(tmp_path / "test.jsonl", rows))
    assert sum(splits.sizes().values()) == 17 and "scaled down" in splits.note


def test_folder_without_the_file_says_what_it_looked_for(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"looked for .*gsm8k/test\.jsonl"):
        get_benchmark("gsm8k").load(data=tmp_path)
    with pytest.raises(UserError, match="does not exist"):
        get_benchmark("gsm8k").load(data=tmp_path / "missing")


def test_wrong_zip_password(shared_data: Path, tmp_path: Path) -> None:
    spec_text = (Path(get_benchmark("gpqa-diamond").spec_path or "")).read_text()
    path = tmp_path / "gpqa.yaml"
    path.write_text(spec_text.replace("deserted-untie-orchid", "wrong"))
    with pytest.raises(UserError, match="cannot decrypt"):
        get_benchmark(str(path)).load(data=shared_data)


@pytest.mark.slow
def test_unreachable_hub_says_how_to_use_local_data(tmp_path: Path) -> None:
    """Offline mode (no network is touched): one clear message, exit code 2."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "HOME": str(tmp_path),
    }
    env.pop("MOSCOPT_DATA_DIR", None)
    code = (
        "from moscopt.benchmarks import get_benchmark\n"
        "from moscopt.errors import UserError\n"
        "try:\n"
        "    get_benchmark('gsm8k').load()\n"
        "except UserError as e:\n"
        "    print(e)\n"
        "    raise SystemExit(e.exit_code)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    out = proc.stdout
    assert "openai/gsm8k" in out
    assert "--data PATH" in out and "MOSCOPT_DATA_DIR" in out and "gsm8k/test.jsonl" in out
