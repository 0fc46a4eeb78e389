"""What an observer costs a training run: wall and CPU time with and without each (prints).

    python scripts/bench_tracing.py [--latency 0.02] [--epochs 2] [--repeats 3] [--only otel,...]

The scripted world of the tests is served by the loopback server in its own process (its CPU is
not ours), answering each request after `--latency` seconds. `moscopt train` runs in a child
process (N=3, K=2, two steps per epoch, no evolution, difflib similarity) in a fresh project,
once per row per repeat, rows interleaved: `none` (no tracing), `otel` (spans made and handed
to the SDK's batch processor, exported nowhere: `OTEL_TRACES_EXPORTER=none`; `otel-console`
exports them as JSON to the child's stdout, discarded), `mlflow` (a sqlite store in the temp
folder, shared by the runs and made before the first: a store's first use builds its tables,
seconds that `--fresh-store` puts back into each run), `wandb` (offline mode, in the temp
folder). Needs the extras
of the rows it runs (the run refuses an observer whose extra is missing).

Columns (medians over the repeats): `process s`: the child's wall time (imports, set-up and the
observers' finish included: an observer's start and end are paid there); `training s`: the
span of the run's ledger, `train_start` to its last event (what the observers could slow while
the run works); `cpu s`: user + system CPU of the child and everything it waited for (W&B's
service process included); `events`: lines of the ledger. Each row's overhead is its median
against `none`'s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

ROWS: dict[str, tuple[list[str], dict[str, str]]] = {
    "none": ([], {}),
    "otel": (["--trace", "otel"], {"OTEL_TRACES_EXPORTER": "none"}),
    "otel-console": (["--trace", "otel"], {"OTEL_TRACES_EXPORTER": "console"}),
    "mlflow": (["--trace", "mlflow"], {}),
    "wandb": (["--trace", "wandb"], {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}),
}


def stamp(t: str) -> float:
    return datetime.fromisoformat(t).timestamp()


def train(url: str, root: Path, row: str, epochs: int, store: str) -> dict[str, Any]:
    extra, env_extra = ROWS[row]
    args = [
        sys.executable, "-m", "moscopt", "train", "--benchmark", "addition.yaml",
        "--model", "openai/scripted", "--api-base", url, "--data", "addition.jsonl",
        "--n", "3", "--k", "2", "--epochs", str(epochs), "--steps-per-epoch", "2",
        "--run", "runs/r", "--no-evolution", "--json", *extra,
    ]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "HOME": str(root / "home"), **env_extra}
    env["PYTHONPATH"] = str(REPO)  # this checkout's code, wherever moscopt is installed from
    env["MLFLOW_TRACKING_URI"] = store or f"sqlite:///{root / 'mlflow.db'}"
    env["WANDB_DIR"] = str(root)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, cwd=root, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)  # fmt: skip
    process = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{row}: train failed:\n{done.stderr[-2000:]}")
    events = [json.loads(x) for x in (root / "runs/r/events.jsonl").read_text().splitlines()]
    first = next(stamp(e["t"]) for e in events if e["type"] == "train_start")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "process": process,
        "training": stamp(events[-1]["t"]) - first,
        "cpu": cpu,
        "events": len(events),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="rows besides none, comma-separated")
    parser.add_argument("--fresh-store", action="store_true", help="a new MLflow store per run")
    a = parser.parse_args()
    from moscopt.testing.loopback import ServerProcess
    from moscopt.testing.scripted import write_project

    rows = ["none", *(r for r in ROWS if r != "none" and (not a.only or r in a.only.split(",")))]
    results: dict[str, list[dict[str, Any]]] = {r: [] for r in rows}
    responder = "moscopt.testing.scripted:server_responder"
    with (
        ServerProcess(a.latency, responder=responder) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        store = "" if a.fresh_store else f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        if store and "mlflow" in rows:
            from mlflow import MlflowClient

            MlflowClient(tracking_uri=store).search_experiments()  # builds its tables
        for i in range(a.repeats):
            for row in rows:
                root = Path(tmp) / f"p{i}-{row}"
                root.mkdir()
                write_project(root, REPO / "skills", "evolution:\n  embedding_model: difflib\n")
                results[row].append(train(server.url, root, row, a.epochs, store))
    base = {
        k: statistics.median(r[k] for r in results["none"]) for k in ("process", "training", "cpu")
    }
    print(f"latency {a.latency}s, {a.epochs} epochs, {a.repeats} repeats (medians)")
    print(f"{'row':<13}{'process s':>10}{'training s':>12}{'cpu s':>8}{'events':>8}"
          f"{'Δprocess':>10}{'Δtraining':>11}{'Δcpu':>8}")  # fmt: skip
    for row in rows:
        m = {
            k: statistics.median(r[k] for r in results[row]) for k in ("process", "training", "cpu")
        }
        events = statistics.median(r["events"] for r in results[row])
        print(f"{row:<13}{m['process']:>10.2f}{m['training']:>12.2f}{m['cpu']:>8.2f}{events:>8.0f}"
              f"{m['process'] - base['process']:>+10.2f}{m['training'] - base['training']:>+11.2f}"
              f"{m['cpu'] - base['cpu']:>+8.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
