"""Choosing the notes and examples to inject: strategies, reranking, provisional slots.

Provisional notes are the newest signal, so they are never starved by older Active notes:
up to half of `max_notes_to_inject` (rounded up, at least one) is reserved for the best
Provisional candidates; the remaining slots go to the best of everything else, in the
strategy's order. Provisional notes still have to qualify (for `Relevant`, the minimum
similarity) — reserving a slot never lets an irrelevant note in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection

from db.enums import InjectionStrategy, NoteStatus
from db.queries.injection import injection_facts
from db.queries.retrieval import NoteCandidate, all_notes, recent_notes, relevant_notes
from db.scope import RequestScope, ScopeConfig
from worker.reads.rerankers import RerankerSpec

# Candidates fetched beyond the cap, so that notes dropped after ranking (corrected by a newer
# note, kept out by the agent's policy) do not leave slots empty.
SPARE_CANDIDATES = 3


@dataclass(frozen=True)
class InjectionRules:
    """SPEC 5's read-side policy filters (off by default)."""

    enforce_expires_at: bool = False
    allow_unattributed_results: bool = True

    @property
    def active(self) -> bool:
        return self.enforce_expires_at or not self.allow_unattributed_results


def drop_uninjectable(conn: Connection, candidates: list[NoteCandidate],
                      rules: InjectionRules, trace: dict[str, Any]) -> list[NoteCandidate]:
    """Never both sides of a recorded correction: a note a live newer note was recorded as
    correcting is dropped until hardening retires it. Then the policy filters."""
    gone = {c.id for c in candidates if c.corrected}
    if gone:
        trace["dropped_corrected"] = len(gone)
    if rules.active:
        for note_id, facts in injection_facts(conn, [c.id for c in candidates]).items():
            if ((rules.enforce_expires_at and (facts.expiry_missing or facts.expiry_malformed))
                    or (not rules.allow_unattributed_results and not facts.attributed)):
                gone.add(note_id)
    return [c for c in candidates if c.id not in gone]


@dataclass
class NoteSelection:
    notes: list[NoteCandidate]
    strategy: str
    trace: dict[str, Any] = field(default_factory=dict)


def reserved_provisional_slots(limit: int) -> int:
    return 0 if limit <= 0 else max(1, math.ceil(limit / 2))


def fill_slots(ordered: list[NoteCandidate], limit: int) -> list[NoteCandidate]:
    """Take up to the reserved share of Provisional notes first, then the best of the rest."""
    provisional = [c for c in ordered if c.status == NoteStatus.PROVISIONAL]
    reserved = provisional[:min(len(provisional), reserved_provisional_slots(limit))]
    taken = {c.id for c in reserved}
    rest = [c for c in ordered if c.id not in taken]
    return reserved + rest[:max(0, limit - len(reserved))]


def _rerank(candidates: list[NoteCandidate], input_text: str, reranker: RerankerSpec,
            trace: dict[str, Any]) -> list[NoteCandidate]:
    try:
        scores = [float(s) for s in reranker.score(input_text, [c.note for c in candidates])]
        if len(scores) != len(candidates):
            raise ValueError(f"returned {len(scores)} scores for {len(candidates)} texts")
    except Exception as exc:  # fall back to vector order; the trace says why
        trace["reranker_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        return candidates
    ranked = sorted(zip(candidates, scores, strict=True), key=lambda pair: -pair[1])
    if reranker.min_relevance is not None:
        trace["reranker_dropped"] = sum(1 for _, s in ranked if s < reranker.min_relevance)
        ranked = [(c, s) for c, s in ranked if s >= reranker.min_relevance]
    trace["reranker"] = reranker.name
    return [c for c, _ in ranked]


def select_notes(conn: Connection, request: RequestScope, config: ScopeConfig, *,
                 strategy: str, limit: int, now: datetime, input_text: str | None,
                 query: np.ndarray | None, embedding_model: str | None,
                 min_similarity: float, reranker: RerankerSpec | None,
                 rules: InjectionRules | None = None) -> NoteSelection:
    rules = rules or InjectionRules()
    trace: dict[str, Any] = {"requested_strategy": strategy}
    if limit <= 0:
        return NoteSelection([], strategy, trace)
    if strategy == InjectionStrategy.RELEVANT and (query is None or embedding_model is None):
        trace["fallback"] = "no input embedding; used Recent"
        strategy = InjectionStrategy.RECENT
    if strategy == InjectionStrategy.RELEVANT:
        assert query is not None and embedding_model is not None
        per_status = limit * (reranker.multiplier if reranker else 1) + SPARE_CANDIDATES
        candidates = relevant_notes(conn, request, config, query=query,
                                    embedding_model=embedding_model,
                                    min_similarity=min_similarity, per_status=per_status,
                                    now=now)
        if reranker is not None and input_text:
            candidates = _rerank(candidates, input_text, reranker, trace)
    elif strategy == InjectionStrategy.ALL:
        candidates = all_notes(conn, request, config, per_status=limit + SPARE_CANDIDATES,
                               now=now)
    else:
        candidates = recent_notes(conn, request, config,
                                  per_status=limit + SPARE_CANDIDATES, now=now)
    candidates = drop_uninjectable(conn, candidates, rules, trace)
    trace["candidates"] = len(candidates)
    chosen = fill_slots(candidates, limit)
    trace["selected"] = len(chosen)
    return NoteSelection(chosen, str(strategy), trace)
