"""The write gate (novelty against the memory, plus a learned score) and the retrieval gate
(top records by relevance and recency, bounded)."""

from __future__ import annotations

from moscopt.embedding.hashing import HashingEmbedder
from moscopt.extensions.memory.gates import WRITE_FEATURES, RetrievalGate, WriteGate
from moscopt.extensions.memory.learned import Logistic
from moscopt.extensions.memory.records import (
    ExecutionMemory,
    MemoryRecord,
    conclusion_of,
    confidence_of,
)

EMBED = HashingEmbedder(numbers=True)


def record(step: int, text: str, answer: str | None = None) -> MemoryRecord:
    return MemoryRecord(step=step, skills=("s",), conclusion=text, answer=answer)


def vec(r: MemoryRecord) -> list[float]:
    return EMBED.encode(r.embed_text()).tolist()


def commit(memory: ExecutionMemory, gate: WriteGate, r: MemoryRecord) -> str:
    decision = gate.decide(r, vec(r), memory, max_steps=4)
    if decision.commit:
        memory.add(r, vec(r))
    return decision.reason


def test_write_gate_commits_novel_records_and_drops_redundant_ones() -> None:
    memory, gate = ExecutionMemory(), WriteGate(redundant_above=0.9)
    assert commit(memory, gate, record(0, "the area of the triangle is 12 square units")) == (
        "committed"
    )
    # the same conclusion again (a restated solution) adds nothing
    assert commit(memory, gate, record(1, "the area of the triangle is 12 square units")) == (
        "redundant"
    )
    assert commit(memory, gate, record(2, "the perimeter follows from the three sides")) == (
        "committed"
    )
    assert [r.step for r in memory.records] == [0, 2]


def test_write_gate_off_commits_everything() -> None:
    memory, gate = ExecutionMemory(), WriteGate(enabled=False)
    for i in range(3):
        assert commit(memory, gate, record(i, "same text")) == "gate-off"
    assert len(memory) == 3


def test_learned_score_vetoes_a_novel_record_it_finds_useless() -> None:
    # a model that rejects records without an answer and accepts those with one
    weights = tuple(8.0 if name == "has_answer" else 0.0 for name in WRITE_FEATURES)
    gate = WriteGate(model=Logistic(weights, bias=-4.0))
    memory = ExecutionMemory()
    assert commit(memory, gate, record(0, "I looked around but found nothing")) == "low-score"
    assert commit(memory, gate, record(1, "so the answer is 42", answer="42")) == "committed"


def test_retrieval_gate_returns_the_relevant_records_in_step_order_within_budget() -> None:
    memory = ExecutionMemory()
    texts = [
        "the train leaves at noon from the north station",
        "apples cost three dollars a kilo at the market",
        "the train arrives two hours later in the south",
        "bananas are yellow and grow in bunches",
    ]
    for i, t in enumerate(texts):
        memory.add(record(i, t), vec(record(i, t)))
    query = EMBED.encode("when does the train arrive at the station").tolist()
    chosen = RetrievalGate(k=2).select(memory, query)
    assert [r.step for r in chosen] == [0, 2]
    tiny = RetrievalGate(k=3, max_chars=len(memory.records[2].text()) + 1)
    assert len(tiny.select(memory, query)) == 1  # the budget keeps the best one only
    everything = RetrievalGate(enabled=False, max_chars=10_000).select(memory, query)
    assert [r.step for r in everything] == [0, 1, 2, 3]


def test_the_retrieval_budget_is_bounded_by_what_the_records_replace() -> None:
    memory = ExecutionMemory()
    texts = ["the train leaves at noon", "the train arrives at two", "the train is late"]
    for i, t in enumerate(texts):
        memory.add(record(i, t), vec(record(i, t)))
    query = EMBED.encode("when does the train arrive").tolist()
    gate = RetrievalGate(k=3, max_chars=10_000)
    assert len(gate.select(memory, query)) == 3
    one = len(memory.records[1].text()) + 1
    assert len(gate.select(memory, query, budget=one)) == 1  # a short transcript: one record


def test_record_fields_from_a_reply() -> None:
    reply = "Long reasoning here.\n\nSo the total is 7.\nFINAL ANSWER: 7\nCONFIDENCE: 0.85"
    assert conclusion_of(reply) == "So the total is 7. FINAL ANSWER: 7 CONFIDENCE: 0.85"
    # a bare answer line keeps the sentence that led to it
    assert conclusion_of("Lots of work. Hence x = 3.\n\nFINAL ANSWER: 3") == (
        "Hence x = 3. FINAL ANSWER: 3"
    )
    assert confidence_of(reply) == 0.85
    assert confidence_of("confidence: 90%") == 0.9
    assert confidence_of("no number") is None
    long = "x" * 1000
    assert len(conclusion_of(long, 100)) == 100
