"""`build_memory_context`: what agent A should remember for user U at run start.

One configuration read, one scoped query for notes (and one for examples when the agent
injects them), then rendering. Access statistics and the retrieval trace step are handed to a
background recorder that batches them into one transaction every few hundred milliseconds, so
the read never waits for a write.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from db.connector import Database, once_more_if_invalidated
from db.queries.access import record_access
from db.queries.injection import filtered_counts
from db.queries.retrieval import ExampleCandidate, NoteCandidate, select_examples
from db.queries.runs import insert_trace
from db.scope import RequestScope, ScopeConfig
from worker.agents import AgentConfig, load_agent_config
from worker.embeddings import Embedder
from worker.ops import metrics
from worker.reads.rendering import render_memory_context
from worker.reads.rerankers import load_reranker
from worker.reads.retrieval import InjectionRules, select_notes
from worker.settings import Settings
from worker.writes.admission import log_trace, resolve_policy
from worker.writes.apply import Clock, utc_now

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemoryContext:
    rendered: str
    notes: list[NoteCandidate]
    examples: list[ExampleCandidate]
    strategy: str
    trace: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rendered": self.rendered,
            "strategy": self.strategy,
            "notes": [{
                "id": str(n.id), "type": n.type, "note": n.note, "status": n.status,
                "scope": {"agent_id": n.agent_id, "user_id": n.user_id,
                          "company_id": n.company_id},
                "created_at": n.created_at.isoformat(),
                "expires_at": n.expires_at.isoformat() if n.expires_at else None,
                "similarity": None if n.similarity is None else round(n.similarity, 4),
            } for n in self.notes],
            "examples": [{
                "id": str(e.id), "input": e.input_text, "output": e.output_text,
                "success_score": e.success_score,
            } for e in self.examples],
            "trace": self.trace,
        }


MAX_PENDING_TRACES = 10_000


class BackgroundRecorder:
    """Batches access-count bumps and retrieval trace steps off the read path."""

    def __init__(self, db: Database, interval_s: float = 0.2) -> None:
        self.db = db
        self.interval_s = interval_s
        self._hits: Counter[uuid.UUID] = Counter()
        self._last_at: datetime | None = None
        self._traces: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()  # one flush at a time per process
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def record(self, note_ids: list[uuid.UUID], at: datetime,
               trace: dict[str, Any] | None = None) -> None:
        with self._lock:
            self._hits.update(note_ids)
            self._last_at = at if self._last_at is None else max(self._last_at, at)
            if trace is not None:
                self._traces.append(trace)
                if len(self._traces) > MAX_PENDING_TRACES:  # the database has been away long
                    del self._traces[: len(self._traces) - MAX_PENDING_TRACES]
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="memory-access-recorder",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            try:
                self.flush()
            except Exception:
                log.warning("could not record access statistics", exc_info=True)

    def flush(self) -> None:
        """Write what is pending; on failure keep it for the next flush (nothing is lost)."""
        with self._flush_lock:
            with self._lock:
                hits, self._hits = self._hits, Counter()
                traces, self._traces = self._traces, []
                at, self._last_at = self._last_at, None
            if not hits and not traces:
                return
            try:
                with self.db.transaction() as conn:
                    if hits and at is not None:
                        record_access(conn, dict(hits), at)
                    for trace in traces:
                        insert_trace(conn, **trace)
            except Exception:
                with self._lock:
                    self._hits.update(hits)
                    self._traces[:0] = traces
                    if at is not None:
                        self._last_at = at if self._last_at is None else max(self._last_at, at)
                raise


_recorders: dict[tuple[int, str], BackgroundRecorder] = {}
_recorders_lock = threading.Lock()


def recorder_for(db: Database) -> BackgroundRecorder:
    key = (os.getpid(), db.url)
    with _recorders_lock:
        recorder = _recorders.get(key)
        if recorder is None:
            recorder = _recorders[key] = BackgroundRecorder(db)
        return recorder


def flush_all_recorders() -> None:
    """Write every pending access bump and trace step of this process now."""
    for recorder in list(_recorders.values()):
        recorder.flush()


@atexit.register
def _flush_at_exit() -> None:
    with contextlib.suppress(Exception):
        flush_all_recorders()


@dataclass
class ContextDeps:
    db: Database
    settings: Settings
    embedder: Embedder | None
    clock: Clock = utc_now


def _embed_query(deps: ContextDeps, text: str | None, trace: dict[str, Any]) -> Any:
    if not text or not text.strip() or deps.embedder is None:
        return None
    started = time.perf_counter()
    try:
        [vector] = deps.embedder.embed([text.strip()[: deps.settings.max_note_length * 4]])
    except Exception as exc:
        trace["embedding_error"] = type(exc).__name__
        return None
    trace["embedding_ms"] = round((time.perf_counter() - started) * 1000, 3)
    return vector


def build_context(deps: ContextDeps, request: RequestScope, input_text: str | None = None, *,
                  include_policy: bool = True, run_id: str | None = None,
                  record_access: bool = True) -> MemoryContext:
    """Raises ScopeError when the agent's scope configuration is not satisfied."""
    # A read changes nothing, so a whole build may run again on a refreshed pool.
    return once_more_if_invalidated(lambda: _build_context(
        deps, request, input_text, include_policy=include_policy, run_id=run_id,
        record_access=record_access))


