# mypy: ignore-errors
"""A small POSIX-like shell, run *inside* the sandbox by `moscopt.agent.tools.shell` (this file's
text is the program `run_python` executes; it imports nothing from moscopt).

The sandbox refuses execve and fork, so no real shell can run there: this interprets the usual
subset itself. Lists with `;`, `&&`, `||` and newlines; pipelines with `|`; redirections `>`,
`>>`, `<`; quoting as POSIX (shlex). Builtins: echo, printf, cat, ls, pwd, cd, head, tail, wc,
grep, sort, uniq, cut, tr, seq, mkdir, touch, rm, cp, mv, true, false, python/python3 (-c CODE
or a file, run in this interpreter). Anything else: "command not found", status 127.
"""

import contextlib
import io
import os
import re
import shlex
import shutil
import sys


def _lines(data):
    return data.splitlines(keepends=True)


def _num(args, flag, default):
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return int(args[i + 1]), args[:i] + args[i + 2 :]
        if a.startswith(flag) and a[len(flag) :].lstrip("-").isdigit():
            return int(a[len(flag) :]), args[:i] + args[i + 1 :]
    return default, args


def _split_flags(args):
    flags, rest = set(), []
    for a in args:
        if a.startswith("-") and len(a) > 1 and not rest and not a.lstrip("-").isdigit():
            flags.update(a[1:])
        else:
            rest.append(a)
    return flags, rest


def _read(paths, stdin):
    if not paths:
        return stdin
    out = []
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            out.append(f.read())
    return "".join(out)


def run_command(argv, stdin):
    """(stdout, status) of one simple command."""
    name, args = argv[0], argv[1:]
    if name == "echo":
        newline = not (args and args[0] == "-n")
        return " ".join(args[1:] if not newline else args) + ("\n" if newline else ""), 0
    if name == "printf":
        if not args:
            return "", 0
        fmt = args[0].encode().decode("unicode_escape")
        try:
            return fmt % tuple(args[1:]) if "%" in fmt else fmt, 0
        except (TypeError, ValueError):
            return fmt, 1
    if name in ("true", ":"):
        return "", 0
    if name == "false":
        return "", 1
    if name == "pwd":
        return os.getcwd() + "\n", 0
    if name == "cd":
        os.chdir(args[0] if args else ".")
        return "", 0
    if name == "cat":
        return _read(args, stdin), 0
    if name == "ls":
        flags, paths = _split_flags(args)
        out = []
        for p in paths or ["."]:
            if os.path.isdir(p):
                names = sorted(os.listdir(p))
                out += [n for n in names if "a" in flags or not n.startswith(".")]
            elif os.path.exists(p):
                out.append(p)
            else:
                return f"ls: {p}: No such file or directory\n", 2
        return "".join(n + "\n" for n in out), 0
    if name in ("head", "tail"):
        n, rest = _num(args, "-n", 10)
        lines = _lines(_read(rest, stdin))
        return "".join(lines[:n] if name == "head" else lines[-n:] if n else []), 0
    if name == "wc":
        flags, paths = _split_flags(args)
        data = _read(paths, stdin)
        counts = {"l": data.count("\n"), "w": len(data.split()), "c": len(data.encode())}
        chosen = [k for k in "lwc" if k in flags] or ["l", "w", "c"]
        return " ".join(str(counts[k]) for k in chosen) + "\n", 0
    if name == "grep":
        flags, rest = _split_flags(args)
        if not rest:
            return "grep: no pattern\n", 2
        pattern = re.compile(rest[0], re.IGNORECASE if "i" in flags else 0)
        hits = [
            (i, line)
            for i, line in enumerate(_lines(_read(rest[1:], stdin)), 1)
            if bool(pattern.search(line)) != ("v" in flags)
        ]
        if "c" in flags:
            return f"{len(hits)}\n", 0 if hits else 1
        body = "".join((f"{i}:" if "n" in flags else "") + line for i, line in hits)
        return body, 0 if hits else 1
    if name == "sort":
        flags, paths = _split_flags(args)
        lines = [line.rstrip("\n") for line in _lines(_read(paths, stdin))]
        if "n" in flags:

            def key(s):
                m = re.match(r"\s*(-?\d+(?:\.\d+)?)", s)
                return (float(m.group(1)) if m else 0.0, s)

            lines.sort(key=key, reverse="r" in flags)
        else:
            lines.sort(reverse="r" in flags)
        if "u" in flags:
            lines = list(dict.fromkeys(lines))
        return "".join(line + "\n" for line in lines), 0
    if name == "uniq":
        flags, paths = _split_flags(args)
        out, prev, count = [], None, 0
        for line in [*_lines(_read(paths, stdin)), None]:
            if line == prev:
                count += 1
                continue
            if prev is not None:
                out.append((f"{count:7d} " if "c" in flags else "") + prev)
            prev, count = line, 1
        return "".join(out), 0
    if name == "cut":
        delim, fields, rest = "\t", "", []
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-d", "-f") and i + 1 < len(args):
                delim, fields = (args[i + 1], fields) if a == "-d" else (delim, args[i + 1])
                i += 2
                continue
            if a.startswith("-d"):
                delim = a[2:]
            elif a.startswith("-f"):
                fields = a[2:]
            else:
                rest.append(a)
            i += 1
        wanted = [int(f) - 1 for f in fields.split(",") if f.isdigit()]
        out = []
        for line in _lines(_read(rest, stdin)):
            parts = line.rstrip("\n").split(delim)
            out.append(delim.join(parts[j] for j in wanted if j < len(parts)) + "\n")
        return "".join(out), 0
    if name == "tr":
        flags, sets = _split_flags(args)
        data = stdin
        if "d" in flags and sets:
            return "".join(c for c in data if c not in _expand(sets[0])), 0
        if len(sets) == 2:
            a, b = _expand(sets[0]), _expand(sets[1])
            b = (b + b[-1:] * len(a))[: len(a)] if b else b
            return data.translate(str.maketrans(a, b)) if b else data, 0
        return "tr: two sets needed\n", 1
    if name == "seq":
        nums = [int(a) for a in args]
        lo, step, hi = (1, 1, nums[0]) if len(nums) == 1 else (nums[0], 1, nums[1])
        if len(nums) == 3:
            lo, step, hi = nums
        return "".join(f"{i}\n" for i in range(lo, hi + (1 if step > 0 else -1), step)), 0
    if name == "mkdir":
        _, paths = _split_flags(args)
        for p in paths:
            os.makedirs(p, exist_ok=True)
        return "", 0
    if name == "touch":
        for p in args:
            with open(p, "a", encoding="utf-8"):
                pass
        return "", 0
    if name == "rm":
        flags, paths = _split_flags(args)
        for p in paths:
            if os.path.isdir(p) and "r" in flags:
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
            elif "f" not in flags:
                return f"rm: {p}: No such file or directory\n", 1
        return "", 0
    if name in ("cp", "mv"):
        _, paths = _split_flags(args)
        if len(paths) != 2:
            return f"{name}: two paths needed\n", 1
        (shutil.copy if name == "cp" else shutil.move)(paths[0], paths[1])
        return "", 0
    if name in ("python", "python3"):
        if args[:1] == ["-c"] and len(args) > 1:
            code = args[1]
        elif args:
            with open(args[0], encoding="utf-8") as f:
                code = f.read()
        else:
            code = stdin
        buffer = io.StringIO()
        status = 0
        with contextlib.redirect_stdout(buffer):
            try:
                exec(compile(code, "<python>", "exec"), {"__name__": "__main__"})
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else 0
            except Exception as e:
                print(f"{type(e).__name__}: {e}", file=sys.stderr)
                status = 1
        return buffer.getvalue(), status
    return f"{name}: command not found\n", 127


