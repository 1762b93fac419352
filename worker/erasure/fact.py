"""An agent forgets one fact when its user asks ("forget my home address").

`forget_fact` runs in the run's order like a write (`worker.writes.sequencing`: under the
run's lock, after the writes enqueued before it, exactly once, refused for an erased subject),
so a fact the agent wrote a moment earlier is applied first and then forgotten, and a write
sent after the request is never undone by it.

What it may touch: notes of the run's user with the run's agent that the run can see (the
one scope predicate, narrowed: `db.queries.forget`) — never an agent-wide or company-wide
note, another user's or another agent's, even when the text matches. Which of those it
revokes: the notes named by id (the ids the context handed the agent: the surest way), and
the notes matching `about` — every content word of it in the note, or a close meaning
(cosine ≥ `forget_match_similarity`). Immutable notes are an operator's and are kept (listed
as such). A revoked note leaves the injectable set at once; its text, hash and vector are
erased by retention (`retired_note_content_retention_days`); its history says who asked and
in which run. The user's pending memory candidates with the agent that match the same way are
rejected, so no later promotion brings the fact back; and while a forgotten note keeps its
text, extraction does not learn it again (`worker.manager.extraction`).
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection

from db.enums import Disposition, NoteStatus, ProtectionTier
from db.queries.forget import (
    FORGET_REQUEST_ACTOR,
    forgettable_candidates,
    forgettable_notes,
    reject_candidates,
    revoke_notes,
)
from db.queries.manager import NoteEvent, insert_note_events, lock_scopes
from db.queries.runs import WriteState, written_after
from db.scope import RequestScope, ScopeConfig, ScopeError
from worker.agents import config_from_row
from worker.writes.admission import TraceEventName
from worker.writes.attempt import Outcome
from worker.writes.operation import (
    Step,
    WaitForSequence,
    WriteDeps,
    WriteResult,
    arrived_late,
)
from worker.writes.payloads import Invalid, RunContext, payload_digest
from worker.writes.sequencing import apply_in_order, parse_sequenced

MAX_ABOUT = 500
MAX_NOTE_IDS = 100
MAX_REQUESTED_BY = 200
# Live notes of one user with one agent examined per request, newest first.
MAX_EXAMINED = 5000
# Pending candidates examined (embedded in one batch for a meaning match).
MAX_CANDIDATES = 200

# Words that say what to do or whose it is, not what: "please forget my home address" is
# about {home, address}.
_FILLER = frozenset("""
a an the my mine me i i'm im our ours us you your yours we he she his her they their them it
its this that these those of about on in at to for from with and or please forget forgot
erase delete remove drop remember know stored store saved save memory memories everything
anything something what where when which who whom how is are was were be been am do does did
don't not no any all just also again now ever there here thing things stuff info information
detail details fact facts
""".split())  # noqa: SIM905 - a word list reads better as text
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)


@dataclass(frozen=True)
class ForgetRequest:
    about: str | None
    note_ids: tuple[uuid.UUID, ...]
    requested_by: str


def _fold(word: str) -> str:
    word = word.removesuffix("'s")
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _words(text: str) -> set[str]:
    return {_fold(word) for word in _WORD.findall(text.casefold())}


def content_words(about: str) -> set[str]:
    """What a request is about: its words less the filler (plurals folded)."""
    return {_fold(word) for word in _WORD.findall(about.casefold()) if word not in _FILLER}


def parse_forget_request(payload: Any) -> ForgetRequest | Invalid:
    if not isinstance(payload, dict):
        return Invalid("request must be an object with about and/or note_ids")
    unknown = sorted(set(payload) - {"about", "note_ids", "requested_by"})
    if unknown:
        return Invalid(f"request has unknown field(s): {', '.join(map(str, unknown))}")
    about = payload.get("about")
    if about is not None:
        if not isinstance(about, str) or not about.strip():
            return Invalid("request.about must be a non-empty string")
        if len(about) > MAX_ABOUT:
            return Invalid(f"request.about is longer than {MAX_ABOUT} characters")
        if not content_words(about):
            return Invalid("request.about names nothing to look for (only words like "
                           "'my' or 'forget'); say what, or pass note_ids")
        about = about.strip()
    raw_ids = payload.get("note_ids") or []
    if not isinstance(raw_ids, list) or len(raw_ids) > MAX_NOTE_IDS:
        return Invalid(f"request.note_ids must be a list of at most {MAX_NOTE_IDS} note ids")
    try:
        note_ids = tuple(dict.fromkeys(uuid.UUID(value) for value in raw_ids))
    except (ValueError, TypeError, AttributeError):
        return Invalid("request.note_ids must hold note ids (UUID strings)")
    if about is None and not note_ids:
        return Invalid("request needs about (what to forget) and/or note_ids")
    requested_by = payload.get("requested_by", "user")
    if (not isinstance(requested_by, str) or not requested_by.strip()
            or len(requested_by) > MAX_REQUESTED_BY):
        return Invalid(f"request.requested_by must be 1-{MAX_REQUESTED_BY} characters")
    return ForgetRequest(about, note_ids, requested_by.strip())


def forget_fact(deps: WriteDeps, run_payload: Any, request_payload: Any, seq_payload: Any,
                *, prev_payload: Any = None, task_id: str | None = None,
                malformed: str | None = None) -> WriteResult | WaitForSequence:
    """Forget what the request names among the run's user's notes, in the run's order."""
    started = time.perf_counter()
    placed = parse_sequenced(deps, run_payload, seq_payload, prev_payload, malformed, started)
    if isinstance(placed, WriteResult):
        return placed
    run, seq, prev, malformed = placed.run, placed.seq, placed.prev, placed.malformed
    request = Invalid(malformed) if malformed else parse_forget_request(request_payload)
    # Marked as a forget: a write and a forget request can never share a digest.
    digest = payload_digest(run_payload, {"forget": request_payload})
    vector = None
    if isinstance(request, ForgetRequest) and request.about and deps.embedder is not None:
        try:
            [vector] = deps.embedder.embed([request.about])
        except Exception:  # words still match; a meaning match needs the vector
            vector = None

    def forget(conn: Connection, state: WriteState, now: datetime) -> Step:
        if isinstance(request, Invalid):
            return Step(Outcome(Disposition.REJECTED_INVALID, f"Not forgotten: "
                                f"{request.reason}."), TraceEventName.WRITE_SKIP)
        return _forget_in_run(conn, deps, run, request, seq, state, vector, now)

    return apply_in_order(deps, run, seq, prev, digest, forget, task_id=task_id,
                          started=started)


