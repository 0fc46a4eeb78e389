"""Find the transcripts of a source, read them, keep the sessions of one project and window.

Where each source keeps its transcripts (`--path` overrides):

- claude-code: `$CLAUDE_CONFIG_DIR/projects` (default `~/.claude/projects`), one folder per
  working folder, `*.jsonl` inside (subagent transcripts left out);
- codex: `$CODEX_HOME/sessions` (default `~/.codex/sessions`), `YYYY/MM/DD/rollout-*.jsonl`;
- jsonl: no default; `--path` names the file or folder.

Read-only: nothing under those folders is written, moved or locked. A session is kept when it
ran in the project folder (or one inside it; `--project`, default the current folder, except
for `jsonl`, which is filtered only when `--project` is given) and ended on or after `since`.
A session that repeats another's turns (a resumed Claude Code session copies its history)
is kept once.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from moscopt.errors import UserError
from moscopt.learn.readers import READERS, read_file
from moscopt.learn.sessions import HarvestCounts, Session, in_project

SOURCES = tuple(READERS)


@dataclass
class Harvest:
    sessions: list[Session] = field(default_factory=list)
    counts: HarvestCounts = field(default_factory=HarvestCounts)


def default_root(source: str) -> Path | None:
    home = Path.home()
    if source == "claude-code":
        base = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(base) if base else home / ".claude") / "projects"
    if source == "codex":
        base = os.environ.get("CODEX_HOME")
        return (Path(base) if base else home / ".codex") / "sessions"
    return None


def _alnum(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text).lower()


def transcript_files(source: str, path: Path | None, project: Path | None) -> Iterator[Path]:
    """The transcript files of `source` under `path` (default: the source's own folder), in a
    stable order. Under Claude Code's projects folder, only the folders whose name (the
    working folder's path with its punctuation replaced) can belong to `project` are read."""
    root = path if path is not None else default_root(source)
    if root is None:
        raise UserError("--source jsonl needs --path FILE_OR_DIR", field="path")
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        if path is not None:
            raise UserError("no such file or folder", path=root, field="path")
        return  # the CLI was never used here: nothing to harvest
    pattern = "rollout-*.jsonl" if source == "codex" else "*.jsonl"
    slug = _alnum(str(project)) if project is not None else ""
    for file in sorted(root.rglob(pattern)):
        rel = file.relative_to(root).parts
        if source == "claude-code":
            if "subagents" in rel:
                continue
            if path is None and slug and len(rel) > 1 and not _alnum(rel[0]).startswith(slug):
                continue
        yield file


def harvest(
    source: str,
    *,
    path: Path | None = None,
    project: Path | None = None,
    since: dt.datetime | None = None,
) -> Harvest:
    """The sessions of `source` that ran in `project` (resolved; None: any) and ended on or
    after `since`; every file left out is counted by reason."""
    if source not in READERS:
        raise UserError(f"unknown source {source!r} (one of: {', '.join(SOURCES)})", field="source")
    out = Harvest()
    counts = out.counts
    for file in transcript_files(source, path, project):
        if since is not None and _mtime(file) < since:
            counts.files += 1
            counts.skipped["too-old"] += 1
            continue
        for session in read_file(source, file, counts):
            if not in_project(session.cwd, project):
                counts.skipped["other-project"] += 1
            elif since is not None and (session.ended or since) < since:
                counts.skipped["too-old"] += 1
            elif not any(t.role == "user" for t in session.turns):
                counts.skipped["empty"] += 1
            else:
                out.sessions.append(session)
    out.sessions = drop_repeats(out.sessions, counts)
    counts.sessions = len(out.sessions)
    return out


def _mtime(file: Path) -> dt.datetime:
    try:
        return dt.datetime.fromtimestamp(file.stat().st_mtime, dt.UTC)
    except OSError:
        return dt.datetime.max.replace(tzinfo=dt.UTC)  # let the reader count it


def drop_repeats(sessions: list[Session], counts: HarvestCounts) -> list[Session]:
    """`sessions` without those whose turns all open another kept session (longest kept)."""
    kept: list[Session] = []
    seen: dict[tuple[str, str], list[tuple[tuple[str, str], ...]]] = {}
    for s in sorted(sessions, key=lambda s: -len(s.turns)):
        turns = tuple((t.role, t.text) for t in s.turns)
        bucket = seen.setdefault(turns[0], [])
        if any(other[: len(turns)] == turns for other in bucket):
            counts.skipped["repeat"] += 1
            continue
        bucket.append(turns)
        kept.append(s)
    kept.sort(key=lambda s: (s.started or dt.datetime.min.replace(tzinfo=dt.UTC), s.id))
    return kept


def parse_since(value: str | None, *, now: dt.datetime | None = None) -> dt.datetime | None:
    """`--since`: a date (2026-01-31), an ISO datetime, or `Nd` (N days ago)."""
    if value is None:
        return None
    now = now or dt.datetime.now(dt.UTC)
    m = re.fullmatch(r"\s*(\d{1,5})\s*d\s*", value)
    if m:
        return now - dt.timedelta(days=int(m.group(1)))
    try:
        t = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UserError(
            f"--since {value!r}: give a date (2026-01-31), an ISO datetime or Nd (7d)",
            field="since",
        ) from None
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)
