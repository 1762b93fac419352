"""An embedding endpoint that goes away mid-run: writes still succeed (fail open, stored
without a vector), and the first Memory Manager cycle after it is back embeds every one of
them — so relevance retrieval finds them again and hardening sees the correction.

A real `celery worker` process (prefork, both queues) with `MEMORY_EMBEDDING_BACKEND=openai`
pointed at the OpenAI-compatible stub, which serves all-MiniLM-L6-v2 vectors (as a vLLM or
Ollama serving that model would): the test process reads contexts with the same model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import Services
from tests.helpers import WorkerProcess, notes, rows
from tests.openai_stub import OpenAIStub
from tests.system.conftest import send
from worker.app import task_names

REPORT_FACTS = [
    "The quarterly sales report goes to the CFO on the first Monday.",
    "Quarterly sales report figures are shown in euros.",
    "The quarterly sales report must include a regional breakdown.",
    "User wants the quarterly sales report as a PDF attachment.",
    "Quarterly sales report charts use the company's blue palette.",
]
BEFORE = ["I love pie charts", "User lives in Lisbon.", "User's cat is called Miso.",
          "User plays the cello on weekends."]
CORRECTION = "Never use pie charts for this user; bar charts only."
QUERY = "quarterly sales report"  # MiniLM: 0.53-0.66 to each fact above, <= 0.2 to the rest


def _write(run_id: str, texts: list[str]) -> list[dict[str, Any]]:
    from worker.client import enqueue_memory_writes

    run = {"run_id": run_id, "agent_id": "A", "user_id": "U", "company_id": "C"}
    return enqueue_memory_writes(run, [{"note": t, "type": "Preference"} for t in texts]
                                 ).results(timeout=90)


def _cycle() -> dict[str, Any]:
    report = send(task_names.MANAGER_CYCLE, force=True).get(timeout=180)
    assert report["status"] == "succeeded", report
    return report


def _relevant_report_facts() -> set[str]:
    from worker.client import build_memory_context

    context = build_memory_context("A", "U", "C", input_text=QUERY)
    assert context.strategy == "Relevant"
    return {n.note for n in context.notes} & set(REPORT_FACTS)


def test_writes_fail_open_during_an_outage_and_the_next_cycle_embeds_them(
        services: Services, embedder: Any, tmp_path: Path) -> None:
    def minilm(texts: list[str]) -> list[list[float]]:
        return [vector.tolist() for vector in embedder.embed(texts)]

    stub = OpenAIStub()
    stub.embed = minilm
    stub.__enter__()
    worker = WorkerProcess("outage", tmp_path, concurrency=2,
                           queues="memory.writes,memory.manager", env={
                               "MEMORY_EMBEDDING_BACKEND": "openai",
                               "MEMORY_EMBEDDING_BASE_URL": stub.base_url,
                               "MEMORY_EMBEDDING_API_KEY": "stand-in",
                               "MEMORY_EMBEDDING_MODEL": embedder.model_name,
                               "MEMORY_HEARTBEAT_FILE": str(tmp_path / "outage.heartbeat")})
    try:
        worker.start().wait_ready()
        assert all(r["disposition"] == "written" for r in _write("before-1", BEFORE))
        _cycle()  # the older preference is now an Active note
        stub.__exit__(None, None, None)  # the endpoint goes away mid-run

        during = [_write(f"during-{i}", [fact]) for i, fact in enumerate(REPORT_FACTS)]
        during.append(_write("during-correction", [CORRECTION]))
        assert [r["disposition"] for [r] in during] == ["written"] * 6  # failing open
        missing = notes(services.database_url, "embedding IS NULL")
        assert sorted(n["note"] for n in missing) == sorted([*REPORT_FACTS, CORRECTION])
        assert _relevant_report_facts() == set(), "without vectors, relevance cannot find them"

        stub = OpenAIStub(port=stub.port)  # back, where the worker expects it
        stub.embed = minilm
        stub.__enter__()
        report = _cycle()

        vectors = report["phases"][0]
        assert vectors["phase"] == "vectors" and vectors["counts"]["notes_embedded"] == 6
        assert report["counts"]["embedded"] == 6
        assert rows(services.database_url, "SELECT id FROM notes WHERE embedding IS NULL "
                    "AND status IN ('Active', 'Provisional')") == []
        assert {n["embedding_model"] for n in notes(services.database_url)} == {
            embedder.model_name}
        assert _relevant_report_facts() == set(REPORT_FACTS)
        # Hardening judged the correction against the older note by meaning: recency won.
        status = {n["note"]: n["status"] for n in notes(services.database_url)}
        assert status["I love pie charts"] == "Revoked" and status[CORRECTION] == "Active"
    finally:
        worker.stop()
        stub.__exit__(None, None, None)
