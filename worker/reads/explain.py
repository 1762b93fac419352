"""`memory-worker explain`: why does (or doesn't) agent A remember X for user U?

Finds the notes that match X (by words or meaning, any status, any user), and for each
answers the questions of the memory guide in order: is it injectable, is it in scope for this
request (and if not, which part of the scope differs), has it expired, does it make the
agent's cut under its strategy and cap — and what created or changed it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from db.enums import INJECTABLE_STATUSES
from db.queries.inspect import find_notes
from db.queries.manager import note_history
from db.scope import NoteScope, RequestScope, ScopeConfig, is_visible
from worker.agents import load_agent_config
from worker.reads.context import ContextDeps, build_context
from worker.reads.retrieval import select_notes

# Notes at least this close in meaning to X count as "about X".
FIND_MIN_SIMILARITY = 0.45
# How deep to rank when telling "outranked by the cap" from "not a candidate at all".
RANK_DEPTH = 200


@dataclass
class Explanation:
    note_id: uuid.UUID
    note: str
    status: str
    injected: bool
    verdict: str  # one line: the first reason it is not injected, or "injected"
    checks: dict[str, str] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"note_id": str(self.note_id), "note": self.note, "status": self.status,
                "injected": self.injected, "verdict": self.verdict, "checks": self.checks,
                "history": self.history}


def _scope_difference(note: NoteScope, request: RequestScope) -> str:
    """Which part of the note's scope keeps it from this request (first one found)."""
    for label, ours, theirs in (("agent", note.agent_id, request.agent_id),
                                ("user", note.user_id, request.user_id),
                                ("company", note.company_id, request.company_id)):
        if ours is not None and ours != theirs:
            asked = f"{label} {theirs}" if theirs is not None else f"no {label}"
            return f"the note belongs to {label} {ours}; the request is for {asked}"
    if request.shared_only and note.user_id is not None:
        return "the request is shared (an audience is present) and the note is user-specific"
    if note.primary_scope_record_id is not None and (
            note.primary_scope_entity, note.primary_scope_record_id) != (
            request.primary_scope_entity, request.primary_scope_record_id):
        return (f"the note is bound to {note.primary_scope_entity}:"
                f"{note.primary_scope_record_id}, the request is not")
    return "a tenant dimension of the note does not match the request"


def explain(deps: ContextDeps, request: RequestScope, needle: str, *,
            limit: int = 10) -> list[Explanation]:
    now = deps.clock()
    vector = None
    if deps.embedder is not None:
        try:
            vector = deps.embedder.embed([needle])[0]
        except Exception:
            vector = None
    model = deps.embedder.model_name if deps.embedder is not None else None
    injected = {n.id for n in build_context(deps, request, needle, include_policy=False,
                                            record_access=False).notes}
    with deps.db.read() as conn:
        agent = load_agent_config(conn, request.agent_id)
        config = ScopeConfig.parse(agent.scope_config)
        found = find_notes(conn, agent_id=request.agent_id, needle=needle, vector=vector,
                           model=model, min_similarity=FIND_MIN_SIMILARITY, limit=limit)
        ranking = select_notes(
            conn, request, config, strategy=agent.note_injection_strategy, limit=RANK_DEPTH,
            now=now, input_text=needle, query=vector, embedding_model=model,
            min_similarity=deps.settings.relevant_min_similarity, reranker=None).notes
        ranks = {n.id: i + 1 for i, n in enumerate(ranking)}
        explanations = []
        for row in found:
            explanations.append(_explain_one(row, request, config, agent, injected, ranks, now,
                                             note_history(conn, row["id"])))
    return explanations


def _explain_one(row: dict[str, Any], request: RequestScope, config: ScopeConfig,
                 agent: Any, injected: set[uuid.UUID], ranks: dict[uuid.UUID, int], now: Any,
                 history: list[dict[str, Any]]) -> Explanation:
    checks: dict[str, str] = {}
    reasons: list[str] = []
    status = row["status"]
    if status in INJECTABLE_STATUSES:
        checks["status"] = f"{status}: injectable"
    else:
        last = next((h for h in reversed(history) if h.get("to_status") == status), None)
        why = f" ({last['actor']}: {last['reason']})" if last else ""
        checks["status"] = f"{status}: never injected{why}"
        reasons.append(f"status is {status}{why}")
    scope = NoteScope.from_row(row)
    if is_visible(scope, request, config):
        checks["scope"] = f"in scope ({scope.level_label})"
    else:
        difference = _scope_difference(scope, request)
        checks["scope"] = f"out of scope: {difference}"
        reasons.append(f"out of scope: {difference}")
    expires = row["expires_at"]
    if expires is not None and expires <= now:
        checks["expiry"] = f"expired at {expires.isoformat(timespec='seconds')}"
        reasons.append(checks["expiry"])
    else:
        checks["expiry"] = ("no expiry" if expires is None
                            else f"expires at {expires.isoformat(timespec='seconds')}")
    is_injected = row["id"] in injected
    cap = agent.max_notes_to_inject
    strategy = agent.note_injection_strategy
    if not agent.inject_notes:
        checks["rank"] = "the agent does not inject notes (inject_notes is off)"
        reasons.append(checks["rank"])
    elif is_injected:
        checks["rank"] = f"injected ({strategy}, at most {cap})"
    elif row["id"] in ranks:
        checks["rank"] = (f"outranked: ranks {ranks[row['id']]} under {strategy}; the agent "
                          f"injects at most {cap}")
        reasons.append(checks["rank"])
    elif reasons:
        checks["rank"] = "not ranked (see above)"
    else:
        checks["rank"] = (f"not a candidate under {strategy} for this input (below the "
                          "similarity floor)")
        reasons.append(checks["rank"])
    verdict = "injected" if is_injected else "not injected: " + reasons[0]
    return Explanation(row["id"], row["note"], status, is_injected, verdict, checks,
                       [{k: _plain(v) for k, v in h.items()} for h in history])


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, int | float | bool | str | dict):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)
