"""The subject's keys in Redis (the broker and result backend).

* `memory:run-seq:<run>`: the sequence counters of the subject's runs (the run id is in the
  key itself).
* `celery-task-meta-<task id>`: task results. A write's result names its run and scope; a
  context's result is memory text; a conversation record's names only its conversation.
  Write results are found by the task ids in the erased write log; every other result
  (contexts, conversation records, candidates: their task ids are recorded nowhere) by
  reading each result key once (SCAN, in pages) and deleting those whose JSON names the
  subject in an id field (`user_id`, `company_id`, `agent_id`, `conversation_id`), or names
  one of its runs (`run_id`, `agent_run_id`) or conversations (`conversation_id`: every one
  the subject's rows held, recorded or not — see `SubjectLinks`). Matching the fields, not
  the text: a result that merely mentions the id inside a note is another subject's.
* `memory:vec:<digest>`: vectors of the erased notes' texts shared between processes (they
  expire within minutes anyway).

* `memory:erasing:<subject hash>`: the erasure's own mark (see ERASING_KEY_PREFIX): a task
  that read or wrote the subject's rows before the deletion may store its result after the
  sweep; it then finds this mark and deletes that result itself.

* `memory:write-records:<run>`: the write records (worker/delivery/records.py) of writes
  accepted and not yet applied — their payloads, note text included — whose run names the
  subject or is one of its runs.

Messages still queued are not touched: they are refused by the fence when delivered, and
their refusals name nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import redis

from worker.delivery.records import WriteRecords
from worker.erasure.subject import Subject

SEQ_KEY_PREFIX = "memory:run-seq:"  # as worker/client.py
RESULT_KEY_PREFIX = "celery-task-meta-"
VEC_KEY_PREFIX = "memory:vec:"
# `memory:erasing:<subject hash>`: "running" while an erasure of the subject runs, then the
# Redis clock (µs) when it finished. A task that began before that and stores a result
# naming the subject after the sweep deletes its own result (worker/app/erased_results.py).
ERASING_KEY_PREFIX = "memory:erasing:"
ERASING_RUNNING = "running"
# Longer than any task runs (hard time limits are minutes).
ERASING_MARK_TTL_S = 86400
_SCAN_PAGE = 500


def _as_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    return str(value) if isinstance(value, str | int) else None


@dataclass(frozen=True)
class SubjectLinks:
    """What of the subject a result can name instead of the subject itself: its runs and
    its conversations (a conversation record's result names only its conversation)."""

    runs: frozenset[str] = frozenset()
    conversations: frozenset[str] = frozenset()

    def named_by(self, item: dict[str, Any]) -> bool:
        return (_as_id(item.get("run_id")) in self.runs
                or _as_id(item.get("agent_run_id")) in self.runs
                or _as_id(item.get("conversation_id")) in self.conversations)


def names_subject(value: Any, subject: Subject, links: SubjectLinks) -> bool:
    """Whether a decoded result holds the subject's identity, or one of its runs or
    conversations, in an id field, anywhere."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        stack.extend(item.values())
        if links.named_by(item):
            return True
        field = {"user": "user_id", "company": "company_id", "agent": "agent_id",
                 "conversation": "conversation_id"}[subject.kind]
        if _as_id(item.get(field)) != subject.id:
            continue
        if subject.agent_id is not None and "agent_id" in item \
                and _as_id(item["agent_id"]) != subject.agent_id:
            continue
        if subject.company_id is not None and "company_id" in item \
                and _as_id(item["company_id"]) != subject.company_id:
            continue
        return True
    return False


def forget_run_counter(redis_url: str | None, run_id: Any) -> None:
    """Delete a refused run's sequence counter (best effort: it expires anyway)."""
    if not redis_url or not isinstance(run_id, str | int) or isinstance(run_id, bool):
        return
    try:
        client = redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=2)
        client.delete(SEQ_KEY_PREFIX + str(run_id))
        client.close()
    except redis.RedisError:
        pass