def _build_context(deps: ContextDeps, request: RequestScope, input_text: str | None, *,
                   include_policy: bool, run_id: str | None,
                   record_access: bool) -> MemoryContext:
    started = time.monotonic()
    now = deps.clock()
    trace: dict[str, Any] = {}
    with deps.db.read(generic_plans=True) as conn:
        agent: AgentConfig = load_agent_config(conn, request.agent_id)
        config = ScopeConfig.parse(agent.scope_config)
        request.validated(config)
        wants_vector = (agent.inject_notes and agent.note_injection_strategy == "Relevant") or (
            agent.inject_examples and agent.example_injection_strategy == "Semantic")
        query = _embed_query(deps, input_text, trace) if wants_vector else None
        model = deps.embedder.model_name if deps.embedder is not None else None
        notes: list[NoteCandidate] = []
        filtered: dict[str, int] = {}
        strategy = agent.note_injection_strategy
        if agent.inject_notes:
            policy = resolve_policy(deps.settings, agent.memory_policy)
            rules = InjectionRules(policy.enforce_expires_at, policy.allow_unattributed_results)
            selection = select_notes(
                conn, request, config, strategy=agent.note_injection_strategy,
                limit=agent.max_notes_to_inject, now=now, input_text=input_text, query=query,
                embedding_model=model, min_similarity=deps.settings.relevant_min_similarity,
                reranker=load_reranker(agent.reranker_config), rules=rules,
            )
            notes, strategy = selection.notes, selection.strategy
            trace.update(selection.trace)
            if rules.active:
                filtered = filtered_counts(
                    conn, request, config, now=now, enforce_expires_at=rules.enforce_expires_at,
                    require_attribution=not rules.allow_unattributed_results)
        examples: list[ExampleCandidate] = []
        if agent.inject_examples and agent.max_examples_to_inject > 0:
            examples = select_examples(conn, request, config,
                                       strategy=agent.example_injection_strategy,
                                       limit=agent.max_examples_to_inject, query=query,
                                       embedding_model=model)
    rendered = render_memory_context(notes, examples, include_policy=include_policy)
    trace.update(notes=len(notes), examples=len(examples),
                 provisional=sum(n.status == "Provisional" for n in notes))
    if record_access:
        recorder_for(deps.db).record(
            [n.id for n in notes], now,
            trace={"event": "memory_retrieve", "now": now, "run_id": run_id,
                   "agent_id": request.agent_id, "detail": dict(trace)},
        )
    if filtered:  # counts per reason, never which notes or their text
        recorder_for(deps.db).record([], now, trace={
            "event": "memory_retrieve_filter", "now": now, "run_id": run_id,
            "agent_id": request.agent_id, "detail": {"filtered": filtered}})
        log_trace("memory_retrieve_filter", run_id=run_id, agent_id=request.agent_id,
                  filtered=filtered)
    metrics.series().context_seconds.observe(time.monotonic() - started)
    return MemoryContext(rendered, notes, examples, strategy, trace)

