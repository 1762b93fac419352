"""The maintenance trigger counts notes that arrived after the last maintenance: the notes a
maintenance cycle hardened itself were already consolidated and checked by it."""

from __future__ import annotations

from tests.system.conftest import send

WORKER_ENV = {"MEMORY_MAINTENANCE_NEW_NOTE_TRIGGER": "3"}

FACTS = ["User prefers bar charts over pie charts.", "User's timezone is UTC+1.",
         "User works on the billing team.", "User's manager is Dana."]


def _write(run_id: str, facts: list[str]) -> None:
    run = {"run_id": run_id, "agent_id": "A", "user_id": "u-1"}
    results = [send("memory.write", run, {"note": fact, "type": "Context"}, seq)
               for seq, fact in enumerate(facts, start=1)]
    assert [r.get(timeout=60)["disposition"] for r in results] == ["written"] * len(facts)


def _cycle() -> dict:
    report = send("memory.manager.cycle").get(timeout=120)
    assert report["status"] == "succeeded", report
    return report


def test_the_cycle_after_a_maintenance_does_not_maintain_again(services, system_worker):
    _write("run-1", FACTS)
    first = _cycle()
    assert first["maintenance"], "no maintenance has run yet"
    assert first["counts"]["new_notes"] == 4  # hardened inside the maintenance cycle

    second = _cycle()
    assert not second["maintenance"], second

    _write("run-2", ["User's favourite colour is green.", "User lives in Lisbon.",
                     "User drinks green tea."])
    third = _cycle()  # hardens three new notes, which reach the trigger in the same cycle
    assert third["counts"]["new_notes"] == 3 and third["maintenance"], third
    assert third["maintenance_reason"] == "3 new notes since the last maintenance"
    assert not _cycle()["maintenance"]
