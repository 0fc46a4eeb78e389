"""Read a run's ledger (`events.jsonl`) as tables: with duckdb (SQL) or pandas, whichever is
installed (`pip install duckdb` or `pip install pandas`).

    python read_events.py runs/<name>            # duckdb if installed, else pandas
    python read_events.py runs/<name> --engine pandas

Each line of events.jsonl is one typed event (moscopt/run/ledger.py): `llm_call`, `rollout`,
`validation`, `edit`, `evolution`, ... Fields at their default values are left out of a line,
so a missing column means the default (0, false, empty).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

COLUMNS = {
    "type": "VARCHAR",
    "purpose": "VARCHAR",
    "epoch": "BIGINT",
    "step": "BIGINT",
    "phase": "VARCHAR",
    "prompt_tokens": "BIGINT",
    "completion_tokens": "BIGINT",
    "latency": "DOUBLE",
    "cache_hit": "BOOLEAN",
    "cost": "DOUBLE",
    "reward": "DOUBLE",
    "target": "VARCHAR",
    "status": "VARCHAR",
}


def with_duckdb(events: Path) -> None:
    import duckdb

    con = duckdb.connect()
    cols = ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items())
    con.execute(
        f"CREATE VIEW ev AS SELECT * FROM read_json('{events}', "
        f"format = 'newline_delimited', columns = {{{cols}}})"
    )
    print("LLM calls by purpose")
    con.sql(
        """SELECT purpose, count(*) AS calls, sum(coalesce(cache_hit::INT, 0)) AS cache_hits,
                  sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0)) AS tokens,
                  round(avg(coalesce(latency, 0)), 4) AS mean_latency_s
           FROM ev WHERE type = 'llm_call' GROUP BY purpose ORDER BY calls DESC"""
    ).show()
    print("Rollouts by epoch")
    con.sql(
        """SELECT coalesce(epoch, 0) AS epoch, count(*) AS rollouts,
                  round(avg(coalesce(reward, 0)), 3) AS mean_reward
           FROM ev WHERE type = 'rollout' GROUP BY 1 ORDER BY 1"""
    ).show()
    print("Edit decisions")
    con.sql(
        """SELECT target, status, count(*) AS n FROM ev WHERE type = 'edit'
           GROUP BY target, status ORDER BY target, status"""
    ).show()


def with_pandas(events: Path) -> None:
    import pandas as pd

    df = pd.read_json(events, lines=True)
    for col in COLUMNS:
        if col not in df:
            df[col] = None
    calls = df[df["type"] == "llm_call"].copy()
    for col in ("prompt_tokens", "completion_tokens", "latency"):
        calls[col] = pd.to_numeric(calls[col]).fillna(0)
    calls["cache_hit"] = calls["cache_hit"].astype("boolean").fillna(False).astype(int)
    calls["tokens"] = (calls["prompt_tokens"] + calls["completion_tokens"]).astype(int)
    print("LLM calls by purpose")
    print(
        calls.groupby("purpose")
        .agg(calls=("type", "size"), cache_hits=("cache_hit", "sum"), tokens=("tokens", "sum"))
        .sort_values("calls", ascending=False)
        .to_string()
    )
    rollouts = df[df["type"] == "rollout"].copy()
    rollouts["epoch"] = pd.to_numeric(rollouts["epoch"]).fillna(0).astype(int)
    rollouts["reward"] = pd.to_numeric(rollouts["reward"]).fillna(0.0)
    print("\nRollouts by epoch")
    print(rollouts.groupby("epoch")["reward"].agg(["size", "mean"]).to_string())
    print("\nEdit decisions")
    edits = df[df["type"] == "edit"]
    print(edits.groupby(["target", "status"]).size().to_string())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", type=Path)
    parser.add_argument("--engine", choices=("duckdb", "pandas"))
    args = parser.parse_args()
    events = args.run / "events.jsonl"
    if not events.is_file():
        print(f"no events.jsonl in {args.run}", file=sys.stderr)
        return 2
    engine = args.engine or next(
        (e for e in ("duckdb", "pandas") if importlib.util.find_spec(e) is not None), None
    )
    if engine is None:
        print("neither duckdb nor pandas is installed: pip install duckdb (or pandas)")
        return 0
    (with_duckdb if engine == "duckdb" else with_pandas)(events)
    return 0


if __name__ == "__main__":
    sys.exit(main())
