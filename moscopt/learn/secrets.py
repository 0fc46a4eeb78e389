"""Keep credentials out of what a harvest takes from a transcript.

A transcript holds whatever went through the agent: keys pasted by the user, `.env` files the
agent read, tokens in URLs, private keys in tool output. `clean` is applied to every piece of
text a reader keeps, before it is stored in memory, written or sent: the project's scrubbers
first (`moscopt.lm.redact`: secret environment variables in their encodings, key-shaped strings,
`Authorization` values), then a pass over credential shapes of its own:

- well-known key formats (AWS, GitHub, GitLab, Slack, Google, Stripe, JWTs, PEM private keys);
- the value of any assignment whose name says secret (`API_KEY=...`, `"password": "..."`);
- every value of a dotenv-style line (`NAME=value`, `export NAME=value`): `.env` contents;
- passwords in URLs (`scheme://user:password@host`) and secret query parameters (`?token=...`);
- long mixed-case random-looking strings (32+ characters of letters and digits), the shape of
  most bearer tokens; lower-case hex (commit hashes) is kept.

Then the text is bounded (`limit`) and freed of terminal control sequences.
"""

from __future__ import annotations

import re

from moscopt.lm.redact import MASK, redact, scrub_secrets
from moscopt.run.fsio import strip_controls

_SECRET_WORD = r"(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|passwd|pwd|credential|auth)"

_KEY_FORMATS = re.compile(
    r"\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"  # GitHub
    r"|\bglpat-[A-Za-z0-9_-]{16,}"  # GitLab
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|\bAIza[0-9A-Za-z_-]{30,}"  # Google
    r"|\b[rsp]k_(?:live|test)_[A-Za-z0-9]{10,}"  # Stripe
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
    re.DOTALL,
)
# NAME = value, "name": "value", name: value where the name says secret
_NAMED = re.compile(
    r"(?i)(\b[\w.-]*" + _SECRET_WORD + r"[\w.-]*['\"]?\s*[:=]\s*['\"]?)([^\s'\",;}&]{3,})"
)
# a dotenv line: every value, whatever the name (a DATABASE_URL holds a password too)
_DOTENV = re.compile(r"(?m)^(\s*(?:export\s+)?[A-Z][A-Z0-9_]*\s*=\s*['\"]?)([^\s'\"#][^'\"\n]*)")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)")
_URL_PARAM = re.compile(
    r"(?i)([?&;](?:access_token|refresh_token|id_token|token|key|api_key|apikey|secret|"
    r"sig|signature|password|auth|code|client_secret|x-amz-signature|x-amz-credential)=)"
    r"([^&#\s'\"]+)"
)
_RANDOM = re.compile(r"(?<![A-Za-z0-9_+/=-])[A-Za-z0-9_+/=-]{32,}(?![A-Za-z0-9_+/=-])")
_HARMLESS_DOTENV = re.compile(r"(?i)^(?:\d{1,6}|true|false|yes|no|on|off|none|null|debug|info)$")


def _random_looking(token: str) -> bool:
    return (
        any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and any(c.isdigit() for c in token)
    )


def _mask_dotenv(m: re.Match[str]) -> str:
    value = m.group(2).rstrip()
    if _HARMLESS_DOTENV.match(value):
        return m.group(0)
    return m.group(1) + MASK


def mask_credentials(text: str) -> str:
    """`text` with every credential shape listed in the module docstring replaced by `MASK`."""
    text = _KEY_FORMATS.sub(MASK, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    text = _URL_PARAM.sub(lambda m: m.group(1) + MASK, text)
    text = _DOTENV.sub(_mask_dotenv, text)
    text = _NAMED.sub(
        lambda m: m.group(0) if m.group(2) == MASK else m.group(1) + MASK,
        text,
    )
    return _RANDOM.sub(lambda m: MASK if _random_looking(m.group(0)) else m.group(0), text)


CUT = " [...truncated]"


def limit(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars` characters (a cut is marked)."""
    if len(text) <= max_chars:
        return text
    return text[: max(0, max_chars - len(CUT))].rstrip() + CUT


def clean(text: str, max_chars: int) -> str:
    """`text` as a harvest may keep it: scrubbed of secrets (the project's scrubbers, then
    `mask_credentials`), without control sequences, at most `max_chars` characters.

    Scrubbed before it is cut, so that a cut never leaves half a key unmasked."""
    text = strip_controls(text)
    text = mask_credentials(redact(scrub_secrets(text)))
    return limit(text, max_chars)
