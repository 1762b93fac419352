"""A result stored after an erasure's Redis sweep must not keep the erased subject alive.

The race it closes: a task reads or writes a subject's rows (a context read, a write that
committed just before the fence), the erasure then deletes the rows and sweeps the result
backend, and only then does Celery store the task's result — which names the subject's run
and scope, or holds its memory text — for the result expiry.

The erasure marks each subject in Redis (`memory:erasing:<hash>`: "running", then the Redis
clock when it finished, kept a day; worker/erasure/redis_keys.py) before it sets the fence.
Each task here notes the Redis clock when it starts; after its result is stored (Celery
sends `task_postrun` after storing), it reads the marks of every subject its identity belongs
to. A mark that is running, or finished after the task began, means the erasure may have
swept before this result landed: a result that names that subject (an id field, or a run or
conversation the task's arguments tie to it — a conversation record's result names only its
conversation) is deleted. Either the mark is there when the task looks, or the erasure set it
after the result was stored and its sweep, which comes later, finds the result. A refusal
(`rejected-erased`) names nothing and stays, and a task begun after the erasure finished
keeps its result.

A write carried by a chain visit (worker/app/chain_visit.py) has no task run of its own: its
result is checked the same way right after the visit stores it, with the visit's start as its
start (the safe side: any erasure that finished while the visit ran counts).

Costs one Redis round trip when a task starts and one when it ends; nothing on the database.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from celery import signals

from worker.app import task_names
from worker.erasure.redis_keys import (
    ERASING_KEY_PREFIX,
    ERASING_RUNNING,
    SubjectLinks,
    names_subject,
)
from worker.erasure.subject import Subject, fence_subjects

log = logging.getLogger(__name__)

# Tasks whose results can name a subject or hold its memory. `memory.forget` itself returns
# only counts; manager tasks name no subject.
GUARDED_TASKS = frozenset({
    task_names.WRITE, task_names.FORGET_FACT, task_names.CONTEXT,
    task_names.CONVERSATION_RECORD, task_names.CANDIDATE_PROMOTE, task_names.CANDIDATE_REJECT,
    task_names.CANDIDATE_LIST,
})
_ID_FIELDS = ("agent_id", "user_id", "company_id", "conversation_id")
# Identities looked at per result (a candidate list names many rows of one agent).
_MAX_IDENTITIES = 200

_started_us: dict[str, int] = {}


def _clock_us(client: Any) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1_000_000 + int(micros)


def _text_id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _children(item: dict[str, Any]) -> list[Any]:
    """The values of an object to look into. A conversation record's `conversation` object
    names its conversation `id`: seen as `conversation_id`, so its identity includes it."""
    children = []
    for key, value in item.items():
        if key == "conversation" and isinstance(value, dict):
            value = {"conversation_id": value.get("id"), **value}
        children.append(value)
    return children


def _identities(args: Any, result: Any) -> tuple[set[tuple[str | None, ...]], SubjectLinks]:
    """(agent, user, company, conversation) tuples the task's first argument and its result
    carry, and the runs and conversations they name."""
    found: set[tuple[str | None, ...]] = set()
    runs: set[str] = set()
    conversations: set[str] = set()
    stack: list[Any] = [result]
    if isinstance(args, list | tuple) and args:
        stack.append(args[0])
    while stack and len(found) < _MAX_IDENTITIES:
        item = stack.pop()
        if isinstance(item, list | tuple):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        stack.extend(_children(item))
        identity = tuple(_text_id(item.get(name)) for name in _ID_FIELDS)
        if any(identity):
            found.add(identity)
        runs.update(r for r in (_text_id(item.get("run_id")),
                                _text_id(item.get("agent_run_id"))) if r)
        if conversation := _text_id(item.get("conversation_id")):
            conversations.add(conversation)
    return found, SubjectLinks(frozenset(runs), frozenset(conversations))


def _subjects(identities: set[tuple[str | None, ...]]) -> dict[str, Subject]:
    subjects: dict[str, Subject] = {}
    for agent, user, company, conversation in identities:
        for subject in fence_subjects(agent, user, company, conversation):
            subjects.setdefault(subject.hash, subject)
    return subjects


def erased_while_running(client: Any, started_us: int | None, args: Any,
                         result: Any) -> Subject | None:
    """The subject an erasure overlapping this task removed and the result names, if any."""
    identities, links = _identities(args, result)
    subjects = _subjects(identities)
    if not subjects:
        return None
    hashes = list(subjects)
    marks = client.mget([ERASING_KEY_PREFIX + h for h in hashes])
    decoded: Any = None
    for subject_hash, mark in zip(hashes, marks, strict=True):
        if mark is None:
            continue
        mark = mark.decode() if isinstance(mark, bytes) else str(mark)
        finished = None if mark == ERASING_RUNNING else int(mark)
        if finished is not None and started_us is not None and finished < started_us:
            continue  # the task began after that erasure was over: a new run's result
        if decoded is None:  # as stored: JSON, so tuples are lists and ids are text
            decoded = json.loads(json.dumps(result, default=str))
        if names_subject(decoded, subjects[subject_hash], links):
            return subjects[subject_hash]
    return None


def _client(task: Any) -> Any:
    return getattr(getattr(task, "backend", None), "client", None)


@signals.task_prerun.connect
def _note_start(sender: Any = None, task_id: str | None = None, **_: Any) -> None:
    if not task_id or str(getattr(sender, "name", "")) not in GUARDED_TASKS:
        return
    client = _client(sender)
    if client is None:
        return
    try:
        _started_us[task_id] = _clock_us(client)
    except Exception:  # unknown start: any overlapping mark counts (the safe side)
        log.debug("could not read the Redis clock for %s", task_id, exc_info=True)


def started_at(task_id: str) -> int | None:
    """The Redis clock when the running task `task_id` started, if it was read."""
    return _started_us.get(task_id)


def drop_if_erased(backend: Any, name: str, task_id: str, started_us: int | None, args: Any,
                   result: Any) -> bool:
    """After `result` is stored under `task_id`: delete it if an erasure that overlapped the
    task removed a subject it names. Also for the writes a chain visit carries
    (worker/app/chain_visit.py), which have no task run of their own."""
    client = getattr(backend, "client", None)
    if client is None:
        return False
    try:
        subject = erased_while_running(client, started_us, args, result)
        if subject is not None:
            backend.forget(task_id)
            log.warning("deleted the result of %s %s: an erasure of a %s ran while it did",
                        name, task_id, subject.kind)
            return True
    except Exception:
        log.warning("could not check the result of %s %s against erasures", name, task_id,
                    exc_info=True)
    return False


@signals.task_postrun.connect
def _drop_result_of_erased_subject(sender: Any = None, task_id: str | None = None,
                                   args: Any = None, retval: Any = None,
                                   state: str | None = None, **_: Any) -> None:
    started = _started_us.pop(task_id or "", None)
    name = str(getattr(sender, "name", ""))
    if (not task_id or name not in GUARDED_TASKS or state != "SUCCESS"
            or getattr(sender, "ignore_result", False)):
        return
    drop_if_erased(sender.backend, name, task_id, started, args, retval)
