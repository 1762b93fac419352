"""2,000 fuzzed payloads through the task boundary, deep nesting included: each one gets a
disposition from the worker, none ends as an infrastructure `error`, the worker lives."""

from __future__ import annotations

import math
import random
from typing import Any

from tests.helpers import nested, rows

COUNT = 2000
DISPOSITIONS = {"written", "superseded-own", "deduped", "skipped-duplicate", "skipped-cap",
                "skipped-disabled", "rejected-type", "rejected-invalid", "blocked",
                "candidate"}


def _junk(rng: random.Random) -> Any:
    return rng.choice([
        None, True, 7, -1, 2**70, 3.5, math.nan, math.inf, -math.inf, "", " ", "x" * 5000,
        "\ud800lone", "nul\x00char", "ok", [], {}, ["a", 1], {"k": "v"}, [[[]]],
        nested(depth := rng.choice([5, 40, 300, 700]), "deep", as_list=not depth % 2),
    ])


def _payload(rng: random.Random, i: int) -> tuple[list[Any], dict[str, Any]]:
    run: Any = {"run_id": f"fuzz-{i}", "agent_id": "A", "user_id": "u-1"}
    write: Any = {"note": f"User fuzz fact number {i} is recorded.", "type": "Context"}
    seq: Any = 1
    for _ in range(rng.randint(1, 3)):
        target = rng.choice(["run", "run_field", "write", "write_field", "seq", "extra",
                             "scopes", "whole"])
        if target == "run":
            run = _junk(rng)
        elif target == "run_field" and isinstance(run, dict):
            run[rng.choice(["run_id", "agent_id", "user_id", "company_id", "source",
                            "primary_scope_entity", "conversation_id"])] = _junk(rng)
        elif target == "write":
            write = _junk(rng)
        elif target == "write_field" and isinstance(write, dict):
            write[rng.choice(["note", "type", "scope_hint", "extra"])] = _junk(rng)
        elif target == "seq":
            seq = _junk(rng)
        elif target == "scopes" and isinstance(run, dict):
            run["secondary_scopes"] = rng.choice([_junk(rng), {"region": _junk(rng)}])
        elif target == "whole":
            return [_junk(rng)], {}
        elif target == "extra":
            return [run, write, seq, 0, _junk(rng)], {}
    return [run, write, seq], {}


def test_every_fuzzed_payload_gets_a_disposition(services, system_worker):
    from worker.celery_app import app

    rng = random.Random(20261202)
    sent, payloads = [], []
    for i in range(COUNT):
        args, kwargs = _payload(rng, i)
        try:
            sent.append(app.send_task("memory.write", args=args, kwargs=kwargs))
            payloads.append(repr(args)[:300])
        except Exception:
            continue
    assert len(sent) > COUNT * 0.9
    outcomes = [result.get(timeout=300) for result in sent]
    assert system_worker.process is not None and system_worker.process.poll() is None
    dispositions = [o["disposition"] for o in outcomes]
    # The one `error` a payload may earn: two payloads whose junk run id is the same string,
    # both seq 1 with different content — a reused sequence number is refused, as documented.
    reused = [o for o in outcomes if o["disposition"] == "error"
              and "already used by a different write" in o["reason"]]
    unexpected = [(p, o) for p, o in zip(payloads, outcomes, strict=True)
                  if o["disposition"] not in DISPOSITIONS and o not in reused]
    assert unexpected == [], unexpected[:3]
    assert all(isinstance(o["reason"], str) and o["reason"] for o in outcomes)
    # Nothing applied twice, every sequenced write logged once.
    dupes = rows(services.database_url, "SELECT run_id, seq FROM write_log "
                 "GROUP BY run_id, seq HAVING count(*) > 1")
    assert dupes == []
    written = sum(d in {"written", "deduped", "superseded-own"} for d in dispositions)
    assert written > 0 and dispositions.count("rejected-invalid") > COUNT / 4
    print(f"\nfuzz: {len(sent)} sent, {written} stored, "
          f"{dispositions.count('rejected-invalid')} rejected-invalid, "
          f"{len(rows(services.database_url, 'SELECT 1 FROM dead_letters'))} dead letters")
