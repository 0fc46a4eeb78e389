"""Rendering a report's blocks (headings, paragraphs, tables, images) as Markdown or HTML.

Table cells hold text a model wrote (edit summaries, skill names from evolution): in Markdown
each cell is escaped so that it renders as the literal text it is (`<script>`, `<img onerror>`,
`![x](http://remote/image)`, links and emphasis stay text), and in both formats it loses
terminal control sequences.
"""

from __future__ import annotations

import html
import re
from typing import Any

from moscopt.run.fsio import strip_controls

# ("h1"|"h2"|"h3"|"p", text) | ("table", headers, rows) | ("img", alt, src) | ("pre", text) |
# ("links", lead, [text, ...]): a "pre" block is literal text (a diff, a model's words), never
# markup; "links" links each text to the "h3" heading of the same text (`anchor`)
Block = tuple[Any, ...]

# -- renderers -----------------------------------------------------------------------------------


# Markdown punctuation that makes inline markup in a cell (emphasis, code spans, the `](` or
# `][` of a link or an image; HTML and entities are handled apart): backslash-escaped, which
# CommonMark renders literally. A bracket alone (`[+0.1, +0.3]`) stays as it is.
_MD_SPECIAL = re.compile(r"([\\`*_|~]|\](?=[(\[]))")


# printable ASCII words between single spaces, none of the characters md_text changes: most of
# a report's cells (numbers, names), returned as they are (a 1,000-step report has 21,500)
_WORD = "[" + "".join(re.escape(chr(c)) for c in range(33, 127) if chr(c) not in "\\`*_|~]&<")
_WORD += "]+"
_PLAIN = re.compile(f"{_WORD}(?: {_WORD})*")


def md_text(text: str) -> str:
    """`text` as one line of literal Markdown: `&` and `<` as entities (no tag, no entity can
    start; a lone `>` is text), Markdown punctuation backslash-escaped, controls removed."""
    text = str(text)
    if _PLAIN.fullmatch(text):
        return text
    flat = " ".join(strip_controls(text).split())
    return _MD_SPECIAL.sub(r"\\\1", flat.replace("&", "&amp;").replace("<", "&lt;"))


def anchor(heading: str) -> str:
    """The id a heading gets: lower case, letters, digits and hyphens (GitHub's rule for the
    headings the report makes)."""
    text = re.sub(r"[^a-z0-9 -]", "", strip_controls(heading).lower())
    return text.strip().replace(" ", "-")


def _md_cell(text: str) -> str:
    return md_text(text)


def render_markdown(blocks: list[Block]) -> str:
    out: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind == "h1":
            out.append(f"# {block[1]}")
        elif kind == "h2":
            out.append(f"## {block[1]}")
        elif kind == "h3":
            out.append(f"### {md_text(block[1])}")
        elif kind == "links":
            links = ", ".join(f"[{md_text(t)}](#{anchor(t)})" for t in block[2])
            out.append(f"{block[1]} {links}")
        elif kind == "pre":
            text = strip_controls(str(block[1])).rstrip("\n")
            runs = [len(r) for r in re.findall(r"`+", text)]
            fence = "`" * max(3, max(runs, default=0) + 1)  # no line of the text can close it
            out.append(f"{fence}text\n{text}\n{fence}")
        elif kind == "p":
            out.append(str(block[1]))
        elif kind == "img":
            out.append(f"![{block[1]}]({block[2]})")
        elif kind == "table":
            headers, rows = block[1], block[2]
            lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
    "table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;"
    "text-align:left;vertical-align:top}img{max-width:100%}code{background:#f4f4f4}"
)


def _inline(text: str) -> str:
    """Escape, then turn `code` spans into <code> (the only inline markup the page uses)."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def render_html(blocks: list[Block], title: str) -> str:
    body: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2"):
            body.append(f"<{kind}>{html.escape(str(block[1]))}</{kind}>")
        elif kind == "h3":
            text = strip_controls(str(block[1]))
            body.append(f'<h3 id="{anchor(text)}">{html.escape(text)}</h3>')
        elif kind == "links":
            links = ", ".join(
                f'<a href="#{anchor(t)}">{html.escape(strip_controls(t))}</a>' for t in block[2]
            )
            body.append(f"<p>{html.escape(block[1])} {links}</p>")
        elif kind == "pre":
            body.append(f"<pre>{html.escape(strip_controls(str(block[1])))}</pre>")
        elif kind == "p":
            body.append(f"<p>{_inline(str(block[1]))}</p>")
        elif kind == "img":
            body.append(f'<img alt="{html.escape(block[1])}" src="{html.escape(block[2])}">')
        elif kind == "table":
            head = "".join(f"<th>{html.escape(h)}</th>" for h in block[1])
            rows = "".join(
                "<tr>"
                + "".join(f"<td>{html.escape(strip_controls(str(c)))}</td>" for c in row)
                + "</tr>"
                for row in block[2]
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>moscopt report: {html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n"
        "<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )
