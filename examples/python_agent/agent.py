"""A small agent service in Python: one run of an agent that remembers.

At the start of a run it builds the memory context for its user (what it should remember,
rendered for the prompt); during the run it enqueues what it learned as memory writes,
in order; at the end it waits for each write's disposition. Run it next to a running stack:

    .venv/bin/python examples/python_agent/agent.py --user u-7 --company acme

in the folder where `make up` runs (it finds that stack), or with DATABASE_URL and REDIS_URL
set. `--json` prints what happened as one JSON object (the CI test reads it).
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
from typing import Any

from worker.client import build_memory_context, enqueue_memory_writes

AGENT = "example-assistant"

# What this run's conversation taught the agent, as the agent would phrase it.
LEARNED = [
    {"note": "User prefers bar charts over pie charts.", "type": "Preference"},
    {"note": "User's reporting currency is CHF.", "type": "Context"},
    {"note": "Team standup is on Mondays at 9:00.", "type": "Context", "scope_hint": "agent"},
]


def find_local_stack() -> None:
    """Development only: with no URL set, use the `make up` running in this folder (as the
    CLI does). A deployed service gets DATABASE_URL and REDIS_URL from its environment."""
    if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
        return
    from worker.local.stack_file import adopt_running_stack
    from worker.settings import get_settings, reset_settings_cache

    if adopt_running_stack(get_settings().data_dir):
        reset_settings_cache()


def start_of_run(user: str, company: str | None, task: str) -> str:
    """The memory block to put in the agent's prompt (empty when there is nothing)."""
    context = build_memory_context(AGENT, user, company, input_text=task)
    return context.rendered


def run_agent(user: str, company: str | None, task: str) -> dict[str, Any]:
    memory_before = start_of_run(user, company, task)

    # ... the agent works on `task` with `memory_before` in its prompt, and learns things ...

    run = {"run_id": f"run-{uuid.uuid4().hex[:12]}", "agent_id": AGENT, "user_id": user,
           "company_id": company, "source": "user"}
    # One call per turn: the writes are numbered and recorded in Redis, then published as one
    # chain, so they are applied in this order, exactly once, even if the broker loses them.
    enqueued = enqueue_memory_writes(run, LEARNED)
    # An agent need not wait; this one does, to tell the user what it will remember.
    results = enqueued.results(timeout=60)

    memory_after = start_of_run(user, company, task)
    return {
        "run_id": run["run_id"],
        "seqs": enqueued.seqs,
        "results": [{"note": write["note"], "disposition": result["disposition"],
                     "reason": result["reason"], "reason_code": result.get("reason_code"),
                     "note_id": result.get("note_id")}
                    for write, result in zip(LEARNED, results, strict=True)],
        "memory_before": memory_before,
        "memory_after": memory_after,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--user", default="u-7")
    parser.add_argument("--company", default="acme")
    parser.add_argument("--task", default="Which charts does the user prefer?",
                        help="the user's request: the memory closest to it is injected")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    find_local_stack()
    outcome = run_agent(args.user, args.company, args.task)
    if args.json:
        print(json.dumps(outcome))
        return
    print(f"run {outcome['run_id']}")
    for item in outcome["results"]:
        print(f"  {item['disposition']:<18} {item['note']}")
    print("\nmemory the next run starts with:\n")
    print(outcome["memory_after"] or "(nothing yet)")


if __name__ == "__main__":
    main()
