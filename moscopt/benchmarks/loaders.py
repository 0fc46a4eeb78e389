"""Reading raw benchmark rows: local JSONL files, password-protected zips (decrypted in memory,
never on disk) and the Hugging Face hub (through `datasets`, imported lazily, at a pinned
revision).

Rows are streamed: a JSONL file is read one line at a time and a row is parsed only when it is
asked for (`only`), so memory does not grow with the size of the file (a `.json` array file is
read whole; its "line" is the item's position, from 1). Every row comes back as a `Row`: the
source's dict plus where it came from (file and line, or dataset and row number), so that a bad
row gives a message naming the file, line and field. A source's `transform` maps each raw row
to the row its field map reads, or drops it (None): the same function for the hub and for a
local copy in the hub's layout.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import zipfile
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from moscopt.benchmarks.spec import BenchmarkSpec, FieldMap, HubSource, LocalSource
from moscopt.core import jsonio
from moscopt.errors import UserError
from moscopt.run.fsio import iter_lines, open_for_reading

DATA_DIR_ENV = "MOSCOPT_DATA_DIR"
Transform = Callable[[dict[str, Any]], dict[str, Any] | None]


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
        for path in resolve_local(spec, Path(data)):
            yield from read_local(local, path, only=only)
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


def resolve_local(spec: BenchmarkSpec, data: Path) -> list[Path]:
    """The files to read: `data` itself, or the first expected file found inside folder `data`
    (for a pattern with `*`, every file it matches, sorted)."""
    local = spec.source.local
    assert local is not None
    if data.is_file():
        return [data]
    if not data.exists():
        raise UserError("data path does not exist", path=data)
    tried: list[Path] = []
    for rel in local.files:
        for candidate in (data / rel, data / Path(rel).name):
            if "*" in rel:
                pattern = str(candidate.relative_to(data))
                found = sorted(p for p in data.glob(pattern) if p.is_file())
                if found:
                    return found
            elif candidate.is_file():
                return [candidate]
            tried.append(candidate)
    listing = ", ".join(str(p) for p in dict.fromkeys(tried))
    raise UserError(
        f"no data file for benchmark '{spec.name}' in this folder (looked for {listing})",
        path=data,
    )


def read_local(
    local: LocalSource, path: Path, *, only: Container[tuple[str, int]] | None = None
) -> Iterator[Row]:
    transform = load_transform(local.transform)
    with contextlib.ExitStack() as stack:
        if path.suffix == ".zip":
            stream = stack.enter_context(_open_zip_member(path, local))
        else:
            stream = stack.enter_context(open_for_reading(path))
        if path.suffix == ".json":
            rows = _parse_json_array(stream, path, local.fields, only)
        else:
            rows = _parse_jsonl(stream, path, local.fields, only)
        for row in rows:
            data = _apply(transform, local.transform, row.data, row.path, row.line)
            if data is not None:
                yield Row(data=data, fields=row.fields, path=row.path, line=row.line)


def load_transform(entry: str | None) -> Transform | None:
    """Import a source's `transform` entry point now (a typo is one clear error)."""
    if entry is None:
        return None
    module_name, _, attr = entry.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # ImportError, or the module failing to import
        raise UserError(
            f"cannot import transform module '{module_name}': {type(e).__name__}: {e}",
            field="transform",
        ) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UserError(f"'{entry}' is not a callable in that module", field="transform")
    transform: Transform = fn
    return transform


def _apply(
    transform: Transform | None,
    entry: str | None,
    data: dict[str, Any],
    path: str,
    line: int | None,
) -> dict[str, Any] | None:
    if transform is None:
        return data
    try:
        out = transform(data)
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(f"row not readable by {entry}: {e}", path=path, line=line) from None
    if out is not None and not isinstance(out, dict):
        raise UserError(f"{entry} returned {type(out).__name__}, not a dict", field="transform")
    return out


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
            obj = jsonio.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"bad JSON line: {e.msg}", path=path, line=i) from None
        if not isinstance(obj, dict):
            raise UserError("each line must be a JSON object", path=path, line=i)
        yield Row(data=obj, fields=fields, path=where, line=i)


def _parse_json_array(
    stream: IO[bytes], path: Path, fields: FieldMap, only: Container[tuple[str, int]] | None
) -> Iterator[Row]:
    where = str(path)
    try:
        items = jsonio.loads(stream.read().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"not valid JSON: {e}", path=path) from None
    if not isinstance(items, list):
        raise UserError("a .json data file must hold one array of objects", path=path)
    for i, obj in enumerate(items, start=1):
        if only is not None and (where, i) not in only:
            continue
        if not isinstance(obj, dict):
            raise UserError("each item must be a JSON object", path=path, line=i)
        yield Row(data=obj, fields=fields, path=where, line=i)


def read_hub(
    spec: BenchmarkSpec, hub: HubSource, *, only: Container[tuple[str, int]] | None = None
) -> Iterator[Row]:
    """Rows of every config of `hub`; an unreachable hub is one `UserError` saying what to do."""
    try:
        import datasets
    except ImportError:
        raise UserError(_offline_help(spec, "the 'datasets' package is not installed")) from None
    transform = load_transform(hub.transform)
    extra = {"data_files": hub.data_files} if hub.data_files else {}
    for config in hub.configs:
        where = f"{hub.path}" + (f" ({config})" if config else "") + f"@{hub.revision[:12]}"
        try:
            ds = datasets.load_dataset(
                hub.path, config, split=hub.split, revision=hub.revision, **extra
            )
            if hub.columns is not None:
                ds = ds.select_columns(hub.columns)
        except Exception as e:  # any failure to fetch is the same advice to the user
            reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".strip()
            access = f". {hub.access}" if hub.access else ""
            raise UserError(
                _offline_help(spec, f"cannot load {where} from the hub ({reason}){access}"),
                field="source.hub",
            ) from None
        origin = f"hf://{where}"
        for i in range(len(ds)):
            if only is not None and (origin, i + 1) not in only:
                continue
            data = _apply(transform, hub.transform, dict(ds[i]), origin, i + 1)
            if data is None:
                continue
            yield Row(
                data=data,
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
