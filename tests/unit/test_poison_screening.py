"""The poison screening's pure parts, without a worker: depth, refusals, a deep chain step."""

from __future__ import annotations

from tests.helpers import nested
from worker.app.masking import mask_args
from worker.app.poison import (
    MAX_PAYLOAD_DEPTH,
    REFUSED,
    _refuse_deep_chain,
    nesting_depth,
    refused_arguments,
    too_deep,
)


def test_nesting_depth_counts_containers_and_stops_past_the_limit():
    assert nesting_depth("x") == 0
    assert nesting_depth({"a": [1, 2]}) == 2
    assert nesting_depth(nested(10)) == 10
    assert nesting_depth(nested(100_000)) == MAX_PAYLOAD_DEPTH + 1  # stops early, no recursion
    assert not too_deep(nested(MAX_PAYLOAD_DEPTH)) and too_deep(nested(MAX_PAYLOAD_DEPTH + 1))


def test_a_refusal_keeps_the_shallow_arguments_and_drops_the_deep_ones():
    run = {"run_id": "r", "agent_id": "A"}
    args, kwargs = refused_arguments([run, {"note": nested(500)}, 3], {},
                                     {"reason": "too deep"})
    assert args == [run, None, 3]
    assert kwargs == {REFUSED: {"reason": "too deep"}}


def test_only_the_deep_step_of_a_chain_is_refused():
    shallow = {"task": "memory.write", "args": [{"run_id": "r"}, {"note": "ok"}, 2],
               "kwargs": {}}
    deep = {"task": "memory.write", "args": [{"run_id": "r"}, {"note": nested(500)}, 3],
            "kwargs": {}}
    screened = _refuse_deep_chain({"chain": [deep, shallow]})
    later, following = screened["chain"]
    assert following == shallow
    assert later["args"] == [{"run_id": "r"}, None, 3] and REFUSED in later["kwargs"]
    assert not too_deep(screened)


def test_argument_summaries_are_cut_at_a_fixed_depth():
    summary = mask_args([{"run_id": "r"}, nested(5000), 1])
    assert "nested deeper" in summary and len(summary) < 500
