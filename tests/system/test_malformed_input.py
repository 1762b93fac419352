"""Malformed input gets a clear answer from every task, never an infrastructure error or a
raised exception; identifiers follow one rule on writes and reads alike (README, wire
contract): a string, or an integer meaning its decimal string; anything else is refused."""

from __future__ import annotations

import math

import pytest

from tests.helpers import notes, rows
from tests.system.conftest import send

RUN = {"run_id": "run-bad", "agent_id": "A", "user_id": "u-1"}
NOTE = {"note": "User prefers metric units.", "type": "Preference"}


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_number_in_a_run_is_rejected_invalid(services, system_worker, value):
    run = {**RUN, "secondary_scopes": {"region": value}}
    result = send("memory.write", run, NOTE, 1).get(timeout=60)
    assert result["disposition"] == "rejected-invalid", result
    assert "finite" in result["reason"]
    traced = rows(services.database_url, "SELECT disposition FROM trace_events "
                  "WHERE run_id = 'run-bad'")
    assert [t["disposition"] for t in traced] == ["rejected-invalid"]


def test_a_non_finite_number_anywhere_in_a_write_is_rejected_invalid(services, system_worker):
    result = send("memory.write", RUN, {**NOTE, "confidence": math.nan}, 1).get(timeout=60)
    assert result["disposition"] == "rejected-invalid", result


def test_a_non_finite_number_in_a_context_request_answers_not_ok(services, system_worker):
    reply = send("memory.context", {"agent_id": "A", "secondary_scopes": {"region": [math.inf]}}
                 ).get(timeout=60)
    assert reply["ok"] is False and "finite" in reply["error"]


@pytest.mark.parametrize("name,args", [
    ("memory.context", [{"agent_id": "A"}, "surplus"]),
    ("memory.agent.configure", ["A", {}, "surplus"]),
    ("memory.conversation.record", [{}, "surplus"]),
    ("memory.candidate.list", ["A", None, "candidate", 10, "surplus"]),
    ("memory.candidate.reject", ["c", "r", "me", "surplus"]),
    ("memory.manager.cycle", [False, False, "surplus"]),
])
def test_surplus_arguments_answer_not_ok(services, system_worker, name, args):
    reply = send(name, *args).get(timeout=120)
    assert reply["ok"] is False and "takes" in reply["error"], reply


def test_an_unknown_keyword_answers_not_ok(services, system_worker):
    reply = send("memory.context", {"agent_id": "A"}, bogus=1).get(timeout=60)
    assert reply["ok"] is False and "takes" in reply["error"]


def test_integer_ids_mean_their_decimal_string_on_writes_and_reads(services, system_worker):
    run = {"run_id": 42, "agent_id": 7, "user_id": 1001}
    written = send("memory.write", run, NOTE, 1).get(timeout=60)
    assert written["disposition"] == "written" and written["run_id"] == "42"
    [note] = notes(services.database_url, "agent_id = '7'")
    assert note["user_id"] == "1001"
    for request in ({"agent_id": 7, "user_id": 1001}, {"agent_id": "7", "user_id": "1001"}):
        reply = send("memory.context", request).get(timeout=60)
        assert reply["ok"], reply
        assert [n["id"] for n in reply["notes"]] == [str(note["id"])]
    configured = send("memory.agent.configure", 7, {"max_notes_to_inject": 3}).get(timeout=60)
    assert configured["ok"] and configured["agent_id"] == "7", configured
    listed = send("memory.candidate.list", 7, 42).get(timeout=60)
    assert listed["ok"], listed


@pytest.mark.parametrize("bad", [7.0, True, ["7"], {"id": 7}])
def test_other_id_types_are_refused_alike_on_writes_and_reads(services, system_worker, bad):
    written = send("memory.write", {**RUN, "user_id": bad}, NOTE, 1).get(timeout=60)
    assert written["disposition"] == "rejected-invalid"
    assert "run.user_id must be a string or an integer" in written["reason"]
    reply = send("memory.context", {"agent_id": "A", "user_id": bad}).get(timeout=60)
    assert reply == {"ok": False,
                     "error": "request.user_id must be a string or an integer, not "
                              f"{type(bad).__name__}"}
    configured = send("memory.agent.configure", bad, {}).get(timeout=60)
    assert configured["ok"] is False and "must be a string or an integer" in configured["error"]
