"""The rest of a chain of writes is published by the write before it, and never lost.

Celery publishes a chain's next step after the task returns, with a few publish retries; when
the broker stays unreachable longer than that, it logs "Giving up refused callback publish"
and the rest of the chain is gone, though the write before it is committed. `memory.write`
takes the continuation over instead (`take_over_chain`): it publishes it with the same
retries and, when that fails, stores it in Postgres (`chain_continuations`), from where
`flush_continuations` (the `memory.continuations.flush` task, on beat every 15 s) publishes
it again once the broker is back. Publishing twice is harmless: a redelivered write is
replayed from the write log, never applied twice.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from db.queries.continuations import (
    claim_continuations,
    continuation_failed,
    delete_continuation,
    save_continuation,
)

log = logging.getLogger(__name__)

_PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0.1, "interval_step": 0.2,
                  "interval_max": 0.5}


def take_over_chain(request: Any) -> list[dict[str, Any]] | None:
    """The chain still to run after this task, taken from Celery so it does not publish it."""
    chain = getattr(request, "chain", None)
    request.chain = None
    return [dict(step) for step in chain] if chain else None


def _publish(steps: list[dict[str, Any]], *, parent_id: str | None, root_id: str | None
             ) -> None:
    from celery import signature

    from worker.celery_app import app

    rest = list(steps)
    following = signature(rest.pop(), app=app)  # Celery keeps the next step last
    # A short retry budget: a broker that stays away is what the Postgres fallback is for,
    # and the write's soft time limit must not cut the fallback short.
    following.apply_async(chain=rest or None, parent_id=parent_id, root_id=root_id,
                          retry=True, retry_policy=_PUBLISH_RETRY)


def publish_continuation(steps: list[dict[str, Any]], *, parent_id: str, root_id: str | None,
                         db: Any) -> None:
    """Publish the next step with the rest of the chain; if the broker refuses past the
    publish retries, keep it in Postgres for `flush_continuations`."""
    try:
        _publish(steps, parent_id=parent_id, root_id=root_id)
        return
    except Exception as exc:
        log.error("could not publish the continuation of %s (%s); kept for a later flush",
                  parent_id, type(exc).__name__)
    # With Postgres down too this raises and the task fails: the continuation is lost only
    # when both stores are away in the moment between the commit and the publish.
    with db.transaction() as conn:
        save_continuation(conn, parent_task_id=parent_id, root_id=root_id,
                          chain_json=json.dumps(steps), error="publish failed")


def flush_continuations(db: Any, *, limit: int = 200) -> dict[str, int]:
    """Publish the kept continuations again; those that still fail stay for the next flush."""
    published = failed = 0
    with db.transaction() as conn:
        for row in claim_continuations(conn, limit):
            try:
                _publish(list(row["chain"]), parent_id=row["parent_task_id"],
                         root_id=row["root_id"])
            except Exception as exc:
                continuation_failed(conn, row["id"], type(exc).__name__)
                failed += 1
                continue
            delete_continuation(conn, row["id"])
            published += 1
    if published or failed:
        log.info("chain continuations: %d published, %d still waiting", published, failed)
    return {"published": published, "failed": failed}
