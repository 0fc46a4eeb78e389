"""Read what an offline W&B run recorded: its transaction log (`run-<id>.wandb`), the records
wandb writes and `wandb sync` uploads (LevelDB log framing: 32 KiB blocks of records, each
`crc32 (4) | length (2, LE) | kind (1) | data`, kinds full/first/middle/last; a 7-byte header
`:W&B`, magic, version)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

BLOCK = 32768
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> list[Any]:
    """The protobuf `Record`s of the log, in order."""
    from wandb.proto import wandb_internal_pb2 as pb

    raw = path.read_bytes()
    assert raw[:4] == b":W&B", raw[:8]
    out: list[Any] = []
    pos, pending = HEADER, b""
    while pos + 7 <= len(raw):
        left = BLOCK - pos % BLOCK
        if left < 7:  # the block's tail is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", raw[pos : pos + 7])
        data = raw[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 0 and length == 0:
            continue
        pending = data if kind in (FULL, FIRST) else pending + data
        if kind in (FULL, LAST):
            record = pb.Record()
            record.ParseFromString(pending)
            out.append(record)
            pending = b""
    return out


def recorded(path: Path) -> dict[str, Any]:
    """What the run recorded: `history` (rows: key -> JSON value), `summary`, `config` keys,
    `artifacts` (name, type, files), `exit` code, `run` id and project."""
    import json

    out: dict[str, Any] = {"history": [], "summary": {}, "config": {}, "artifacts": [],
                           "exit": None, "run": None}  # fmt: skip
    for r in records(path):
        kind = r.WhichOneof("record_type")
        if kind == "history":
            row = {
                i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item
            }
            out["history"].append(row)
        elif kind == "summary":
            for i in r.summary.update:
                out["summary"][i.key or "/".join(i.nested_key)] = json.loads(i.value_json)
        elif kind == "run":
            out["run"] = (r.run.run_id, r.run.project, r.run.display_name)
            for i in r.run.config.update:
                out["config"][i.key] = json.loads(i.value_json)
        elif kind == "config":
            for i in r.config.update:
                out["config"][i.key] = json.loads(i.value_json)
        elif kind == "artifact":
            files = [c.path for c in r.artifact.manifest.contents]
            out["artifacts"].append((r.artifact.name, r.artifact.type, files))
        elif kind == "exit":
            out["exit"] = r.exit.exit_code
    return out
