"""The agent's `search` tool: BM25 over local documents offline, or a web search provider.

Offline (the default): the task's own documents (the task meta key `agent.search.corpus_field`,
e.g. SearchQA's snippets) or else a JSONL corpus file (`agent.search.corpus`), ranked by BM25
with `bm25s` (the `search` extra; imported on the first search, never on the event loop: the
agent's tools run in a worker thread). The same documents and query always give the same
passages in the same order (ties by position in the corpus).

Online (`agent.search.provider: brave`): the Brave Search API, with the key read from
`$BRAVE_API_KEY` at each call: never stored, logged or shown (it is scrubbed from any error
text). `BraveSearch(fetch=...)` is the seam tests use instead of the network.

The result is a numbered list of passages (title and text), each bounded to `snippet_chars`;
the toolbox bounds the whole observation. A search never raises: failures are the observation.
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from moscopt.core import jsonio

BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
BRAVE_KEY_ENV = "BRAVE_API_KEY"
TIMEOUT = 15.0
Fetch = Callable[[str, Mapping[str, str]], bytes]  # (url, headers) -> response body


@dataclass(frozen=True)
class Document:
    title: str
    text: str
    url: str = ""


@dataclass(frozen=True)
class Hit:
    document: Document
    score: float


def documents_of(value: Any) -> list[Document]:
    """Documents from a task's meta value or a corpus row: strings, or mappings with
    `text`/`snippet`/`content` and optional `title` and `url`/`link`, or one mapping of
    parallel lists `snippets`, `titles`, `urls` (SearchQA's `search_results`)."""
    if isinstance(value, Mapping) and isinstance(value.get("snippets"), list):
        value = _columns(value)  # SearchQA's {"snippets": [...], "titles": [...], "urls": [...]}
    rows = value if isinstance(value, list | tuple) else [value]
    out = []
    for row in rows:
        if isinstance(row, str):
            if row.strip():
                out.append(Document("", row.strip()))
        elif isinstance(row, Mapping):
            text = row.get("text") or row.get("snippet") or row.get("content") or ""
            title = row.get("title") or ""
            if str(text).strip() or str(title).strip():
                url = row.get("url") or row.get("link") or ""
                out.append(Document(str(title).strip(), str(text).strip(), str(url)))
    return out


def _columns(value: Mapping[str, Any]) -> list[dict[str, Any]]:
    snippets = list(value.get("snippets") or [])
    titles = list(value.get("titles") or [])
    urls = list(value.get("urls") or [])
    return [
        {
            "text": text,
            "title": titles[i] if i < len(titles) else "",
            "url": urls[i] if i < len(urls) else "",
        }
        for i, text in enumerate(snippets)
    ]


def load_corpus(path: str | Path) -> list[Document]:
    """A JSONL file of documents (one JSON string or object per line; bad lines skipped)."""
    docs: list[Document] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                docs.extend(documents_of(jsonio.loads(line)))
            except ValueError:
                continue
    return docs


class OfflineIndex:
    """BM25 (bm25s, Lucene's variant) over `documents`; the index is built on first search."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = list(documents)
        self._retriever: Any = None

    def _texts(self) -> list[str]:
        return [f"{d.title}\n{d.text}".strip() for d in self.documents]

    def search(self, query: str, k: int) -> list[Hit]:
        if not self.documents or not query.strip():
            return []
        import bm25s

        if self._retriever is None:
            tokens = bm25s.tokenize(self._texts(), stopwords="en", show_progress=False)
            retriever = bm25s.BM25()
            retriever.index(tokens, show_progress=False)
            self._retriever = retriever
        q = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not any(len(ids) for ids in q.ids):
            return []
        n = min(k, len(self.documents))
        ids, scores = self._retriever.retrieve(q, k=n, show_progress=False, n_threads=1)
        ranked = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if s > 0]
        ranked.sort(key=lambda p: (-p[1], p[0]))  # ties by position: deterministic
        return [Hit(self.documents[i], s) for i, s in ranked]


@cache
def _corpus_index(path: str, mtime: float) -> OfflineIndex:
    return OfflineIndex(load_corpus(path))


def corpus_index(path: str | Path) -> OfflineIndex:
    """The index of a corpus file, built once per process while the file is unchanged."""
    p = Path(path)
    return _corpus_index(str(p.resolve()), p.stat().st_mtime)


class BraveSearch:
    """The Brave Search API (web results); the key is read from `$BRAVE_API_KEY` per call."""

    def __init__(self, fetch: Fetch | None = None, *, url: str = BRAVE_URL) -> None:
        self.fetch = fetch or _fetch
        self.url = url

    def search(self, query: str, k: int) -> list[Hit]:
        key = os.environ.get(BRAVE_KEY_ENV, "")
        if not key:
            raise RuntimeError(f"web search needs ${BRAVE_KEY_ENV} in the environment")
        url = f"{self.url}?{urllib.parse.urlencode({'q': query, 'count': min(k, 20)})}"
        headers = {"Accept": "application/json", "X-Subscription-Token": key}
        try:
            data = jsonio.loads(self.fetch(url, headers))
        except Exception as e:  # network, HTTP or JSON failure: an observation, key scrubbed
            raise RuntimeError(f"web search failed: {str(e).replace(key, '***')}") from None
        results = ((data or {}).get("web") or {}).get("results") or []
        docs = documents_of(
            [
                {"title": r.get("title"), "text": r.get("description"), "url": r.get("url")}
                for r in results
                if isinstance(r, Mapping)
            ]
        )
        return [Hit(d, float(len(docs) - i)) for i, d in enumerate(docs[:k])]


def _fetch(url: str, headers: Mapping[str, str]) -> bytes:
    request = urllib.request.Request(url, headers=dict(headers))
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        body: bytes = response.read(1 << 20)
        return body


def format_hits(hits: Sequence[Hit], snippet_chars: int) -> str:
    if not hits:
        return "[no matching passages]"
    lines = []
    for i, hit in enumerate(hits, 1):
        d = hit.document
        text = " ".join(d.text.split())
        if len(text) > snippet_chars:
            text = text[: snippet_chars - 3] + "..."
        head = f"[{i}] {d.title}" if d.title else f"[{i}]"
        lines.append(f"{head}{' (' + d.url + ')' if d.url else ''}\n{text}")
    return "\n\n".join(lines)


@dataclass
class SearchTool:
    """`tool(query)` -> the observation: the top passages of `index` (or `provider`)."""

    index: OfflineIndex | None = None
    provider: BraveSearch | None = None
    top_k: int = 5
    snippet_chars: int = 400

    def __call__(self, query: str) -> str:
        query = " ".join(query.split())
        try:
            if self.index is not None:
                hits = self.index.search(query, self.top_k)
            elif self.provider is not None:
                hits = self.provider.search(query, self.top_k)
            else:
                return "[error: there are no documents to search for this task]"
        except ImportError:
            return "[error: offline search needs bm25s: pip install 'moscopt[search]']"
        except RuntimeError as e:
            return f"[error: {e}]"
        return format_hits(hits, self.snippet_chars)


def search_runner(options: Any, meta: Mapping[str, Any]) -> SearchTool:
    """The search tool of one task: its own documents first, else the configured corpus or
    provider (`options`: a `moscopt.agent.tools.toolbox.ToolOptions`)."""
    own = documents_of(meta.get(options.corpus_field)) if options.corpus_field in meta else []
    tool = SearchTool(top_k=options.top_k, snippet_chars=options.snippet_chars)
    if own:
        tool.index = OfflineIndex(own)
    elif options.search_provider == "brave":
        tool.provider = BraveSearch()
    elif options.search_corpus:
        try:
            tool.index = corpus_index(options.search_corpus)
        except OSError:
            tool.index = OfflineIndex([])
    return tool
