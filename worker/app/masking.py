"""Keep memory text out of Flower, Celery events, `inspect` output and logs.

Task arguments are summarized by an allow-list: identifiers and small enums are shown,
every other value is reduced to its type and length. `MaskingAMQP` puts the summary in
`argsrepr` / `kwargsrepr` of every message this app publishes (clients, retries, chain
continuations) and in their task-sent events; `MaskedRequest` applies it to what the worker
reports (task-received events, `celery inspect`), whatever the publisher sent.
"""

from __future__ import annotations

from typing import Any

from celery.app.amqp import AMQP
from celery.worker.request import Request

SHOWN_KEYS = frozenset({
    "run_id", "agent_id", "user_id", "company_id", "conversation_id", "conversation_detail_id",
    "primary_scope_entity", "primary_scope_record_id", "source", "type", "scope_hint", "seq",
    "force", "maintenance", "role", "rating", "id", "candidate_id", "actor", "status",
})
MAX_SHOWN = 80


MAX_SUMMARY_DEPTH = 4  # real payloads are at most three levels deep; a deeper one is shown cut


def _summary(value: Any, *, shown: bool, depth: int = 0) -> Any:
    if isinstance(value, dict | list | tuple) and depth >= MAX_SUMMARY_DEPTH:
        return f"<{type(value).__name__} nested deeper>"
    if isinstance(value, dict):
        return {str(k)[:MAX_SHOWN]: _summary(v, shown=str(k) in SHOWN_KEYS, depth=depth + 1)
                for k, v in list(value.items())[:30]}
    if isinstance(value, list | tuple):
        return [_summary(v, shown=False, depth=depth + 1) for v in list(value)[:30]]
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value[:MAX_SHOWN] if shown else f"<{len(value)} chars>"
    return f"<{type(value).__name__}>"


def mask_args(args: Any) -> str:
    if not isinstance(args, list | tuple):
        return repr(_summary(args, shown=False))
    # Positional ints (seq) are safe to show; everything else goes through the allow-list.
    return repr(tuple(_summary(a, shown=False) for a in args))


def mask_kwargs(kwargs: Any) -> str:
    return repr(_summary(kwargs if isinstance(kwargs, dict) else {}, shown=False))


class MaskingAMQP(AMQP):
    """Builds every outgoing memory.* message with masked argument summaries."""

    def as_task_v2(self, task_id: str, name: str, args: Any = None, kwargs: Any = None,
                   *rest: Any, **options: Any) -> Any:
        if str(name).startswith("memory."):
            options["argsrepr"] = mask_args(args or ())
            options["kwargsrepr"] = mask_kwargs(kwargs or {})
        return super().as_task_v2(task_id, name, args, kwargs, *rest, **options)


class MaskedRequest(Request):
    """What the worker reports about a task (events, `inspect active/reserved`); and the
    screening of poison messages before they reach the pool (worker/app/poison.py)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if str(self._type).startswith("memory."):
            from worker.app.poison import screen_request

            screen_request(self)

    @property
    def argsrepr(self) -> str:
        return mask_args(self._args)

    @property
    def kwargsrepr(self) -> str:
        return mask_kwargs(self._kwargs)

    def info(self, safe: bool = False) -> dict[str, Any]:
        info = super().info(safe=True)
        info["args"] = self.argsrepr
        info["kwargs"] = self.kwargsrepr
        return info
