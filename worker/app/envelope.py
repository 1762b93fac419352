"""What a message on a queue list must carry, and what becomes of one that does not.

Kombu's Redis transport pops a message off its list (BRPOP) and then reads its envelope:
`properties.delivery_tag`, `properties.delivery_info.exchange` / `.routing_key`,
`properties.body_encoding`, the headers. A message written by a client that left one out
raised there (`KeyError('delivery_tag')`), in the worker's main process, after the message
had left the list and before it was recorded as unacknowledged: Celery logged "Connection to
broker lost", reconnected, and the message was gone — in no queue, not unacked, no answer.

`screen_envelope` reads the envelope first (worker/app/broker.py calls it for every message
taken from a list; a whole envelope costs a few type checks):

- whole: delivered as it is;
- broken, but its headers name a `memory.*` task and its id: `Refused` — delivered with a
  repaired envelope (a fresh delivery tag, the delivery info of the queue it was taken from)
  and its arguments replaced by a refusal (worker/app/poison.py, `REFUSED`), so its task
  answers under its id — a write `rejected-invalid` in its run's order when its run and seq
  can be read from the body — and records the dead letter with the reason and the message;
- nothing to answer (no headers, no task id or name, another app's task): `Unusable` — the
  caller keeps it in `dead_letters` and drops it.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from worker.app.poison import MAX_KEPT_BODY, refused_arguments, too_deep

JSON = "application/json"
BODY_ENCODINGS = (None, "base64", "utf-8")
MAX_TASK_ID = 255
UNREADABLE = object()  # a body that is not JSON text


@dataclass(frozen=True)
class Refused:
    """Deliver `envelope` instead: its task answers the refusal."""

    envelope: dict[str, Any]
    reason: str
    task_id: str
    task_name: str


@dataclass(frozen=True)
class Unusable:
    """Nothing to deliver or answer: keep it as a dead letter."""

    reason: str
    task_id: str | None = None
    task_name: str | None = None


def screen_envelope(raw: Any, binding: Callable[[], tuple[str, str]]
                    ) -> Refused | Unusable | None:
    """None when `raw` (a message as decoded off a queue list) can be delivered as it is;
    else what to do with it. `binding()`: the exchange and routing key of its queue, asked
    only for a message to repair (a round trip to the broker)."""
    identity = task_identity(raw)
    if isinstance(identity, Unusable):
        return identity
    defect = envelope_defect(raw)
    if defect is None:
        return None
    task_id, task_name = identity
    reason = f"the message envelope is malformed: {defect}"
    if not task_name.startswith("memory."):
        return Unusable(f"{reason} (not a memory task: no answer is sent)", task_id, task_name)
    return Refused(repaired_envelope(raw, reason, task_id, task_name, binding()), reason,
                   task_id, task_name)


def raw_text(raw: Any) -> str | None:
    """The message as taken off the list, for an operator (re-serialized)."""
    try:
        return json.dumps(raw, ensure_ascii=False)[:MAX_KEPT_BODY]
    except (TypeError, ValueError, RecursionError):
        return None


def task_identity(raw: Any) -> tuple[str, str] | Unusable:
    """The task id and name from the protocol-2 headers: without them there is no one to
    answer."""
    if not isinstance(raw, dict):
        return Unusable(f"the message is not a JSON object ({type(raw).__name__})")
    headers = raw.get("headers")
    if not isinstance(headers, dict):
        return Unusable(f"the message envelope is malformed: headers {_fault(headers, 'an object')}"
                        "; without a task id and name it cannot be answered")
    task_id, task_name = headers.get("id"), headers.get("task")
    shown_id = task_id if isinstance(task_id, str) else None
    shown_name = task_name if isinstance(task_name, str) else None
    if not isinstance(task_id, str) or not 0 < len(task_id) <= MAX_TASK_ID:
        return Unusable("the message envelope is malformed: headers.id "
                        f"{_fault(task_id, 'a string of 1-255 characters')}; without a task "
                        "id it cannot be answered", None, shown_name)
    if not isinstance(task_name, str) or not task_name:
        return Unusable("the message envelope is malformed: headers.task "
                        f"{_fault(task_name, 'a task name')}", shown_id, shown_name)
    return task_id, task_name


def _fault(value: Any, expected: str) -> str:
    return "is missing" if value is None else f"is not {expected}"


# --- the envelope's fields, one check each: the first fault found is the reason --------------

def _properties(raw: dict[str, Any]) -> str | None:
    properties = raw.get("properties")
    return None if isinstance(properties, dict) else f"properties {_fault(properties, 'an object')}"


def _delivery_tag(raw: dict[str, Any]) -> str | None:
    tag = raw["properties"].get("delivery_tag")
    if isinstance(tag, str) and tag:
        return None
    return f"properties.delivery_tag {_fault(tag, 'a non-empty string')}"


def _delivery_info(raw: dict[str, Any]) -> str | None:
    info = raw["properties"].get("delivery_info")
    if not isinstance(info, dict):
        return f"properties.delivery_info {_fault(info, 'an object')}"
    for key in ("exchange", "routing_key"):
        if not isinstance(info.get(key), str):
            return f"properties.delivery_info.{key} {_fault(info.get(key), 'a string')}"
    return None


def _body_encoding(raw: dict[str, Any]) -> str | None:
    encoding = raw["properties"].get("body_encoding")
    if encoding in BODY_ENCODINGS:
        return None
    return f"properties.body_encoding {str(encoding)[:40]!r} is unknown (use base64)"


def _content(raw: dict[str, Any]) -> str | None:
    content_type, encoding = raw.get("content-type"), raw.get("content-encoding")
    if content_type != JSON:
        return f"content-type {_fault(content_type, JSON)}"
    if not isinstance(encoding, str) or encoding.lower() != "utf-8":
        return f"content-encoding {_fault(encoding, 'utf-8')}"
    return None


def _body(raw: dict[str, Any]) -> str | None:
    body = raw.get("body")
    if not isinstance(body, str) or not body:
        return f"body {_fault(body, 'a non-empty string')}"
    if raw["properties"].get("body_encoding") == "base64" and _base64(body) is None:
        return "body is not base64 although properties.body_encoding says so"
    return None


def _body_shape(raw: dict[str, Any]) -> str | None:
    """Celery unpacks the body into (args, kwargs, embed) in the main process, and anything
    else raised there and ended the worker — then the next, as the message came back. A body
    that is not JSON is left to Celery, which keeps it as a dead letter (poison.py)."""
    body = raw["body"]
    text = _base64(body) if raw["properties"].get("body_encoding") == "base64" else body
    decoded = _json_body(text)
    if decoded is UNREADABLE or (isinstance(decoded, list) and len(decoded) == 3
                           and isinstance(decoded[0], list) and isinstance(decoded[1], dict)
                           and (decoded[2] is None or isinstance(decoded[2], dict))):
        return None
    return "body is not [args, kwargs, embed] (a list, an object and an object or null)"


def _headers(raw: dict[str, Any]) -> str | None:
    """The headers Celery reads before the task runs, where a wrong type raises."""
    headers = raw["headers"]
    retries, limits = headers.get("retries"), headers.get("timelimit")
    if retries is not None and (not isinstance(retries, int) or isinstance(retries, bool)
                                or retries < 0):
        return "headers.retries is not a count"
    if limits is not None and not (isinstance(limits, list) and len(limits) == 2 and all(
            limit is None or (isinstance(limit, int | float) and not isinstance(limit, bool))
            for limit in limits)):
        return "headers.timelimit is not [hard, soft] seconds"
    for key in ("shadow", "root_id", "parent_id", "group"):
        if headers.get(key) is not None and not isinstance(headers[key], str):
            return f"headers.{key} is not a string"
    for key in ("eta", "expires"):
        if headers.get(key) is not None and _iso_time(headers[key]) is None:
            return f"headers.{key} is not an ISO 8601 time"
    return None


_CHECKS: tuple[Callable[[dict[str, Any]], str | None], ...] = (
    _properties, _delivery_tag, _delivery_info, _body_encoding, _content, _body, _body_shape,
    _headers,
)


def envelope_defect(raw: dict[str, Any]) -> str | None:
    """The first field of the envelope that breaks the wire contract, or None."""
    for check in _CHECKS:
        defect = check(raw)
        if defect is not None:
            return defect
    return None


def _base64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text)  # as kombu decodes it: not strict about the alphabet
    except (binascii.Error, ValueError):
        return None


def _iso_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


# --- the repaired envelope ------------------------------------------------------------------

def body_arguments(raw: dict[str, Any]) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """The task's (args, kwargs, embed) when the body can be read at all — a write's run and
    seq keep its refusal in its run's order —, else empty ones. A body whose encoding is
    not declared or unknown is tried as JSON text, then as base64."""
    body = raw.get("body")
    properties = _properties_of(raw)
    if not isinstance(body, str):
        return [], {}, {}
    declared_base64 = properties.get("body_encoding") == "base64"
    decoded = _json_body(_base64(body)) if declared_base64 else _json_body(body)
    if decoded is UNREADABLE and not declared_base64:
        decoded = _json_body(_base64(body))
    if isinstance(decoded, list) and len(decoded) == 3:
        args, kwargs, embed = decoded
    elif isinstance(decoded, dict):  # protocol 1's shape: read, never run as such
        args, kwargs, embed = decoded.get("args"), decoded.get("kwargs"), {}
    else:
        return [], {}, {}
    return (args if isinstance(args, list) else [], kwargs if isinstance(kwargs, dict) else {},
            embed if isinstance(embed, dict) and not too_deep(embed) else {})


def _json_body(text: str | bytes | None) -> Any:
    if text is None:
        return UNREADABLE
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested beyond the decoder
        return UNREADABLE


def repaired_envelope(raw: dict[str, Any], reason: str, task_id: str, task_name: str,
                      binding: tuple[str, str]) -> dict[str, Any]:
    """A whole protocol-2 envelope for the same task id, its arguments replaced by the
    refusal (which carries the message as received, for the dead letter)."""
    args, kwargs, embed = body_arguments(raw)
    refused_args, refused_kwargs = refused_arguments(
        args, kwargs, {"reason": reason, "body": raw_text(raw)})
    body = json.dumps([refused_args, refused_kwargs, embed])
    headers = raw["headers"]
    retries = headers.get("retries")
    properties = _properties_of(raw)
    exchange, routing_key = binding
    return {
        "body": base64.b64encode(body.encode("utf-8")).decode("ascii"),
        "content-type": JSON,
        "content-encoding": "utf-8",
        "headers": {
            "lang": "py", "task": task_name, "id": task_id,
            "root_id": _text_or(headers.get("root_id"), task_id),
            "parent_id": _text_or(headers.get("parent_id"), None),
            "group": _text_or(headers.get("group"), None),
            "retries": retries if isinstance(retries, int) and not isinstance(retries, bool)
            and retries >= 0 else 0,
            "argsrepr": "", "kwargsrepr": "", "origin": _text_or(headers.get("origin"), None),
            "ignore_result": False, "eta": None, "expires": None,
            "timelimit": [None, None], "shadow": None,
        },
        "properties": {
            "delivery_tag": str(uuid.uuid4()),
            "delivery_info": {"exchange": exchange, "routing_key": routing_key},
            "body_encoding": "base64",
            "priority": 0,
            "correlation_id": task_id,
            "reply_to": _text_or(properties.get("reply_to"), None),
        },
    }


def _properties_of(raw: dict[str, Any]) -> dict[str, Any]:
    properties = raw.get("properties")
    return properties if isinstance(properties, dict) else {}


def _text_or(value: Any, default: str | None) -> str | None:
    return value if isinstance(value, str) else default
