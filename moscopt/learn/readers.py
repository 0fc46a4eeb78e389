"""Read one transcript file into `Session`s: Claude Code, Codex, or the generic JSONL.

Claude Code (`~/.claude/projects/<project-slug>/<session-id>.jsonl`): one record a line, each
with `type` ("user", "assistant", "summary", "system", ...), `sessionId`, `cwd`, `timestamp`,
`version` (the CLI's, major 1 or 2) and, for messages, `message.content`: a string or a list of
blocks (`text`, `tool_use`, `tool_result`, `thinking`, `image`). Only the text blocks of
user and assistant records are kept; tool results, subagent (`isSidechain`) and meta
(`isMeta`) records, slash-command echoes and `<system-reminder>` inserts are left out.

Codex (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): `{"timestamp", "type", "payload"}`
lines; the first is `session_meta` (`id`, `cwd`, `cli_version`); the user's messages are the
`event_msg` records of payload type `user_message` (what was typed, without the
`<environment_context>` and instruction messages Codex inserts), the agent's the
`response_item` messages of role `assistant` (`output_text` blocks). The older unwrapped
rollouts (no `type` on the first line) are an unknown version.

Generic JSONL (`--source jsonl`): one session a line,
`{"id": "...", "cwd": "/path", "messages": [{"role": "user", "content": "...",
"timestamp": "2026-01-31T12:00:00Z"}, ...]}` (`cwd`, `timestamp`, `version` (1) optional;
roles other than user and assistant are ignored).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from moscopt.learn.secrets import clean
from moscopt.learn.sessions import (
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    MAX_TURN_CHARS,
    HarvestCounts,
    Session,
    Skipped,
    TurnRole,
    parse_time,
)

_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)
# user-role text the CLIs insert themselves, never typed by the user
_INSERTED = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "Caveat: The messages below were generated",
    "[Request interrupted",
    "<environment_context>",
    "<user_instructions>",
    "<user_shell_command>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
CLAUDE_VERSIONS = ("1", "2")  # majors this reader knows
CODEX_VERSIONS = ("0",)


def load_records(path: Path, counts: HarvestCounts) -> list[dict[str, Any]]:
    """The JSON objects of `path`, one a line; a line that is not one is counted and left out."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise Skipped("too-large", str(path))
        with open(path, "rb") as stream:
            records = [obj for raw in stream if (obj := _record(raw, counts)) is not None]
    except OSError as e:
        raise Skipped("unreadable", f"{path}: {e.strerror or e}") from None
    if not records:
        raise Skipped("malformed", f"{path}: no JSON object")
    return records


def _record(raw: bytes, counts: HarvestCounts) -> dict[str, Any] | None:
    if not raw.strip():
        return None
    if len(raw) > MAX_LINE_BYTES:
        counts.bad_lines += 1
        return None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        obj = None
    if not isinstance(obj, dict):
        counts.bad_lines += 1
        return None
    return obj


def user_text(text: str) -> str | None:
    """What the user typed, or None for text a CLI inserted."""
    text = _REMINDER.sub("", text).strip()
    if not text or text.startswith(_INSERTED):
        return None
    return text


