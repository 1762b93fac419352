"""Settings: the spec's thresholds as defaults, environment overrides, Celery invariants."""

from __future__ import annotations

import pytest

from worker.celery_app import celery_config
from worker.settings import Settings


def test_defaults_are_the_thresholds_the_spec_names(monkeypatch):
    for name in ("DATABASE_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    s = Settings(_env_file=None)
    assert (s.per_run_cap, s.near_dup_shortlist, s.correction_related_similarity) == (5, 3, 0.3)
    assert (s.provisional_ttl_days, s.max_note_length) == (7, 2000)
    assert (s.relevant_min_similarity, s.max_notes_to_inject, s.max_examples_to_inject) == (
        0.5, 5, 3)
    assert (s.consolidation_similarity, s.consolidation_min_cluster,
            s.consolidation_max_cluster, s.consolidation_max_generations) == (0.60, 3, 7, 3)
    assert (s.contradiction_similarity, s.contradiction_max_pairs,
            s.contradiction_recency_days) == (0.70, 50, 7)
    assert (s.maintenance_new_note_trigger, s.extraction_min_confidence,
            s.extraction_min_length) == (100, 80, 10)
    assert (s.decay_base_lambda, s.decay_archive_below, s.decay_access_boost_cap) == (
        0.16, 0.5, 1.5)
    assert s.embedding_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert s.database_url is None and s.redis_url is None


def test_environment_overrides(monkeypatch):
    monkeypatch.setenv("MEMORY_PER_RUN_CAP", "2")
    monkeypatch.setenv("DATABASE_URL", "postgresql://db.example/memory")
    monkeypatch.setenv("MEMORY_EMBEDDING_BACKEND", "openai")
    s = Settings()
    assert s.per_run_cap == 2
    assert s.database_url == "postgresql://db.example/memory"
    assert s.embedding_backend == "openai"
    monkeypatch.setenv("MEMORY_CORRECTION_RELATED_SIMILARITY", "1.5")
    with pytest.raises(ValueError):
        Settings()


def test_celery_configuration_follows_the_spec():
    s = Settings(redis_url="redis://127.0.0.1:1/0")
    conf = celery_config(s)
    assert conf["task_acks_late"] and conf["task_reject_on_worker_lost"]
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["accept_content"] == ["json"] and conf["timezone"] == "UTC"
    assert conf["task_routes"]["memory.write"]["queue"] == "memory.writes"
    assert conf["task_routes"]["memory.manager.cycle"]["queue"] == "memory.manager"
    assert conf["task_routes"]["memory.continuations.flush"]["queue"] == "memory.writes"
    limits = conf["task_annotations"]["memory.write"]
    assert limits["time_limit"] < conf["broker_transport_options"]["visibility_timeout"]


def test_a_time_limit_above_the_visibility_timeout_is_refused():
    s = Settings(redis_url="redis://127.0.0.1:1/0", visibility_timeout_s=30,
                 write_time_limit_s=45)
    with pytest.raises(ValueError, match="VISIBILITY_TIMEOUT"):
        celery_config(s)
