"""Extraction (SPEC 7.2): notes and examples mined from conversations recorded since each
conversation's watermark.

Per conversation (one transaction, the conversation row locked): the judge sees the new
messages (with earlier turns as context) and only the notes of that conversation's own exact
scope. Every candidate gets its own disposition — accepted, or rejected for low confidence,
length, scope, as a fact the user asked this agent to forget (while the forgotten note keeps
its text: worker/erasure/fact.py), or as an exact or judged duplicate — and the watermark
moves past what was read, so nothing is mined twice. Assistant replies rated
`example_min_rating` or higher become examples (the user turn before them as input).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from db.enums import AuthorType, NoteStatus, ProtectionTier
from db.queries.conversations import (
    ConversationRow,
    MessageRow,
    ScopeNote,
    conversation_messages,
    insert_example_once,
    lock_conversation_for_extraction,
    pending_conversations,
    scope_notes,
    set_extraction_watermark,
)
from db.queries.forget import ForgottenNote, forgotten_notes
from db.queries.notes import NewNote, insert_note
from db.queries.runs import insert_trace
from db.scope import NoteScope
from worker.manager.deps import PhaseDeps, bump
from worker.manager.judge import ExtractedCandidate, MessageView, PairRelation
from worker.normalize import content_hash, normalize_text
from worker.writes.admission.effects import screen_effects

# Context shown around the new messages, and neighbours shown to the judge.
_MESSAGE_WINDOW = 200
_NEIGHBOURS = 50
# Forgotten notes of the conversation's user with its agent checked per conversation.
_FORGOTTEN_CHECKED = 200


def _target_scope(conversation: NoteScope, level: str) -> NoteScope | None:
    """Where a candidate lands. Tenant dimensions are always kept: the Memory Manager may
    widen within a tenant (user → company → agent), never across tenants."""
    if level == "user":
        return conversation if conversation.user_id is not None else None
    if level == "company":
        if conversation.company_id is None:
            return None
        return NoteScope(conversation.agent_id, None, conversation.company_id,
                         conversation.primary_scope_entity,
                         conversation.primary_scope_record_id,
                         dict(conversation.secondary_scopes))
    if level == "agent":
        return NoteScope(conversation.agent_id, None, None, conversation.primary_scope_entity,
                         conversation.primary_scope_record_id,
                         dict(conversation.secondary_scopes))
    return None


def _embed(deps: PhaseDeps, texts: list[str]) -> list[np.ndarray | None]:
    if deps.embedder is None or not texts:
        return [None] * len(texts)
    try:
        return list(deps.embedder.embed(texts))
    except Exception:
        return [None] * len(texts)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return 0.0
    return float(a @ b / ((np.linalg.norm(a) * np.linalg.norm(b)) or 1.0))


class _ConversationExtraction:
    def __init__(self, deps: PhaseDeps, conn: Any, conversation: ConversationRow,
                 messages: list[MessageRow]) -> None:
        self.deps = deps
        self.conn = conn
        self.conversation = conversation
        self.messages = messages
        self.counts: dict[str, int] = {}
        self.by_id = {m.id: m for m in messages}
        self.model_name = (getattr(deps.embedder, "model_name", None)
                           or deps.settings.embedding_model)
        scope = conversation.scope
        # What the user asked this agent to forget: never learned again from a conversation
        # (an agent's explicit write later is a new fact and lands normally).
        self.forgotten = ([] if scope.user_id is None or scope.agent_id is None else
                          forgotten_notes(conn, scope.agent_id, scope.user_id,
                                          limit=_FORGOTTEN_CHECKED))

    def run(self) -> dict[str, int]:
        new = [m for m in self.messages if m.is_new]
        neighbours = scope_notes(self.conn, self.conversation.scope, _NEIGHBOURS)
        views = [MessageView(m.id, m.role, m.text, m.rating, m.rating_comment)
                 for m in self.messages]
        # Earlier turns are context; only new messages may be the source of a candidate.
        extraction = self.deps.judge.extract(views, [n.note for n in neighbours])
        for reason, count in extraction.invalid.items():
            bump(self.counts, f"rejected_{reason}", count)
        new_ids = {m.id for m in new}
        accepted_texts: set[str] = set()
        candidates = [c for c in extraction.candidates
                      if c.message_id is None or c.message_id in new_ids]
        bump(self.counts, "rejected_not_new", len(extraction.candidates) - len(candidates))
        vectors = _embed(self.deps, [c.note for c in candidates])
        for candidate, vector in zip(candidates, vectors, strict=True):
            disposition = self._admit(candidate, vector, accepted_texts)
            bump(self.counts, disposition)
        self._extract_examples(new)
        return self.counts

    def _admit(self, candidate: ExtractedCandidate, vector: np.ndarray | None,
               accepted: set[str]) -> str:
        settings = self.deps.settings
        note = " ".join(candidate.note.split())
        if candidate.confidence < settings.extraction_min_confidence:
            return "rejected_low_confidence"
        if len(note) < settings.extraction_min_length:
            return "rejected_too_short"
        if len(note) > settings.max_note_length:
            return "rejected_too_long"
        # A conversation is the way in for memory injection (MINJA): what the judge extracts
        # from it is screened by effect like a write. There is no run to hold a doubtful
        # candidate under, so it is not kept either; the conversation itself stays recorded.
        if settings.screen_effects and screen_effects(note) is not None:
            return "rejected_effect"
        scope = _target_scope(self.conversation.scope, candidate.scope)
        if scope is None:
            return "rejected_scope"
        normalized = normalize_text(note)
        if normalized in accepted:
            return "rejected_duplicate_exact"
        same_scope = scope == self.conversation.scope
        pool: list[ScopeNote] = (scope_notes(self.conn, self.conversation.scope, _NEIGHBOURS)
                                 if same_scope else scope_notes(self.conn, scope, _NEIGHBOURS))
        digest = content_hash(note)
        if self._same_fact(self.forgotten, note, digest, vector):
            return "rejected_forgotten"
        if any(n.content_hash == digest for n in pool):
            return "rejected_duplicate_exact"
        if self._same_fact(pool, note, None, vector):
            return "rejected_duplicate_judged"
        source = self.by_id.get(candidate.message_id or "")
        insert_note(self.conn, NewNote(
            scope=scope, type=candidate.type, note=note, content_hash=digest,
            status=NoteStatus.ACTIVE.value, author_type=AuthorType.MEMORY_MANAGER.value,
            protection_tier=ProtectionTier.STANDARD.value, expires_at=None, embedding=vector,
            embedding_model=self.model_name if vector is not None else None,
            source_conversation_id=self.conversation.id,
            source_conversation_detail_id=candidate.message_id,
            source_agent_run_id=(source.agent_run_id if source else None)
            or self.conversation.agent_run_id,
            confidence=candidate.confidence, first_access=False, hardened=True,
        ), self.deps.now)
        accepted.add(normalized)
        return "accepted"

    def _same_fact(self, pool: Sequence[ScopeNote | ForgottenNote], note: str,
                   digest: str | None, vector: np.ndarray | None) -> bool:
        """The same text (by hash, when `digest` is given), or a close neighbour the judge
        calls a duplicate or refinement."""
        if digest is not None and any(n.content_hash == digest for n in pool):
            return True
        if vector is None:
            return False
        settings = self.deps.settings
        near = sorted(((_cosine(n.embedding, vector), n) for n in pool
                       if n.embedding is not None and n.embedding_model == self.model_name),
                      key=lambda pair: -pair[0])
        for similarity, neighbour in near[:settings.hardening_candidates]:
            if similarity < settings.hardening_similarity:
                break
            verdict = self.deps.judge.compare(neighbour.note, note, similarity)
            if verdict.relation in (PairRelation.DUPLICATE, PairRelation.REFINEMENT):
                return True
        return False

    def _extract_examples(self, new: list[MessageRow]) -> None:
        threshold = self.deps.settings.example_min_rating
        for message in new:
            if message.role != "assistant" or (message.rating or 0) < threshold:
                continue
            index = self.messages.index(message)
            question = next((m for m in reversed(self.messages[:index]) if m.role == "user"),
                            None)
            if question is None:
                continue
            vector = _embed(self.deps, [question.text])[0]
            if insert_example_once(
                    self.conn, scope=self.conversation.scope,
                    conversation_id=self.conversation.id, input_text=question.text,
                    output_text=message.text, success_score=float(message.rating or 0),
                    embedding=vector,
                    embedding_model=self.model_name if vector is not None else None,
                    now=self.deps.now):
                bump(self.counts, "examples")


def extract_from_conversations(deps: PhaseDeps) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    with deps.db.read() as conn:
        pending = pending_conversations(conn, deps.settings.extraction_conversations_per_cycle)
    top_seq = int(deps.watermarks.get("extraction", 0) or 0)
    for conversation_id in pending:
        with deps.db.transaction() as conn:
            conversation = lock_conversation_for_extraction(conn, conversation_id)
            if conversation is None:
                bump(counts, "busy")
                continue
            messages = conversation_messages(conn, conversation_id,
                                             watermark=conversation.extracted_through_seq,
                                             limit=_MESSAGE_WINDOW)
            if any(m.is_new for m in messages):
                result = _ConversationExtraction(deps, conn, conversation, messages).run()
                for key, value in result.items():
                    bump(counts, key, value)
                insert_trace(conn, event="memory_extraction", now=deps.now,
                             agent_id=conversation.scope.agent_id,
                             detail={"cycle_id": deps.cycle_id, "counts": result,
                                     "messages": sum(m.is_new for m in messages)})
            set_extraction_watermark(conn, conversation_id, conversation.last_message_seq)
            top_seq = max(top_seq, conversation.last_message_seq)
        bump(counts, "conversations")
    counts["new_notes"] = counts.get("accepted", 0)
    counts["watermark"] = top_seq
    return counts
