"""A built-in benchmark read from the Hugging Face hub with no network: one clear error line at
once, without the hub client's `Retrying in Ns` lines (about 25 s of them before)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from moscopt.app import hub
from moscopt.app.hub import hub_reachable, prepare_hub

REPO = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    with socket.socket() as s:  # bound, never listening: a connection is refused
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_train_on_a_hub_benchmark_offline_fails_at_once_and_quietly(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "MOSCOPT_", "HTTP", "ALL_PROXY"))
        and k.lower() not in ("https_proxy", "all_proxy", "http_proxy")
    }
    env |= {
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),  # an empty hub cache
        "HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "moscopt", "train", "--benchmark", "aime", "--max-calls", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # a guard against a hang, not a speed test
    )
    assert done.returncode == 2, done.stderr
    assert "Retrying" not in done.stderr and "thrown while requesting" not in done.stderr
    assert "cannot load HuggingFaceH4/aime_2024" in done.stderr
    assert "OfflineModeIsEnabled" in done.stderr  # no request was tried, nothing retried
    assert "--data PATH" in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2, done.stderr


def test_prepare_hub_probes_only_when_the_hub_is_the_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (*hub.OFFLINE, "MOSCOPT_DATA_DIR", *hub.PROXIES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setattr(hub, "_prepared", {})
    for module, names in (
        ("huggingface_hub.constants", ["HF_HUB_OFFLINE"]),
        ("datasets.config", ["HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"]),
    ):  # restored after the test, if this process imported the hub client
        if module in sys.modules:
            for name in names:
                monkeypatch.setattr(sys.modules[module], name, getattr(sys.modules[module], name))
    assert not hub_reachable()
    assert prepare_hub(False, None) is None and "HF_HUB_OFFLINE" not in os.environ
    assert prepare_hub(True, "data.jsonl") is None and "HF_HUB_OFFLINE" not in os.environ
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")  # the probe would not tell
    assert prepare_hub(True, None) is None and "HF_HUB_OFFLINE" not in os.environ
    monkeypatch.delenv("HTTPS_PROXY")
    assert prepare_hub(True, None) is False
    assert os.environ["HF_HUB_OFFLINE"] == os.environ["HF_DATASETS_OFFLINE"] == "1"
