"""The study folder: ordinary run directories plus a manifest, records and the table.

    <study>/
      study.json                 the manifest: the frame every run shares (kind, benchmark,
                                 budget, seeds, configurations, repeats, base config digest)
      moscopt.yaml               the resolved base config (no secrets), for the reader
      runs/<config>-s<seed>/     a `moscopt train` run directory (or GEPA's run, see gepa_side)
      cache/<config>-s<seed>/    that run's own response cache: runs never share answers, so
                                 each spends its own budget and the order of runs is irrelevant
      evals/<config>-s<seed>.jsonl   its test rollouts (one row per task and sample index)
      records/<config>-s<seed>.json  written when the run and its evaluation are finished: a
                                 finished run is never repeated
      records/<config>-s<seed>.train.json     its training's outcome and spending
      records/<config>-s<seed>.rewound.json   calls a resume rewound (moscopt.study.accounting)
      table.md, table.json, table.svg

Every file is written atomically; a study killed at any instant continues where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moscopt.core import jsonio
from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_json, atomic_write_text, make_dirs, read_text

MANIFEST = "study.json"
SCHEMA_VERSION = 1
# operational settings: they may differ between the invocations of one study
OPERATIONAL = ("concurrency", "timeout", "max_retries", "backoff_base", "backoff_max")


@dataclass(frozen=True)
class Manifest:
    kind: str  # ablate | compare
    benchmark: str
    budget_calls: int
    seeds: list[int]
    configurations: list[str]
    repeats: str
    config_digest: str
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "kind": self.kind,
            "benchmark": self.benchmark,
            "budget_calls": self.budget_calls,
            "seeds": list(self.seeds),
            "configurations": list(self.configurations),
            "repeats": self.repeats,
            "config_digest": self.config_digest,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        return cls(
            kind=str(data["kind"]),
            benchmark=str(data["benchmark"]),
            budget_calls=int(data["budget_calls"]),
            seeds=[int(s) for s in data["seeds"]],
            configurations=[str(c) for c in data["configurations"]],
            repeats=str(data["repeats"]),
            config_digest=str(data["config_digest"]),
            schema_version=int(data.get("schema_version", SCHEMA_VERSION)),
            extra=dict(data.get("extra", {})),
        )


def config_digest(config_yaml: dict[str, Any]) -> str:
    """sha256 of the base config without its operational settings and its seed (per run)."""
    data = json.loads(json.dumps(config_yaml))
    data.pop("seed", None)
    for key in OPERATIONAL:
        data.get("llm", {}).pop(key, None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def run_name(configuration: str, seed: int) -> str:
    return f"{configuration}-s{seed}"


class StudyDir:
    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def run_path(self, name: str) -> Path:
        return self.path / "runs" / name

    def cache_path(self, name: str) -> Path:
        return self.path / "cache" / name

    def eval_path(self, name: str) -> Path:
        return self.path / "evals" / f"{name}.jsonl"

    def record_path(self, name: str) -> Path:
        return self.path / "records" / f"{name}.json"

    def train_record_path(self, name: str) -> Path:
        return self.path / "records" / f"{name}.train.json"

    def rewound_path(self, name: str) -> Path:
        return self.path / "records" / f"{name}.rewound.json"

    # -- the manifest ----------------------------------------------------------------------------

    def open_or_create(self, manifest: Manifest, config_yaml: str) -> bool:
        """Start the study, or check that an existing one has the same frame; True if it
        existed. A different frame is a `UserError` naming what differs (nothing touched)."""
        if self.manifest_path.exists():
            old = self.load_manifest()
            mine, theirs = manifest.to_json(), old.to_json()
            differ = sorted(k for k in mine if k != "extra" and mine[k] != theirs.get(k))
            if differ:
                shown = "; ".join(
                    f"config {', '.join(self._config_changes(config_yaml)) or '(operational)'}"
                    if k == "config_digest"
                    else f"{k}: {theirs.get(k)!r} there, {mine[k]!r} now"
                    for k in differ
                )
                raise UserError(
                    f"this study was started with another frame ({shown}); rerun it as it was "
                    "started to continue, or choose another --study",
                    path=self.manifest_path,
                )
            return True
        if self.path.exists() and any(self.path.iterdir()):
            raise UserError(
                "is not empty and holds no study: choose another --study", path=self.path
            )
        make_dirs(self.path)
        atomic_write_text(self.path / "moscopt.yaml", config_yaml)
        atomic_write_json(self.manifest_path, manifest.to_json())
        return False

    def _config_changes(self, config_yaml: str) -> list[str]:
        """The dotted keys in which `config_yaml` differs from the study's moscopt.yaml."""
        import yaml

        from moscopt.core import yamlio

        stored = self.path / "moscopt.yaml"
        try:
            old = yamlio.load(read_text(stored)) if stored.exists() else {}
        except yaml.YAMLError as e:
            problem = getattr(e, "problem", None) or "not valid YAML"
            raise UserError(f"not a study's config ({problem})", path=stored) from None
        return _changed_keys(old or {}, yamlio.load(config_yaml) or {})

    def load_manifest(self) -> Manifest:
        try:
            return Manifest.from_json(jsonio.loads(read_text(self.manifest_path)))
        except (KeyError, TypeError, ValueError) as e:
            raise UserError(f"not a study manifest ({e})", path=self.manifest_path) from None

    # -- records ---------------------------------------------------------------------------------

    def record(self, name: str) -> dict[str, Any] | None:
        path = self.record_path(name)
        if not path.exists():
            return None
        data = jsonio.loads(read_text(path))
        return data if isinstance(data, dict) else None

    def write_record(self, name: str, record: dict[str, Any]) -> None:
        atomic_write_json(self.record_path(name), record)


def _changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new)):
            if key == "seed" or (prefix == "llm." and key in OPERATIONAL):
                continue
            out += _changed_keys(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    return [] if old == new else [prefix.rstrip(".")]
