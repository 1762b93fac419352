"""Maintenance phases (SPEC 7.3) with time travel: importance, decay, TTL, stale references,
consolidation and contradiction resolution — each run as a plain function with a moved
clock, against a real Postgres."""

from __future__ import annotations

import json
import math
from datetime import timedelta

from tests.helpers import rows
from tests.manager_helpers import events_of, note_row, now_utc, phase_deps, seed_note
from tests.openai_stub import OpenAIStub
from worker.manager.consolidation import consolidate_similar_notes, resolve_contradictions
from worker.manager.maintenance import (
    decay_unused_notes,
    prune_expired_notes,
    prune_stale_references,
    score_importance,
)


def _days_until_archived(runtime, services, note_id, start, *, reads_per_day=0, days=60):
    for day in range(1, days + 1):
        if reads_per_day:
            with runtime.db.transaction() as conn:
                conn.exec_driver_sql(
                    "UPDATE notes SET access_count = access_count + %s WHERE id = %s",
                    (reads_per_day, note_id))
        decay_unused_notes(phase_deps(runtime, now=start + timedelta(days=day)))
        if note_row(services.database_url, note_id)["status"] == "Archived":
            return day
    return None


def test_an_unused_note_is_archived_on_the_day_its_retention_falls_below_half(
        runtime, services):
    start = now_utc()
    note_id = seed_note(runtime, "User is reading a novel about whales", at=start)
    score_importance(phase_deps(runtime, now=start))
    importance = note_row(services.database_url, note_id)["importance_score"]
    assert 0 < importance < 10
    rate = runtime.settings.decay_base_lambda * (1 - 0.8 * importance / 10)
    expected = math.floor(math.log(2) / rate) + 1
    assert _days_until_archived(runtime, services, note_id, start) == expected
    row = note_row(services.database_url, note_id)
    assert row["retention"] < 0.5 and row["valid_to"] is not None
    [event] = events_of(services.database_url, note_id)
    assert event["action"] == "decayed" and event["actor"] == "decay"


def test_decay_is_cumulative_not_recomputed(runtime, services):
    """Decaying daily for three days gives the same retention as decaying once after three."""
    start = now_utc()
    daily = seed_note(runtime, "User collects vintage stamps", at=start, user="U1")
    # Immutable notes are not decayed: this one sits out the first two runs.
    once = seed_note(runtime, "User collects vintage stamps", at=start, user="U2",
                     tier="Immutable")
    with runtime.db.transaction() as conn:
        conn.exec_driver_sql("UPDATE notes SET importance_score = 0")
    for day in (1, 2, 3):
        if day == 3:
            with runtime.db.transaction() as conn:
                conn.exec_driver_sql(
                    "UPDATE notes SET protection_tier = 'Standard' WHERE id = %s", (once,))
        decay_unused_notes(phase_deps(runtime, now=start + timedelta(days=day)))
    a = note_row(services.database_url, daily)["retention"]
    b = note_row(services.database_url, once)["retention"]
    assert abs(a - b) < 1e-4
    assert abs(a - math.exp(-runtime.settings.decay_base_lambda * 3)) < 1e-4


def test_a_frequently_read_note_is_not_archived(runtime, services):
    start = now_utc()
    note_id = seed_note(runtime, "User is reading a novel about whales", at=start)
    score_importance(phase_deps(runtime, now=start))
    assert _days_until_archived(runtime, services, note_id, start, reads_per_day=5,
                                days=30) is None
    assert note_row(services.database_url, note_id)["retention"] > 0.9


def test_immutable_and_protected_notes_are_never_decayed_away(runtime, services):
    start = now_utc()
    immutable = seed_note(runtime, "User is allergic to peanuts", tier="Immutable", at=start,
                          user="U1")
    protected = seed_note(runtime, "User is allergic to peanuts", tier="Protected", at=start,
                          user="U2")
    ephemeral = seed_note(runtime, "User is allergic to peanuts", tier="Ephemeral", at=start,
                          user="U3")
    for day in range(1, 61, 5):
        decay_unused_notes(phase_deps(runtime, now=start + timedelta(days=day)))
    assert note_row(services.database_url, immutable)["status"] == "Active"
    assert note_row(services.database_url, immutable)["retention"] == 1.0
    assert note_row(services.database_url, protected)["status"] == "Active"
    assert note_row(services.database_url, ephemeral)["status"] == "Archived"


