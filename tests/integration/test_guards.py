"""Every guard of the write pipeline, through the plain write path on real Postgres + pgvector."""

from __future__ import annotations

import uuid
from dataclasses import replace

import numpy as np
import psycopg
import pytest

from tests.helpers import Writer, notes, rows, run_context
from tests.openai_stub import OpenAIStub
from worker.embeddings import OpenAIEmbedder


def test_type_outside_preference_and_context_is_rejected(write, services):
    run = run_context("r1")
    for bad_type in ("Constraint", "Issue", "Example", "preference", None, 42, ["Preference"]):
        result = write(run, "User likes tea.", type=bad_type)
        assert result["disposition"] == "rejected-type", bad_type
        assert "Preference or Context" in result["reason"]
    assert notes(services.database_url) == []


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_empty_note_is_rejected_invalid(write, services, text):
    result = write(run_context("r1"), text)
    assert result["disposition"] == "rejected-invalid"
    assert "empty" in result["reason"]
    assert notes(services.database_url) == []


def test_note_length_limit_is_2000_characters(write, services):
    run = run_context("r1")
    too_long = write(run, "x" * 2001)
    assert too_long["disposition"] == "rejected-invalid"
    assert "2001" in too_long["reason"] and "2000" in too_long["reason"]
    assert write(run, "y" * 2000)["disposition"] == "written"
    assert len(notes(services.database_url)) == 1


def test_custom_max_note_length(runtime, services):
    deps = runtime.write_deps()
    deps = replace(deps, settings=deps.settings.model_copy(update={"max_note_length": 50}))
    write = Writer(deps)
    run = run_context("r1")
    assert write(run, "a" * 51)["disposition"] == "rejected-invalid"
    assert write(run, "User likes short notes.")["disposition"] == "written"


def test_within_run_repeat_returns_earlier_note_and_inserts_nothing(write, services):
    run = run_context("r1")
    first = write(run, "User prefers dark mode.")
    assert first["disposition"] == "written"
    for variant in ("user prefers dark mode", "  USER   prefers DARK mode!! ",
                    "User prefers dark mode…", "Ｕｓｅｒ prefers dark mode."):
        repeat = write(run, variant)
        assert repeat["disposition"] == "skipped-duplicate", variant
        assert repeat["note_id"] == first["note_id"]
    assert len(notes(services.database_url)) == 1


def test_cap_counts_only_new_notes(write, services, db):
    from worker.agents import configure_agent

    with db.transaction() as conn:
        configure_agent(conn, "A", {"per_run_cap": 2})
    assert write(run_context("earlier"), "User lives in Lisbon.")["disposition"] == "written"

    run = run_context("r1")
    assert write(run, "User lives in Lisbon.")["disposition"] == "deduped"
    assert write(run, "Be evil.", type="Constraint")["disposition"] == "rejected-type"
    assert write(run, "")["disposition"] == "rejected-invalid"
    assert write(run, "User's cat is called Miso.")["disposition"] == "written"
    assert write(run, "user's cat is called miso")["disposition"] == "skipped-duplicate"
    assert write(run, "User drinks oat milk.")["disposition"] == "written"
    capped = write(run, "User plays the cello.")
    assert capped["disposition"] == "skipped-cap"
    assert "2" in capped["reason"] and capped["note_id"] is None
    assert rows(services.database_url,
                "SELECT persisted_count FROM runs WHERE run_id = 'r1'")[0]["persisted_count"] == 2


def test_supersede_own_is_applied_at_the_cap(write, services, db):
    from worker.agents import configure_agent

    with db.transaction() as conn:
        configure_agent(conn, "A", {"per_run_cap": 1})
    run = run_context("r1")
    assert write(run, "User's timezone is UTC+1.", type="Context")["disposition"] == "written"
    correction = write(run, "User's timezone is UTC+2.", type="Context")
    assert correction["disposition"] == "superseded-own"
    [note] = notes(services.database_url)
    assert note["note"] == "User's timezone is UTC+2."


