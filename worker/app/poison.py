"""Messages that must not reach a pool process as they are, moved aside with an answer.

Three kinds, all decided in the worker's main process, where a crash takes every job down:

- nested deeper than any real payload (`MAX_PAYLOAD_DEPTH`): handing such a message to a
  pool process pickles it recursively, and ~480 levels exhaust the stack of the main
  process, which dies; the message is restored to the queue at exit and kills the next
  worker — a crash loop from one message;
- delivered more than `MAX_DELIVERIES` times (counted in Redis per task id and retry): its
  handling ended the worker each time, whatever the cause;
- undecodable bodies (`MemoryConsumer.on_decode_error`).

The first two reach their task with their arguments replaced by a refusal (`REFUSED`): a
write ends `rejected-invalid` in its run's order (its run and seq are kept when they are
usable), any other task answers `ok: false`. Every one is kept in `dead_letters` with its raw
body for an operator (`memory-worker dead-letters`).
"""

from __future__ import annotations

import logging
from typing import Any

from celery.worker.consumer import Consumer

log = logging.getLogger(__name__)

MAX_PAYLOAD_DEPTH = 32  # real payloads are under 10 levels deep, a chain's included
MAX_DELIVERIES = 5
MAX_KEPT_BODY = 65_536
REFUSED = "_refused"  # the keyword a refused message carries to its task
_DELIVERY_KEY = "memory:deliveries:{task_id}:{retries}"
_DELIVERY_TTL_S = 86_400
_DEEP_REASON = f"the payload is nested deeper than {MAX_PAYLOAD_DEPTH} levels"

_redis_client: Any = None


