"""The envelope screening's pure parts, without a broker: which field breaks the wire
contract, what is answered refused and what is only kept, and that a repaired envelope is
whole and carries the write's run and seq (so its refusal lands in its run's order)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.helpers import nested
from worker.app.envelope import (
    Refused,
    Unusable,
    body_arguments,
    envelope_defect,
    screen_envelope,
)
from worker.app.poison import REFUSED

BINDING = ("memory.writes", "memory.writes")
RUN = {"run_id": "r", "agent_id": "A"}


def _envelope(args: list[Any], task: str = "memory.write") -> dict[str, Any]:
    body = json.dumps([args, {}, {"chain": None}])
    return {
        "body": base64.b64encode(body.encode()).decode(),
        "content-encoding": "utf-8", "content-type": "application/json",
        "headers": {"task": task, "id": "t-1", "retries": 0, "timelimit": [None, None]},
        "properties": {"delivery_tag": "tag-1", "body_encoding": "base64",
                       "delivery_info": {"exchange": "memory.writes",
                                         "routing_key": "memory.writes"}},
    }


def _refusal(verdict: Any) -> tuple[list[Any], dict[str, Any]]:
    assert isinstance(verdict, Refused), verdict
    args, kwargs, _ = json.loads(base64.b64decode(verdict.envelope["body"]))
    return args, kwargs


def test_a_whole_envelope_is_delivered_as_it_is():
    assert screen_envelope(_envelope([RUN, {"note": "x"}, 1]), lambda: BINDING) is None


def test_a_whole_envelope_never_asks_for_its_binding():
    """The binding is a round trip to the broker: asked only for a message to repair."""
    def unasked() -> tuple[str, str]:
        raise AssertionError("the binding was asked for a message delivered as it is")

    assert screen_envelope(_envelope([RUN, {"note": "x"}, 1]), unasked) is None


@pytest.mark.parametrize("breaks,named", [
    (lambda e: e["properties"].pop("delivery_tag"), "properties.delivery_tag is missing"),
    (lambda e: e["properties"].update(delivery_tag=7), "properties.delivery_tag is not"),
    (lambda e: e["properties"]["delivery_info"].pop("exchange"),
     "properties.delivery_info.exchange is missing"),
    (lambda e: e["properties"].update(delivery_info=None), "properties.delivery_info is"),
    (lambda e: e.update(properties=[]), "properties is not an object"),
    (lambda e: e["properties"].update(body_encoding="rot13"), "'rot13' is unknown"),
    (lambda e: e.update(body="abc"), "body is not base64"),
    (lambda e: e.pop("content-type"), "content-type is missing"),
    (lambda e: e.update({"content-encoding": "latin-1"}), "content-encoding is not utf-8"),
    (lambda e: e["headers"].update(retries="2"), "headers.retries"),
    (lambda e: e["headers"].update(timelimit=5), "headers.timelimit"),
    (lambda e: e["headers"].update(eta="tomorrow"), "headers.eta"),
    (lambda e: e.update(body=base64.b64encode(b'{"a": 1}').decode()), "[args, kwargs, embed]"),
])
def test_each_broken_field_is_named_in_the_refusal(breaks, named):
    envelope = _envelope([RUN, {"note": "x"}, 3, 2])
    breaks(envelope)
    verdict = screen_envelope(envelope, lambda: BINDING)
    assert isinstance(verdict, Refused) and named in verdict.reason, verdict
    assert verdict.task_id == "t-1" and verdict.task_name == "memory.write"


def test_the_repaired_envelope_is_whole_and_keeps_the_run_and_seq():
    envelope = _envelope([RUN, {"note": "x"}, 3, 2])
    del envelope["properties"]["delivery_tag"]
    verdict = screen_envelope(envelope, lambda: ("ex", "rk"))
    assert screen_envelope(verdict.envelope, lambda: BINDING) is None  # type: ignore[union-attr]
    properties = verdict.envelope["properties"]  # type: ignore[union-attr]
    assert properties["delivery_info"] == {"exchange": "ex", "routing_key": "rk"}
    assert properties["delivery_tag"] and verdict.envelope["headers"]["id"] == "t-1"  # type: ignore[union-attr]
    args, kwargs = _refusal(verdict)
    assert args == [RUN, {"note": "x"}, 3, 2]
    assert "delivery_tag" in kwargs[REFUSED]["reason"]
    assert json.loads(kwargs[REFUSED]["body"])["headers"]["id"] == "t-1"


def test_a_plain_text_body_with_an_unknown_encoding_is_still_read():
    envelope = _envelope([])
    envelope["body"] = json.dumps([[RUN, {"note": "x"}, 1], {}, None])
    envelope["properties"]["body_encoding"] = "utf8"
    assert _refusal(screen_envelope(envelope, lambda: BINDING))[0] == [RUN, {"note": "x"}, 1]


def test_a_body_that_cannot_be_read_is_refused_without_arguments():
    envelope = _envelope([])
    envelope["body"] = "not base64, not json"
    envelope["properties"]["body_encoding"] = "gzip"
    args, kwargs = _refusal(screen_envelope(envelope, lambda: BINDING))
    assert args == [] and set(kwargs) == {REFUSED}


def test_deep_parts_of_a_readable_body_are_not_passed_on():
    envelope = _envelope([RUN, nested(100), 1])
    del envelope["properties"]["delivery_tag"]
    args, _ = _refusal(screen_envelope(envelope, lambda: BINDING))
    assert args == [RUN, None, 1]


@pytest.mark.parametrize("raw,reason", [
    ([1, 2], "not a JSON object"),
    ({"properties": {}}, "headers is missing"),
    ({"headers": {"task": "memory.write"}}, "headers.id is missing"),
    ({"headers": {"id": "t-1"}}, "headers.task is missing"),
    ({"headers": {"id": "t-1", "task": 5}}, "headers.task is not"),
])
def test_without_a_task_id_and_name_nothing_can_be_answered(raw, reason):
    verdict = screen_envelope(raw, lambda: BINDING)
    assert isinstance(verdict, Unusable) and reason in verdict.reason


def test_another_apps_task_with_a_broken_envelope_is_only_kept():
    envelope = _envelope([], task="celery.accumulate")
    del envelope["properties"]["delivery_tag"]
    verdict = screen_envelope(envelope, lambda: BINDING)
    assert isinstance(verdict, Unusable) and verdict.task_name == "celery.accumulate"


def test_a_body_in_protocol_1_shape_gives_its_arguments():
    envelope = _envelope([])
    envelope["body"] = base64.b64encode(json.dumps(
        {"args": [RUN, {}, 1], "kwargs": {"prev_seq": 0}}).encode()).decode()
    assert body_arguments(envelope) == ([RUN, {}, 1], {"prev_seq": 0}, {})


def test_a_whole_envelope_has_no_defect_even_with_a_null_embed():
    envelope = _envelope([])
    envelope["body"] = base64.b64encode(b"[[], {}, null]").decode()
    assert envelope_defect(envelope) is None
