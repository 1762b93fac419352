"""Write records: every accepted write, kept in Redis until its (run, seq) is committed.

A broker can lose a message it was handed. Kombu's Redis transport takes a message with
BRPOP and only afterwards records it as unacknowledged; a worker killed in between holds the
only copy, and the head of a chain carries every later write of its run. So acceptance does
not rest on the broker:

* the script that reserves a run's sequence numbers (`RECORD_SCRIPT`) records each write in
  the same atomic step — its task, task id, arguments, seq and prev_seq;
* the worker clears a record once its (run, seq) is committed (`WriteRecords.clear`), or
  refused for good; an `error` keeps it, so it is delivered again;
* `worker.delivery.redelivery` (beat, every flush period) publishes again every record older
  than the redelivery bound whose write is not in the write log.

Exactly-once stays where it is, in the write log: a write published twice is replayed.

Keys (one Redis, the one holding the sequence counters):

    memory:write-records:<run_id>   hash  "<seq>" -> record JSON
                                          "<seq>:redelivered" -> times published again
    memory:write-records-due        zset  "<seq>|<run_id>" scored by when it is next due,
                                          in Redis-clock seconds

A record holds its write's payload (note text included) until the write is applied, usually
well under a second; an erasure deletes the records of its subject.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

log = logging.getLogger(__name__)

RECORDS_KEY_PREFIX = "memory:write-records:"
DUE_KEY = "memory:write-records-due"
REDELIVERED_SUFFIX = ":redelivered"
SEQ_KEY_PREFIX = "memory:run-seq:"

# KEYS[1] the run's counter, KEYS[2] the run's records, KEYS[3] the due index.
# ARGV[1] how many numbers, ARGV[2] the counter's TTL (s), ARGV[3] the records' TTL (s),
# ARGV[4] the run id, then for each write three values: its task name, its task id and the
# JSON array of the task's arguments before (seq, prev_seq).
# Returns {last, base}: the numbers are base+1 .. base+n, the write before them is `last`.
# Numbers are written with %d, never through cjson, which would round them to 14 digits.
RECORD_SCRIPT = """
local n = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local base = math.max(last, now)
redis.call('SET', KEYS[1], string.format('%d', base + n), 'EX', ARGV[2])
local due = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
for i = 1, n do
  local seq = string.format('%d', base + i)
  local prev = string.format('%d', base + i - 1)
  if i == 1 then prev = string.format('%d', last) end
  local at = 5 + 3 * (i - 1)
  redis.call('HSET', KEYS[2], seq, '{"seq":' .. seq .. ',"prev_seq":' .. prev ..
    ',"task":' .. cjson.encode(ARGV[at]) .. ',"task_id":' .. cjson.encode(ARGV[at + 1]) ..
    ',"recorded_at_us":' .. string.format('%d', now) .. ',"args":' .. ARGV[at + 2] .. '}')
  redis.call('ZADD', KEYS[3], due, seq .. '|' .. ARGV[4])
end
redis.call('EXPIRE', KEYS[2], ARGV[3])
return {string.format('%d', last), string.format('%d', base)}
"""

# KEYS[1] the run's records, KEYS[2] the due index; ARGV[1] seq, ARGV[2] the index member,
# ARGV[3] when it is next due. A record cleared meanwhile is not brought back (ZADD XX).
# Returns {record JSON, times published again so far}, or nil when it is gone.
CLAIM_SCRIPT = """
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then
  redis.call('ZREM', KEYS[2], ARGV[2])
  return nil