def nesting_depth(value: Any, limit: int = MAX_PAYLOAD_DEPTH) -> int:
    """How deeply lists and objects nest in `value`, counted up to `limit + 1`. Iterative:
    the point is to measure what recursion cannot."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def too_deep(value: Any) -> bool:
    return nesting_depth(value) > MAX_PAYLOAD_DEPTH


def _shallow_args(args: Any, kwargs: Any) -> tuple[list[Any], dict[str, Any]]:
    """The top-level arguments that are safe to pass on (the run and seq of a write, so its
    refusal still lands in its run's order); the others become None."""
    safe_args = [None if too_deep(a) else a for a in (args if isinstance(args, list | tuple)
                                                      else [])]
    safe_kwargs = {str(k): (None if too_deep(v) else v)
                   for k, v in (kwargs.items() if isinstance(kwargs, dict) else [])}
    return safe_args, safe_kwargs


def refused_arguments(args: Any, kwargs: Any, refusal: dict[str, Any]
                      ) -> tuple[list[Any], dict[str, Any]]:
    safe_args, safe_kwargs = _shallow_args(args, kwargs)
    safe_kwargs.pop(REFUSED, None)
    safe_kwargs[REFUSED] = refusal
    return safe_args, safe_kwargs


def _refuse_deep_chain(embed: Any) -> Any:
    """A chain whose later step is too deep: that step is refused when its turn comes; the
    steps before it run as sent."""
    if not isinstance(embed, dict):
        return {}
    chain = embed.get("chain")
    if isinstance(chain, list):
        safe_chain = []
        for signature in chain:
            if isinstance(signature, dict) and too_deep(signature):
                args, kwargs = refused_arguments(signature.get("args"), signature.get("kwargs"),
                                                 {"reason": _DEEP_REASON})
                signature = {k: v for k, v in signature.items() if not too_deep(v)}
                signature.update(args=args, kwargs=kwargs)
            safe_chain.append(signature)
        embed = {**embed, "chain": safe_chain}
    return {k: v for k, v in embed.items() if not too_deep(v)}


def _redis() -> Any:
    global _redis_client
    if _redis_client is None:
        import redis

        from worker.settings import get_settings

        url = get_settings().redis_url
        _redis_client = redis.Redis.from_url(url, socket_timeout=2) if url else False
    return _redis_client


def count_delivery(task_id: str, retries: int) -> int | None:
    """This delivery's number for the task id and retry, or None when Redis cannot say (then
    the message is handled as usual: the count bounds a loop, it is not a gate)."""
    client = _redis()
    if not client:
        return None
    key = _DELIVERY_KEY.format(task_id=task_id, retries=retries)
    try:
        with client.pipeline() as pipe:
            pipe.incr(key)
            pipe.expire(key, _DELIVERY_TTL_S)
            count, _ = pipe.execute()
        return int(count)
    except Exception:
        log.warning("could not count a delivery of %s", task_id, exc_info=True)
        return None


def _raw_body(message: Any) -> str | None:
    body = getattr(message, "body", None)
    if isinstance(body, bytes):
        return body[:MAX_KEPT_BODY].decode("utf-8", errors="replace")
    return None if body is None else str(body)[:MAX_KEPT_BODY]


def screen_request(request: Any) -> None:
    """Called for every memory.* request as the main process receives it (MaskedRequest)."""
    payload = request._Request__payload
    args, kwargs, embed = payload if isinstance(payload, tuple | list) and len(payload) == 3 \
        else (request._args, request._kwargs, {})
    retries = request._request_dict.get("retries") or 0
    deliveries = count_delivery(request.id, retries)
    reason = None
    if deliveries is not None and deliveries > MAX_DELIVERIES:
        reason = (f"delivered {deliveries} times; each delivery ended its worker before the "
                  "task finished")
    elif too_deep((args, kwargs)):
        reason = _DEEP_REASON
    if reason is None:
        if not too_deep(embed):
            return
        new_args, new_kwargs = list(args), dict(kwargs)
    else:
        log.error("message %s (%s) moved aside: %s", request.id, request.name, reason)
        refusal = {"reason": reason, "deliveries": deliveries,
                   "body": _raw_body(request._message)}
        new_args, new_kwargs = refused_arguments(args, kwargs, refusal)
    new_embed = _refuse_deep_chain(embed)
    request._args = request._request_dict["args"] = new_args
    request._kwargs = request._request_dict["kwargs"] = new_kwargs
    # What the pool process decodes: the screened arguments, already decoded.
    request._body = request._Request__payload = (new_args, new_kwargs, new_embed)
    request._content_type = request._content_encoding = None
    request._decoded = True


def take_refusal(unexpected: dict[str, Any], *, task_id: str | None, task_name: str
                 ) -> str | None:
    """The reason a message was refused (and its dead letter recorded), or None."""
    refusal = unexpected.pop(REFUSED, None)
    if refusal is None:
        return None
    if not isinstance(refusal, dict) or not isinstance(refusal.get("reason"), str):
        return "the message carries a malformed refusal"
    record_dead_letter(task_id=task_id, task_name=task_name, reason=refusal["reason"],
                       deliveries=refusal.get("deliveries"), body=refusal.get("body"))
    return refusal["reason"]


def record_dead_letter(*, task_id: str | None, task_name: str | None, reason: str,
                       deliveries: Any = None, body: Any = None) -> None:
    from db.queries.dead_letters import insert_dead_letter
    from worker.runtime import get_runtime

    try:
        with get_runtime().db.transaction() as conn:
            insert_dead_letter(
                conn, task_id=task_id, task_name=task_name, reason=reason,
                deliveries=deliveries if isinstance(deliveries, int) else None,
                body=body[:MAX_KEPT_BODY] if isinstance(body, str) else None)
    except Exception:
        log.error("could not record the dead letter of %s", task_id, exc_info=True)


class MemoryConsumer(Consumer):
    """Celery's consumer, keeping what it cannot handle instead of only logging it: Celery
    logs the body (memory text) and drops the message — on Redis it is gone, on RabbitMQ a
    rejection would dead-letter it without a word of why. Each one is kept in `dead_letters`
    and acknowledged; a task id that can be answered is."""

    def on_unknown_message(self, body: Any, message: Any) -> None:
        log.error("a message without task headers moved aside (not Celery protocol 2)")
        record_dead_letter(task_id=None, task_name=None,
                           reason="not a task message: it has no `id` and `task` headers "
                                  "(Celery protocol 2)", body=_raw_body(message))
        message.ack()

    def on_unknown_task(self, body: Any, message: Any, exc: Exception) -> None:
        from celery.exceptions import NotRegistered

        headers = getattr(message, "headers", None) or {}
        task_id, name = headers.get("id"), headers.get("task")
        log.error("message %s names a task this worker does not have (%s); moved aside",
                  task_id, name)
        record_dead_letter(task_id=task_id if isinstance(task_id, str) else None,
                           task_name=name if isinstance(name, str) else None,
                           reason=f"names a task this worker does not have ({name!r})",
                           body=_raw_body(message))
        if isinstance(task_id, str) and task_id:
            try:  # the client's .get() raises NotRegistered instead of waiting forever
                self.app.backend.mark_as_failure(task_id, NotRegistered(name))
            except Exception:
                log.warning("could not answer %s", task_id, exc_info=True)
        message.ack()

    def on_invalid_task(self, body: Any, message: Any, exc: Exception) -> None:
        headers = getattr(message, "headers", None) or {}
        task_id, name = headers.get("id"), headers.get("task")
        log.error("invalid task message %s (%s) moved aside: %s", task_id, name,
                  type(exc).__name__)
        record_dead_letter(task_id=task_id if isinstance(task_id, str) else None,
                           task_name=name if isinstance(name, str) else None,
                           reason=f"the task message is invalid ({type(exc).__name__})",
                           body=_raw_body(message))
        message.ack()

    def on_decode_error(self, message: Any, exc: Exception) -> None:
        headers = getattr(message, "headers", None) or {}
        task_id, task_name = headers.get("id"), headers.get("task")
        log.critical("undecodable message %s (%s) moved aside: %s", task_id, task_name,
                     type(exc).__name__)
        record_dead_letter(task_id=task_id, task_name=task_name,
                           reason=f"the message body cannot be decoded ({type(exc).__name__})",
                           body=_raw_body(message))
        message.ack()
