"""Which chain steps a visit applies itself (worker/app/chain_visit.py): only a memory.write
exactly as clients send it; anything else goes as its own message."""

from __future__ import annotations

from typing import Any

import pytest

from worker.app.chain_visit import chained_write

RUN = {"run_id": "r-1", "agent_id": "A"}
WRITE = {"note": "User likes tea.", "type": "Preference"}


def _step(**changes: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"task": "memory.write", "args": [RUN, WRITE, 7, 6], "kwargs": {},
                            "options": {"task_id": "t-7", "reply_to": "x"},
                            "subtask_type": None, "immutable": True}
    step.update(changes)
    return step


def test_a_client_step_is_carried() -> None:
    carried = chained_write(_step())
    assert carried is not None
    assert (carried.task_id, carried.args) == ("t-7", [RUN, WRITE, 7, 6])
    # The wire contract's form (other languages): options with the task id alone.
    assert chained_write(_step(options={"task_id": "t-7"})) is not None


@pytest.mark.parametrize("step", [
    _step(task="memory.forget.fact"),
    _step(task="memory.agent.configure"),
    _step(args=[RUN, WRITE, 7]),
    _step(args=[RUN, WRITE, 7, 6, "surplus"]),
    _step(args="not a list"),
    _step(kwargs={"_refused": {"reason": "too deep"}}),
    _step(options={"task_id": "t-7", "countdown": 5}),
    _step(options={"task_id": "t-7", "group_id": "g"}),
    _step(options={}),
    _step(options={"task_id": ""}),
    _step(options=None),
    _step(subtask_type="chord"),
    "memory.write",
    None,
])
def test_anything_else_goes_as_its_own_message(step: Any) -> None:
    assert chained_write(step) is None
