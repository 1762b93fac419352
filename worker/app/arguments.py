"""What every task does with arguments it does not take."""

from __future__ import annotations

from typing import Any

from worker.app.poison import take_refusal


def surplus_arguments(task: str, signature: str, extra: tuple[Any, ...],
                       unexpected: dict[str, Any]) -> dict[str, Any] | None:
    """A sender passing more than a task takes gets `ok: false`, never a TypeError; so does
    a message the worker moved aside (worker/app/poison.py)."""
    from celery import current_task

    refused = take_refusal(unexpected, task_id=current_task.request.id, task_name=task)
    if refused:
        return {"ok": False, "error": f"refused: {refused}"}
    if not extra and not unexpected:
        return None
    return {"ok": False, "error": f"{task} takes {signature}"}
