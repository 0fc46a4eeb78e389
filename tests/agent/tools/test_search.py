"""The search tool: offline BM25 ranking over a task's documents or a corpus file, bounded
passages, the web provider behind its seam (no network), and the tool through the agent."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from moscopt.agent.skill_agent import SkillAgent
from moscopt.agent.tools.search import (
    BRAVE_KEY_ENV,
    BraveSearch,
    Document,
    OfflineIndex,
    SearchTool,
    documents_of,
    search_runner,
)
from moscopt.agent.tools.toolbox import ToolBox, ToolOptions
from moscopt.benchmarks import Task, get_benchmark

pytest.importorskip("bm25s")

DOCS = [
    Document("Cats", "The domestic cat is a small carnivorous mammal kept as a pet."),
    Document("Paris", "Paris is the capital and largest city of France, on the Seine."),
    Document("Rome", "Rome is the capital city of Italy and of the Lazio region."),
    Document("Seine", "The Seine is a river in northern France that flows through Paris."),
]


def test_bm25_ranks_the_relevant_documents_first() -> None:
    hits = OfflineIndex(DOCS).search("capital of France", 3)
    assert hits[0].document.title == "Paris"
    assert {h.document.title for h in hits[1:]} <= {"Rome", "Seine"}  # the cat never matches
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert OfflineIndex(DOCS).search("river flowing through Paris", 1)[0].document.title in (
        "Seine",
        "Paris",
    )


def test_no_match_and_empty_inputs() -> None:
    assert OfflineIndex(DOCS).search("zzzqqq", 3) == []
    assert OfflineIndex(DOCS).search("   ", 3) == []
    assert OfflineIndex([]).search("paris", 3) == []
    assert SearchTool(index=OfflineIndex(DOCS))("zzzqqq") == "[no matching passages]"


def test_same_query_same_passages() -> None:
    first = SearchTool(index=OfflineIndex(DOCS))("capital city")
    assert first == SearchTool(index=OfflineIndex(DOCS))("capital city")
    assert first.startswith("[1] ")


def test_passages_are_bounded() -> None:
    long = [Document("Long", "paris " + "word " * 2000)]
    out = SearchTool(index=OfflineIndex(long), snippet_chars=100)("paris")
    assert len(out) < 130 and out.endswith("...")
    box = ToolBox(("search",), {"search": lambda q: "x" * 10_000}, max_chars=500)
    text, failed = box.run(box.parse("```search\nparis\n```") or pytest.fail("no call"))
    assert len(text) <= 500 and "more characters cut" in text and not failed


def test_the_tasks_own_documents_come_before_the_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"title": "Berlin", "text": "Berlin is the capital of Germany."}) + "\n"
        "not json\n" + json.dumps("Madrid is the capital of Spain.") + "\n"
    )
    options = ToolOptions(search_corpus=str(corpus), corpus_field="snippets")
    own = search_runner(options, {"snippets": [{"snippet": "Lisbon is Portugal's capital."}]})
    assert "Lisbon" in own("capital")
    shared = search_runner(options, {})
    out = shared("capital of Spain")
    assert out.startswith("[1]") and "Madrid" in out.split("\n\n")[0]
    assert "[error" in search_runner(ToolOptions(), {})("anything")


def test_documents_of_reads_strings_and_mappings() -> None:
    docs = documents_of(["a b", {"title": "T", "snippet": "s", "link": "http://x"}, {}, 3])
    assert docs == [Document("", "a b"), Document("T", "s", "http://x")]


def test_web_provider_reads_the_key_from_the_environment_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[str, Mapping[str, str]]] = []

    def fetch(url: str, headers: Mapping[str, str]) -> bytes:
        seen.append((url, headers))
        results = [{"title": "Paris", "description": "Capital of France.", "url": "http://p"}]
        return json.dumps({"web": {"results": results}}).encode()

    tool = SearchTool(provider=BraveSearch(fetch))
    monkeypatch.delenv(BRAVE_KEY_ENV, raising=False)
    assert "BRAVE_API_KEY" in tool("paris") and not seen
    monkeypatch.setenv(BRAVE_KEY_ENV, "secret-key-123")
    out = tool("capital of france")
    assert "Capital of France." in out and "http://p" in out and "secret-key-123" not in out
    assert seen[0][1]["X-Subscription-Token"] == "secret-key-123"
    assert "q=capital+of+france" in seen[0][0]

    def failing(url: str, headers: Mapping[str, str]) -> bytes:
        raise OSError(f"refused with token {headers['X-Subscription-Token']}")

    out = SearchTool(provider=BraveSearch(failing))("x")
    assert out.startswith("[error: web search failed") and "secret-key-123" not in out


def test_the_agent_searches_through_the_text_protocol() -> None:
    from moscopt.testing import FakeLM

    bench = get_benchmark("offline")
    task = Task(
        "q1",
        "offline",
        "What is the capital of France?\n\nEnd with FINAL ANSWER: <answer>",
        "Paris",
        {"search_corpus": [{"title": d.title, "text": d.text} for d in DOCS]},
    )

    def agent(request):  # type: ignore[no-untyped-def]
        last = request.messages[-1]["content"]
        if last.startswith("Search results:"):
            return "FINAL ANSWER: Paris" if "capital and largest city" in last else "?"
        assert "## Tool: search" in request.messages[0]["content"]
        return "Let me look it up.\n```search\ncapital of France\n```"

    lm = FakeLM(routes={"agent": agent})
    rollout = asyncio.run(SkillAgent(lm, bench, None, tools=("search",), max_steps=3).run(task))
    assert rollout.reward == 1.0 and lm.purposes == ["agent", "agent"]


FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "searchqa-custom"
ANSWERS = ("Paris", "nitrogen", "Herman Melville")


def test_eval_searchqa_fixture_with_the_search_tool_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`moscopt eval` on the SearchQA fixture spec: the agent searches the task's own snippets
    (text protocol over the loopback server) and answers from what came back."""
    from typer.testing import CliRunner

    from moscopt.cli import app
    from moscopt.testing import FakeServer

    def responder(body: dict) -> str:  # type: ignore[type-arg]
        last = body["messages"][-1]["content"]
        if last.startswith("Search results:"):
            found = [a for a in ANSWERS if a in last]
            return f"FINAL ANSWER: {found[0]}" if found else "FINAL ANSWER: unknown"
        clue = last.split("Clue: ", 1)[1].split("\n", 1)[0]
        return f"```search\n{clue}\n```"

    monkeypatch.chdir(tmp_path)
    with FakeServer(responder=responder) as server:
        out = tmp_path / "rows.jsonl"
        result = CliRunner().invoke(
            app,
            [
                "eval",
                "--benchmark",
                str(FIXTURE / "searchqa.yaml"),
                "--data",
                str(FIXTURE / "searchqa.jsonl"),
                "--model",
                "openai/fake",
                "--api-base",
                server.url,
                "--set",
                "agent.native_tools=text",  # the text protocol (and no litellm import)
                "--json",
                "--out",
                str(out),
            ],
        )
        searches = list(server.log)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tasks"] == 1 and summary["score"] == 1.0  # the test split
    assert len(searches) == 2  # one search call, then the answer
