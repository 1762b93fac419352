"""Erasure benchmark: erase one user from a large database while other users keep writing.

    .venv/bin/python bench/erasure.py                  # 1M notes, victim 10k notes (~10 min)
    .venv/bin/python bench/erasure.py --quick          # 100k notes, victim 2k notes (~2 min)
    .venv/bin/python bench/erasure.py --notes 300000 --victim-notes 5000

Before migration 0017 the default size ran for hours on 2 cores: each deleted note cost two
sequential scans of `notes` (unindexed foreign keys); the probe at the end measures that
cost again, by dropping the two indexes inside a transaction that is rolled back.

Embedded PostgreSQL + Redis in a temp dir, every migration applied (all indexes in place
before the load: the erasure is measured against the real schema). The database is filled
with COPY: `--notes` notes in all (`--users` users with an equal share, 1.9 % company-wide
notes over 100 companies, 0.1 % agent-wide), each with a synthetic 384-dim vector and a
lineage event; ten runs of five writes per user (write log rows, trace events), five
recorded conversations of three messages per user, some examples, memory candidates,
pending access rows, judge memos and dead letters. The victim user has `--victim-notes`
notes (each with an event, 10 % consolidated into another of its notes, 20 % extracted from
one of its conversations), `--victim-conversations` conversations of four messages, runs
holding `--victim-writes` write-log rows (ten per run) with a trace event each, examples,
candidates, judge memos on its texts, 50 agent-wide notes its runs wrote (kept, provenance
cleared), pending access rows, dead letters and chain continuations naming it.

Then a separate process applies a steady stream of writes for other users through the
write path itself (`apply_memory_write`, what the Celery task calls: run lock, fence check,
guards, neighbour query, insert, write log), one every `--write-interval` seconds, with a
synthetic embedder (vectors of the loaded model, no MiniLM cost). After a warm-up, a
baseline window of those writes without an erasure, then `erase_subject` for the victim in
this process (the same call `memory.forget` makes, Redis included). Reported: the erasure's
wall time, its per-table counts, where its time went (per step, summed over batches and
passes), the writes' latency in both windows (p50/p99/max: the longest wait any concurrent
write saw) and a check that nothing of the victim is left and every other user's note is
still there (plus the notes the concurrent writes added).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

DIMS = 384
MODEL = "bench-synthetic"
AGENT = "A"
COMPANIES = 100
VICTIM = "victim-0001"
VICTIM_COMPANY = "company-007"
START = datetime(2025, 1, 1, tzinfo=UTC)
RUNS_PER_USER = 10
WRITES_PER_RUN = 5  # other users' runs
VICTIM_WRITES_PER_RUN = 10
CONVERSATIONS_PER_USER = 5
NOTE_COLUMNS = ("id, agent_id, user_id, company_id, type, note, content_hash, status, embedding, "
                "embedding_model, source_agent_run_id, source_conversation_id, "
                "consolidated_into_note_id, valid_from, valid_to, created_at, updated_at")
NOTE_TYPES = ["uuid", "text", "text", "text", "text", "text", "text", "text", "vector", "text",
              "text", "text", "uuid", "timestamptz", "timestamptz", "timestamptz",
              "timestamptz"]


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def company_of(user: int) -> str:
    return f"company-{user % COMPANIES:03d}"


def user_name(user: int) -> str:
    return f"user-{user:05d}"


def _copy(conn: psycopg.Connection, table: str, columns: str,
          rows: Iterator[tuple[Any, ...]] | list[tuple[Any, ...]]) -> int:
    count = 0
    with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


class Loader:
    """Generates and COPYs every table; remembers what the checks need."""

    def __init__(self, conn: psycopg.Connection, args: argparse.Namespace) -> None:
        self.conn, self.args = conn, args
        self.rng = np.random.default_rng(11)
        self.inserted: dict[str, int] = defaultdict(int)
        self.victim_note_ids: list[uuid.UUID] = []
        self.victim_hashes: list[str] = []
        self.first_note: dict[int, uuid.UUID] = {}  # a note of each other user (write log)

    def _vectors(self, n: int) -> np.ndarray:
        v = self.rng.standard_normal((n, DIMS), dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def _at(self, i: int, span_days: int = 360) -> datetime:
        return START + timedelta(seconds=(i * 7919) % (span_days * 86400))

    # --- notes -----------------------------------------------------------------------------
    def _note_rows(self) -> Iterator[tuple[Any, ...]]:
        a = self.args
        shared = int(a.notes * 0.02)
        company_wide, agent_wide = shared - shared // 20, shared // 20
        others = a.notes - a.victim_notes - shared - 50
        per_user, extra = divmod(others, a.users)
        started, count = time.monotonic(), 0

        def note(user: str | None, company: str | None, text: str, vector: np.ndarray, *,
                 run: str | None, conv: str | None = None, into: uuid.UUID | None = None,
                 note_id: uuid.UUID | None = None, archived: bool = False) -> tuple[Any, ...]:
            nonlocal count
            count += 1
            if count % 100_000 == 0:
                print(f"  notes: {count:,} ({time.monotonic() - started:.0f} s)",
                      file=sys.stderr, flush=True)
            at = self._at(count)
            status = "Archived" if archived or into is not None else "Active"
            return (note_id or uuid.uuid4(), AGENT, user, company, "Preference", text,
                    f"h-{count}", status, vector, MODEL, run, conv, into, at,
                    at + timedelta(days=1) if status == "Archived" else None, at, at)

        # Sorted by (agent, user, company) as the lattice indexes are: appends, not page splits.
        victim_inserted = False
        for u in range(a.users):
            name, company = user_name(u), company_of(u)
            if not victim_inserted and name > VICTIM:
                yield from self._victim_notes(note)
                victim_inserted = True
            n = per_user + (1 if u < extra else 0)
            vectors = self._vectors(n)
            for k in range(n):
                row = note(name, company, f"{name} fact {k}: prefers plan {k % 97} for reports",
                           vectors[k], run=f"r-{u}-{k % RUNS_PER_USER}",
                           archived=k % 5 == 4)
                if k == 0:
                    self.first_note[u] = row[0]
                yield row
        if not victim_inserted:
            yield from self._victim_notes(note)
        vectors = self._vectors(company_wide + agent_wide + 50)
        for k in range(company_wide):
            yield note(None, f"company-{k % COMPANIES:03d}", f"Company fact {k}: invoices "
                       f"go out on day {k % 28 + 1}", vectors[k], run=None)
        for k in range(agent_wide):
            yield note(None, None, f"Agent-wide fact {k}: the style guide rule {k}",
                       vectors[company_wide + k], run=None)
        # Agent-wide notes the victim's runs wrote: they stay, their provenance goes.
        for k in range(50):
            yield note(None, None, f"Team fact {k}: standup moves to room {k}",
                       vectors[company_wide + agent_wide + k], run=f"vr-{k}")

    def _victim_notes(self, note: Any) -> Iterator[tuple[Any, ...]]:
        a = self.args
        vectors = self._vectors(a.victim_notes)
        ids = [uuid.uuid4() for _ in range(a.victim_notes)]
        runs = max(1, a.victim_writes // VICTIM_WRITES_PER_RUN)
        for k in range(a.victim_notes):
            # 10 % consolidated into another of the victim's notes; 20 % extracted from one
            # of its conversations.
            into = ids[k + 1] if k % 10 == 9 and k + 1 < a.victim_notes else None
            conv = f"vc-{k % a.victim_conversations}" if k % 5 == 0 else None
            row = note(VICTIM, VICTIM_COMPANY, f"Victim fact {k}: keeps a pet iguana number "
                       f"{k}", vectors[k], run=f"vr-{k % runs}", conv=conv, into=into,
                       note_id=ids[k])
            self.victim_note_ids.append(ids[k])
            self.victim_hashes.append(row[6])
            yield row

    def notes(self) -> None:
        with self.conn.cursor() as cur, cur.copy(
                f"COPY notes ({NOTE_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(NOTE_TYPES)
            for row in self._note_rows():
                copy.write_row(row)
                self.inserted["notes"] += 1
        self.conn.commit()

    def note_events(self) -> None:
        """One lineage event per note (two for the victim's consolidated ones)."""
        def rows() -> Iterator[tuple[Any, ...]]:
            with self.conn.cursor(name="note-ids") as cur:
                cur.itersize = 50_000
                cur.execute("SELECT id, user_id = %s, status FROM notes", (VICTIM,))
                for note_id, victim, status in cur:
                    actor = "bench-victim" if victim else "hardening"
                    yield (note_id, "created", None, "Active", actor, "written", START)
                    if status == "Archived":
                        yield (note_id, "archived", "Active", "Archived", actor, "retired",
                               START)
        with psycopg.connect(self.args.database_url) as other:
            self.inserted["note_events"] += _copy(
                other, "note_events", "note_id, action, from_status, to_status, actor, reason, "
                "created_at", rows())
            other.commit()
        self.conn.commit()

    # --- runs, write log, trace ------------------------------------------------------------
    def runs(self) -> None:
        a = self.args
        victim_runs = max(1, a.victim_writes // VICTIM_WRITES_PER_RUN)

        def runs_rows() -> Iterator[tuple[Any, ...]]:
            for u in range(a.users):
                for r in range(RUNS_PER_USER):
                    at = self._at(u * RUNS_PER_USER + r)
                    yield (f"r-{u}-{r}", AGENT, user_name(u), company_of(u), "d",
                           WRITES_PER_RUN, at, at)
            for r in range(victim_runs):
                at = self._at(r)
                yield (f"vr-{r}", AGENT, VICTIM, VICTIM_COMPANY, "d", VICTIM_WRITES_PER_RUN,
                       at, at)

        def log_rows() -> Iterator[tuple[Any, ...]]:
            for u in range(a.users):
                first = self.first_note.get(u)
                for r in range(RUNS_PER_USER):
                    at = self._at(u * RUNS_PER_USER + r)
                    for s in range(1, WRITES_PER_RUN + 1):
                        note_id = first if r == 0 and s == 1 else None
                        yield (f"r-{u}-{r}", s, "p", "written" if note_id else "deduped",
                               note_id, "ok", 3.0, f"t-{u}-{r}-{s}", at)
            ids = self.victim_note_ids
            for r in range(victim_runs):
                at = self._at(r)
                for s in range(1, VICTIM_WRITES_PER_RUN + 1):
                    k = r * VICTIM_WRITES_PER_RUN + s - 1
                    note_id = ids[k] if k < len(ids) else None
                    yield (f"vr-{r}", s, "p", "written" if note_id else "deduped", note_id,
                           "ok", 3.0, f"vt-{r}-{s}", at)

        def trace_rows() -> Iterator[tuple[Any, ...]]:
            for u in range(a.users):
                for r in range(RUNS_PER_USER):
                    at = self._at(u * RUNS_PER_USER + r)
                    for s in range(1, WRITES_PER_RUN + 1):
                        yield ("memory_write", f"r-{u}-{r}", s, AGENT, at)
            for r in range(victim_runs):
                at = self._at(r)
                for s in range(1, VICTIM_WRITES_PER_RUN + 1):
                    yield ("memory_write", f"vr-{r}", s, AGENT, at)

        self.inserted["runs"] += _copy(self.conn, "runs", "run_id, agent_id, user_id, company_id, "
                                       "context_digest, applied_seq, created_at, updated_at",
                                       runs_rows())
        self.conn.commit()
        self.inserted["write_log"] += _copy(
            self.conn, "write_log", "run_id, seq, payload_digest, disposition, note_id, reason, "
            "duration_ms, task_id, applied_at", log_rows())
        self.conn.commit()
        self.inserted["trace_events"] += _copy(
            self.conn, "trace_events", "event, run_id, seq, agent_id, created_at", trace_rows())
        self.conn.commit()

    # --- conversations ---------------------------------------------------------------------
    def conversations(self) -> None:
        a = self.args

        def conv_rows() -> Iterator[tuple[Any, ...]]:
            for u in range(a.users):
                for c in range(CONVERSATIONS_PER_USER):
                    at = self._at(u * CONVERSATIONS_PER_USER + c)
                    yield (f"c-{u}-{c}", AGENT, user_name(u), company_of(u), f"r-{u}-{c}",
                           10**10, 10**10, at, at)
            for c in range(a.victim_conversations):
                at = self._at(c)
                yield (f"vc-{c}", AGENT, VICTIM, VICTIM_COMPANY, f"vr-{c}", 10**10, 10**10,
                       at, at)

        def message_rows() -> Iterator[tuple[Any, ...]]:
            for u in range(a.users):
                for c in range(CONVERSATIONS_PER_USER):
                    at = self._at(u * CONVERSATIONS_PER_USER + c)
                    for m in range(3):
                        yield (f"c-{u}-{c}-m{m}", f"c-{u}-{c}", "user" if m % 2 == 0 else
                               "assistant", f"message {m}: an ordinary question about plans",
                               f"r-{u}-{c}", at)
            for c in range(a.victim_conversations):
                at = self._at(c)
                for m in range(4):
                    yield (f"vc-{c}-m{m}", f"vc-{c}", "user" if m % 2 == 0 else "assistant",
                           f"message {m}: about my iguana", f"vr-{c}", at)

        self.inserted["conversations"] += _copy(
            self.conn, "conversations", "id, agent_id, user_id, company_id, agent_run_id, "
            "extracted_through_seq, last_message_seq, created_at, updated_at", conv_rows())
        self.conn.commit()
        self.inserted["conversation_messages"] += _copy(
            self.conn, "conversation_messages", "id, conversation_id, role, text, agent_run_id, "
            "created_at", message_rows())
        self.conn.commit()

    # --- the rest --------------------------------------------------------------------------
    def extras(self) -> None:
        a = self.args
        victim_runs = max(1, a.victim_writes // VICTIM_WRITES_PER_RUN)
        others = range(0, a.users, 10)
        examples = [(uuid.uuid4(), AGENT, user_name(u), company_of(u), "question", "answer",
                     f"c-{u}-0") for u in others]
        examples += [(uuid.uuid4(), AGENT, VICTIM, VICTIM_COMPANY, "about my iguana", "answer",
                      f"vc-{k % a.victim_conversations}") for k in range(a.victim_examples)]
        self.inserted["examples"] += _copy(
            self.conn, "examples", "id, agent_id, user_id, company_id, input_text, output_text, "
            "source_conversation_id", examples)
        candidates = [(uuid.uuid4(), f"r-{u}-1", 1, AGENT, user_name(u), company_of(u),
                       "reflection", "Context", "a reflection", f"ch-{u}") for u in others]
        victim_candidates = [(uuid.uuid4(), f"vr-{k % victim_runs}", 1, AGENT, VICTIM,
                              VICTIM_COMPANY, "reflection", "Context", f"iguana thought {k}",
                              f"vch-{k}") for k in range(a.victim_candidates)]
        self.inserted["memory_candidates"] += _copy(
            self.conn, "memory_candidates", "id, run_id, seq, agent_id, user_id, company_id, "
            "source, type, note, content_hash", candidates + victim_candidates)
        # The victim's candidate writes point at their candidates from the write log.
        with self.conn.cursor() as cur:
            cur.executemany(
                "UPDATE write_log SET disposition = 'candidate', candidate_id = %s "
                "WHERE run_id = %s AND seq = %s",
                [(row[0], row[1], VICTIM_WRITES_PER_RUN) for row in victim_candidates[
                    :victim_runs]])
        pending = [(self.first_note[u], 3, START) for u in others if u in self.first_note]
        pending += [(n, 2, START) for n in self.victim_note_ids[:1000]]
        self.inserted["note_access_pending"] += _copy(
            self.conn, "note_access_pending", "note_id, hits, last_accessed_at", pending)
        memos = [("pair", f"other-{k}", "distinct", "bench", [f"h-x{k}", f"h-y{k}"])
                 for k in range(1000)]
        memos += [("pair", f"victim-{k}", "distinct", "bench",
                   [self.victim_hashes[k], f"h-z{k}"])
                  for k in range(min(200, len(self.victim_hashes)))]
        self.inserted["judge_memo"] += _copy(
            self.conn, "judge_memo", "kind, key, decision, judge, text_hashes", memos)
        letters = [(f"dl-{k}", "memory.write", "undecodable",
                    f'{{"run": {{"user_id": "{user_name(k)}"}}}}') for k in range(1000)]
        letters += [(f"vdl-{k}", "memory.write", "undecodable",
                     f'{{"run": {{"user_id": "{VICTIM}"}}}}') for k in range(5)]
        self.inserted["dead_letters"] += _copy(
            self.conn, "dead_letters", "task_id, task_name, reason, body", letters)
        chains = [(f"vp-{k}", f'[{{"args": [{{"run_id": "vr-{k}", "agent_id": "{AGENT}", '
                   f'"user_id": "{VICTIM}"}}]}}]') for k in range(5)]
        chains += [(f"op-{k}", f'[{{"args": [{{"run_id": "r-{k}-0", "agent_id": "{AGENT}", '
                    f'"user_id": "{user_name(k)}"}}]}}]') for k in range(100)]
        self.inserted["chain_continuations"] += _copy(
            self.conn, "chain_continuations", "parent_task_id, chain", chains)
        self.conn.commit()


# --- the concurrent writer (its own process) ---------------------------------------------------

class SyntheticEmbedder:
    """A vector per text from a hash-seeded generator: the loaded model's name and size."""

    model_name = MODEL

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        out = []
        for text in texts:
            rng = np.random.default_rng(abs(hash(text)) % (2**32))
            v = rng.standard_normal(DIMS).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return out


def writer_main(database_url: str, users: int, interval: float, stop: Any, out: Any) -> None:
    """Apply writes for other users, one per `interval`, until `stop`; send back
    (start epoch, latency ms, disposition) per write."""
    from db.connector import get_database
    from worker.settings import Settings
    from worker.writes.apply import WriteDeps, WriteResult, apply_memory_write

    settings = Settings(database_url=database_url, redis_url="redis://unused")
    deps = WriteDeps(db=get_database(database_url), settings=settings,
                     embedder=SyntheticEmbedder())
    rng = np.random.default_rng(5)
    records: list[tuple[float, float, str]] = []
    i, run_no, user = 0, 0, 0
    next_at = time.perf_counter()
    while not stop.is_set():
        seq = i % WRITES_PER_RUN + 1
        if seq == 1:
            run_no, user = i // WRITES_PER_RUN, int(rng.integers(users))
        run = {"run_id": f"bw-{run_no}", "agent_id": AGENT, "user_id": user_name(user),
               "company_id": company_of(user)}
        text = (f"User prefers weekly digest variant {i} with {int(rng.integers(1000))} "
                f"items in the summary")
        began, t0 = time.time(), time.perf_counter()
        result = apply_memory_write(deps, run, {"note": text, "type": "Preference"}, seq)
        latency = (time.perf_counter() - t0) * 1000
        disposition = result.disposition if isinstance(result, WriteResult) else "waiting"
        records.append((began, latency, str(disposition)))
        i += 1
        next_at += interval
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        else:
            next_at = time.perf_counter()  # behind: no burst to catch up
    out.put(records)


# --- measuring the erasure ------------------------------------------------------------------

def instrument() -> dict[str, list[float]]:
    """Time each erasure step (summed over batches and passes) without changing it."""
    from worker.erasure import erase as erase_mod

    timings: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0.0])
    cls = erase_mod._Pass
    plain, batches = cls._plain, cls._batches

    def timed_plain(self: Any, table: str) -> None:
        self._bench_label = table
        try:
            plain(self, table)
        finally:
            self._bench_label = None

    def timed_batches(self: Any, step: Any) -> None:
        label = getattr(self, "_bench_label", None) or step.__name__

        def timed(conn: Any) -> int:
            started = time.perf_counter()
            changed = step(conn)
            took = time.perf_counter() - started
            entry = timings[label]
            entry[0] += took
            entry[1] += 1
            entry[2] = max(entry[2], took)
            return changed
        batches(self, timed)

    cls._plain, cls._batches = timed_plain, timed_batches  # type: ignore[method-assign]
    return timings


def victim_left(conn: psycopg.Connection, victim_ids: list[uuid.UUID]) -> dict[str, int]:
    checks = {
        "notes": ("SELECT count(*) FROM notes WHERE user_id = %s OR id = ANY(%s)",
                  (VICTIM, victim_ids)),
        "note_events": ("SELECT count(*) FROM note_events WHERE actor = 'bench-victim'", ()),
        "note_access_pending": ("SELECT count(*) FROM note_access_pending "
                                "WHERE note_id = ANY(%s)", (victim_ids,)),
        "runs": ("SELECT count(*) FROM runs WHERE user_id = %s OR run_id LIKE 'vr-%%'",
                 (VICTIM,)),
        "write_log": ("SELECT count(*) FROM write_log WHERE run_id LIKE 'vr-%%'", ()),
        "trace_events": ("SELECT count(*) FROM trace_events WHERE run_id LIKE 'vr-%%'", ()),
        "conversations": ("SELECT count(*) FROM conversations WHERE user_id = %s "
                          "OR id LIKE 'vc-%%'", (VICTIM,)),
        "conversation_messages": ("SELECT count(*) FROM conversation_messages "
                                  "WHERE conversation_id LIKE 'vc-%%'", ()),
        "examples": ("SELECT count(*) FROM examples WHERE user_id = %s", (VICTIM,)),
        "memory_candidates": ("SELECT count(*) FROM memory_candidates WHERE user_id = %s "
                              "OR run_id LIKE 'vr-%%'", (VICTIM,)),
        "judge_memo": ("SELECT count(*) FROM judge_memo WHERE key LIKE 'victim-%%'", ()),
        "dead_letters": ("SELECT count(*) FROM dead_letters WHERE task_id LIKE 'vdl-%%'", ()),
        "chain_continuations": ("SELECT count(*) FROM chain_continuations "
                                "WHERE parent_task_id LIKE 'vp-%%'", ()),
        "principals": ("SELECT count(*) FROM principals WHERE folded_id = %s", (VICTIM,)),
        "provenance naming it": ("SELECT count(*) FROM notes WHERE source_agent_run_id "
                                 "LIKE 'vr-%%' OR source_conversation_id LIKE 'vc-%%'", ()),
    }
    return {name: int(conn.execute(sql, params).fetchone()[0])  # type: ignore[index]
            for name, (sql, params) in checks.items()}


def others_notes(conn: psycopg.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM notes WHERE user_id IS DISTINCT FROM %s",
                            (VICTIM,)).fetchone()[0])  # type: ignore[index]