def test_an_agent_with_auto_archive_off_keeps_its_notes(runtime, services):
    start = now_utc()
    with runtime.db.transaction() as conn:
        conn.exec_driver_sql("INSERT INTO agents (agent_id, auto_archive_enabled) "
                             "VALUES ('A', false)")
    note_id = seed_note(runtime, "User is reading a novel about whales", at=start)
    assert _days_until_archived(runtime, services, note_id, start, days=40) is None


def test_ttl_pruning_archives_expired_injectable_notes_only(runtime, services):
    now = now_utc()
    expired = seed_note(runtime, "User is in Lisbon this week", status="Provisional",
                        author="Agent", expires_at=now - timedelta(minutes=1), user="U1")
    fresh = seed_note(runtime, "User is in Porto next week", status="Provisional",
                      author="Agent", expires_at=now + timedelta(days=3), user="U2")
    counts = prune_expired_notes(phase_deps(runtime, now=now))
    assert counts["archived"] == 1
    assert note_row(services.database_url, expired)["status"] == "Archived"
    assert note_row(services.database_url, fresh)["status"] == "Provisional"
    assert events_of(services.database_url, expired)[0]["action"] == "expired"


def test_importance_excludes_the_note_itself_from_uniqueness(runtime, services):
    lonely = seed_note(runtime, "User keeps bees on the roof", user="U1")
    twin_a = seed_note(runtime, "User prefers dark mode", user="U2")
    seed_note(runtime, "User prefers dark mode in every app", user="U2")
    score_importance(phase_deps(runtime))
    lonely_score = note_row(services.database_url, lonely)["importance_score"]
    twin_score = note_row(services.database_url, twin_a)["importance_score"]
    # Without self-exclusion every note's nearest neighbour is itself (uniqueness 0) and
    # the two would score the same.
    assert lonely_score > twin_score


def test_stale_reference_pruning_pages_through_the_table(runtime, services):
    settings = runtime.settings.model_copy(update={"stale_reference_page_size": 3})
    ids = [seed_note(runtime, f"User fact number {i}", user=f"U{i}") for i in range(7)]
    with runtime.db.transaction() as conn:  # a note whose source conversation is gone
        conn.exec_driver_sql("UPDATE notes SET source_conversation_id = 'deleted' "
                             "WHERE id = %s", (max(ids),))
        conn.exec_driver_sql("INSERT INTO conversation_tombstones (conversation_id) "
                             "VALUES ('deleted')")
    deps = phase_deps(runtime, settings=settings)
    seen = []
    for _ in range(3):
        counts = prune_stale_references(deps)
        seen.append(counts["checked"])
        deps.watermarks["stale_references"] = counts["watermark"]
    assert seen == [3, 3, 1]  # continues where it stopped, then wraps
    assert note_row(services.database_url, max(ids))["status"] == "Archived"
    assert sum(n["status"] == "Active" for n in rows(services.database_url,
                                                     "SELECT status FROM notes")) == 6


CLUSTER = ["User prefers bar charts over pie charts",
           "The user likes bar charts more than pie charts",
           "User would rather see bar charts than pie charts"]


def _stub_settings(runtime, stub):
    return runtime.settings.model_copy(update={
        "llm_backend": "openai", "llm_base_url": stub.base_url, "llm_model": "judge-stub"})


def test_a_cluster_of_three_similar_notes_becomes_one_note_with_lineage(runtime, services):
    members = [seed_note(runtime, text) for text in CLUSTER]
    merged_text = "User prefers bar charts to pie charts"
    with OpenAIStub() as stub:
        stub.chat = lambda body: json.dumps({"merge": True, "note": merged_text})
        counts = consolidate_similar_notes(
            phase_deps(runtime, settings=_stub_settings(runtime, stub)))
    assert counts["clusters"] == 1
    [merged] = rows(services.database_url, "SELECT * FROM notes WHERE status = 'Active'")
    assert merged["note"] == merged_text and merged["author_type"] == "MemoryManager"
    assert sorted(merged["derived_from_note_ids"]) == sorted(members)
    assert merged["consolidation_count"] == 1 and merged["embedding"] is not None
    for member in members:
        row = note_row(services.database_url, member)
        assert row["status"] == "Archived" and row["consolidated_into_note_id"] == merged["id"]


def test_similar_notes_in_different_scopes_never_merge(runtime, services):
    for i, text in enumerate(CLUSTER):
        seed_note(runtime, text, user=f"U{i}")
    with OpenAIStub() as stub:
        stub.chat = lambda body: json.dumps({"merge": True, "note": "merged"})
        counts = consolidate_similar_notes(
            phase_deps(runtime, settings=_stub_settings(runtime, stub)))
        assert stub.chat_requests() == []
    assert counts.get("clusters", 0) == 0
    assert all(r["status"] == "Active" for r in rows(services.database_url,
                                                     "SELECT status FROM notes"))