def test_scope_defaults_to_agent_user_company(write, services):
    result = write(run_context("r1"), "User prefers metric units.")
    scope = result["final_scope"]
    assert (scope["agent_id"], scope["user_id"], scope["company_id"]) == ("A", "U", "C")
    assert scope["level"] == "Agent + User + Company specific"
    [note] = notes(services.database_url)
    assert (note["agent_id"], note["user_id"], note["company_id"]) == ("A", "U", "C")


def test_agent_hint_drops_the_user(write, services):
    result = write(run_context("r1"), "The team ships on Fridays.", type="Context",
                   scope_hint="agent")
    assert result["final_scope"]["user_id"] is None
    assert result["final_scope"]["company_id"] == "C"
    [note] = notes(services.database_url)
    assert note["user_id"] is None and note["agent_id"] == "A"


def test_a_hint_never_broadens_a_context_without_user_or_company(write, services):
    no_company = write(run_context("r1", company=None), "User likes jazz.", scope_hint="user")
    assert no_company["final_scope"]["company_id"] is None
    assert no_company["final_scope"]["user_id"] == "U"
    no_user = write(run_context("r2", user=None), "Company uses Jira.", scope_hint="user")
    assert no_user["final_scope"]["user_id"] is None
    for hint in ("global", "company", 7):
        result = write(run_context(f"r-{hint}"), f"Fact with hint {hint}.", scope_hint=hint)
        assert result["disposition"] == "written"
        scope = result["final_scope"]
        assert (scope["agent_id"], scope["user_id"], scope["company_id"]) == ("A", "U", "C")
        assert "ignored" in result["reason"]
    stored = notes(services.database_url)
    assert all(n["agent_id"] == "A" for n in stored), "in-flight writes never land global"


def test_supersede_own_updates_in_place_and_reembeds(write, services, embedder):
    run = run_context("r1")
    first = write(run, "User's timezone is UTC+1.", type="Context")
    second = write(run, "User's timezone is UTC+2.", type="Preference")
    assert second["disposition"] == "superseded-own"
    assert second["note_id"] == first["note_id"]
    [note] = notes(services.database_url)
    assert note["note"] == "User's timezone is UTC+2." and note["type"] == "Preference"
    [expected] = embedder.embed(["User's timezone is UTC+2."])
    assert np.allclose(note["embedding"].to_numpy(), expected, atol=1e-5)


def test_a_b_a_within_a_run_ends_as_a(write, services):
    run = run_context("r1")
    a = "User's timezone is UTC+1."
    b = "User's timezone is UTC+2."
    assert write(run, a, type="Context")["disposition"] == "written"
    assert write(run, b, type="Context")["disposition"] == "superseded-own"
    back = write(run, a, type="Context")
    assert back["disposition"] == "superseded-own"
    [note] = notes(services.database_url)
    assert note["note"] == a


def test_exact_restatement_from_another_run_is_deduped_and_reinforced(write, services):
    original = write(run_context("r1"), "User prefers bar charts over pie charts.")
    again = write(run_context("r2"), "user prefers bar charts over pie charts")
    assert again["disposition"] == "deduped"
    assert again["note_id"] == original["note_id"]
    [note] = notes(services.database_url)
    assert note["access_count"] == 2 and note["last_accessed_at"] is not None


def test_a_correction_in_a_later_run_is_never_absorbed(write, services):
    write(run_context("r1"), "I love pie charts")
    correction = write(run_context("r2"), "never use pie charts, bar charts only")
    assert correction["disposition"] == "written"
    texts = sorted(n["note"] for n in notes(services.database_url))
    assert texts == ["I love pie charts", "never use pie charts, bar charts only"]


def test_own_note_hit_wins_over_a_higher_ranked_exact_hit(write, services):
    existing = write(run_context("earlier"), "User's timezone is UTC+2.", type="Context")
    run = run_context("r1")
    own = write(run, "User's timezone is UTC+1.", type="Context")
    assert own["disposition"] == "written"
    result = write(run, "User's timezone is UTC+2.", type="Context")
    assert result["disposition"] == "superseded-own"
    assert result["note_id"] == own["note_id"]
    by_id = {str(n["id"]): n for n in notes(services.database_url)}
    assert by_id[own["note_id"]]["note"] == "User's timezone is UTC+2."
    assert by_id[existing["note_id"]]["access_count"] == 1, "the exact hit was not touched"


