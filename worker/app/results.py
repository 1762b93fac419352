"""Per-task result expiry. Celery has one `result_expires` for every task; a
`memory.context` result is the memory itself (note text), so it is cut to
`context_result_expires_s` right after the worker stores it (Celery sends `task_postrun`
after the result is stored). Its caller waits for it and reads it within seconds.

If the process dies between the two Redis calls, that one result keeps the general
`result_expires_s`.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import signals

from worker.app import task_names

log = logging.getLogger(__name__)

# Task name -> the setting that gives its result's expiry, in seconds.
# A forget request's result names the forgotten notes with their text. An export's result
# holds no text (the file's path, counts, the audit id), but its caller waits for it like a
# context's, and the path names where a subject's memory lies in clear: it goes as soon.
SHORT_LIVED_RESULTS = {task_names.CONTEXT: "context_result_expires_s",
                       task_names.FORGET_FACT: "context_result_expires_s",
                       task_names.EXPORT: "context_result_expires_s"}


@signals.task_postrun.connect
def _shorten_result_expiry(sender: Any = None, task_id: str | None = None,
                           **_: Any) -> None:
    setting = SHORT_LIVED_RESULTS.get(str(getattr(sender, "name", "")))
    if setting is None or not task_id or getattr(sender, "ignore_result", False):
        return
    from worker.settings import get_settings

    seconds = int(getattr(get_settings(), setting))
    backend = sender.backend
    try:
        # A no-op on backends without expiry (Celery's base class); Redis: EXPIRE.
        backend.expire(backend.get_key_for_task(task_id), seconds)
    except Exception:
        log.warning("could not shorten the result expiry of %s %s", sender.name, task_id,
                    exc_info=True)
