"""A harvested session: who said what, in order, scrubbed and bounded.

Readers (`moscopt.learn.readers`) turn one transcript file into `Session`s; what they keep is
only the conversation (the user's messages and the agent's text answers), each piece passed
through `moscopt.learn.secrets.clean` as it is read. Tool calls and their outputs are read (to
be skipped) but never kept. A file that cannot be read as its format is a `Skipped` with a
reason ("malformed", "unknown-version"), counted by the harvest, never an exception out of it.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

# bounds on what a harvest holds, whatever the transcripts hold
MAX_FILE_BYTES = 64 * 1024 * 1024  # larger transcripts are skipped ("too-large")
MAX_LINE_BYTES = 4 * 1024 * 1024  # longer lines are skipped (a huge tool output)
MAX_TURN_CHARS = 4000  # each message, after scrubbing
MAX_TURNS = 400  # per session: the first ones are kept

TurnRole = Literal["user", "assistant"]


@dataclass(frozen=True)
class Turn:
    role: TurnRole
    text: str  # scrubbed, bounded
    time: dt.datetime | None = None


@dataclass
class Session:
    source: str  # "claude-code" | "codex" | "jsonl"
    id: str
    path: Path
    cwd: str | None = None
    version: str | None = None  # the CLI version that wrote it, when the format says
    turns: list[Turn] = field(default_factory=list)

    @property
    def started(self) -> dt.datetime | None:
        return next((t.time for t in self.turns if t.time is not None), None)

    @property
    def ended(self) -> dt.datetime | None:
        return next((t.time for t in reversed(self.turns) if t.time is not None), None)

    def add(self, role: TurnRole, text: str, time: dt.datetime | None) -> None:
        """Append a turn (the caller has cleaned `text`); consecutive pieces of one role are
        one turn (an answer streamed as several records)."""
        if not text.strip() or len(self.turns) >= MAX_TURNS:
            return
        if self.turns and self.turns[-1].role == role:
            last = self.turns[-1]
            joined = (last.text + "\n\n" + text)[:MAX_TURN_CHARS]
            self.turns[-1] = Turn(role, joined, last.time or time)
            return
        self.turns.append(Turn(role, text, time))


class Skipped(Exception):
    """A transcript the harvest leaves out, and why (a `SKIP_REASONS` key)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


SKIP_REASONS = {
    "malformed": "not a transcript of this format",
    "unknown-version": "written by a version of the format this reader does not know",
    "too-large": f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB",
    "unreadable": "could not be read (permissions, not UTF-8)",
    "other-project": "outside --project",
    "too-old": "before --since",
    "empty": "no user message",
    "repeat": "repeats the turns of a longer session (a resumed one)",
}


@dataclass
class HarvestCounts:
    """What a harvest read and left out; `skipped` counts sessions by reason."""

    files: int = 0
    sessions: int = 0
    bad_lines: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        parts = [f"{self.sessions} session(s) read from {self.files} file(s)"]
        if self.skipped:
            parts.append(
                "skipped: " + ", ".join(f"{n} {r}" for r, n in sorted(self.skipped.items()))
            )
        if self.bad_lines:
            parts.append(f"{self.bad_lines} unreadable line(s) ignored")
        return "; ".join(parts)


def parse_time(value: object) -> dt.datetime | None:
    """An ISO 8601 timestamp (`Z` or an offset; naive means UTC), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def in_project(cwd: str | None, project: Path | None) -> bool:
    """Whether a session run in `cwd` belongs to `project` (the folder or one inside it)."""
    if project is None:
        return True
    if not cwd:
        return False
    try:
        here = Path(cwd).resolve()
    except (OSError, ValueError):
        return False
    return here == project or project in here.parents