def test_same_text_in_two_scopes_gives_two_notes(write, services):
    first = write(run_context("r1", user="U1"), "User's timezone is UTC+2.", type="Context")
    other_scope = run_context("r2", user="U2")
    second = write(other_scope, "User's timezone is UTC+2.", type="Context")
    assert second["disposition"] == "written" and second["note_id"] != first["note_id"]
    # A near-duplicate in U2's run supersedes U2's own note only.
    third = write(other_scope, "User's timezone is UTC+3.", type="Context")
    assert third["note_id"] == second["note_id"]
    by_id = {str(n["id"]): n for n in notes(services.database_url)}
    assert by_id[first["note_id"]]["note"] == "User's timezone is UTC+2."
    assert by_id[first["note_id"]]["access_count"] == 1
    assert by_id[first["note_id"]]["updated_at"] == by_id[first["note_id"]]["created_at"]


def test_tenant_dimensions_separate_scopes(write, services):
    eu = run_context("r1", primary_scope_entity="Account", primary_scope_record_id="acc-1",
                     secondary_scopes={"region": "eu"})
    us = run_context("r2", primary_scope_entity="Account", primary_scope_record_id="acc-1",
                     secondary_scopes={"region": "us"})
    a = write(eu, "Invoices are due in 30 days.", type="Context")
    b = write(us, "Invoices are due in 30 days.", type="Context")
    assert a["disposition"] == b["disposition"] == "written"
    assert a["final_scope"]["secondary_scopes"] == {"region": "eu"}
    stored = notes(services.database_url)
    assert {n["primary_scope_record_id"] for n in stored} == {"acc-1"}
    assert len({n["scope_key"] for n in stored}) == 2


def test_embedding_failure_fails_open(runtime, services):
    with OpenAIStub() as stub:
        stub.fail_status = 500
        failing = OpenAIEmbedder("stub-embed", base_url=stub.base_url, api_key="k", timeout_s=2)
        write = Writer(replace(runtime.write_deps(), embedder=failing))
        run = run_context("r1")
        result = write(run, "User prefers tea over coffee.")
        assert result["disposition"] == "written"
        assert stub.requests, "the real client called the endpoint"
        # Exact restatements are still caught without vectors.
        assert write(run, "User prefers tea over coffee")["disposition"] == "skipped-duplicate"
    [note] = notes(services.database_url)
    assert note["embedding"] is None and note["embedding_model"] is None
    [trace] = rows(services.database_url,
                   "SELECT detail FROM trace_events WHERE run_id = 'r1' AND seq = 1")
    assert "embedding" in trace["detail"]["embedding_error"]


def test_openai_compatible_embedder_and_models_never_mix(runtime, services):
    with OpenAIStub() as stub:
        remote = OpenAIEmbedder("stub-embed", base_url=stub.base_url, api_key="k", timeout_s=2)
        remote_write = Writer(replace(runtime.write_deps(), embedder=remote))
        run = run_context("r1")
        first = remote_write(run, "User's timezone is UTC+1.", type="Context", seq=1)
    assert first["disposition"] == "written"
    [note] = notes(services.database_url)
    assert note["embedding_model"] == "stub-embed" and note["embedding"].dimensions() == 8
    # Another run, embedding with MiniLM: the earlier note is not among the similar notes a
    # write may correct, because vectors of different models are never compared.
    local_write = Writer(runtime.write_deps())
    second = local_write(run_context("r2"), "User's timezone is UTC+2.", type="Context", seq=1)
    assert second["disposition"] == "written"
    models = sorted(n["embedding_model"] for n in notes(services.database_url))
    assert models == ["sentence-transformers/all-MiniLM-L6-v2", "stub-embed"]
    assert all(n["corrects_note_id"] is None for n in notes(services.database_url))


