"""RabbitMQ as the broker (`BROKER_URL=amqp://…`): quorum queues, dead letters, delayed retries.

What RabbitMQ gives that kombu's Redis transport does not: a message taken by a consumer stays
in its queue, unacknowledged, until the consumer acknowledges it or its connection closes, so
no window exists in which a killed worker holds the only copy; quorum queues replicate every
message (on a cluster) and survive a broker restart; publisher confirms make a publish return
only once the broker has the message.

* Queues are quorum queues behind topic exchanges (Celery's native delayed delivery, which
  carries the sequence waits' retries, needs a topic or fanout exchange: quorum queues have no
  global QoS, so an ETA message would otherwise sit in a worker's memory).
* `x-delivery-limit`: a message delivered more often than `broker_delivery_limit` (each
  delivery ended its worker) is dead-lettered by the broker (at least once) into
  `memory.dead-letters`; `drain_dead_letters` moves each into the `dead_letters` table,
  answers it and clears its write record. The worker's own poison bound (5 deliveries,
  worker/app/poison.py) answers such a write in its run's order first; this is the backstop.
* Redis keeps the sequence numbers, the write records and the results.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from celery import bootsteps
from kombu import Exchange, Queue

log = logging.getLogger(__name__)

DEAD_LETTER_EXCHANGE = "memory.dead-letters"
DEAD_LETTER_QUEUE = "memory.dead-letters"
_MAX_KEPT_BODY = 65_536


def quorum_queue(name: str, delivery_limit: int) -> Queue:
    return Queue(name, Exchange(name, type="topic"), routing_key=name, queue_arguments={
        "x-queue-type": "quorum",
        "x-delivery-limit": delivery_limit,
        "x-dead-letter-exchange": DEAD_LETTER_EXCHANGE,
        # At-least-once dead-lettering: the broker keeps the message until the dead-letter
        # queue confirms it (it needs reject-publish overflow).
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",
    })


def dead_letter_queue() -> Queue:
    return Queue(DEAD_LETTER_QUEUE, Exchange(DEAD_LETTER_EXCHANGE, type="fanout"),
                 routing_key="#", queue_arguments={"x-queue-type": "quorum"})


def declare_dead_letters(connection: Any) -> None:
    """Declare the dead-letter exchange and queue (idempotent): without them the broker
    drops what it dead-letters."""
    with connection.channel() as channel:
        dead_letter_queue().bind(channel).declare()


class DeclareDeadLetters(bootsteps.StartStopStep):  # type: ignore[misc]
    """A consumer step: on RabbitMQ, declare the dead letters when the consumer connects."""

    requires = ("celery.worker.consumer.connection:Connection",)

    def include_if(self, c: Any) -> bool:
        return bool(c.app.connection_for_write().transport.driver_type == "amqp")

    def start(self, c: Any) -> None:
        try:
            declare_dead_letters(c.connection)
        except Exception:
            log.exception("could not declare the dead-letter queue; the redelivery pass "
                          "declares it again")


def rabbitmq_config(settings: Any) -> dict[str, Any]:
    """The Celery settings that differ on RabbitMQ (celery_config merges them)."""
    limit = settings.broker_delivery_limit
    return {
        "broker_url": settings.broker_url,
        "broker_transport_options": {
            "confirm_publish": True,
            "connect_timeout": settings.redis_connect_timeout_s,
        },
        "broker_native_delayed_delivery_queue_type": "quorum",
        "task_queues": (quorum_queue(settings.write_queue, limit),
                        quorum_queue(settings.manager_queue, limit)),
    }


def queue_length(connection: Any, name: str) -> int:
    """Messages ready in a queue (a passive declare: creates nothing)."""
    with connection.channel() as channel:
        return int(channel.queue_declare(queue=name, passive=True).message_count)


def drain_dead_letters(app: Any, db: Any, records: Any, *, limit: int = 500) -> int:
    """Move what the broker dead-lettered into `dead_letters`, answer each message and clear
    its write record (it ended its worker at every delivery; delivering it again from its
    record would only repeat that)."""
    from db.queries.dead_letters import insert_dead_letter

    moved = 0
    with app.connection_for_write() as connection:
        declare_dead_letters(connection)
        with connection.channel() as channel:
            while moved < limit:
                message = channel.basic_get(DEAD_LETTER_QUEUE, no_ack=False)
                if message is None:
                    break
                headers = dict(getattr(message, "headers", None) or {})
                if _death_reason(headers) == "expired":
                    # A beat tick nobody took before its `expires` (workers down): dropped,
                    # as on Redis, where Celery revokes it on receipt; nothing waits for it.
                    channel.basic_ack(message.delivery_tag)
                    continue
                body = _text(message.body)
                reason = _dead_letter_reason(headers)
                with db.transaction() as conn:
                    insert_dead_letter(conn, task_id=_str(headers.get("id")),
                                       task_name=_str(headers.get("task")), reason=reason,
                                       deliveries=_deliveries(headers),
                                       body=body[:_MAX_KEPT_BODY])
                _answer_and_clear(app, records, headers, body, reason)
                channel.basic_ack(message.delivery_tag)
                moved += 1
    if moved:
        log.error("%d message(s) the broker dead-lettered moved to dead_letters", moved)
    return moved


def _text(body: Any) -> str:
    return body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _deliveries(headers: dict[str, Any]) -> int | None:
    count = headers.get("x-delivery-count")
    return count if isinstance(count, int) else None


def _death_reason(headers: dict[str, Any]) -> str | None:
    why = headers.get("x-first-death-reason")
    return why.decode() if isinstance(why, bytes) else why if isinstance(why, str) else None


def _dead_letter_reason(headers: dict[str, Any]) -> str:
    why = _death_reason(headers)
    if why == "delivery_limit":
        return ("delivered more often than the broker's delivery limit; each delivery ended "
                "its worker before the task finished")
    return f"dead-lettered by the broker ({why or 'no reason given'})"


def _answer_and_clear(app: Any, records: Any, headers: dict[str, Any], body: str,
                      reason: str) -> None:
    """Answer the client waiting on the task id; a write's record goes too."""
    from celery import states

    task_id = _str(headers.get("id"))
    run_id, seq = _run_and_seq(body)
    if records is not None and run_id is not None and seq is not None:
        records.clear(run_id, seq)
    if task_id is None:
        return
    answer: dict[str, Any] = {"ok": False, "error": f"not handled: {reason}"}
    if headers.get("task") in ("memory.write", "memory.forget.fact"):
        answer = {"disposition": "error", "note_id": None, "run_id": run_id, "seq": seq,
                  "reason": f"Not saved: {reason}; the message is kept in dead_letters.",
                  "final_scope": None, "duration_ms": 0.0, "replayed": False,
                  "reason_code": None, "candidate_id": None}
    try:
        app.backend.store_result(task_id, answer, states.SUCCESS)
    except Exception:
        log.warning("could not store the answer of %s", task_id, exc_info=True)


def _run_and_seq(body: str) -> tuple[str | None, int | None]:
    try:
        args = json.loads(body)[0]
        run, seq = args[0], args[2]
    except (ValueError, LookupError, TypeError):
        return None, None
    run_id = run.get("run_id") if isinstance(run, dict) else None
    if isinstance(run_id, int) and not isinstance(run_id, bool):
        run_id = str(run_id)
    ok_seq = isinstance(seq, int) and not isinstance(seq, bool)
    return (run_id if isinstance(run_id, str) else None), (seq if ok_seq else None)
