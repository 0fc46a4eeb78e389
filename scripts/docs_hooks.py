"""MkDocs hook: the reference pages, generated from the code so that nothing is written twice.

    mkdocs build --strict      (mkdocs.yml names this file under `hooks:`)

A page holding the line `<!-- generated: cli -->` gets the command-line reference, built from the
typer app (`typer.main.get_command(moscopt.cli.app)`): every command of `moscopt.cli.lazy`, in
the order of `moscopt --help`, with its help, its usage and each parameter's help record (the
lines `--help` prints: values, default, environment variable). A page holding
`<!-- generated: config -->` gets the configuration reference, built from the pydantic models
(`moscopt.config.Config` and its sections): every key with its type, bounds and default, each
described by its `Field` description, else by its comment in the `moscopt.yaml` template that
`moscopt init` writes, else by its comment in the model's source.

typer 0.29 carries its own copy of click (`typer._click`), whose commands mkdocs-click does not
recognise (nor read: its parameters are typer's); the pages are therefore made here, from the
same objects and records `--help` prints.
"""

from __future__ import annotations

import re
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "moscopt" / "templates" / "moscopt.yaml"
MARKER = re.compile(r"^<!-- generated: (cli|config) -->$", re.M)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace each generation marker of a page with its reference."""
    return MARKER.sub(lambda m: GENERATORS[m.group(1)](), markdown)


# --- Markdown helpers


def escape(text: str) -> str:
    """Text from a docstring or a comment as Markdown: code spans kept, and outside them the
    characters Markdown would read as markup (`<`, `*`, `_`, `[`, and `|` in a table) made
    literal."""
    parts = re.split(r"(`[^`\n]+`)", text)
    for i in range(0, len(parts), 2):
        part = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        parts[i] = re.sub(r"([*_\[\]\\|])", r"\\\1", part)
    return "".join(parts)


def code(value: str) -> str:
    """`value` as a code span (a pipe inside one does not split a table's cell)."""
    return "`" + value + "`"


def paragraphs(text: str) -> str:
    """A help text's paragraphs (blank-line separated, hard-wrapped) as Markdown paragraphs."""
    chunks = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip())]
    return "\n\n".join(escape(c) for c in chunks if c)


# --- the command line


def cli_reference() -> str:
    """Every command of `moscopt`, grouped as `moscopt --help` groups them."""
    import typer

    from moscopt.cli import app
    from moscopt.cli.lazy import COMMANDS, GROUPS

    root: Any = typer.main.get_command(app)  # a group (typer types it as a command)
    ctx = root.make_context("moscopt", ["--help"], resilient_parsing=True)
    out = ["## `moscopt`", "", paragraphs(root.help or ""), ""]
    out += usage(root, ctx) + parameters(root, ctx)
    out += [paragraphs(root.epilog or ""), ""]
    grouped = [name for names in GROUPS.values() for name in names]
    other = [name for name in COMMANDS if name not in grouped]
    for title, names in [*GROUPS.items(), *([("Other", tuple(other))] if other else [])]:
        out += [f"## {title}", ""]
        for name in names:
            command = root.get_command(ctx, name)
            sub = command.make_context(name, [], parent=ctx, resilient_parsing=True)
            out += [f"### `moscopt {name}`", "", paragraphs(command.help or ""), ""]
            out += usage(command, sub) + parameters(command, sub)
    return "\n".join(out)


def usage(command: Any, ctx: Any) -> list[str]:
    pieces = " ".join(command.collect_usage_pieces(ctx))
    return ["```text", f"{ctx.command_path} {pieces}".rstrip(), "```", ""]


def parameters(command: Any, ctx: Any) -> list[str]:
    """Arguments and options as `--help` lists them: each parameter's own help record (its
    names and value, then its help with the default, the environment variable and whether it
    is required), hidden ones left out."""
    records = [p.get_help_record(ctx) for p in command.params]
    help_option = command.get_help_option(ctx)
    records.append(help_option.get_help_record(ctx) if help_option is not None else None)
    rows = [(names, " ".join(text.split())) for names, text in filter(None, records)]
    if not rows:
        return []
    out = ["| parameter | description |", "| --- | --- |"]
    out += [f"| {code(names)} | {escape(text)} |" for names, text in rows]
    return [*out, ""]


# --- the configuration


