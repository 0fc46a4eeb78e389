"""What of moscopt's environment the external agent sees: an allow-list, never everything.

moscopt's own environment holds every provider key and often cloud credentials; an agent is a
program of its own that reads and runs what the model tells it, so it gets only:

- `BASE`: what a program needs to run at all (PATH, HOME, USER, SHELL, LANG and `LC_*`, TERM,
  TZ, TMPDIR, proxies);
- the names or shell patterns listed in `agent.env` (say `ANTHROPIC_API_KEY` for `claude -p`,
  or `CODEX_*`), taken from moscopt's environment;
- the `MOSCOPT_*` variables describing the task (added by the harness).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping, Sequence

BASE = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)


def agent_environment(
    allowed: Sequence[str], source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables of `source` (default: this process's) whose names match `BASE` or one of
    `allowed` (exact names or `fnmatch` patterns, case-sensitive)."""
    source = os.environ if source is None else source
    patterns = (*BASE, *allowed)
    return {
        name: value
        for name, value in source.items()
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
    }