def test_a_declined_cluster_is_not_offered_to_the_judge_again(runtime, services):
    for text in CLUSTER:
        seed_note(runtime, text)
    with OpenAIStub() as stub:
        stub.chat = lambda body: json.dumps({"merge": False, "note": None})
        settings = _stub_settings(runtime, stub)
        first = consolidate_similar_notes(phase_deps(runtime, settings=settings))
        second = consolidate_similar_notes(phase_deps(runtime, settings=settings))
        assert len(stub.chat_requests()) == 1
    assert first["declined"] == 1 and second["declined_memoized"] == 1


def test_a_contradiction_revokes_the_older_note_and_is_memoized(runtime, services):
    now = now_utc()
    old = seed_note(runtime, "I love pie charts", at=now - timedelta(days=10))
    new = seed_note(runtime, "never use pie charts, bar charts only", at=now)
    protected_old = seed_note(runtime, "I love pie charts", user="U2", tier="Protected",
                              at=now - timedelta(days=10))
    seed_note(runtime, "never use pie charts, bar charts only", user="U2", at=now)
    with OpenAIStub() as stub:
        stub.chat = lambda body: json.dumps({"relation": "contradiction", "confidence": 92})
        settings = _stub_settings(runtime, stub)
        counts = resolve_contradictions(phase_deps(runtime, now=now, settings=settings))
        again = resolve_contradictions(phase_deps(runtime, now=now, settings=settings))
        model_calls = len(stub.chat_requests())
    assert counts["revoked"] == 1 and counts["flagged"] == 1
    revoked = note_row(services.database_url, old)
    assert revoked["status"] == "Revoked" and revoked["superseded_by"] == new
    assert "newer by more than 7 days" in events_of(services.database_url, old)[0]["reason"]
    flagged = note_row(services.database_url, protected_old)
    assert flagged["status"] == "Active" and flagged["review_flag"]
    assert again["evaluated"] == 0 and again.get("memoized", 0) >= 1
    assert model_calls <= 2  # at most once per distinct content pair, never again


def test_contradiction_pairs_per_cycle_are_capped(runtime, services):
    settings = runtime.settings.model_copy(update={"contradiction_max_pairs": 2})
    for i in range(5):
        seed_note(runtime, "User prefers dark mode", user=f"U{i}")
        seed_note(runtime, f"User prefers dark mode on device {i}", user=f"U{i}")
    first = resolve_contradictions(phase_deps(runtime, settings=settings))
    assert first["evaluated"] == 2
    second = resolve_contradictions(phase_deps(runtime, settings=settings))
    assert second["evaluated"] == 2 and second["memoized"] >= 2  # the next ones, not the same


def test_after_three_generations_a_cluster_is_re_derived_from_the_originals(runtime, services):
    originals = [seed_note(runtime, text, status="Archived") for text in CLUSTER]
    summary = seed_note(runtime, "User prefers bar charts to pie charts (summary)")
    with runtime.db.transaction() as conn:  # a third-generation summary of the originals
        conn.exec_driver_sql(
            "UPDATE notes SET consolidation_count = 3, derived_from_note_ids = %s WHERE id = %s",
            (originals, summary))
    fresh = [seed_note(runtime, "User likes bar charts better than pie charts"),
             seed_note(runtime, "The user prefers bar charts over pie charts in reports")]
    with OpenAIStub() as stub:
        stub.chat = lambda body: json.dumps({"merge": True, "note": "User prefers bar charts"})
        counts = consolidate_similar_notes(
            phase_deps(runtime, settings=_stub_settings(runtime, stub)))
        [request] = stub.chat_requests()
    assert counts["clusters"] == 1
    sent = json.loads(request["messages"][1]["content"])["NOTES"]
    assert set(CLUSTER) <= set(sent)  # the originals, not the summary of summaries
    assert "User prefers bar charts to pie charts (summary)" not in sent
    [merged] = rows(services.database_url, "SELECT * FROM notes WHERE status = 'Active'")
    assert merged["consolidation_count"] == 1
    assert set(merged["derived_from_note_ids"]) == set(originals) | set(fresh)
    assert note_row(services.database_url, summary)["consolidated_into_note_id"] == merged["id"]
