"""Issue 42 item 6: every `moscopt ...` command the README and the docs show parses against the
real command line. A command in a code block is parsed with the command's own `make_context`
(nothing runs); a synopsis (`moscopt eval [--mode none|mixture] ...`) and a command quoted in
the prose are checked for what they name: the command, each option, each listed value."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from moscopt.cli import app

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([\w-]*)\s*$")
SHELL = {"bash", "sh", "shell", "console"}
SYNOPSIS = re.compile(r"\[|\w\|\w")  # [optional] parts, or values a|b|c
OPERATORS = {"&&", "||", "|", ";", "(", ")", "$("}


def code_lines(text: str) -> Iterator[tuple[str, int, str]]:
    """(block language, line number, logical line) of every fenced code block; a line ending in
    a backslash is joined with the next."""
    lang: str | None = None
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m and (lang is None or not m.group(1)):
            lang = m.group(1) if lang is None else None
            continue
        if lang is None:
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield lang, start, pending + line
        pending = ""


def commands_in(lang: str, line: str) -> Iterator[list[str]]:
    """The `moscopt` invocations of a shell line, each as argv without `moscopt`. In a block that
    is not marked as shell, only a line that starts with `moscopt ` is a command (the rest is
    output: `moscopt: error: ...`, a run's quoted lines, a folder tree)."""
    if lang not in SHELL and not re.match(r"^\s*(\$ )?moscopt ", line):
        return
    lexer = shlex.shlex(line, posix=True, punctuation_chars="();|&")
    lexer.whitespace_split = True
    tokens = list(lexer)
    current: list[str] | None = None
    at_start = True
    for token in tokens:
        if token in OPERATORS or set(token) <= set("();|&"):
            if current is not None:
                yield current
            current, at_start = None, True
            continue
        if at_start and token == "moscopt":
            current, at_start = [], False
        elif current is not None:
            current.append(token)
        elif at_start and not re.match(r"^[A-Z_][A-Z0-9_]*=", token):  # VAR=value prefixes
            at_start = False
    if current is not None:
        yield current


def all_commands() -> list[tuple[str, list[str], bool]]:
    """(where, argv, is a synopsis) for every command in a code block of the README and docs."""
    found = []
    for page in PAGES:
        lines = list(code_lines(page.read_text()))
        for i, (lang, number, line) in enumerate(lines):
            if lang not in SHELL and re.match(r"^\s+(\[|--)", line) and i:
                continue  # a synopsis's continuation: joined below
            if lang not in SHELL and re.match(r"^\s*moscopt ", line):
                more = [ln for _, _, ln in lines[i + 1 :]]
                line = uncomment(line)
                while more and re.match(r"^\s+(\[|--)", more[0]):
                    line += " " + uncomment(more.pop(0)).strip()
            elif lang not in SHELL:
                continue  # output, a folder tree, JSON, YAML
            where = f"{page.relative_to(ROOT)}:{number}"
            bare = uncomment(line)
            if lang not in SHELL and SYNOPSIS.search(bare):
                argv = bare.strip().removeprefix("$ ").split()[1:]
                found.append((where, argv, True))
                continue
            found.extend((where, argv, False) for argv in commands_in(lang, line))
    return found


def uncomment(line: str) -> str:
    return re.sub(r"\s+#\s.*$", "", line)


def root() -> Any:
    return typer.main.get_command(app)  # a group: its commands are loaded when looked up


def resolve(argv: list[str]) -> tuple[str | None, Any, Any, list[str]]:
    """(command name, command, parent context, its arguments), the root's own options parsed
    first; a name of None when `argv` holds only the root's options."""
    group = root()
    lead = 0
    while lead < len(argv) and argv[lead].startswith("-"):
        lead += 1
    ctx = group.make_context("moscopt", argv[: lead + 1])
    if lead == len(argv):
        return None, group, ctx, []
    command = group.get_command(ctx, argv[lead])
    assert command is not None, f"no command {argv[lead]!r}"
    return argv[lead], command, ctx, argv[lead + 1 :]


def option_values(command: Any, ctx: Any) -> dict[str, set[str] | None]:
    """Every option name of `command` -> its choices (from the help record's `<a|b>`), or None."""
    names: dict[str, set[str] | None] = {}
    params = [*command.params, command.get_help_option(ctx)]
    for param in filter(None, params):
        if param.param_type_name != "option":
            continue
        record = param.get_help_record(ctx)
        m = re.search(r"<([^>]*\|[^>]*)>", record[0] if record else "")
        choices = set(m.group(1).split("|")) if m else None
        names.update({n: choices for n in [*param.opts, *param.secondary_opts]})
    return names


def check_synopsis(argv: list[str]) -> None:
    """The command exists, every option it names is one of the command's, and every value it
    lists for an option with choices is one of them."""
    words = [w for w in re.split(r"[\[\]\s]+", " ".join(argv)) if w and w != "|"]
    if not words or words[0].isupper():  # `moscopt CMD`: a placeholder for any command
        return
    _, command, ctx, _ = resolve(words[:1])
    sub = command.make_context(words[0], [], parent=ctx, resilient_parsing=True)
    known = option_values(command, sub)
    for i, word in enumerate(words):
        if not word.startswith("-") or word == "...":
            continue
        name = word.split("=")[0]
        assert name in known, f"moscopt {words[0]} has no option {name}"
        value = words[i + 1] if i + 1 < len(words) else ""
        listed = {v for v in value.split("|") if v and not v.isupper()}
        choices = known[name]
        if choices is not None and "|" in value:
            assert listed <= choices, f"{name}: {listed - choices}"


def parse(argv: list[str]) -> None:
    """Parse `argv` as `moscopt` would, running nothing."""
    try:
        name, command, ctx, rest = resolve(argv)
        if name is not None:
            command.make_context(name, rest, parent=ctx)
    except Exception as e:  # typer's click: Exit(0) after --help, UsageError on a bad command
        if getattr(e, "exit_code", 1) != 0:
            raise AssertionError(f"{type(e).__name__}: {getattr(e, 'message', e)}") from None


COMMANDS = all_commands()


def test_the_docs_show_commands_to_check() -> None:
    pages = {where.split(":")[0] for where, _, _ in COMMANDS}
    assert {"README.md", "docs/usage.md", "docs/learn.md", "docs/task-files.md"} <= pages
    assert sum(synopsis for _, _, synopsis in COMMANDS) >= 12  # the commands at a glance
    readme = [argv for where, argv, _ in COMMANDS if where.startswith("README.md")]
    assert readme[0] == ["init", "demo"]  # set-up command 1: `moscopt init demo && (cd demo &&
    assert readme[1][:3] == ["train", "--benchmark", "offline"]  # moscopt train ...)`


@pytest.mark.parametrize(
    ("where", "argv", "synopsis"), COMMANDS, ids=[f"{w} {' '.join(a)[:40]}" for w, a, _ in COMMANDS]
)
def test_a_command_in_the_docs_parses(where: str, argv: list[str], synopsis: bool) -> None:
    if synopsis:
        check_synopsis(argv)
    else:
        parse(argv)


INLINE = re.compile(r"`moscopt ((?:-[\w-]+ )*[a-z][\w-]*)(?: ([^`]*))?`")


def inline_commands() -> list[tuple[str, list[str]]]:
    """Commands quoted in the prose (`moscopt train --resume --run DIR`), as synopses."""
    found = []
    for page in PAGES:
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
        for m in INLINE.finditer(text):
            words = m.group(1).split()
            lead = [w for w in words if w.startswith("-")]
            name = words[-1]
            found.append((f"{page.relative_to(ROOT)}", [name, *lead, *(m.group(2) or "").split()]))
    return found


def test_every_command_quoted_in_the_prose_names_real_options() -> None:
    quoted = inline_commands()
    assert len(quoted) > 50
    for where, argv in quoted:
        try:
            check_synopsis(argv)
        except AssertionError as e:
            raise AssertionError(f"{where}: `moscopt {' '.join(argv)}`: {e}") from None


def test_a_wrong_command_fails_the_check() -> None:
    """The checks catch what they are for: an unknown option, a bad value, a missing command."""
    text = "```bash\nmoscopt train --benchmark offline --epochs two\n```\n"
    [(lang, _, line)] = list(code_lines(text))
    [argv] = list(commands_in(lang, line))
    for bad in (argv, ["train", "--no-such-flag"], ["no-such-command"]):
        with pytest.raises(AssertionError):
            parse(bad)
    with pytest.raises(AssertionError):
        check_synopsis(["train", "[--acceptance", "paired|lenient]"])
    with pytest.raises(AssertionError):
        check_synopsis(["eval", "[--no-such-flag]"])
    for bad in (["--no-such-root-flag", "status"], ["status", "--run"]):
        with pytest.raises(AssertionError):
            parse(bad)
    parse(["train", "--acceptance", "strict", "--benchmark", "offline"])
    parse(["-v", "status", "--help"])
    check_synopsis(["eval", "[--mode", "none|mixture]"])
