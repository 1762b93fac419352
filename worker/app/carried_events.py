"""Task events for the writes a chain visit carries (worker/app/chain_visit.py).

A carried write has no message of its own, so the worker's consumer never reports it: the
visit sends the events Celery would have — `task-received`, `task-started` and
`task-succeeded` under the write's own task id, with masked arguments like every other event
(worker/app/masking.py) and `carried_by` naming the task whose visit applied it — so Flower
and `celery events` show every write. Sent once the write is applied (a write that must wait
for its turn goes as its own message and is reported by its own delivery), through one event
dispatcher opened on the first carried write, the visit's events published together when it
ends (each with the time it was made). Best effort: a failed send stops the visit's events,
never a write. Celery's task signals are not sent for carried writes (handlers expect the
running task's own request); what ours do is called directly instead.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from celery.utils.saferepr import saferepr

from worker.app import task_names
from worker.app.chain_visit import ChainedWrite
from worker.app.masking import mask_args, mask_kwargs

log = logging.getLogger(__name__)

# A visit's events are sent when it ends, or whenever this many wait (twenty writes' worth:
# a message of tens of kilobytes, not one of a long visit's whole story).
EVENTS_PER_MESSAGE = 60


class CarriedEvents:
    """The events of one visit's carried writes."""

    def __init__(self, app: Any, *, carried_by: str, root_id: str | None,
                 hostname: str | None, resultrepr_maxsize: int = 1024) -> None:
        self.app = app
        self.carried_by = carried_by
        self.root_id = root_id
        self.hostname = hostname
        self.resultrepr_maxsize = resultrepr_maxsize
        self.enabled = bool(app.conf.worker_send_task_events)
        self._stack = contextlib.ExitStack()
        self._dispatcher: Any = None

    def carried(self, write: ChainedWrite, *, parent_id: str, result: dict[str, Any],
                runtime_s: float) -> None:
        if not self.enabled:
            return
        try:
            if self._dispatcher is None:
                self._dispatcher = self._open_dispatcher()
            send = self._dispatcher.send
            send("task-received", uuid=write.task_id, name=task_names.WRITE,
                 args=mask_args(write.args), kwargs=mask_kwargs({}), root_id=self.root_id,
                 parent_id=parent_id, retries=0, eta=None, expires=None,
                 carried_by=self.carried_by)
            send("task-started", uuid=write.task_id, carried_by=self.carried_by)
            send("task-succeeded", uuid=write.task_id,
                 result=saferepr(result, self.resultrepr_maxsize), runtime=runtime_s,
                 carried_by=self.carried_by)
        except Exception:
            self.enabled = False
            log.warning("could not send the events of carried write %s", write.task_id,
                        exc_info=True)

    def _open_dispatcher(self) -> Any:
        """Celery's default dispatcher, its task events buffered as the worker's own are: the
        visit's events go out together when it ends (one PUBLISH, or one per
        `buffer_limit` events), which event receivers (Flower, `celery events`) read as the
        list it is. Each event keeps the time it was made."""
        producer = self._stack.enter_context(
            self.app.amqp.producer_pool.acquire(block=True))
        return self._stack.enter_context(self.app.events.Dispatcher(
            producer.connection, self.hostname, True, producer.channel,
            buffer_while_offline=False, buffer_group=["task"],
            buffer_limit=EVENTS_PER_MESSAGE))

    def close(self) -> None:
        """Publish what is buffered, then give the producer back."""
        try:
            if self._dispatcher is not None and self.enabled:
                self._dispatcher.flush(errors=False)
        except Exception:
            log.warning("could not send the events of the writes carried by %s",
                        self.carried_by, exc_info=True)
        try:
            self._stack.close()
        except Exception:
            log.debug("closing the event dispatcher failed", exc_info=True)
