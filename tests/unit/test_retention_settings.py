"""Retention settings: defaults, and a write-log window no redelivery can outlive."""

from __future__ import annotations

import pytest

from worker.settings import Settings


def test_retention_defaults(monkeypatch):
    for name in ("DATABASE_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    s = Settings(_env_file=None, visibility_timeout_s=600, seq_gap_timeout_s=30)
    assert (s.write_log_retention_days, s.trace_retention_days, s.note_event_retention_days,
            s.cycle_retention_days, s.conversation_message_retention_days,
            s.retired_note_content_retention_days) == (7, 30, 90, 30, 30, 30)
    assert (s.cycle_keep_last, s.retention_page_size, s.retention_rows_per_cycle) == (
        200, 1000, 200_000)
    assert s.context_result_expires_s == 300 < s.result_expires_s


def test_the_write_log_window_must_outlive_any_redelivery(monkeypatch):
    monkeypatch.setenv("MEMORY_WRITE_LOG_RETENTION_DAYS", "0.5")
    with pytest.raises(ValueError, match="at least 1 days"):
        Settings()
    monkeypatch.setenv("MEMORY_WRITE_LOG_RETENTION_DAYS", "3")
    monkeypatch.setenv("MEMORY_VISIBILITY_TIMEOUT_S", "86400")
    with pytest.raises(ValueError, match="ten times the visibility timeout"):
        Settings()
    monkeypatch.setenv("MEMORY_WRITE_LOG_RETENTION_DAYS", "0")  # keep forever
    assert Settings().write_log_retention_days == 0
