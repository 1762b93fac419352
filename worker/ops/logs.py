"""Structured logs: one JSON object per line for machines, a readable line for a terminal.

`MEMORY_LOG_FORMAT`: `json`, `text`, or `auto` (JSON unless stderr is a terminal). Records
carry identifiers only — task id, task name, run id, seq, agent, disposition, durations —
never note text: the summary line of a task is built from an allow-list of result fields,
and nothing in the project logs a note, a message or a rendered context.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

# Fields a record may carry beyond the message (set with `extra=`).
CONTEXT_FIELDS = ("task_id", "task", "run_id", "seq", "agent_id", "disposition", "duration_ms",
                  "replayed", "cycle_id", "status", "phase", "event", "conversation_id",
                  "model_calls", "retries", "reason_code", "candidate_id", "note_id")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                payload[name] = value
        if record.exc_info and record.exc_info[0] is not None:
            # The type only: exception messages of database errors quote row values.
            payload["exc_type"] = record.exc_info[0].__name__
        return json.dumps(payload, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = " ".join(f"{name}={getattr(record, name)}" for name in CONTEXT_FIELDS
                          if getattr(record, name, None) is not None)
        return f"{line}  [{fields}]" if fields else line


def use_json(setting: str) -> bool:
    if setting == "json":
        return True
    if setting == "text":
        return False
    return not sys.stderr.isatty()


def apply_format(logger: logging.Logger, setting: str) -> None:
    """Give every handler of `logger` our formatter (Celery installs its own handlers)."""
    formatter: logging.Formatter = JsonFormatter() if use_json(setting) else TextFormatter()
    for handler in logger.handlers:
        handler.setFormatter(formatter)


task_log = logging.getLogger("memory.task")


def log_task_result(task_id: str | None, task: str, result: Any, duration_s: float) -> None:
    """One line per finished memory task, from an allow-list of result fields."""
    extra: dict[str, Any] = {"task_id": task_id, "task": task,
                             "duration_ms": round(duration_s * 1000, 2)}
    if isinstance(result, dict):
        for name in ("run_id", "seq", "disposition", "replayed", "cycle_id", "status",
                     "conversation_id", "model_calls"):
            value = result.get(name)
            if isinstance(value, str | int | float | bool) and value is not None:
                extra[name] = value if not isinstance(value, str) else value[:200]
        scope = result.get("final_scope")
        if isinstance(scope, dict) and isinstance(scope.get("agent_id"), str):
            extra["agent_id"] = scope["agent_id"][:200]
        if "ok" in result and "status" not in extra:
            extra["status"] = "ok" if result.get("ok") else "error"
    task_log.info("%s done", task, extra=extra)
