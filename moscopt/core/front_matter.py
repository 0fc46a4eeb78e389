"""A SKILL.md's text: YAML front matter between two `---` lines, then the Markdown body.

`split_front_matter` reads it (any problem is a `UserError` naming the file and line);
`join_front_matter` writes it so that it reads back to the same values: no wrapping, a string
holding a line break double-quoted with its breaks escaped (written plain or single-quoted, a
`---` line inside a value would read as the closing line), non-ASCII escaped where YAML would
read it back differently (U+0085 is a YAML line break).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from moscopt.core import yamlio
from moscopt.errors import UserError

_LINE_BREAKS = "\n\r\x85\u2028\u2029"


class _FrontMatterDumper(yamlio.NoAliasDumper):
    def represent_str(self, data: str) -> yaml.ScalarNode:
        style = '"' if any(c in data for c in _LINE_BREAKS) else None
        return self.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_FrontMatterDumper.add_representer(str, _FrontMatterDumper.represent_str)


def _dump(data: dict[str, Any], *, allow_unicode: bool) -> str:
    text: str = yaml.dump(
        data,
        Dumper=_FrontMatterDumper,
        sort_keys=False,
        allow_unicode=allow_unicode,
        default_flow_style=False,
        width=2**31 - 1,
    )
    return text


def join_front_matter(data: dict[str, Any], body: str) -> str:
    """`---`, the front matter, `---`, a blank line and the body (none when empty)."""
    fm = _dump(data, allow_unicode=True)
    if yamlio.load(fm) != data:  # e.g. U+0085, a YAML line break: escape non-ASCII
        fm = _dump(data, allow_unicode=False)
    return f"---\n{fm}---\n" + (f"\n{body}" if body else "")


def split_front_matter(text: str, *, path: str | Path | None = None) -> tuple[dict[str, Any], str]:
    """The front matter's mapping (keys as strings) and the body of SKILL.md `text`."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise UserError(
            "missing YAML front matter: the file must start with a line '---'", path=path, line=1
        )
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise UserError(
            "front matter is not closed: no second '---' line", path=path, line=1
        ) from None
    try:
        data = yamlio.load("\n".join(lines[1:end]))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = min(mark.line, end - 2) + 2 if mark is not None else 2
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        if problem != yamlio.ALIASES_REFUSED:
            problem = f"is not valid YAML: {problem}"
        raise UserError(f"front matter {problem}", path=path, line=line) from None
    if not isinstance(data, dict):
        raise UserError("front matter must be a YAML mapping (key: value)", path=path, line=2)
    return {str(k): v for k, v in data.items()}, "\n".join(lines[end + 1 :])