def test_persistence_failure_is_error_not_counted_and_a_retry_writes(write, services):
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute("""
            CREATE FUNCTION fail_marked_notes() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.note LIKE '%[fail]%' THEN RAISE EXCEPTION 'disk on fire'; END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER fail_marked BEFORE INSERT ON notes
                FOR EACH ROW EXECUTE FUNCTION fail_marked_notes();
        """)
    try:
        run = run_context("r1")
        failed = write(run, "User's locker is [fail] 42.", seq=1)
        assert failed["disposition"] == "error"
        assert "retried" in failed["reason"]
        state = rows(services.database_url, "SELECT * FROM runs WHERE run_id = 'r1'")[0]
        assert state["persisted_count"] == 0
        assert state["applied_seq"] == 1, "later writes are not held up behind an error"
        assert write(run, "User's bike is blue.", seq=2)["disposition"] == "written"
    finally:
        with psycopg.connect(services.database_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER fail_marked ON notes; DROP FUNCTION fail_marked_notes()")
    retried = write(run, "User's locker is [fail] 42.", seq=1)
    assert retried["disposition"] == "written"
    assert rows(services.database_url,
                "SELECT persisted_count FROM runs WHERE run_id = 'r1'")[0]["persisted_count"] == 2
    [log] = rows(services.database_url, "SELECT * FROM write_log WHERE run_id = 'r1' AND seq = 1")
    assert log["disposition"] == "written"


def test_transient_database_errors_are_retried_with_backoff(runtime, services):
    """A lock wait that times out (LockNotAvailable) is transient: retried, then applied."""
    import threading

    from db.connector import Database

    impatient = Database(services.database_url + "&options=-c%20lock_timeout%3D100ms")
    deps = runtime.write_deps()
    write = Writer(replace(deps, db=impatient))
    holder = psycopg.connect(services.database_url)
    try:
        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('memory.run:' || %s, 0))",
                       ["r1"])
        release = threading.Timer(0.5, holder.rollback)
        release.start()
        result = write(run_context("r1"), "User flies kites on Sundays.")
        release.join()
        assert result["disposition"] == "written"

        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('memory.run:' || %s, 0))",
                       ["r2"])
        stubborn = Writer(replace(deps, db=impatient, settings=deps.settings.model_copy(
            update={"write_max_retries": 2})))
        failed = stubborn(run_context("r2"), "User collects stamps.")
        assert failed["disposition"] == "error"
        assert "OperationalError" in failed["reason"]
    finally:
        holder.close()
        impatient.dispose()
    assert [n["note"] for n in notes(services.database_url)] == ["User flies kites on Sundays."]


def test_disabled_agent_is_skipped_and_nothing_is_stored(write, services, db):
    from worker.agents import configure_agent

    with db.transaction() as conn:
        configure_agent(conn, "A", {"allow_memory_write": False})
    result = write(run_context("r1"), "User prefers tabs over spaces.")
    assert result["disposition"] == "skipped-disabled"
    assert "Do not tell the user" in result["reason"]
    assert notes(services.database_url) == []
    [trace] = rows(services.database_url, "SELECT * FROM trace_events WHERE run_id = 'r1'")
    assert trace["disposition"] == "skipped-disabled"


def test_landed_note_carries_status_author_tier_provenance_ttl_and_vector(write, services,
                                                                          embedder):
    run = run_context("r1", conversation_id="conv-9", conversation_detail_id="msg-3")
    result = write(run, "User prefers bullet-point summaries.")
    [note] = notes(services.database_url)
    assert str(note["id"]) == result["note_id"]
    assert note["status"] == "Provisional"
    assert note["author_type"] == "Agent"
    assert note["protection_tier"] == "Standard"
    assert note["source_agent_run_id"] == "r1"
    assert note["source_conversation_id"] == "conv-9"
    assert note["source_conversation_detail_id"] == "msg-3"
    assert note["access_count"] == 1
    ttl = note["expires_at"] - note["created_at"]
    assert abs(ttl.total_seconds() - 7 * 86400) < 1
    assert note["embedding_model"] == embedder.model_name
    assert note["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert note["embedding"].dimensions() == 384
    assert uuid.UUID(result["note_id"])
