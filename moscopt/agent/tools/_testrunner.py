"""Grade a solution against tests in the sandbox so that passing cannot be forged.

Loaded by `moscopt.agent.tools._bootstrap` (standard library only). Two processes, forked before
either is confined:

- the *solution* process runs the program (prompt, solution, setup code) as ``__main__``, like
  any sandboxed code, then serves the judge's requests: call this function, get that attribute;
- the *judge* runs the tests in its own interpreter, with pristine builtins and modules and its
  own copy of the prompt's helpers. The solution's functions are proxies: their arguments and
  results cross a pipe as plain data (None, bool, int, float, complex, str, bytes and lists,
  tuples, sets, frozensets and dicts of these); anything else stays in the solution's process
  as an opaque handle that compares equal only to itself. Only after every test has passed does
  the judge write the run's token (which it read after the fork, from a descriptor the solution's
  process closed first) on the status pipe.

So exiting early (``os._exit(0)``, ``sys.exit`` in an ``atexit`` handler), patching builtins,
modules or the harness, objects whose ``__eq__`` always says yes, or printing a token all score
nothing: none of it reaches the judge's process, and the solution never sees the token or the
tests. The solution's process dies with the judge (``PR_SET_PDEATHSIG``), and the judge is not
dumpable, so the solution cannot read its memory or descriptors either.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys

if __package__:
    from moscopt.agent.tools._wire import ProtocolError, RemoteError, decode, encode, receive, send
else:  # loaded by the bootstrap from this directory
    from _wire import (  # type: ignore[import-not-found,no-redef]
        ProtocolError,
        RemoteError,
        decode,
        encode,
        receive,
        send,
    )

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any, NoReturn

_SIGKILL = 9
_CHILD_EXIT_SECONDS = 1.0
TESTS_FILENAME = "tests.py"


# ------------------------------------------------------------------------------------- judge


class _Remote:
    """The judge's stand-in for a function or an object that lives in the solution's process."""

    __slots__ = ("_judge", "_ref")

    def __init__(self, judge: _Judge, ref: tuple[str, object]) -> None:
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_judge", judge)

    def _ask(self, *request: object) -> Any:
        return self._judge.ask(*request)

    def __call__(self, *args: object, **kwargs: object) -> Any:
        return self._ask("call", self._ref, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        return self._ask("getattr", self._ref, name)

    def __iter__(self) -> Any:
        return self._ask("iter", self._ref)

    def __next__(self) -> Any:
        return self._ask("next", self._ref)

    def __len__(self) -> int:
        result = self._ask("len", self._ref)
        if type(result) is not int:
            raise TypeError("len() of a remote object is not an int")
        return result

    def __getitem__(self, key: object) -> Any:
        return self._ask("getitem", self._ref, key)

    def __contains__(self, item: object) -> bool:
        return self._ask("contains", self._ref, item) is True

    def __bool__(self) -> bool:
        return self._ask("bool", self._ref) is True

    def __repr__(self) -> str:
        text = self._ask("repr", self._ref)
        return text if type(text) is str else "<remote object>"

    def __eq__(self, other: object) -> bool:  # identity only: the solution has no say
        return isinstance(other, _Remote) and other._ref == self._ref

    def __hash__(self) -> int:
        return hash(self._ref)


class _Judge:
    is_judge = True

    def __init__(self, requests: int, replies: int, secret: dict[str, Any], child: int) -> None:
        self._requests, self._replies, self._secret = requests, replies, secret
        self._child = child

    def end(self, code: int) -> NoReturn:
        """Exit after the solution's process, which ends when its requests pipe closes: left
        to the host's init, its zombie could take seconds to be reaped. (The judge cannot kill
        it: each has a Landlock domain of its own, and signals do not cross domains.)"""
        import time

        sys.stdout.flush()
        sys.stderr.flush()
        os.close(self._requests)
        deadline = time.monotonic() + _CHILD_EXIT_SECONDS
        try:
            while os.waitpid(self._child, os.WNOHANG)[0] == 0 and time.monotonic() < deadline:
                time.sleep(0.002)
        except ChildProcessError:
            pass
        os._exit(code)

    def ask(self, *request: object) -> Any:
        send(self._requests, tuple(self._wire(part) for part in request))
        reply = receive(self._replies)
        if type(reply) is not tuple or not reply:
            raise ProtocolError("malformed reply")
        if reply[0] == "ok" and len(reply) == 2:
            return decode(reply[1], lambda ident: _Remote(self, ("h", ident)))
        if reply[0] == "stop":
            raise StopIteration
        if reply[0] == "err" and len(reply) == 3:
            name, message = str(reply[1]), str(reply[2])
            kind = getattr(builtins, name, None)
            if isinstance(kind, type) and issubclass(kind, Exception):
                raise kind(message)
            raise RemoteError(f"{name}: {message}")
        raise ProtocolError("malformed reply")

    def _wire(self, part: object) -> object:
        if isinstance(part, tuple) and len(part) == 2 and part[0] in ("h", "n"):
            return part  # a reference
        if isinstance(part, dict) and all(type(k) is str for k in part):
            return {k: self._encode_arg(v) for k, v in part.items()}
        if isinstance(part, tuple):
            return tuple(self._encode_arg(v) for v in part)
        return self._encode_arg(part)

    def _encode_arg(self, value: object) -> object:
        def handle(obj: object) -> int:
            if isinstance(obj, _Remote) and obj._ref[0] == "h":
                return obj._ref[1]
            raise TypeError(f"cannot pass a {type(obj).__name__} to the solution")

        return encode(value, handle)

    def namespace(self, exports: list[Any]) -> dict[str, Any]:
        """The tests' globals: the prompt's own code, then proxies for the solution's names."""
        import ast

        prefix, entry_points = self._secret["prefix"], set(self._secret["entry_points"])
        names: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        exec(compile(prefix, "prompt.py", "exec"), names)
        functions = [
            node
            for node in ast.parse(prefix).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        # The functions the prompt asks to implement: those without a body, and the last one
        # (helpers come first in HumanEval's prompts).
        entry_points.update(node.name for node in functions if _is_stub(node))
        entry_points.update(node.name for node in functions[-1:])
        own = set(names) - entry_points
        for export in exports:
            if type(export) is not tuple or len(export) != 3:
                raise ProtocolError("malformed export")
            name, kind, payload = export
            if type(name) is not str or not name.isidentifier() or name.startswith("__"):
                continue  # the solution's process may have been rewritten to send anything
            if name in own or (hasattr(builtins, name) and name not in entry_points):
                continue  # the tests keep the prompt's helpers and the real builtins
            if kind == "callable":
                names[name] = _Remote(self, ("n", name))
            elif kind == "value":
                names[name] = decode(payload, lambda ident: _Remote(self, ("h", ident)))
            elif kind == "module":
                names[name] = _import(payload)
            elif kind == "attr":
                names[name] = getattr(_import(payload[0]), payload[1])
        return names

    def judge(self, status_fd: int, print_traceback: Callable[[BaseException], None]) -> NoReturn:
        try:
            first = receive(self._replies)
            if type(first) is not tuple or first[:1] != ("ready",) or len(first) != 2:
                reason = first[1] if type(first) is tuple and len(first) == 2 else ""
                if isinstance(reason, str) and reason:
                    _report(status_fd, "reason", reason[:200])
                raise RemoteError("the solution did not load")
            names = self.namespace(list(first[1]))
            exec(compile(self._secret["tests"], TESTS_FILENAME, "exec"), names)
        except BaseException as exc:  # any failure is a failed test
            try:
                print_traceback(exc)
            except BaseException:
                sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
            self.end(1)
        _report(status_fd, "verdict", self._secret["token"])
        self.end(0)


def _is_stub(node: Any) -> bool:
    import ast

    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return all(isinstance(s, ast.Pass) for s in body)


def _import(name: object) -> ModuleType:
    """A module the solution's process names, imported afresh here, never one it wrote: the
    work dir is not on the judge's path, and a module found there anyway is refused."""
    if type(name) is not str:
        raise ProtocolError("malformed module name")
    import importlib
    import importlib.util

    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None and spec.has_location else None
    here = os.path.realpath(os.getcwd()) + os.sep
    if spec is None or (origin is not None and os.path.realpath(origin).startswith(here)):
        raise ProtocolError(f"module {name!r} is not the judge's to import")
    return importlib.import_module(name)


def _report(status_fd: int, key: str, value: str) -> None:
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
    os.write(status_fd, f"{key}\t{escaped}\n".encode("utf-8", "backslashreplace"))


# ---------------------------------------------------------------------------------- solution


class _Solution:
    is_judge = False

    def __init__(self, requests: int, replies: int) -> None:
        self._requests, self._replies = requests, replies
        self._objects: dict[int, object] = {}
        self._namespace: dict[str, Any] = {}

    def _handle(self, obj: object) -> int:
        ident = len(self._objects) + 1
        self._objects[ident] = obj
        return ident

    def _resolve(self, ref: object) -> Any:
        if type(ref) is tuple and len(ref) == 2 and ref[0] == "n" and type(ref[1]) is str:
            if ref[1] not in self._namespace:
                raise NameError(f"name {ref[1]!r} is not defined")
            return self._namespace[ref[1]]
        if type(ref) is tuple and len(ref) == 2 and ref[0] == "h" and ref[1] in self._objects:
            return self._objects[ref[1]]
        raise ProtocolError("unknown reference")

    def _arg(self, value: object) -> object:
        return decode(value, lambda ident: self._objects[ident])

    def _answer(self, request: tuple[Any, ...]) -> object:
        op, target = request[0], self._resolve(request[1])
        if op == "call":
            args = [self._arg(a) for a in request[2]]
            kwargs = {str(k): self._arg(v) for k, v in request[3].items()}
            return target(*args, **kwargs)
        if op == "getattr":
            return getattr(target, str(request[2]))
        if op == "iter":
            return iter(target)
        if op == "next":
            return next(target)
        if op == "len":
            return len(target)
        if op == "getitem":
            return target[self._arg(request[2])]
        if op == "contains":
            return self._arg(request[2]) in target
        if op == "bool":
            return bool(target)
        if op == "repr":
            return repr(target)
        raise ProtocolError(f"unknown request {op!r}")

    def _exports(self) -> list[tuple[str, str, object]]:
        out: list[tuple[str, str, object]] = []
        for name, value in self._namespace.items():
            if name.startswith("__") and name.endswith("__"):
                continue
            if isinstance(value, type(sys)):
                out.append((name, "module", value.__name__))
                continue
            module = getattr(value, "__module__", None)
            if callable(value) and isinstance(module, str) and module != "__main__":
                source = sys.modules.get(module)
                if source is not None and getattr(source, name, None) is value:
                    out.append((name, "attr", (module, name)))
                    continue
            if callable(value):
                out.append((name, "callable", None))
            else:
                out.append((name, "value", encode(value, self._handle)))
        return out

    def serve(self, run: Callable[[], dict[str, Any]]) -> NoReturn:
        try:
            self._namespace = run()
            send(self._replies, ("ready", self._exports()))
        except BaseException:  # the judge fails the run
            try:  # noqa: SIM105 - no contextlib import in the sandbox
                send(self._replies, ("failed", self.reason))
            except OSError:
                pass
            os._exit(1)
        while True:
            try:
                request = receive(self._requests)
            except BaseException:  # the judge is gone
                os._exit(0)
            try:
                reply: object = ("ok", encode(self._answer(request), self._handle))
            except StopIteration:
                reply = ("stop",)
            except BaseException as exc:  # reported to the judge
                reply = ("err", type(exc).__name__, _safe_str(exc))
            send(self._replies, reply)

    def report(self, key: str, value: str) -> None:
        """Keep the solution's failure reason (``reason`` status line) for the judge."""
        if key == "reason":
            self.reason = value

    reason = ""


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)[:2000]
    except BaseException:
        return "<unprintable>"


# ------------------------------------------------------------------------------------- start


def start(cfg: dict[str, Any], kernel: ModuleType) -> _Judge | _Solution:
    """Fork; the parent becomes the judge, the child the solution's process."""
    requests_r, requests_w = os.pipe2(os.O_CLOEXEC)
    replies_r, replies_w = os.pipe2(os.O_CLOEXEC)
    secret_fd: int = cfg["tests_fd"]
    judge_pid = os.getpid()
    child = os.fork()
    if child == 0:
        for fd in (secret_fd, cfg["status_fd"], requests_w, replies_r):
            os.close(fd)
        kernel.set_parent_death_signal(_SIGKILL)
        if os.getppid() != judge_pid:  # the judge died before the line above
            os._exit(1)
        return _Solution(requests_r, replies_w)
    for fd in (requests_r, replies_w):
        os.close(fd)
    secret = marshal.loads(_read_all(secret_fd))
    os.close(secret_fd)
    return _Judge(requests_w, replies_r, secret, child)


def _read_all(fd: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)