def _expand(spec):
    out, i = [], 0
    spec = spec.replace("[:lower:]", "a-z").replace("[:upper:]", "A-Z").replace("[:digit:]", "0-9")
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out += [chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1)]
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(out)


def run_pipeline(words):
    """Run `a | b > f` (a list of words with operators); its exit status."""
    stages, current = [], []
    for w in words:
        if w == "|":
            stages.append(current)
            current = []
        else:
            current.append(w)
    stages.append(current)
    data, status = "", 0
    for k, stage in enumerate(stages):
        argv, out_path, mode, in_path = [], None, "w", None
        i = 0
        while i < len(stage):
            w = stage[i]
            if w in (">", ">>", "<") and i + 1 < len(stage):
                if w == "<":
                    in_path = stage[i + 1]
                else:
                    out_path, mode = stage[i + 1], "a" if w == ">>" else "w"
                i += 2
                continue
            argv.append(w)
            i += 1
        if in_path is not None:
            with open(in_path, encoding="utf-8", errors="replace") as f:
                data = f.read()
        if not argv:
            return 0
        try:
            out, status = run_command(argv, data if k > 0 or in_path else "")
        except (OSError, ValueError, IndexError) as e:
            sys.stderr.write(f"{argv[0]}: {e}\n")
            out, status = "", 1
        if out_path is not None:
            with open(out_path, mode, encoding="utf-8") as f:
                f.write(out)
            out = ""
        data = out
    sys.stdout.write(data)
    return status


def run_script(script):
    status = 0
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            words = list(lexer)
        except ValueError as e:
            sys.stderr.write(f"syntax error: {e}\n")
            return 2
        command, op = [], ";"
        for w in [*words, ";"]:
            if w in (";", "&&", "||"):
                due = op == ";" or (op == "&&" and status == 0) or (op == "||" and status != 0)
                if command and due:
                    if command[0] == "exit":
                        return int(command[1]) if len(command) > 1 else status
                    status = run_pipeline(command)
                command, op = [], w
            else:
                command.append(w)
    return status