def _match(row: dict[str, Any], request: ForgetRequest, words: set[str],
           min_similarity: float) -> str | None:
    """Why a note is meant, or None."""
    if row["id"] in request.note_ids:
        return "id"
    if words and words <= _words(row["note"]):
        return "words"
    similarity = row["similarity"]
    if similarity is not None and similarity >= min_similarity:
        return "meaning"
    return None


def _forget_in_run(conn: Connection, deps: WriteDeps, run: RunContext, request: ForgetRequest,
                   seq: int, state: WriteState, vector: Any, now: datetime) -> Step:
    if run.user_id is None:
        return Step(Outcome(Disposition.REJECTED_INVALID,
                            "Not forgotten: this run has no user_id; a run forgets only its "
                            "user's notes (agent-wide and company-wide notes belong to no user: "
                            "an operator revokes them)."), TraceEventName.WRITE_SKIP)
    agent = config_from_row(run.agent_id, state.agent_row)
    try:
        config = ScopeConfig.parse(agent.scope_config)
    except ScopeError as exc:
        return Step(Outcome(Disposition.REJECTED_INVALID, f"Not forgotten: {exc}."),
                    TraceEventName.WRITE_SKIP)
    scope = RequestScope(run.agent_id, run.user_id, run.company_id, run.primary_scope_entity,
                         run.primary_scope_record_id, dict(run.secondary_scopes))
    words = content_words(request.about) if request.about else set()
    # A request that arrives late (after its gap was declared) never undoes what the run's
    # later writes wrote, changed or held: those came after it in the run's order.
    newer = written_after(conn, run.run_id, seq) if arrived_late(state, seq) else {}
    # Candidates before notes: a promotion racing this request either sees the candidate
    # rejected, or has committed its note, which the note query below then finds.
    rejected = _reject_candidates(conn, deps, scope, config, request, words, vector, newer,
                                  reason=f"forgotten at {request.requested_by}'s request "
                                         f"(run {run.run_id}, seq {seq})", now=now)
    rows = forgettable_notes(conn, scope, config, vector=vector,
                             model=deps.embedder.model_name if deps.embedder else None,
                             named=list(request.note_ids), limit=MAX_EXAMINED)
    meant = [(row, why) for row in rows
             if (why := _match(row, request, words, deps.settings.forget_match_similarity))]
    kept = [row for row, _ in meant if row["protection_tier"] == ProtectionTier.IMMUTABLE]
    mutable = [(row, why) for row, why in meant
               if row["protection_tier"] != ProtectionTier.IMMUTABLE]
    kept_newer = [row for row, _ in mutable if row["id"] in newer]
    chosen = [(row, why) for row, why in mutable if row["id"] not in newer]
    lock_scopes(conn, sorted({row["scope_key"] for row, _ in chosen}))
    revoked = revoke_notes(conn, [row["id"] for row, _ in chosen], now)
    forgotten = [(row, why) for row, why in chosen if row["id"] in revoked]
    lineage = {"run_id": run.run_id, "seq": seq, "requested_by": request.requested_by}
    insert_note_events(conn, [
        NoteEvent(row["id"], "revoked", f"forgotten at {request.requested_by}'s request",
                  row["status"], NoteStatus.REVOKED.value, (), {**lineage, "matched": why})
        for row, why in forgotten], actor=FORGET_REQUEST_ACTOR, cycle_id=None, now=now)
    known = {row["id"] for row, _ in meant} | {row["id"] for row, _ in rejected}
    unmatched = [str(i) for i in request.note_ids if i not in known]
    detail = {"forgotten": [str(row["id"]) for row, _ in forgotten],
              "rejected_candidates": [str(row["id"]) for row, _ in rejected],
              "kept_immutable": [str(row["id"]) for row in kept],
              "kept_newer": [str(row["id"]) for row in kept_newer],
              "unknown_note_ids": unmatched, "requested_by": request.requested_by}
    newer_seq = max((newer[row["id"]] for row in kept_newer), default=None)
    answer = _answer(forgotten, rejected, kept, unmatched, (len(kept_newer), newer_seq))
    return Step(Outcome(*answer), TraceEventName.FORGET,
                detail=detail,
                forgotten=[{"note_id": str(row["id"]), "type": row["type"], "note": row["note"],
                            "status_before": row["status"], "matched": why}
                           for row, why in forgotten],
                forgotten_candidates=[{"candidate_id": str(row["id"]), "type": row["type"],
                                       "note": row["note"], "run_id": row["run_id"],
                                       "matched": why}
                                      for row, why in rejected])


