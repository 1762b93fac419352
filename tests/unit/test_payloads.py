"""Wire payload parsing, without services: the id rule, non-finite numbers, prev_seq."""

from __future__ import annotations

import math

import pytest

from worker.writes.payloads import (
    Invalid,
    non_finite_number,
    parse_id_value,
    parse_prev_seq,
    parse_request_scope,
    parse_run,
)


@pytest.mark.parametrize("value,expected", [("u-1", "u-1"), ("  u-1 ", "u-1"), (1001, "1001"),
                                            (0, "0"), (-7, "-7")])
def test_an_id_is_a_string_or_an_integer_meaning_its_decimal_string(value, expected):
    assert parse_id_value(value, "run.user_id", required=True) == expected


@pytest.mark.parametrize("value", [7.0, True, False, ["7"], {"id": 7}])
def test_other_id_types_are_refused_with_the_field_named(value):
    parsed = parse_id_value(value, "request.user_id", required=False)
    assert isinstance(parsed, Invalid)
    assert parsed.reason == ("request.user_id must be a string or an integer, not "
                             f"{type(value).__name__}")


def test_missing_empty_and_oversized_ids():
    assert parse_id_value(None, "x", required=False) is None
    assert isinstance(parse_id_value(None, "x", required=True), Invalid)
    assert isinstance(parse_id_value("  ", "x", required=True), Invalid)
    assert isinstance(parse_id_value("x" * 201, "x", required=True), Invalid)
    assert isinstance(parse_id_value("a\x00b", "x", required=True), Invalid)


def test_runs_and_requests_read_ids_alike():
    run = parse_run({"run_id": 42, "agent_id": 7, "user_id": 1001})
    request = parse_request_scope({"agent_id": 7, "user_id": 1001})
    assert not isinstance(run, Invalid) and not isinstance(request, Invalid)
    assert (run.run_id, run.agent_id, run.user_id) == ("42", "7", "1001")
    assert (request.agent_id, request.user_id) == (run.agent_id, run.user_id)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_found_at_any_depth(value):
    assert non_finite_number({"a": [1, {"b": (2, value)}]})
    assert not non_finite_number({"a": [1, {"b": (2, 3.5, "nan")}]})
    deep: object = value
    for _ in range(5000):  # iterative: no recursion limit
        deep = [deep]
    assert non_finite_number(deep)


def test_a_non_finite_secondary_scope_is_refused():
    parsed = parse_run({"run_id": "r", "agent_id": "A", "secondary_scopes": {"x": math.inf}})
    assert isinstance(parsed, Invalid) and "finite" in parsed.reason


def test_prev_seq_defaults_to_the_seq_before_and_must_be_below_it():
    assert parse_prev_seq(None, 10) == 9
    assert parse_prev_seq(0, 10) == 0
    assert parse_prev_seq(3, 10) == 3
    for bad in (10, 11, -1, 2.0, True, "3"):
        assert isinstance(parse_prev_seq(bad, 10), Invalid)