end
redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[2])
return {record, redis.call('HGET', KEYS[1], ARGV[1] .. ':redelivered') or '0'}
"""


def records_key(run_id: str) -> str:
    return RECORDS_KEY_PREFIX + run_id


def due_member(run_id: str, seq: int) -> str:
    return f"{seq}|{run_id}"


def parse_due_member(member: bytes | str) -> tuple[str, int] | None:
    text = member.decode("utf-8", "replace") if isinstance(member, bytes) else member
    seq, sep, run_id = text.partition("|")
    if not sep or not seq.isdigit() or not run_id:
        return None
    return run_id, int(seq)


@dataclass(frozen=True)
class WriteRecord:
    """A recorded write, as the redelivery publishes it again."""

    run_id: str
    seq: int
    prev_seq: int
    task: str
    task_id: str
    args: list[Any]
    recorded_at_us: int
    redelivered: int

    @classmethod
    def parse(cls, run_id: str, raw: bytes | str, redelivered: int) -> WriteRecord | None:
        """None for a record that cannot be published again (a client's broken JSON)."""
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        seq, prev, task, task_id, args = (data.get(k) for k in (
            "seq", "prev_seq", "task", "task_id", "args"))
        if not (isinstance(seq, int) and isinstance(prev, int) and isinstance(task, str)
                and isinstance(task_id, str) and task_id and isinstance(args, list)):
            return None
        at = data.get("recorded_at_us")
        return cls(run_id, seq, prev, task, task_id, args, at if isinstance(at, int) else 0,
                   redelivered)


class WriteRecords:
    """The records of one Redis, as the worker and the redelivery use them."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._claim = client.register_script(CLAIM_SCRIPT)

    def clear(self, run_id: str, seq: int) -> None:
        """The (run, seq) is committed or refused for good: its record goes. Best effort:
        a record left behind is found applied in the write log and cleared by the next
        redelivery pass."""
        self.clear_all([(run_id, seq)])

    def clear_all(self, settled: Sequence[tuple[str, int]]) -> None:
        """`clear` for several (run, seq) in one round trip (a chain visit's carried writes)."""
        if not settled:
            return
        try:
            with self.client.pipeline(transaction=True) as pipe:
                for run_id, seq in settled:
                    pipe.hdel(records_key(run_id), str(seq), f"{seq}{REDELIVERED_SUFFIX}")
                pipe.zrem(DUE_KEY, *(due_member(run_id, seq) for run_id, seq in settled))
                pipe.execute()
        except UnicodeError:
            # A run id no client could have recorded (invalid Unicode): nothing to clear for
            # it, the others still go.
            if len(settled) > 1:
                for one in settled:
                    self.clear_all([one])
        except redis.RedisError as exc:
            log.warning("could not clear the write records of %s (%s); the next redelivery "
                        "pass clears them", ", ".join(f"{r}/{s}" for r, s in settled),
                        type(exc).__name__)

    def awaiting(self, run_id: str, after_seq: int, up_to_seq: int) -> bool:
        """Whether a write of the run numbered in (after_seq, up_to_seq] is recorded, i.e.
        accepted and not yet applied: it will be delivered, so no gap is declared before
        it. Unknown (Redis unreachable) counts as not recorded."""
        try:
            fields = self.client.hkeys(records_key(run_id))
        except (redis.RedisError, UnicodeError):
            return False
        for field in fields:
            name = field.decode() if isinstance(field, bytes) else str(field)
            if name.isdigit() and after_seq < int(name) <= up_to_seq:
                return True
        return False

    def clock_s(self) -> float:
        seconds, micros = self.client.time()
        return int(seconds) + int(micros) / 1_000_000

    def due(self, before_s: float, limit: int) -> list[tuple[str, int]]:
        found = []
        members: list[bytes] = self.client.zrangebyscore(  # type: ignore[assignment]
            DUE_KEY, "-inf", before_s, start=0, num=limit)
        for member in members:
            parsed = parse_due_member(member)
            if parsed is None:
                self.client.zrem(DUE_KEY, member)
            else:
                found.append(parsed)
        return found

    def claim(self, run_id: str, seq: int, next_due_s: float) -> WriteRecord | bool | None:
        """The record, moved to be due again at `next_due_s`; None when it is gone; False
        when it cannot be parsed."""
        answer = self._claim(keys=[records_key(run_id), DUE_KEY],
                             args=[str(seq), due_member(run_id, seq), repr(next_due_s)])
        if answer is None:
            return None
        raw, redelivered = answer
        record = WriteRecord.parse(run_id, raw, int(redelivered))
        return record if record is not None else False

    def raw(self, run_id: str, seq: int) -> str | None:
        value = self.client.hget(records_key(run_id), str(seq))
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value

    def count_redelivery(self, run_id: str, seq: int) -> None:
        self.client.hincrby(records_key(run_id), f"{seq}{REDELIVERED_SUFFIX}", 1)

    def pending(self) -> tuple[int, float | None]:
        """How many writes are recorded and not yet applied, and the age in seconds of the
        one longest due (None when there is none)."""
        count = int(self.client.zcard(DUE_KEY))
        oldest = self.client.zrange(DUE_KEY, 0, 0, withscores=True)
        return count, (self.clock_s() - float(oldest[0][1])) if oldest else None


    def erase(self, names_subject: Any, *, page: int = 500, dry_run: bool = False) -> int:
        """Delete every record whose run names an erased subject (`names_subject(args,
        run_id)`): a record holds its write's text until it is applied. Returns how many
        (`dry_run`: only counts them)."""
        deleted = 0
        for key in self.client.scan_iter(match=RECORDS_KEY_PREFIX + "*", count=page):
            run_id = key.decode("utf-8", "replace")[len(RECORDS_KEY_PREFIX):]
            doomed: list[str] = []
            entries: dict[bytes, bytes] = self.client.hgetall(key)  # type: ignore[assignment]
            for field, raw in entries.items():
                name = field.decode("utf-8", "replace")
                if not name.isdigit():
                    continue
                try:
                    args = json.loads(raw).get("args")
                except (ValueError, AttributeError):
                    args = None
                if names_subject(args, run_id):
                    doomed.append(name)
            if not doomed or dry_run:
                deleted += len(doomed)
                continue
            with self.client.pipeline(transaction=True) as pipe:
                pipe.hdel(key, *doomed, *(f"{seq}{REDELIVERED_SUFFIX}" for seq in doomed))
                pipe.zrem(DUE_KEY, *(due_member(run_id, int(seq)) for seq in doomed))
                pipe.execute()
            deleted += len(doomed)
        return deleted


_clients: dict[str, WriteRecords] = {}
_clients_lock = threading.Lock()


def write_records(redis_url: str | None, timeout_s: float = 2.0) -> WriteRecords | None:
    """The process's records client for `redis_url` (redis-py reconnects after a fork)."""
    if not redis_url:
        return None
    with _clients_lock:
        records = _clients.get(redis_url)
        if records is None:
            records = _clients[redis_url] = WriteRecords(redis.Redis.from_url(
                redis_url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s))
        return records
