"""The `vectors` phase: what was stored without a vector (the embedder failed and the write
failed open) gets one in the next cycle, before hardening compares notes by meaning."""

from __future__ import annotations

import uuid
from datetime import timedelta

from db.queries.missing_vectors import notes_without_vector, set_note_vectors
from tests.helpers import rows
from tests.manager_helpers import note_row, now_utc, phase_deps, run_cycle, seed_note
from tests.openai_stub import OpenAIStub
from worker.embeddings import build_embedder
from worker.manager.vectors import embed_missing_vectors
from worker.settings import Settings


def _without_vector(database_url: str) -> list[dict]:
    return rows(database_url, "SELECT id, status FROM notes WHERE embedding IS NULL "
                "AND status IN ('Active', 'Provisional')")


def test_a_note_stored_without_a_vector_gets_one_before_hardening_judges_it(runtime,
                                                                            services):
    now = now_utc()
    older = seed_note(runtime, "I love pie charts", at=now - timedelta(days=3))
    correction = seed_note(runtime, "Never use pie charts for this user; bar charts only.",
                           status="Provisional", author="Agent", embed=False,
                           at=now - timedelta(hours=1), expires_at=now + timedelta(days=7))

    report = run_cycle(runtime, now=now)

    vectors = report.phases[0]
    assert vectors["phase"] == "vectors" and vectors["error"] is None
    assert vectors["counts"]["notes_embedded"] == 1
    assert report.counts["embedded"] == 1
    row = note_row(services.database_url, correction)
    assert row["embedding"] is not None
    assert row["embedding_model"] == runtime.embedder.model_name
    # Hardening, which runs next, found the older note by meaning (cosine 0.72; nothing was
    # recorded at write time, when there was no vector) and recency won.
    assert row["status"] == "Active"
    assert note_row(services.database_url, older)["status"] == "Revoked"
    assert _without_vector(services.database_url) == []


def test_retired_and_erased_notes_are_left_without_a_vector(runtime, services):
    archived = seed_note(runtime, "User used to like sepia charts.", status="Archived",
                         embed=False)
    erased = seed_note(runtime, "User's old office was in Porto.", status="Revoked",
                       embed=False)
    with runtime.db.transaction() as conn:
        conn.exec_driver_sql("UPDATE notes SET note = NULL, content_hash = NULL, "
                             "content_erased_at = now() WHERE id = %(id)s", {"id": erased})

    counts = embed_missing_vectors(phase_deps(runtime))

    assert counts["notes_embedded"] == 0
    assert note_row(services.database_url, archived)["embedding"] is None
    assert note_row(services.database_url, erased)["embedding"] is None


def test_the_phase_is_bounded_per_cycle_provisional_notes_first(runtime, services):
    now = now_utc()
    settings = runtime.settings.model_copy(update={"embedding_backfill_per_cycle": 3})
    active = [seed_note(runtime, text, embed=False, at=now - timedelta(days=10 - i))
              for i, text in enumerate(["User lives in Lisbon.", "User is vegetarian.",
                                        "User takes the train to work.",
                                        "User prefers metric units."])]
    provisional = seed_note(runtime, "User collects vinyl records.", status="Provisional",
                            author="Agent", embed=False, at=now - timedelta(hours=1),
                            expires_at=now + timedelta(days=7))

    first = embed_missing_vectors(phase_deps(runtime, settings=settings, now=now))
    assert first == {"notes_embedded": 3, "examples_embedded": 0, "budget_exhausted": True}
    assert note_row(services.database_url, provisional)["embedding"] is not None
    # Oldest first after the provisional ones: the two newest Active notes wait.
    assert {r["id"] for r in _without_vector(services.database_url)} == set(active[2:])

    second = embed_missing_vectors(phase_deps(runtime, settings=settings, now=now))
    assert second == {"notes_embedded": 2, "examples_embedded": 0, "budget_exhausted": False}
    assert _without_vector(services.database_url) == []


def test_a_note_rewritten_while_it_was_embedded_keeps_its_new_text(runtime, services):
    note_id = seed_note(runtime, "User's timezone is UTC+1.", status="Provisional",
                        author="Agent", embed=False)
    with runtime.db.read() as conn:
        [page] = notes_without_vector(conn, 10)
    stale = runtime.embedder.embed([page.text])
    # Meanwhile the run corrects its own note (supersede-own), still without a vector.
    with runtime.db.transaction() as conn:
        conn.exec_driver_sql("UPDATE notes SET note = 'User''s timezone is UTC+2.', "
                             "content_hash = 'rewritten' WHERE id = %(id)s", {"id": note_id})
        assert set_note_vectors(conn, [page], stale, runtime.embedder.model_name,
                                now_utc()) == 0
    assert note_row(services.database_url, note_id)["embedding"] is None
    # The next pass embeds what the note says now.
    assert embed_missing_vectors(phase_deps(runtime))["notes_embedded"] == 1


def test_examples_stored_without_a_vector_get_one_from_their_input(runtime, services):
    example_id = uuid.uuid4()
    with runtime.db.transaction() as conn:
        conn.exec_driver_sql(
            "INSERT INTO examples (id, agent_id, user_id, input_text, output_text, "
            "success_score) VALUES (%(id)s, 'A', 'U', 'Draw a pipeline chart', "
            "'Bar chart by stage.', 9)", {"id": example_id})

    counts = embed_missing_vectors(phase_deps(runtime))

    assert counts["examples_embedded"] == 1
    [example] = rows(services.database_url, "SELECT embedding, embedding_model FROM examples "
                     "WHERE id = %s", example_id)
    [expected] = runtime.embedder.embed(["Draw a pipeline chart"])
    assert example["embedding_model"] == runtime.embedder.model_name
    assert abs(float(example["embedding"].to_numpy() @ expected) - 1.0) < 1e-4


def test_an_endpoint_still_down_leaves_the_notes_for_the_next_cycle(runtime, services):
    note_id = seed_note(runtime, "User drinks oat milk in coffee.", embed=False)
    with OpenAIStub() as stub:
        settings = Settings(embedding_backend="openai", embedding_base_url=stub.base_url,
                            embedding_api_key="stand-in", embedding_model="stand-in-embed",
                            embedding_cache_size=0, embedding_shared_cache_ttl_s=0,
                            database_url=services.database_url,
                            redis_url=services.redis_url)
        deps = phase_deps(runtime, settings=settings)
        deps.embedder = build_embedder(settings)
        stub.fail_status = 503

        down = embed_missing_vectors(deps)
        assert down["embedding_failed"] == 1 and down["notes_embedded"] == 0
        assert note_row(services.database_url, note_id)["embedding"] is None

        stub.fail_status = None
        assert embed_missing_vectors(deps)["notes_embedded"] == 1
    row = note_row(services.database_url, note_id)
    assert row["embedding_model"] == "stand-in-embed" and row["embedding"] is not None


def test_the_metrics_count_what_the_phase_embedded(runtime):
    from prometheus_client import REGISTRY

    from worker.ops import metrics

    def embedded() -> float:
        return REGISTRY.get_sample_value("memory_manager_phase_items_total",
                                         {"phase": "vectors", "outcome": "notes_embedded"}) or 0

    seed_note(runtime, "User plays the cello on weekends.", embed=False)
    seed_note(runtime, "User keeps a vegetable garden.", embed=False)
    before = embedded()
    metrics.observe_cycle(run_cycle(runtime).as_dict())
    assert embedded() - before == 2
