"""The Hugging Face hub client, set up before a benchmark's data is read from the hub.

A built-in benchmark without `--data` (or `MOSCOPT_DATA_DIR`) reads its rows from the hub at a
pinned revision, through `datasets` and `huggingface_hub`. Offline, that client retries each
request with back-off (about 25 s of `Retrying in Ns` lines) before moscopt can say what to do.
So, once per process and before the client is used (`prepare_hub`):

- its own log lines are silenced (warnings and retries: moscopt's one error line says what
  failed and how to give local data);
- the hub's endpoint (`HF_ENDPOINT`, default huggingface.co) is probed with one connection of
  at most `PROBE_SECONDS`; when it cannot be reached the client is switched to offline mode
  (`HF_HUB_OFFLINE`, `HF_DATASETS_OFFLINE`), which reads a copy already in the local hub cache
  or fails at once. Behind a proxy (`HTTPS_PROXY`, ...) the probe would not tell, and is not
  made.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

PROBE_SECONDS = 3.0
QUIET = {"HF_HUB_VERBOSITY": "error", "DATASETS_VERBOSITY": "error"}
OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
_prepared: dict[str, bool] = {}


def hub_reachable(endpoint: str | None = None, timeout: float = PROBE_SECONDS) -> bool:
    """Whether one TCP connection to the hub's endpoint opens within `timeout` seconds."""
    url = urlsplit(endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = url.port or (80 if url.scheme == "http" else 443)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=timeout):
            return True
    except OSError:  # no route, no name, refused, timed out
        return False


def go_offline() -> None:
    """Offline mode for the hub client, whether or not it is imported yet."""
    for name in OFFLINE:
        os.environ[name] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = True  # type: ignore[attr-defined]
    config = sys.modules.get("datasets.config")
    if config is not None:
        config.HF_HUB_OFFLINE = True  # type: ignore[attr-defined]
        config.HF_DATASETS_OFFLINE = True  # type: ignore[attr-defined]


def quiet() -> None:
    """Silence the hub client's own log lines (set before its import, applied after it too)."""
    for name, level in QUIET.items():
        os.environ.setdefault(name, level)
    for name in ("huggingface_hub", "datasets", "fsspec"):
        logging.getLogger(name).setLevel(logging.ERROR)


def prepare_hub(uses_hub: bool, data: str | Path | None) -> bool | None:
    """Set the hub client up for a benchmark about to be read (see the module docstring):
    `uses_hub`, the benchmark's spec names hub sources; `data`, the `--data` given. Returns
    whether the hub was found reachable (None: not probed)."""
    if not uses_hub:
        return None
    quiet()
    if data is not None or os.environ.get("MOSCOPT_DATA_DIR") or os.environ.get(OFFLINE[0]):
        return None
    if any(os.environ.get(p) for p in PROXIES):
        return None
    endpoint = os.environ.get("HF_ENDPOINT") or ""
    if endpoint not in _prepared:
        _prepared[endpoint] = hub_reachable()
    if not _prepared[endpoint]:
        go_offline()
    return _prepared[endpoint]