def probe_note_delete(db: Any, count: int = 50) -> tuple[float, float]:
    """ms per note of the erasure's note delete (`delete_notes`) of another user's notes,
    on the schema and with 0017's two foreign-key indexes on notes dropped, each in a
    transaction rolled back: what those indexes save per note at this size."""
    from sqlalchemy import text

    from db.queries.erasure import delete_notes

    def ids_of(conn: Any, user: int) -> list[Any]:
        return list(conn.execute(text("SELECT id FROM notes WHERE user_id = :u LIMIT :n"),
                                 {"u": user_name(user), "n": count}).scalars())

    out = []
    with db.engine.connect() as conn:
        for drop in (False, True):
            tx = conn.begin()
            if drop:
                conn.execute(text("DROP INDEX notes_consolidated_into_idx, "
                                  "notes_superseded_by_idx"))
            ids = ids_of(conn, 3 if drop else 2)
            started = time.perf_counter()
            delete_notes(conn, ids)
            out.append((time.perf_counter() - started) * 1000 / max(1, len(ids)))
            tx.rollback()
    return out[0], out[1]


def latency_row(label: str, values: list[float]) -> str:
    if not values:
        return f"| {label} | 0 | - | - | - | - |"
    return (f"| {label} | {len(values)} | {pct(values, 0.5):.1f} | {pct(values, 0.99):.1f} | "
            f"{max(values):.1f} | {statistics.fmean(values):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="100k notes, 1,000 users; victim 2,000 notes, 200 conversations, "
                             "10,000 write-log rows")
    parser.add_argument("--notes", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--victim-notes", type=int, default=10_000)
    parser.add_argument("--victim-conversations", type=int, default=1_000)
    parser.add_argument("--victim-writes", type=int, default=50_000,
                        help="the victim's write-log rows (ten per run)")
    parser.add_argument("--victim-examples", type=int, default=200)
    parser.add_argument("--victim-candidates", type=int, default=500)
    parser.add_argument("--write-interval", type=float, default=0.05,
                        help="seconds between two concurrent writes (20 a second)")
    parser.add_argument("--baseline-s", type=float, default=60.0)
    parser.add_argument("--warmup-s", type=float, default=10.0)
    args = parser.parse_args()
    if args.quick:
        args.notes, args.users, args.victim_notes = 100_000, 1_000, 2_000
        args.victim_conversations, args.victim_writes = 200, 10_000
        args.victim_examples, args.victim_candidates = 50, 100
        args.baseline_s, args.warmup_s = 20.0, 5.0

    from db.connector import dispose_all, get_database
    from db.migrate import migrate
    from worker.erasure.erase import erase_subject
    from worker.erasure.redis_keys import RedisEraser
    from worker.erasure.subject import Subject
    from worker.local.embedded import EmbeddedStack

    data_dir = Path(tempfile.mkdtemp(prefix="memory-erasure-bench-"))
    stack = EmbeddedStack(data_dir)
    env = stack.start(need_postgres=True, need_redis=True)
    database_url, redis_url = env["DATABASE_URL"], env["REDIS_URL"]
    args.database_url = database_url
    writer: Any = None
    try:
        migrate(database_url)
        began = time.perf_counter()
        load_s: dict[str, float] = {}
        with psycopg.connect(database_url) as conn:
            register_vector(conn)
            loader = Loader(conn, args)
            for name, step in (("notes", loader.notes), ("note_events", loader.note_events),
                               ("runs", loader.runs), ("conversations", loader.conversations),
                               ("extras", loader.extras)):
                t = time.perf_counter()
                step()
                load_s[name] = time.perf_counter() - t
                print(f"loaded {name} in {load_s[name]:.0f} s", file=sys.stderr, flush=True)
        with psycopg.connect(database_url, autocommit=True) as conn:
            t = time.perf_counter()
            conn.execute("VACUUM (ANALYZE)")
            conn.execute("CHECKPOINT")
            load_s["vacuum"] = time.perf_counter() - t
            size_mb = int(conn.execute("SELECT pg_database_size(current_database())")
                          .fetchone()[0]) // (1 << 20)  # type: ignore[index]
            others_before = others_notes(conn)
            total_notes = int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])  # type: ignore[index]
        load_total = time.perf_counter() - began
        print(f"loaded in {load_total:.0f} s ({size_mb:,} MB): {dict(loader.inserted)}",
              file=sys.stderr, flush=True)

        ctx = mp.get_context("spawn")
        stop, results = ctx.Event(), ctx.Queue()
        writer = ctx.Process(target=writer_main, args=(database_url, args.users,
                                                       args.write_interval, stop, results))
        writer.start()
        time.sleep(args.warmup_s)
        baseline_from = time.time()
        time.sleep(args.baseline_s)

        timings = instrument()
        db = get_database(database_url)
        eraser = RedisEraser.from_url(redis_url, MODEL)
        print("erasing", file=sys.stderr, flush=True)
        erase_from = time.time()
        t = time.perf_counter()
        report = erase_subject(db, Subject("user", VICTIM), requested_by="bench/erasure.py",
                               redis=eraser)
        erase_s = time.perf_counter() - t
        erase_to = time.time()
        print(f"erased in {erase_s:.1f} s", file=sys.stderr, flush=True)
        time.sleep(2)
        stop.set()
        records: list[tuple[float, float, str]] = results.get(timeout=120)
        writer.join(timeout=60)

        with psycopg.connect(database_url, autocommit=True) as conn:
            left = victim_left(conn, loader.victim_note_ids)
            others_after = others_notes(conn)
        # Only `written` adds a note (`superseded-own` rewrites the run's own note in place).
        created = sum(1 for _, _, d in records if d == "written")
        baseline = [ms for at, ms, _ in records if baseline_from <= at < erase_from]
        during = [ms for at, ms, _ in records if erase_from <= at <= erase_to]
        bad = sorted({d for _, _, d in records} - {"written", "superseded-own", "deduped"})

        lines = [
            "Schema: the migrations' (0017 included). "
            f"Database: {total_notes:,} notes ({args.users:,} users, 2 % "
            f"company-wide and agent-wide), {size_mb:,} MB; loaded in {load_total:.0f} s ("
            + ", ".join(f"{k} {v:.0f} s" for k, v in load_s.items()) + ").",
            "",
            "| erasure of one user | value |", "|---|---|",
            f"| wall time of `erase_subject` | {erase_s:.1f} s |",
            f"| passes | {report.passes} |",
        ]
        lines += [f"| {table} | {count:,} |" for table, count in sorted(report.counts.items())
                  if count]
        lines += ["", "| erasure step | s (all batches) | batches | longest batch s |",
                  "|---|---|---|---|"]
        lines += [f"| {label} | {v[0]:.2f} | {int(v[1])} | {v[2]:.3f} |"
                  for label, v in timings.items()]
        lines += ["", f"| concurrent writes (other users, one per {args.write_interval * 1000:.0f}"
                  " ms) | n | p50 ms | p99 ms | max ms | mean ms |", "|---|---|---|---|---|---|",
                  latency_row(f"baseline, {args.baseline_s:.0f} s without an erasure", baseline),
                  latency_row("during the erasure", during)]
        lines += ["", "Check: victim rows left "
                  + ("none" if not any(left.values()) else str(left))
                  + f"; other users' and shared notes {others_before:,} before, "
                  f"{others_after:,} after, {created} added by the concurrent writes ("
                  + ("as expected" if others_after == others_before + created else "MISMATCH")
                  + ")" + (f"; unexpected write outcomes: {bad}" if bad else "") + "."]
        with_ms, without_ms = probe_note_delete(db)
        lines += ["", f"Probe (transactions rolled back): deleting a note as the erasure "
                  f"does costs {with_ms:.1f} ms on this schema and {without_ms:.0f} ms "
                  f"without 0017's two foreign-key indexes on notes, at this size: "
                  f"{without_ms * args.victim_notes / 1000:,.0f} s for the victim's "
                  f"{args.victim_notes:,} notes."]
        table = "\n".join(lines) + "\n"
        print(table)
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        name = "erasure" + ("_quick" if args.quick else "")
        (out / f"{name}.md").write_text(table)
    finally:
        if writer is not None and writer.is_alive():
            writer.terminate()
        dispose_all()
        stack.stop()
        shutil.rmtree(data_dir, ignore_errors=True)  # gigabytes at full size


if __name__ == "__main__":
    main()