def _reject_candidates(conn: Connection, deps: WriteDeps, scope: RequestScope,
                       config: ScopeConfig, request: ForgetRequest, words: set[str],
                       vector: Any, newer: dict[uuid.UUID, int], *, reason: str, now: datetime
                       ) -> list[tuple[dict[str, Any], str]]:
    """Reject the run's user's pending candidates the request means (by id, words or
    meaning, as for notes): a candidate promoted later would bring the fact back. Not those
    held by the run's writes after a late request (`newer`)."""
    rows = forgettable_candidates(conn, scope, config, limit=MAX_CANDIDATES)
    for row, similarity in zip(rows, _similarities(deps, [row["note"] for row in rows], vector),
                               strict=True):
        row["similarity"] = similarity
    meant = [(row, why) for row in rows if row["id"] not in newer
             and (why := _match(row, request, words, deps.settings.forget_match_similarity))]
    done = reject_candidates(conn, [row["id"] for row, _ in meant], reason=reason,
                             actor=FORGET_REQUEST_ACTOR, now=now)
    return [(row, why) for row, why in meant if row["id"] in done]


def _similarities(deps: WriteDeps, texts: list[str], vector: Any) -> list[float | None]:
    """Cosine of each text to the request's vector (candidates carry no vector of their
    own); None where it cannot be had."""
    if vector is None or deps.embedder is None or not texts:
        return [None] * len(texts)
    try:
        embedded = deps.embedder.embed(texts)
    except Exception:  # words and ids still match
        return [None] * len(texts)
    target = np.asarray(vector, dtype=np.float32)
    scores: list[float | None] = []
    for item in embedded:
        item = np.asarray(item, dtype=np.float32)
        norm = float(np.linalg.norm(item) * np.linalg.norm(target))
        scores.append(float(item @ target) / norm if item.shape == target.shape and norm
                      else None)
    return scores


def _answer(forgotten: list[tuple[dict[str, Any], str]],
            rejected: list[tuple[dict[str, Any], str]], kept: list[dict[str, Any]],
            unmatched: list[str], kept_newer: tuple[int, int | None]) -> tuple[Disposition, str]:
    extra = []
    if kept:
        extra.append(f"{len(kept)} matching Immutable note(s) kept (an operator's to change)")
    newer_count, newer_seq = kept_newer
    if newer_count:
        extra.append(f"{newer_count} matching note(s) kept: a newer write of this run, seq "
                     f"{newer_seq}, wrote or changed them; a request arriving late never "
                     "undoes them")
    if unmatched:
        extra.append(f"{len(unmatched)} note id(s) not among this run's user's notes: "
                     f"{', '.join(unmatched)}")
    tail = f" ({'; '.join(extra)})" if extra else ""
    if not forgotten and not rejected:
        return (Disposition.NOTHING_TO_FORGET,
                f"Nothing forgotten: no note of this run's user matches{tail}.")
    done = []
    if forgotten:
        ids = ", ".join(str(row["id"]) for row, _ in forgotten)
        done.append(f"{len(forgotten)} note(s) revoked ({ids})")
    if rejected:
        ids = ", ".join(str(row["id"]) for row, _ in rejected)
        done.append(f"{len(rejected)} pending candidate(s) rejected ({ids})")
    return Disposition.FORGOTTEN, f"Forgotten: {'; '.join(done)}{tail}."
