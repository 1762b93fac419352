"""SPEC 5's read-side controls (issue item 4), for the read path to satisfy.

The rules live in worker/writes/admission/injection.py (`FilterReason`, `injection_filter_reason`,
`filter_for_injection`, `EXPIRY_ENFORCED_SQL`, `ATTRIBUTED_SQL`); the policy comes from
`resolve_policy(settings, agent.memory_policy)`; the read path (worker/reads/retrieval.py
`drop_uninjectable`, worker/reads/context.py) applies them. Candidates have their own table.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from db.scope import RequestScope
from tests.helpers import READ_NOW, Writer, rows, run_context
from worker.agents import configure_agent
from worker.reads.context import build_context, flush_all_recorders
from worker.writes.admission import FilterReason, MemoryPolicy, filter_for_injection

NOW = READ_NOW


@pytest.fixture
def deps(runtime):
    return replace(runtime.context_deps(), clock=lambda: NOW)


def with_policy(deps, **policy):
    return replace(deps, settings=deps.settings.model_copy(update=policy))


def context(deps, text: str | None = None):
    request = RequestScope(agent_id="A", user_id="U", company_id="C")
    return build_context(deps, request, text)


def texts(result) -> set[str]:
    return {n.note for n in result.notes}


def filter_traces(database_url: str) -> list[dict]:
    flush_all_recorders()
    return rows(database_url, "SELECT detail FROM trace_events "
                "WHERE event = 'memory_retrieve_filter' ORDER BY id")


def test_the_reference_rules():
    """What the read path must reproduce (in SQL or Python), on plain rows."""
    policy = MemoryPolicy(enforce_expires_at=True, allow_unattributed_results=False)
    base = {"status": "Active", "source_agent_run_id": "r1", "author_type": "Agent"}
    cases = {
        "future": ({**base, "expires_at": NOW + timedelta(days=1)}, None),
        "expired": ({**base, "expires_at": NOW - timedelta(seconds=1)}, FilterReason.EXPIRED),
        "missing": ({**base, "expires_at": None}, FilterReason.EXPIRY_MISSING),
        "malformed": ({**base, "expires_at": "infinity"}, FilterReason.EXPIRY_MALFORMED),
        "pending": ({**base, "status": "Pending", "expires_at": NOW + timedelta(days=1)},
                    FilterReason.NOT_INJECTABLE),
        "unattributed": ({"status": "Active", "author_type": "Agent",
                          "expires_at": NOW + timedelta(days=1)}, FilterReason.UNATTRIBUTED),
    }
    kept, counts = filter_for_injection([row for row, _ in cases.values()], policy, NOW)
    assert kept == [cases["future"][0]]
    assert counts == {reason.value: 1 for _, reason in cases.values() if reason is not None}
    # Defaults: only non-injectable and expired rows are filtered.
    kept, counts = filter_for_injection([row for row, _ in cases.values()], MemoryPolicy(), NOW)
    assert counts == {"expired": 1, "not_injectable": 1}


def test_a_candidate_is_never_injected(runtime, services, db):
    """Holds by construction: candidates are not notes."""
    with db.transaction() as conn:
        configure_agent(conn, "A", {"note_injection_strategy": "Recent"})
    write = Writer(runtime.write_deps())
    held = write(run_context("refl-1", source="reflection"), "User prefers oat milk.")
    assert held["disposition"] == "candidate"
    deps = replace(runtime.context_deps())
    assert "oat milk" not in context(deps, "What milk does the user like?").rendered
    assert rows(services.database_url, "SELECT count(*) AS n FROM notes")[0]["n"] == 0


def test_enforce_expires_at_filters_expired_missing_and_malformed_expiry(deps, seed, db,
                                                                         services):
    with db.transaction() as conn:
        configure_agent(conn, "A", {"note_injection_strategy": "Recent"})
    seed("future expiry", status="Provisional", expires=NOW + timedelta(days=3))
    seed("no expiry", status="Active")
    seed("expired", status="Provisional", expires=NOW - timedelta(minutes=1))
    malformed = seed("infinite expiry", status="Active", expires=NOW + timedelta(days=1))
    with db.transaction() as conn:
        conn.exec_driver_sql("UPDATE notes SET expires_at = 'infinity' WHERE id = %(id)s",
                             {"id": malformed})
    enforced = context(with_policy(deps, enforce_expires_at=True))
    assert texts(enforced) == {"future expiry"}
    [trace] = filter_traces(services.database_url)
    assert trace["detail"]["filtered"] == {"expired": 1, "expiry_missing": 1,
                                           "expiry_malformed": 1}
    assert "expiry" not in str(trace["detail"].get("notes", ""))  # counts, never text


def test_an_infinite_expiry_never_breaks_a_read(deps, seed, db):
    """'infinity' is a valid timestamptz that Python cannot load: without enforcement the
    read must still work (the note is kept as never-expiring, or filtered as malformed)."""
    with db.transaction() as conn:
        configure_agent(conn, "A", {"note_injection_strategy": "Recent"})
    note = seed("infinite expiry", status="Active", expires=NOW + timedelta(days=1))
    with db.transaction() as conn:
        conn.exec_driver_sql("UPDATE notes SET expires_at = 'infinity' WHERE id = %(id)s",
                             {"id": note})
    context(deps)  # must not raise


def test_an_agent_policy_turns_expiry_enforcement_on(deps, seed, db):
    with db.transaction() as conn:
        configure_agent(conn, "A", {"note_injection_strategy": "Recent",
                                    "memory_policy": {"enforce_expires_at": True}})
    seed("future expiry", status="Provisional", expires=NOW + timedelta(days=3))
    seed("no expiry", status="Active")
    assert texts(context(deps)) == {"future expiry"}
    assert texts(context(deps)) == {"future expiry"}  # and again: nothing cached wrongly


def test_unattributed_results_are_filtered_when_not_allowed(deps, seed, db, services):
    with db.transaction() as conn:
        configure_agent(conn, "A", {"note_injection_strategy": "Recent"})
    seed("from a run", run_id="run-1")
    seed("from nowhere", run_id=None)
    seed("from the user", run_id=None, author="User")
    assert texts(context(deps)) == {"from a run", "from nowhere", "from the user"}
    strict = context(with_policy(deps, allow_unattributed_results=False))
    assert texts(strict) == {"from a run", "from the user"}
    assert filter_traces(services.database_url)[-1]["detail"]["filtered"] == {
        "unattributed": 1}


def test_with_the_default_policy_reads_are_unchanged(deps, seed, db):
    with db.transaction() as conn:
        configure_agent(conn, "A", {"note_injection_strategy": "Recent"})
    seed("active without ttl", status="Active")
    seed("live provisional", status="Provisional", expires=NOW + timedelta(days=6))
    seed("expired provisional", status="Provisional", expires=NOW - timedelta(minutes=1))
    seed("pending", status="Pending")
    assert texts(context(deps)) == {"active without ttl", "live provisional"}
