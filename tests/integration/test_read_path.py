"""The read path on real Postgres + pgvector: scope, strategies, expiry, examples, stats."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest

from db.queries.access import fold_access_page, record_access
from db.queries.inspect import show_note
from db.queries.retrieval import relevant_notes
from db.scope import RequestScope, ScopeConfig, ScopeError
from tests.helpers import READ_NOW, configure, rows
from worker.manager.cycle import run_manager_cycle
from worker.reads.context import build_context, recorder_for

NOW = READ_NOW


@pytest.fixture
def deps(runtime):
    return replace(runtime.context_deps(), clock=lambda: NOW)


def context(deps, agent="A", user="U", company="C", text=None, **kw):
    request = RequestScope(agent_id=agent, user_id=user, company_id=company,
                           primary_scope_entity=kw.pop("entity", None),
                           primary_scope_record_id=kw.pop("record", None),
                           secondary_scopes=kw.pop("secondary", {}),
                           shared_only=kw.pop("shared_only", False))
    return build_context(deps, request, text, **kw)


def texts(result) -> set[str]:
    return {n.note for n in result.notes}


def test_every_lattice_level_is_visible_and_nothing_else(deps, seed, db):
    configure(db, note_injection_strategy="All", max_notes_to_inject=100)
    visible = {
        seed("A+U+C", agent="A", user="U", company="C"),
        seed("A+U", agent="A", user="U", company=None),
        seed("A+C", agent="A", user=None, company="C"),
        seed("U+C", agent=None, user="U", company="C"),
        seed("A", agent="A", user=None, company=None),
        seed("U", agent=None, user="U", company=None),
        seed("C", agent=None, user=None, company="C"),
        seed("global", agent=None, user=None, company=None),
    }
    seed("other user", user="U2")
    seed("other company", company="C2")
    seed("other agent", agent="A2")
    seed("other user, no agent", agent=None, user="U2", company=None)
    result = context(deps)
    assert {n.id for n in result.notes} == visible
    without_company = context(deps, company=None)
    assert texts(without_company) == {"A+U", "A", "U", "global"}
    without_user = context(deps, user=None)
    assert texts(without_user) == {"A+C", "A", "C", "global"}
    shared = context(deps, shared_only=True)
    assert texts(shared) == {"A+C", "A", "C", "global"}, "an audience sees no user's notes"


def test_primary_record_and_secondary_dimensions(deps, seed, db):
    configure(db, note_injection_strategy="All", max_notes_to_inject=100,
              scope_config={"primary_entity": "Account",
                            "dimensions": {"region": {"inheritance": "cascading"},
                                           "team": {"inheritance": "strict"}}})
    seed("no tenant")
    seed("account 1", entity="Account", record="acc-1")
    seed("account 2", entity="Account", record="acc-2")
    seed("eu", entity="Account", record="acc-1", secondary={"region": "eu"})
    seed("us", secondary={"region": "us"})
    seed("red team", secondary={"team": "red"})
    seed("eu red team", secondary={"region": "eu", "team": "red"})

    acc1 = context(deps, entity="Account", record="acc-1")
    assert texts(acc1) == {"no tenant", "account 1"}, "a note of another record is invisible"
    assert texts(context(deps)) == {"no tenant"}
    both_regions = context(deps, entity="Account", record="acc-1",
                           secondary={"region": ["eu", "us"]})
    assert texts(both_regions) == {"no tenant", "account 1", "eu", "us"}, "array values (IN)"
    strict_team = context(deps, secondary={"region": "eu", "team": "red"})
    assert texts(strict_team) == {"red team", "eu red team"}, "strict: the note must match"


def test_a_missing_required_dimension_is_a_clear_error(deps, db):
    configure(db, scope_config={"primary_entity": "Account", "primary_required": True,
                                "dimensions": {"region": {"required": True}}})
    with pytest.raises(ScopeError, match="primary scope record"):
        context(deps)
    with pytest.raises(ScopeError, match="region"):
        context(deps, entity="Account", record="acc-1")
    assert context(deps, entity="Account", record="acc-1",
                   secondary={"region": "eu"}).rendered == ""


def test_expired_provisional_is_never_injected_but_ttl_less_active_is(deps, seed, db):
    configure(db, note_injection_strategy="Recent")
    seed("expired provisional", status="Provisional", expires=NOW - timedelta(minutes=1))
    seed("live provisional", status="Provisional", expires=NOW + timedelta(days=6))
    seed("active without ttl", status="Active", expires=None)
    seed("archived", status="Archived")
    seed("revoked", status="Revoked")
    seed("pending", status="Pending")
    assert texts(context(deps)) == {"live provisional", "active without ttl"}


def test_relevant_uses_similarity_and_the_minimum(deps, seed, db):
    seed("User prefers bar charts over pie charts.")
    seed("User lives in Berlin.")
    result = context(deps, text="Which chart type does the user like, bar or pie?")
    assert texts(result) == {"User prefers bar charts over pie charts."}
    assert result.notes[0].similarity >= 0.5
    assert result.strategy == "Relevant"


def test_relevant_without_input_falls_back_to_recent(deps, seed, db):
    seed("User prefers bar charts over pie charts.")
    result = context(deps, text=None)
    assert result.strategy == "Recent" and "fallback" in result.trace


def test_provisional_notes_are_not_starved_by_older_active_ones(deps, seed, db, embedder):
    configure(db, max_notes_to_inject=4)
    [query] = embedder.embed(["What charts does the user like?"])
    for i in range(8):
        seed(f"User likes chart style {i}.", status="Active", vector=query,
             created=NOW - timedelta(days=30 + i))
    for i in range(3):
        seed(f"User now wants chart flavour {i}.", status="Provisional",
             created=NOW - timedelta(hours=i), expires=NOW + timedelta(days=7))
    result = context(deps, text="What charts does the user like?")
    statuses = [n.status for n in result.notes]
    assert len(statuses) == 4
    assert statuses.count("Provisional") == 2, "half the slots are reserved for provisional"


def test_selective_scope_finds_its_five_among_100k(deps, seed, db, embedder, services):
    [query] = embedder.embed(["How should reports be formatted?"])
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        # 99,995 notes of other users, each a perfect match for the query.
        conn.execute(
            "INSERT INTO notes (id, agent_id, user_id, company_id, type, note, content_hash, "
            "status, embedding, embedding_model) SELECT gen_random_uuid(), 'A', "
            "'other-' || (g %% 10000), 'C', 'Context', 'decoy ' || g, md5(g::text), 'Active', "
            "%s, %s FROM generate_series(1, 99995) AS g", [query, embedder.model_name])
        conn.execute("ANALYZE notes")
    mine = {seed(f"User wants reports formatted as {style}.") for style in
            ("tables", "bullet points", "short memos", "slide decks", "PDF summaries")}
    configure(db, max_notes_to_inject=5)
    assert {n.id for n in context(deps, text="How should reports be formatted?").notes} == mine

    request = RequestScope(agent_id="A", user_id="U", company_id="C")
    with db.read(generic_plans=True) as conn:  # the connections build_context reads on
        assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "force_generic_plan"
        for _ in range(3):  # prepared on first use: every run here uses the generic plan
            found = relevant_notes(conn, request, ScopeConfig(), query=query,
                                   embedding_model=embedder.model_name, min_similarity=0.0,
                                   per_status=5, now=NOW)
            assert {n.id for n in found} == mine


def test_examples_strategies_and_their_four_level_scope(deps, db, embedder):
    configure(db, inject_notes=False, inject_examples=True, max_examples_to_inject=3,
              example_injection_strategy="Rated")

    def example(inp: str, out: str, score: float | None, agent="A", user=None, company=None,
                day: int = 1) -> None:
        [vector] = embedder.embed([inp])
        with db.transaction() as conn:
            conn.exec_driver_sql(
                "INSERT INTO examples (id, agent_id, user_id, company_id, input_text, "
                "output_text, success_score, embedding, embedding_model, created_at) "
                "VALUES (%(id)s, %(a)s, %(u)s, %(c)s, %(i)s, %(o)s, %(s)s, %(v)s, %(m)s, %(t)s)",
                {"id": uuid.uuid4(), "a": agent, "u": user, "c": company, "i": inp, "o": out,
                 "s": score, "v": vector, "m": embedder.model_name,
                 "t": NOW - timedelta(days=30 - day)})

    example("Summarize revenue", "Revenue grew.", 9.5, day=1)
    example("Draw a pipeline chart", "Bar chart by stage.", 7.0, user="U", day=2)
    example("Write a status email", "Status: green.", 8.0, user="U", company="C", day=3)
    example("Plan a sprint", "Two-week sprint.", 5.0, company="C", day=4)
    example("Other agent's example", "No.", 10.0, agent="A2")
    example("Other user's example", "No.", 10.0, user="U2")
    example("Other company's example", "No.", 10.0, company="C2")

    rated = context(deps, text="chart")
    assert [e.input_text for e in rated.examples] == [
        "Summarize revenue", "Write a status email", "Draw a pipeline chart"]
    assert "💡 RELEVANT EXAMPLES (3)" in rated.rendered
    configure(db, example_injection_strategy="Recent")
    assert [e.input_text for e in context(deps).examples] == [
        "Plan a sprint", "Write a status email", "Draw a pipeline chart"]
    configure(db, example_injection_strategy="Semantic")
    semantic = context(deps, text="Make a chart of the sales pipeline")
    assert semantic.examples[0].input_text == "Draw a pipeline chart"


def test_reranker_reorders_filters_and_falls_back_on_error(deps, seed, db):
    seed("User prefers bar charts for revenue reports.")
    seed("User prefers dark backgrounds on charts.")
    seed("User prefers charts with a legend on the left.")
    question = "What does the user prefer for chart backgrounds?"
    plain = context(deps, text=question)
    assert [n.note for n in plain.notes] == ["User prefers dark backgrounds on charts.",
                                             "User prefers charts with a legend on the left."]
    configure(db, reranker_config={"type": "python", "path": f"{__name__}:longest"})
    assert [n.note for n in context(deps, text=question).notes] == [
        "User prefers charts with a legend on the left.",
        "User prefers dark backgrounds on charts."]
    configure(db, reranker_config={"type": "lexical", "multiplier": 3, "min_relevance": 0.6})
    lexical = context(deps, text=question)
    assert [n.note for n in lexical.notes] == ["User prefers dark backgrounds on charts."]
    assert lexical.trace["reranker"] == "lexical" and lexical.trace["reranker_dropped"] == 1
    configure(db, reranker_config={"type": "python", "path": f"{__name__}:broken"})
    fallback = context(deps, text=question)
    assert [n.id for n in fallback.notes] == [n.id for n in plain.notes], "vector order"
    assert "RuntimeError: reranker down" in fallback.trace["reranker_error"]
    recorder_for(deps.db).flush()
    traced = rows(deps.db.url, "SELECT detail FROM trace_events WHERE event = 'memory_retrieve'")
    assert any("reranker_error" in t["detail"] for t in traced)


def longest(query: str, texts: list[str]) -> list[float]:
    return [float(len(t)) for t in texts]


def broken(query: str, texts: list[str]) -> list[float]:
    raise RuntimeError("reranker down")


def test_access_statistics_are_recorded_off_the_read_path(deps, seed, db):
    configure(db, note_injection_strategy="Recent")
    note_id = seed("User likes green tea.")
    before = rows(deps.db.url, "SELECT access_count FROM notes WHERE id = %s", note_id)
    context(deps, record_access=False)
    recorder_for(deps.db).flush()
    assert rows(deps.db.url, "SELECT access_count FROM notes WHERE id = %s",
                note_id) == before
    context(deps)
    context(deps)
    recorder_for(deps.db).flush()
    # Recorded beside the note (reads never write a new version of a note row) ...
    assert rows(deps.db.url, "SELECT access_count FROM notes WHERE id = %s",
                note_id) == before
    [pending] = rows(deps.db.url, "SELECT hits, last_accessed_at FROM note_access_pending "
                     "WHERE note_id = %s", note_id)
    assert (pending["hits"], pending["last_accessed_at"]) == (2, NOW)
    with db.connect() as conn:  # ... what operators see counts them already ...
        shown = show_note(conn, note_id)
        assert shown is not None and shown["access_count"] == before[0]["access_count"] + 2
    # ... and the Memory Manager cycle folds them into the note before anything reads them
    # (after the vectors phase, which reads no access counts).
    report = run_manager_cycle(db, deps.settings, None, now=NOW, force=True)
    assert [p["phase"] for p in report.phases[:2]] == ["vectors", "access"]
    assert report.phases[1]["counts"] == {"notes": 1, "accesses": 2}
    [after] = rows(deps.db.url, "SELECT access_count, last_accessed_at FROM notes WHERE id = %s",
                   note_id)
    assert after["access_count"] == before[0]["access_count"] + 2
    assert after["last_accessed_at"] == NOW
    assert rows(deps.db.url, "SELECT * FROM note_access_pending WHERE note_id = %s",
                note_id) == []


def test_accesses_of_a_note_deleted_before_the_fold_are_dropped(deps, seed, db):
    gone, kept = seed("User likes oolong."), seed("User likes sencha.")
    [before] = rows(deps.db.url, "SELECT access_count FROM notes WHERE id = %s", kept)
    with db.transaction() as conn:
        record_access(conn, {gone: 3, kept: 1}, NOW)
        conn.exec_driver_sql("DELETE FROM notes WHERE id = %(id)s", {"id": gone})
        pages = [fold_access_page(conn, limit=1) for _ in range(3)]  # by note id
    expected = {gone: (1, 0, 0), kept: (1, 1, 1)}
    assert pages == [expected[i] for i in sorted(expected)] + [(0, 0, 0)]
    [row] = rows(deps.db.url, "SELECT access_count FROM notes WHERE id = %s", kept)
    assert row["access_count"] == before["access_count"] + 1
    assert rows(deps.db.url, "SELECT note_id FROM note_access_pending") == []
