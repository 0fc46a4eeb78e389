"""`SentenceEmbedder`: a sentence-transformers model that loads and runs in a process of its own.

Loading a model takes CPU (MiniLM on numpy about 0.3 s, `moscopt.embedding.bert`; a model that
needs sentence-transformers, transformers and torch seconds: 11-14 s measured on a loaded
2-core machine) and, in a thread, its imports and passes hold the interpreter's lock for long
stretches: an event loop driving LLM calls beside torch's import stalled for up to 350 ms at a
time. So the model lives in a child process (`serve`), started by `start()` (a run calls it
when it begins, `moscopt.embedding.shared.preload`) or by the first `encode_many`, and loads
there at once; `encode_many` sends the texts down a pipe and waits for their vectors, computed
at `threads` threads (`moscopt.embedding.model.load_encoder` chooses when it is None).

With a `store` (`moscopt.embedding.store.VectorStore`), vectors already computed for the model
are read from disk and only the rest are sent to the model: a rerun that meets only known texts
never starts the process. The process ends with its parent (its end of the socket closes) or on
`close`.

The process is `python -m moscopt.embedding.worker`, not a `multiprocessing` child: the spawn
start method runs the parent's main script again in the child (a library user's script without
an `if __name__ == "__main__":` guard would start its own training there, and a program read from
standard input cannot be run again at all), and fork is unsafe in a process with threads (the
event loop's, litellm's). Texts and vectors go over a socket pair wrapped as a
`multiprocessing.connection.Connection`; the loader is named by module and qualified name.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from moscopt.embedding.base import MINILM, EmbedderUnavailable
from moscopt.embedding.model import load_encoder

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from moscopt.embedding.base import Vector
    from moscopt.embedding.store import VectorStore

    Encode = Callable[[list[str]], list[Vector]]
    Loader = Callable[[str, int | None], Encode]


class SentenceEmbedder:
    """See the module docstring. Thread-safe: one request at a time goes down the pipe."""

    def __init__(
        self,
        model: str = MINILM,
        *,
        threads: int | None = None,
        store: VectorStore | None = None,
        loader: Loader = load_encoder,
    ) -> None:
        """`loader(model, threads)` runs in the child and returns its encode function (a
        module-level function: the child imports it by name, `loader_name`)."""
        self.name = model
        self.threads = threads
        self.loader = loader
        self.store = store
        self.computed = 0  # texts the model encoded (not read from the store)
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._alive: int | None = None
        self._failed: str | None = None
        self._known: dict[str, Vector] = {}  # every vector this object returned

    @property
    def started(self) -> bool:
        return self._process is not None

    def start(self) -> None:
        """Start the model's process, which loads the model at once; returns at once."""
        with self._lock:
            self._start()

    def _start(self) -> Connection:
        if self._conn is None:
            from multiprocessing.connection import Connection

            cmd = [sys.executable, "-m", __name__, self.name, str(self.threads or 0)]
            cmd.append(loader_name(self.loader))
            # the child finds what this process finds (a script's sys.path changes too)
            path = os.pathsep.join(p or os.getcwd() for p in sys.path)
            env = dict(os.environ, PYTHONPATH=path)
            mine, theirs = socket.socketpair()
            alive, keep = os.pipe()  # the child ends when `keep`, the write end, closes
            try:  # no output of its own: errors come back over the socket
                fds = (theirs.fileno(), alive)
                self._process = subprocess.Popen(
                    [*cmd, *map(str, fds)],
                    pass_fds=fds,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            except BaseException:
                mine.close()
                os.close(keep)
                raise
            finally:
                theirs.close()
                os.close(alive)
            self._alive = keep
            self._conn = Connection(mine.detach())
        return self._conn

    def encode(self, text: str) -> Vector:
        return self.encode_many([text])[0]

    def encode_many(self, texts: Sequence[str]) -> list[Vector]:
        """Each text's vector: from this object's memory, else the store, else the model."""
        texts = list(texts)
        if not texts:
            return []
        with self._lock:
            found = {t: self._known[t] for t in texts if t in self._known}
            missing = [t for t in dict.fromkeys(texts) if t not in found]
            if missing and self.store is not None:
                stored = self.store.get_many(self.name, missing)
                found.update((t, v) for t, v in zip(missing, stored, strict=True) if v is not None)
                missing = [t for t in missing if t not in found]
            if missing:
                computed = self._compute(missing)
                if self.store is not None:
                    self.store.put_many(self.name, missing, computed)
                found.update(zip(missing, computed, strict=True))
            self._known.update(found)
        return [found[t] for t in texts]

    def warm(self, texts: Sequence[str]) -> threading.Thread:
        """`encode_many(texts)` in a background thread (waiting on the pipe holds no lock of
        the interpreter's), so that they are known when asked for; failures are left to the
        callers that need the vectors."""

        def run() -> None:
            with contextlib.suppress(EmbedderUnavailable):
                self.encode_many(texts)

        thread = threading.Thread(target=run, name="moscopt-embedder-warm", daemon=True)
        thread.start()
        return thread

    def _compute(self, texts: list[str]) -> list[Vector]:
        """The model's vectors of `texts` (the caller holds `_lock`)."""
        if self._failed is not None:
            raise EmbedderUnavailable(self._failed)
        conn = self._start()
        try:
            conn.send(texts)
            kind, payload = conn.recv()
        except (EOFError, OSError) as e:
            self._failed = f"the process of embedding model '{self.name}' stopped ({e!r})"
            raise EmbedderUnavailable(self._failed) from None
        if kind != "vectors":
            self._failed = str(payload)
            raise EmbedderUnavailable(self._failed)
        self.computed += len(texts)
        vectors: list[Vector] = payload
        return vectors

    def close(self) -> None:
        """End the model's process (a later encode starts it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            if self._alive is not None:
                os.close(self._alive)
                self._alive = None
            if self._process is not None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
            self._process = self._conn = None


def serve(conn: Connection, name: str, threads: int | None, loader: Loader) -> None:
    """The model's process: `loader(name, threads)` (it loads the model), then answer each list
    of texts with ("vectors", [vector, ...]) or ("error", message) until the pipe closes."""
    encode: Encode | None = None
    error: str | None = None
    try:
        encode = loader(name, threads)
    except EmbedderUnavailable as e:
        error = str(e)
    except Exception as e:  # anything else the import or load raises: report, do not die
        error = f"cannot load embedding model '{name}' ({type(e).__name__}: {e})"[:300]
    while True:
        try:
            texts = conn.recv()
        except (EOFError, OSError):
            return
        if encode is None:
            conn.send(("error", error))
            continue
        try:
            conn.send(("vectors", encode(texts)))
        except Exception as e:
            conn.send(("error", f"embedding model '{name}' failed ({type(e).__name__}: {e})"))


def loader_name(loader: Loader) -> str:
    """`module:qualname` of a module-level function (what the child imports)."""
    module, name = getattr(loader, "__module__", None), getattr(loader, "__qualname__", "")
    if not module or module == "__main__" or "<" in name:
        raise ValueError(
            f"an embedding loader must be a module-level function of an importable module, "
            f"got {loader!r}"
        )
    return f"{module}:{name}"


def main(argv: list[str] | None = None) -> None:
    """The child: `python -m moscopt.embedding.worker MODEL THREADS MODULE:LOADER FD ALIVE`: it
    answers on the socket FD and ends as soon as ALIVE reads end of file (its parent closed the
    embedder or ended, even while the model is still loading)."""
    import importlib
    from multiprocessing.connection import Connection

    name, threads, where, fd, alive = argv if argv is not None else sys.argv[1:]

    def end_with_parent() -> None:
        while os.read(int(alive), 1):
            pass
        os._exit(0)

    threading.Thread(target=end_with_parent, name="moscopt-parent-watch", daemon=True).start()
    module, _, qualname = where.partition(":")
    found: object = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    conn = Connection(int(fd))
    try:
        serve(conn, name, int(threads) or None, found)  # type: ignore[arg-type]
    finally:
        conn.close()


if __name__ == "__main__":
    main()
