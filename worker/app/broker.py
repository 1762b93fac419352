"""Kombu's Redis transport, made to survive losing Redis while messages are unacknowledged.

When the connection drops, kombu closes the channel and tries to put the unacknowledged
messages back — through a client built from connection details it has already cleared, so
it raises `AttributeError` and the worker's main process dies ("Unrecoverable error ...
'NoneType' object has no attribute 'hostname'"). A lost broker is exactly when a worker must
stay up and reconnect. The messages are not lost by skipping the restore: they stay in
Redis's unacked index and come back through the visibility timeout (or were lost with
Redis's data, which no restore could help), and a write delivered again is replayed.

It also reads every message's envelope before kombu does (worker/app/envelope.py): a message
a client in another language wrote without a field kombu needs used to raise in the main
process after leaving its list — logged as a lost connection, the message gone without an
answer. Now it is delivered repaired and refused, or kept in `dead_letters`; so is a message
that is not JSON at all.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from kombu.transport import redis as kombu_redis

from worker.app.envelope import Refused, raw_text, screen_envelope
from worker.app.poison import MAX_KEPT_BODY, record_dead_letter

log = logging.getLogger(__name__)


class QoS(kombu_redis.QoS):  # type: ignore[misc]
    def restore_unacked(self, client: Any = None) -> Any:
        try:
            return super().restore_unacked(client)
        except AttributeError:
            log.warning("broker connection gone: %d unacknowledged message(s) come back "
                        "through the visibility timeout", len(self._delivered))
            self._delivered.clear()
            return []


    # Acknowledging a message on a channel that died with its connection fails the same way.
    def ack(self, delivery_tag: Any) -> None:
        try:
            super().ack(delivery_tag)
        except AttributeError:
            log.warning("broker connection gone: an acknowledgement is lost; the message "
                        "comes back through the visibility timeout and is replayed")

    def reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        try:
            super().reject(delivery_tag, requeue=requeue)
        except AttributeError:
            log.warning("broker connection gone: a rejection is lost")


class Channel(kombu_redis.Channel):  # type: ignore[misc]
    QoS = QoS
    # Set once a message taken off a list reaches its queue's callback: an error before
    # that is the message's own (not JSON), an error after it is someone else's to handle.
    _handed_over = False

    def _create_client(self, asynchronous: bool = False) -> Any:
        """kombu builds a new Redis client for every publish, acknowledgement and event
        (~0.2 ms each); one over the channel's pool serves them all: a client holds no
        connection of its own, each command takes one from the pool."""
        if asynchronous:
            return super()._create_client(asynchronous=True)
        client = self.__dict__.get("_sync_client")
        if client is None or client.connection_pool is not self.pool:  # a new pool: reconnected
            client = self._sync_client = super()._create_client()
        return client

    def basic_consume(self, queue: str, *args: Any, **kwargs: Any) -> Any:
        consumed = super().basic_consume(queue, *args, **kwargs)
        deliver = self.connection._callbacks[queue]
        self.connection._callbacks[queue] = partial(self._deliver_screened, deliver, queue)
        return consumed

    def _deliver_screened(self, deliver: Callable[[Any], Any], queue: str, raw: Any) -> Any:
        """Hand a message to kombu only with an envelope it can read (worker/app/envelope.py).

        A message kept as a dead letter here was never recorded as unacknowledged, and
        BRPOP already took it off its list: nothing is left to acknowledge."""
        self._handed_over = True
        # Only queues of task messages (the transport option `screened_queues`, set by
        # celery_config): control broadcasts and replies (`celery inspect`) carry no task
        # headers and are none of the screening's business.
        if queue not in self.connection.client.transport_options.get("screened_queues", ()):
            return deliver(raw)
        verdict = screen_envelope(raw, partial(self._binding_of, queue))
        if verdict is None:
            return deliver(raw)
        if isinstance(verdict, Refused):
            log.error("message %s (%s) from %s delivered refused: %s", verdict.task_id,
                      verdict.task_name, queue, verdict.reason)
            return deliver(verdict.envelope)
        log.error("message %s (%s) from %s moved aside: %s", verdict.task_id,
                  verdict.task_name, queue, verdict.reason)
        record_dead_letter(task_id=verdict.task_id, task_name=verdict.task_name,
                           reason=verdict.reason, body=raw_text(raw))
        return None

    def _binding_of(self, queue: str) -> tuple[str, str]:
        """The exchange and routing key a message of `queue` is restored through."""
        try:
            for bound_queue, exchange, routing_key in self.list_bindings():
                if bound_queue == queue:
                    return exchange, routing_key
        except Exception:  # the fallback is exact for this app's queues (celery_config)
            log.warning("could not read the bindings of %s", queue, exc_info=True)
        return queue, queue

    def _brpop_read(self, **options: Any) -> Any:
        self._handed_over = False
        try:
            return super()._brpop_read(**options)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            if self._handed_over:
                raise
            _keep_undecodable(exc)
            return True


def _keep_undecodable(exc: ValueError | RecursionError) -> None:
    """A list item that is not JSON text: kept with its text (what the decoder saw), since it
    names no task to answer."""
    text: str | None = None
    if isinstance(exc, json.JSONDecodeError):
        text = exc.doc[:MAX_KEPT_BODY]
    elif isinstance(exc, UnicodeDecodeError):
        text = exc.object[:MAX_KEPT_BODY].decode("utf-8", errors="replace")
    reason = f"the message taken off the queue list is not JSON ({type(exc).__name__})"
    log.error("message moved aside: %s", reason)
    record_dead_letter(task_id=None, task_name=None, reason=reason, body=text)


class Transport(kombu_redis.Transport):  # type: ignore[misc]
    Channel = Channel