def config_reference() -> str:
    """Every key of `moscopt.yaml`, a table per section, in the models' order."""
    from moscopt.config import Config

    # a key's description: its Field's, else its comment in the template, else in the source

    comments = template_comments(TEMPLATE.read_text())
    out: list[str] = []
    for title, prefix, model in sections(Config, ""):
        comments = {**{prefix + k: v for k, v in source_comments(model).items()}, **comments}
        note = comments.get(prefix.rstrip("."), "")
        out += [f"## {code(prefix.rstrip('.')) if prefix else title}", ""]
        out += [escape(note), ""] if note else []
        out += ["| key | type | default | description |", "| --- | --- | --- | --- |"]
        for name, field in model.model_fields.items():
            if is_model(field.annotation):
                continue
            key = prefix + name
            text = field.description or comments.get(key, "")
            default = "required" if field.is_required() else code(yaml_value(field))
            cells = [code(key), type_name(field.annotation) + bounds(field.metadata)]
            cells += [default, escape(text)]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def sections(model: Any, prefix: str) -> list[tuple[str, str, Any]]:
    """(title, dotted prefix, model) of `model` and of every section nested in it."""
    found = [(prefix or "Top level", prefix, model)]
    for name, field in model.model_fields.items():
        if is_model(field.annotation):
            found += sections(field.annotation, f"{prefix}{name}.")
        elif model_in_list(field.annotation) is not None:
            found += sections(model_in_list(field.annotation), f"{prefix}{name}[].")
    return found


def is_model(annotation: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def model_in_list(annotation: Any) -> Any:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is list and args and is_model(args[0]):
        return args[0]
    return None


def type_name(annotation: Any) -> str:
    """A field's type as a reader of the YAML file sees it."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(code(str(a)) for a in args)
    if origin in (typing.Union, types.UnionType):
        kept = [type_name(a) for a in args if a is not type(None)]
        nullable = len(kept) < len(args)
        return " or ".join(kept) + (" or `null`" if nullable else "")
    if origin is list:
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"mapping of {type_name(args[0])} to {type_name(args[1])}" if args else "mapping"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " \\| ".join(code(str(m.value)) for m in annotation)
    if is_model(annotation):
        return f"mapping ({annotation.__name__})"
    names = {int: "integer", float: "number", str: "string", bool: "boolean"}
    if annotation in names:
        return names[annotation]
    return getattr(annotation, "__name__", str(annotation))


def bounds(metadata: list[Any]) -> str:
    """The field's numeric bounds (`ge=1` -> `≥ 1`)."""
    signs = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
    found = [f"{s} {getattr(m, a)}" for m in metadata for a, s in signs.items() if hasattr(m, a)]
    return f" ({', '.join(found)})" if found else ""


def yaml_value(field: Any) -> str:
    """A field's default as it is written in moscopt.yaml."""
    import yaml

    value = field.get_default(call_default_factory=True)
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    elif isinstance(value, list):
        value = [v.model_dump() if hasattr(v, "model_dump") else v for v in value]
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w-]*):(?P<rest>.*)$")


def template_comments(text: str) -> dict[str, str]:
    """Dotted key -> its comment in the template (`key: value  # comment`, continued on the
    comment-only lines below it)."""
    found: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    last = ""
    for line in text.splitlines():
        m = KEY_LINE.match(line)
        if m is None:
            stripped = line.strip()
            if last and stripped.startswith("#") and line.startswith(" "):
                found[last] += " " + stripped.lstrip("#").strip()
            else:
                last = ""
            continue
        indent = len(m.group("indent"))
        stack = [(i, k) for i, k in stack if i < indent]
        key = ".".join([*(k for _, k in stack), m.group("key")])
        stack.append((indent, m.group("key")))
        comment = m.group("rest").partition(" #")[2]
        last = key if comment.strip() else ""
        if comment.strip():
            found[key] = comment.strip()
    return found


def source_comments(model: Any) -> dict[str, str]:
    """Field name -> the comment on its line in the model's source, else on the comment lines
    right above it."""
    import inspect

    found: dict[str, str] = {}
    above: list[str] = []
    for line in inspect.getsource(model).splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("#").strip())
            continue
        m = re.match(r"^    (\w+): [^#]*(?:#(.*))?$", line)
        if m and m.group(1) in model.model_fields:
            text = (m.group(2) or "").strip() or " ".join(above)
            if text:
                found[m.group(1)] = text
        above = []
    return found


GENERATORS = {"cli": cli_reference, "config": config_reference}
