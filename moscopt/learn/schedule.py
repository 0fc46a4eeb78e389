"""Install (and remove) a nightly `moscopt learn` for one project: a user crontab line, or a
systemd user timer when there is no `crontab`.

One schedule per project, named by a hash of the project's path (`moscopt-learn-<id>`); what
was installed is recorded in `<project>/.moscopt/schedule/installed.json`, and `remove` takes
out exactly that (the crontab line carrying the marker, or the two unit files it wrote), and
nothing else. The job appends its output to `<project>/.moscopt/schedule/learn.log` (`describe`
reads the record and the log's last lines). A schedule without a budget (`--max-calls` or
`--max-cost`) is refused: a nightly job must not spend without a bound.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_text, make_dirs

RECORD = "installed.json"
LOG = "learn.log"


def folder(project: Path) -> Path:
    return project / ".moscopt" / "schedule"


def job_id(project: Path) -> str:
    return "moscopt-learn-" + hashlib.sha256(str(project).encode()).hexdigest()[:8]


def parse_at(at: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", at.strip())
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise UserError(f"--at {at!r}: give a time of day as HH:MM (24 h)", field="at")
    return int(m.group(1)), int(m.group(2))


def job_command(project: Path, learn_args: list[str]) -> str:
    """The shell line the job runs: `moscopt learn` in the project, output to the log."""
    log = folder(project) / LOG
    learn = [sys.executable, "-m", "moscopt", "learn", *learn_args]
    return f"cd {shlex.quote(str(project))} && {shlex.join(learn)} >> {shlex.quote(str(log))} 2>&1"


def backend(via: str | None) -> str:
    """ "cron" when `crontab` is on PATH, else "systemd" when `systemctl` is (or `via`)."""
    if via is not None:
        if via not in ("cron", "systemd"):
            raise UserError(f"--via {via!r}: one of cron, systemd", field="via")
        return via
    if shutil.which("crontab"):
        return "cron"
    if shutil.which("systemctl"):
        return "systemd"
    raise UserError("neither crontab nor systemctl is on PATH: cannot schedule", field="via")


def _run(cmd: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60)


def _crontab() -> str:
    done = _run(["crontab", "-l"])
    return done.stdout if done.returncode == 0 else ""  # 1: "no crontab for <user>"


def _write_crontab(text: str) -> None:
    done = _run(["crontab", "-"], stdin=text)
    if done.returncode != 0:
        raise UserError(f"crontab refused the new table: {done.stderr.strip()[:300]}")


def _units() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def install(
    project: Path, learn_args: list[str], at: str, *, via: str | None = None
) -> dict[str, Any]:
    """Install the nightly job (replacing this project's previous one); its record."""
    hour, minute = parse_at(at)
    kind = backend(via)
    if (folder(project) / RECORD).is_file():
        remove(project)
    make_dirs(folder(project))
    name = job_id(project)
    command = job_command(project, learn_args)
    record: dict[str, Any] = {"via": kind, "id": name, "at": f"{hour:02d}:{minute:02d}"}
    if kind == "cron":
        escaped = command.replace("%", "\\%")  # cron reads a bare % as a newline
        line = f"{minute} {hour} * * * {escaped} # {name}"
        table = _crontab()
        if table and not table.endswith("\n"):
            table += "\n"
        _write_crontab(table + line + "\n")
        record["line"] = line
    else:
        units = _units()
        service, timer = units / f"{name}.service", units / f"{name}.timer"
        make_dirs(units)
        atomic_write_text(
            service,
            f"[Unit]\nDescription=moscopt learn ({project})\n\n[Service]\nType=oneshot\n"
            f"ExecStart=/bin/sh -c {shlex.quote(command)}\n",
        )
        atomic_write_text(
            timer,
            f"[Unit]\nDescription=nightly moscopt learn ({project})\n\n[Timer]\n"
            f"OnCalendar=*-*-* {hour:02d}:{minute:02d}:00\nPersistent=true\n\n"
            "[Install]\nWantedBy=timers.target\n",
        )
        for cmd in (["daemon-reload"], ["enable", "--now", timer.name]):
            done = _run(["systemctl", "--user", *cmd])
            if done.returncode != 0:
                raise UserError(f"systemctl --user {cmd[0]} failed: {done.stderr.strip()[:300]}")
        record["units"] = [str(service), str(timer)]
    record["command"] = command
    atomic_write_text(folder(project) / RECORD, json.dumps(record, indent=2) + "\n")
    return record


def remove(project: Path) -> dict[str, Any] | None:
    """Remove exactly what `install` put in place for `project`; its record (None: none)."""
    path = folder(project) / RECORD
    if not path.is_file():
        return None
    record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if record.get("via") == "cron":
        marker = f"# {record['id']}"
        table = _crontab()
        kept = [line for line in table.splitlines() if not line.rstrip().endswith(marker)]
        _write_crontab("".join(line + "\n" for line in kept))
    else:
        units = [Path(u) for u in record.get("units", [])]
        timers = [u.name for u in units if u.suffix == ".timer"]
        if timers:
            _run(["systemctl", "--user", "disable", "--now", *timers])
        for unit in units:
            unit.unlink(missing_ok=True)
        _run(["systemctl", "--user", "daemon-reload"])
    path.unlink()
    return record


def describe(project: Path, tail: int = 5) -> list[str]:
    """Lines for a status display: the installed job and the last lines of its log."""
    path = folder(project) / RECORD
    if not path.is_file():
        return []
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [f"schedule: unreadable record {path}"]
    lines = [f"schedule: nightly moscopt learn at {record.get('at')} via {record.get('via')}"]
    log = folder(project) / LOG
    if log.is_file():
        lines.append(f"  log: {log}")
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
        lines.extend(f"  | {line}" for line in text[-tail:])
    return lines
