"""From the wire: a client that sent its chain in forward order (seq 3 first) never has the
late, older write override the newer one — the run's context keeps the user's last word."""

from __future__ import annotations

import time

from tests.system.conftest import send

RUN = {"run_id": "forward-chain", "agent_id": "A", "user_id": "u-1", "company_id": "c-1"}
CHF = "User's currency is CHF."
EUR = "User's currency is EUR."


def test_a_late_older_correction_never_overrides_the_newer_one(services, system_worker,
                                                                settings):
    started = time.monotonic()
    newer = send("memory.write", RUN, {"note": CHF, "type": "Preference"}, 3, 2).get(timeout=90)
    assert newer["disposition"] == "written"
    assert time.monotonic() - started >= settings.seq_gap_timeout_s * 0.9  # the gap waited

    late = send("memory.write", RUN, {"note": EUR, "type": "Preference"}, 2, 1).get(timeout=60)

    assert late["disposition"] == "skipped-stale", late
    assert late["out_of_order"] is True and "seq 3" in late["reason"]
    context = send("memory.context", {"agent_id": "A", "user_id": "u-1", "company_id": "c-1",
                                      "input_text": "Which currency?"}).get(timeout=60)
    assert context["ok"], context
    assert [note["note"] for note in context["notes"]] == [CHF]
    assert "CHF" in context["rendered"] and "EUR" not in context["rendered"]