class RedisEraser:
    def __init__(self, client: redis.Redis, embedding_model: str | None = None) -> None:
        self.client = client
        self.embedding_model = embedding_model

    @classmethod
    def from_url(cls, url: str, embedding_model: str | None = None) -> RedisEraser:
        return cls(redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=10),
                   embedding_model)

    def clock_us(self) -> int:
        """The Redis clock, which the reservation script dates seqs with."""
        seconds, micros = self.client.time()
        return int(seconds) * 1_000_000 + int(micros)

    def mark_erasing(self, subject_hash: str) -> None:
        """Before the fence: from here on, a task's result naming the subject is suspect."""
        self.client.set(ERASING_KEY_PREFIX + subject_hash, ERASING_RUNNING,
                        ex=ERASING_MARK_TTL_S)

    def mark_erased(self, subject_hash: str) -> None:
        """After the sweep: tasks begun from now on are new and keep their results."""
        self.client.set(ERASING_KEY_PREFIX + subject_hash, str(self.clock_us()),
                        ex=ERASING_MARK_TTL_S)

    def _result_keys(self, subject: Subject, links: SubjectLinks) -> list[bytes]:
        found: list[bytes] = []
        for keys in self._pages(RESULT_KEY_PREFIX + "*"):
            for key, raw in zip(keys, self.client.mget(keys), strict=True):
                if raw is None:
                    continue
                try:
                    decoded = json.loads(raw)
                except ValueError:
                    continue
                if names_subject(decoded, subject, links):
                    found.append(key)
        return found

    def _pages(self, pattern: str) -> Any:
        page: list[bytes] = []
        for key in self.client.scan_iter(match=pattern, count=_SCAN_PAGE):
            page.append(key)
            if len(page) >= _SCAN_PAGE:
                yield page
                page = []
        if page:
            yield page

    def _existing(self, keys: list[str]) -> int:
        total = 0
        for start in range(0, len(keys), _SCAN_PAGE):
            total += int(self.client.exists(*keys[start:start + _SCAN_PAGE]) or 0)
        return total

    def plan(self, subject: Subject, links: SubjectLinks) -> dict[str, int]:
        counters = [SEQ_KEY_PREFIX + r for r in sorted(links.runs)]
        return {"redis_seq_counters": self._existing(counters),
                "redis_task_results": len(self._result_keys(subject, links)),
                "redis_write_records": self._records().erase(
                    self._names_record(subject, links), dry_run=True)}

    def _records(self) -> WriteRecords:
        return WriteRecords(self.client)

    @staticmethod
    def _names_record(subject: Subject, links: SubjectLinks) -> Any:
        def names(args: Any, run_id: str) -> bool:
            return run_id in links.runs or names_subject(args, subject, links)

        return names

    def erase(self, subject: Subject, links: SubjectLinks, task_ids: list[str],
              note_texts: list[str]) -> dict[str, int]:
        counts: Counter[str] = Counter()
        keys = [SEQ_KEY_PREFIX + r for r in sorted(links.runs)]
        counts["redis_seq_counters"] += self._delete(keys)
        results = [RESULT_KEY_PREFIX + t for t in task_ids]
        counts["redis_task_results"] += self._delete(results)
        scanned = self._result_keys(subject, links)
        counts["redis_task_results"] += self._delete(scanned)
        counts["redis_write_records"] += self._records().erase(
            self._names_record(subject, links))
        if self.embedding_model:
            vectors = [VEC_KEY_PREFIX + hashlib.sha256(
                f"{self.embedding_model}\x1f{t}".encode()).hexdigest()[:40] for t in note_texts]
            counts["redis_vectors"] += self._delete(vectors)
        return dict(counts)

    def _delete(self, keys: list[Any]) -> int:
        total = 0
        for start in range(0, len(keys), _SCAN_PAGE):
            chunk = keys[start:start + _SCAN_PAGE]
            if chunk:
                total += int(self.client.delete(*chunk) or 0)
        return total
