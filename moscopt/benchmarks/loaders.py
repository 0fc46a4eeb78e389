"""Reading raw benchmark rows: local JSONL files, password-protected zips (decrypted in memory,
never on disk) and the Hugging Face hub (through `datasets`, imported lazily, at a pinned
revision).

Rows are streamed: a file is read one line at a time and a row is parsed only when it is asked
for (`only`), so memory does not grow with the size of the file. Every row comes back as a
`Row`: the source's dict plus where it came from (file and line, or dataset and row number), so
that a bad row gives a message naming the file, line and field.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from moscopt.benchmarks.spec import BenchmarkSpec, FieldMap, HubSource, LocalSource
from moscopt.errors import UserError
from moscopt.fsio import iter_lines, open_for_reading

DATA_DIR_ENV = "MOSCOPT_DATA_DIR"


@dataclass(frozen=True)
class Row:
    """One raw record and its origin (`path`+`line` for files, `origin` text for the hub)."""

    data: dict[str, Any]
    fields: FieldMap
    path: str
    line: int | None = None
    index: int | None = None  # row number within a hub dataset config (pinned revision)
    config: str | None = None
    values: dict[str, Any] | None = None  # constant meta values from the spec


def load_rows(
    spec: BenchmarkSpec,
    data: str | Path | None,
    *,
    only: Container[tuple[str, int]] | None = None,
) -> Iterator[Row]:
    """Raw rows of a benchmark from `data` (file or folder), `$MOSCOPT_DATA_DIR`, or the hub,
    one at a time. With `only`, just the rows whose `(path, line)` it holds are parsed and
    yielded (the others are skipped unread)."""
    if data is None and os.environ.get(DATA_DIR_ENV):
        data = os.environ[DATA_DIR_ENV]
    local = spec.source.local
    if data is not None:
        if local is None:
            raise UserError(f"benchmark '{spec.name}' has no local file format; remove --data")
        yield from read_local(local, resolve_local(spec, Path(data)), only=only)
        return
    if not spec.source.hub:
        assert local is not None  # the spec validator guarantees some source
        expected = ", ".join(local.files)
        raise UserError(
            f"benchmark '{spec.name}' needs local data: pass --data PATH or set {DATA_DIR_ENV} "
            f"to a folder holding {expected}"
        )
    for hub in spec.source.hub:
        yield from read_hub(spec, hub, only=only)


def resolve_local(spec: BenchmarkSpec, data: Path) -> Path:
    """The file to read: `data` itself, or the first expected file found inside folder `data`."""
    local = spec.source.local
    assert local is not None
    if data.is_file():
        return data
    if not data.exists():
        raise UserError("data path does not exist", path=data)
    tried: list[Path] = []
    for rel in local.files:
        for candidate in (data / rel, data / Path(rel).name):
            if candidate.is_file():
                return candidate
            tried.append(candidate)
    listing = ", ".join(str(p) for p in dict.fromkeys(tried))
    raise UserError(
        f"no data file for benchmark '{spec.name}' in this folder (looked for {listing})",
        path=data,
    )


def read_local(
    local: LocalSource, path: Path, *, only: Container[tuple[str, int]] | None = None
) -> Iterator[Row]:
    with contextlib.ExitStack() as stack:
        if path.suffix == ".zip":
            stream = stack.enter_context(_open_zip_member(path, local))
        else:
            stream = stack.enter_context(open_for_reading(path))
        yield from _parse_jsonl(stream, path, local.fields, only)


@contextlib.contextmanager
def _open_zip_member(path: Path, local: LocalSource) -> Iterator[IO[bytes]]:
    """A stream of one zip member, decrypted in memory (it is never written to disk)."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/")]
            member = local.member
            if member is None:
                jsonl = [n for n in names if n.endswith(".jsonl")]
                if len(jsonl) != 1:
                    raise UserError(
                        f"expected exactly one .jsonl file in the zip, found {len(jsonl)}",
                        path=path,
                    )
                member = jsonl[0]
            elif member not in names:
                raise UserError(f"the zip has no member '{member}'", path=path)
            pwd = local.password.encode() if local.password else None
            with zf.open(member, pwd=pwd) as stream:
                yield stream
    except zipfile.BadZipFile:
        raise UserError("not a valid zip file", path=path) from None
    except RuntimeError as e:  # zipfile's "Bad password" / "password required"
        raise UserError(f"cannot decrypt the zip: {e}", path=path) from None


def _parse_jsonl(
    stream: IO[bytes], path: Path, fields: FieldMap, only: Container[tuple[str, int]] | None
) -> Iterator[Row]:
    where = str(path)
    for i, line, _ in iter_lines(stream, path):
        if not line.strip() or (only is not None and (where, i) not in only):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"bad JSON line: {e.msg}", path=path, line=i) from None
        if not isinstance(obj, dict):
            raise UserError("each line must be a JSON object", path=path, line=i)
        yield Row(data=obj, fields=fields, path=where, line=i)


def read_hub(
    spec: BenchmarkSpec, hub: HubSource, *, only: Container[tuple[str, int]] | None = None
) -> Iterator[Row]:
    """Rows of every config of `hub`; an unreachable hub is one `UserError` saying what to do."""
    try:
        import datasets
    except ImportError:
        raise UserError(_offline_help(spec, "the 'datasets' package is not installed")) from None
    for config in hub.configs:
        where = f"{hub.path}" + (f" ({config})" if config else "") + f"@{hub.revision[:12]}"
        try:
            ds = datasets.load_dataset(hub.path, config, split=hub.split, revision=hub.revision)
        except Exception as e:  # any failure to fetch is the same advice to the user
            reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".strip()
            raise UserError(
                _offline_help(spec, f"cannot load {where} from the hub ({reason})")
            ) from None
        origin = f"hf://{where}"
        for i in range(len(ds)):
            if only is not None and (origin, i + 1) not in only:
                continue
            yield Row(
                data=dict(ds[i]),
                fields=hub.fields,
                path=origin,
                line=i + 1,
                index=i,
                config=config,
                values=dict(hub.values),
            )


def _offline_help(spec: BenchmarkSpec, reason: str) -> str:
    files = ", ".join(spec.source.local.files) if spec.source.local else "the data files"
    return (
        f"{reason}. Without network access, point moscopt at local data: "
        f"--data PATH (a file or a folder) or {DATA_DIR_ENV}=FOLDER, with {files} inside"
    )