def blocks_text(content: Any, kinds: tuple[str, ...]) -> str:
    """The text of a message's `content`: a string, or the blocks of a type in `kinds`."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") in kinds and isinstance(b.get("text"), str)
    ]
    return "\n".join(parts)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _major(version: str | None) -> str | None:
    return version.split(".", 1)[0] if version else None


def _add(session: Session, role: TurnRole, text: str | None, when: Any) -> None:
    if role == "user" and text is not None:
        text = user_text(text)
    if text:
        session.add(role, clean(text, MAX_TURN_CHARS), parse_time(when))


def read_claude_code(path: Path, counts: HarvestCounts) -> list[Session]:
    records = load_records(path, counts)
    messages = [r for r in records if r.get("type") in ("user", "assistant")]
    if not messages or not all(isinstance(r.get("message"), dict) for r in messages):
        raise Skipped("malformed", f"{path}: no user/assistant records with a message")
    version = next((v for r in messages if (v := _str(r.get("version")))), None)
    if _major(version) not in CLAUDE_VERSIONS:
        raise Skipped("unknown-version", f"{path}: version {version!r}")
    first = messages[0]
    session = Session(
        "claude-code",
        _str(first.get("sessionId")) or path.stem,
        path,
        cwd=next((c for r in messages if (c := _str(r.get("cwd")))), None),
        version=version,
    )
    for r in messages:
        if r.get("isSidechain") or r.get("isMeta"):
            continue
        kinds = ("text",)
        content = r["message"].get("content")
        if r["type"] == "assistant" and isinstance(content, str):
            content = [{"type": "text", "text": content}]
        _add(session, r["type"], blocks_text(content, kinds), r.get("timestamp"))
    return [session]


def read_codex(path: Path, counts: HarvestCounts) -> list[Session]:
    records = load_records(path, counts)
    first = records[0]
    if "type" not in first and ("id" in first or "instructions" in first):
        raise Skipped("unknown-version", f"{path}: an unwrapped (pre-session_meta) rollout")
    meta = first.get("payload")
    if first.get("type") != "session_meta" or not isinstance(meta, dict):
        raise Skipped("malformed", f"{path}: the first line is not a session_meta record")
    version = _str(meta.get("cli_version"))
    if _major(version) not in CODEX_VERSIONS:
        raise Skipped("unknown-version", f"{path}: cli_version {version!r}")
    session = Session(
        "codex", _str(meta.get("id")) or path.stem, path, _str(meta.get("cwd")), version
    )
    typed = any(
        r.get("type") == "event_msg"
        and isinstance(r.get("payload"), dict)
        and r["payload"].get("type") == "user_message"
        for r in records
    )
    for r in records[1:]:
        p = r.get("payload")
        if not isinstance(p, dict):
            continue
        if r.get("type") == "event_msg" and p.get("type") == "user_message":
            _add(session, "user", _str(p.get("message")), r.get("timestamp"))
        elif r.get("type") == "response_item" and p.get("type") == "message":
            content = p.get("content")
            if p.get("role") == "assistant":
                text = blocks_text(content, ("output_text", "text"))
                _add(session, "assistant", text, r.get("timestamp"))
            elif p.get("role") == "user" and not typed:  # older rollouts: no user_message events
                _add(session, "user", blocks_text(content, ("input_text",)), r.get("timestamp"))
    return [session]


def read_generic(path: Path, counts: HarvestCounts) -> list[Session]:
    records = load_records(path, counts)
    sessions: list[Session] = []
    for number, r in enumerate(records, 1):
        messages = r.get("messages")
        if r.get("version", 1) != 1:
            raise Skipped("unknown-version", f"{path}: version {r.get('version')!r}")
        if not isinstance(messages, list):
            counts.bad_lines += 1
            continue
        session = Session("jsonl", str(r.get("id") or f"{path.stem}:{number}"), path)
        session.cwd = _str(r.get("cwd"))
        for m in messages:
            if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
                continue
            content = m.get("content")
            text = content if isinstance(content, str) else blocks_text(content, ("text",))
            _add(session, m["role"], text, m.get("timestamp") or r.get("timestamp"))
        sessions.append(session)
    if not sessions:
        raise Skipped("malformed", f"{path}: no line with a 'messages' list")
    return sessions


Reader = Callable[[Path, HarvestCounts], list[Session]]
READERS: dict[str, Reader] = {
    "claude-code": read_claude_code,
    "codex": read_codex,
    "jsonl": read_generic,
}


def read_file(source: str, path: Path, counts: HarvestCounts) -> Iterator[Session]:
    """The sessions of one transcript file; a file the reader cannot take is counted in
    `counts.skipped` (never raised)."""
    counts.files += 1
    try:
        sessions = READERS[source](path, counts)
    except Skipped as e:
        counts.skipped[e.reason] += 1
        return
    except (RecursionError, MemoryError):  # pathological nesting: not a transcript we take
        counts.skipped["malformed"] += 1
        return
    yield from sessions
