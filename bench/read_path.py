"""Read-path benchmark: context build latency and recall@5 at 10k, 100k and 1M notes.

    .venv/bin/python bench/read_path.py            # embedded Postgres, data in a temp folder
    .venv/bin/python bench/read_path.py --sizes 10000,100000
    .venv/bin/python bench/read_path.py --data-dir /tmp/readbench-pg   # keep and reuse the data

Notes are spread over 10,000 users (100 companies, one agent). Two mixes: every note
user-level (Agent + User + Company), and 2 % shared notes (1.9 % company-level over 100
companies, 0.1 % agent-wide — at 1M that is ~190 company notes and ~1,000 agent-wide notes
every request also sees). Vectors
are drawn around 200 topic centres so that a query has genuinely similar notes. Latency is
`build_context` end to end (configuration read, scoped query, rendering, handing access stats
to the background recorder) with the query vector precomputed; the MiniLM embedding of an
input is measured separately. Recall@5 compares the top 5 with a brute-force numpy search over
the notes the request may see, under custom plans and under forced generic plans.

Each (mix, size) is measured in its own database, loaded from a deterministic corpus (seeded
vectors and ids; a note depends only on its position) and dropped once measured. With
`--data-dir` the embedded server's data folder is kept together with a copy of each loaded
database; a later run with the same corpus starts from a file copy of it (pending migrations
applied) instead of reloading — the same state as right after a load, never one left behind
by an earlier run's access bumps.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

DIMS = 384
USERS = 10_000
COMPANIES = 100
TOPICS = 200
MODEL = "bench-topics"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Corpus:
    """All generated notes, kept in memory as the brute-force oracle."""

    def __init__(self, shared_fraction: float, seed: int = 7) -> None:
        self.shared_fraction = shared_fraction
        self.rng = np.random.default_rng(seed)
        centres = self.rng.standard_normal((TOPICS, DIMS)).astype(np.float32)
        self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        self.vectors: list[np.ndarray] = []
        self.users: list[int] = []  # -1: no user
        self.companies: list[int] = []  # -1: no company
        self.ids: list[uuid.UUID] = []
        # Ids from their own seeded stream: the corpus (and so the recall oracle) can be rebuilt
        # exactly for a kept database, and the vector/scope draws are the same as before.
        self.id_rng = np.random.default_rng(seed + 1)

    def vector_near(self, topic: int, noise: float = 0.035,
                    rng: np.random.Generator | None = None) -> np.ndarray:
        """A vector around a topic centre; queries pass their own `rng`, so measuring never
        shifts the corpus stream (the notes at a position are the same in every run)."""
        rng = self.rng if rng is None else rng
        v = self.centres[topic] + rng.standard_normal(DIMS).astype(np.float32) * noise
        return v / np.linalg.norm(v)

    def grow(self, count: int) -> None:
        # Every draw is per note, so a note depends only on its position: the first 100,000
        # notes are the same whichever sizes a run asks for (kept databases stay reusable).
        for _ in range(count):
            kind = self.rng.random()
            user = int(self.rng.integers(USERS))
            company = user % COMPANIES
            if kind < self.shared_fraction * 0.05:
                user, company = -1, -1
            elif kind < self.shared_fraction:
                user = -1
            vector = self.vector_near(int(self.rng.integers(TOPICS)))
            self.ids.append(uuid.UUID(bytes=self.id_rng.bytes(16), version=4))
            self.vectors.append(vector)
            self.users.append(user)
            self.companies.append(company)

    def rows(self, size: int) -> Iterator[tuple]:
        for i in range(size):
            user, company, note_id = self.users[i], self.companies[i], self.ids[i]
            yield (note_id, "A", None if user < 0 else f"user-{user}",
                   None if company < 0 else f"company-{company}", "Context",
                   f"note {i + 1}", note_id.hex, "Active", self.vectors[i], MODEL)

    def fingerprint(self, size: int) -> str:
        digest = hashlib.sha256(f"{self.shared_fraction}:{size}".encode())
        for note_id in self.ids[:size]:
            digest.update(note_id.bytes)
        digest.update(self.vectors[size - 1].tobytes())  # and the seeded vector draws
        return digest.hexdigest()

    def exact_top(self, query: np.ndarray, user: int, k: int = 5) -> list[uuid.UUID]:
        users = np.asarray(self.users)
        companies = np.asarray(self.companies)
        company = user % COMPANIES
        visible = (users == user) | ((users == -1) & ((companies == company) | (companies == -1)))
        index = np.flatnonzero(visible)
        if index.size == 0:
            return []
        matrix = np.stack([self.vectors[i] for i in index])
        order = np.argsort(-(matrix @ query), kind="stable")[:k]
        return [self.ids[index[i]] for i in order]


def load(database_url: str, rows: Iterable[tuple], fingerprint: str) -> None:
    with psycopg.connect(database_url) as conn:
        register_vector(conn)
        conn.execute("TRUNCATE notes CASCADE")
        with conn.cursor() as cur, cur.copy(
            "COPY notes (id, agent_id, user_id, company_id, type, note, content_hash, status, "
            "embedding, embedding_model) FROM STDIN"
        ) as copy:
            started = time.monotonic()
            for count, row in enumerate(rows, 1):
                copy.write_row(row)
                if count % 100_000 == 0:  # a 1M load takes minutes: say how far it got
                    print(f"  loaded {count:,} notes ({time.monotonic() - started:.0f} s)",
                          file=sys.stderr, flush=True)
        print("  settling (VACUUM ANALYZE, CHECKPOINT)", file=sys.stderr, flush=True)
        conn.execute("CREATE TABLE IF NOT EXISTS bench_corpus (fingerprint text NOT NULL)")
        conn.execute("DELETE FROM bench_corpus")
        conn.execute("INSERT INTO bench_corpus VALUES (%s)", [fingerprint])
        conn.commit()
    settle(database_url)


def settle(database_url: str) -> None:
    """Steady state, as autovacuum would leave it: hint bits and visibility map set,
    statistics current, dirty pages flushed (not written back during the measurement)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) notes")
        conn.execute("CHECKPOINT")


def loaded_fingerprint(database_url: str) -> str | None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('bench_corpus')").fetchone() == (None,):
            return None
        row = conn.execute("SELECT fingerprint FROM bench_corpus").fetchone()
        return None if row is None else str(row[0])


def prepare_database(pg: Any, corpus: Corpus, size: int, *, keep: bool) -> float | None:
    """Make `pg.database` hold `corpus`'s first `size` notes, fully migrated, as right after a
    load; returns the load time, or None when a kept copy was reused.

    With `keep`, the loaded state is also kept as `<name>_loaded` and later runs start from a
    file copy of it: a run's access bumps (dead rows, index growth, visibility-map bits)
    never carry over into the next run's measurement. The measured copy is dropped after
    each measurement either way."""
    from db.migrate import migrate
    from db.migration_files import MigrationError

    name = pg.database
    pristine = f"{name}_loaded"
    fingerprint = corpus.fingerprint(size)
    admin = pg.admin_url()

    def url_of(database: str) -> str:
        return make_url(admin).set(database=database).render_as_string(hide_password=False)

    def recreate(target: str, template: str | None = None) -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{target}" WITH (FORCE)')
            clone = f' TEMPLATE "{template}" STRATEGY FILE_COPY' if template else ""
            conn.execute(f'CREATE DATABASE "{target}"{clone}')

    if keep:
        with psycopg.connect(admin, autocommit=True) as conn:
            kept = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                [pristine]).fetchone() is not None
        stored = loaded_fingerprint(url_of(pristine)) if kept else None
        if stored == fingerprint:
            recreate(name, template=pristine)
            try:
                applied = migrate(url_of(name))
            except MigrationError as exc:  # an applied migration was edited: load afresh
                print(f"{name}: {exc}; reloading", file=sys.stderr)
            else:
                if applied:  # keep the migrated state as the new starting point
                    settle(url_of(name))
                    recreate(pristine, template=name)
                return None
        elif kept:
            print(f"{name}: kept corpus differs; reloading", file=sys.stderr)
    recreate(name)
    migrate(url_of(name))
    started = time.perf_counter()
    load(url_of(name), corpus.rows(size), fingerprint)
    loaded = time.perf_counter() - started
    if keep:
        recreate(pristine, template=name)
    return loaded


class PrecomputedEmbedder:
    """Hands back the query vectors the benchmark drew (embedding measured separately)."""

    model_name = MODEL

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [self.vectors[t] for t in texts]


def measure(database_url: str, corpus: Corpus, queries: int) -> dict[str, float]:
    from db.connector import get_database
    from db.queries.retrieval import relevant_notes
    from db.scope import RequestScope, ScopeConfig
    from worker.reads.context import ContextDeps, build_context
    from worker.settings import Settings

    embedder = PrecomputedEmbedder()
    settings = Settings(database_url=database_url, relevant_min_similarity=0.5)
    db = get_database(database_url)
    deps = ContextDeps(db=db, settings=settings, embedder=embedder)
    rng = np.random.default_rng(11)
    cases = []
    for i in range(queries + 20):
        user = int(rng.integers(USERS))
        text = f"query {i}"
        embedder.vectors[text] = corpus.vector_near(int(rng.integers(TOPICS)), rng=rng)
        cases.append((RequestScope("A", f"user-{user}", f"company-{user % COMPANIES}"), text,
                      user))
    timings, found = [], 0
    for i, (request, text, _user) in enumerate(cases):
        started = time.perf_counter()
        context = build_context(deps, request, text)
        elapsed = (time.perf_counter() - started) * 1000
        if i >= 20:  # the first 20 warm pools, plans and caches
            timings.append(elapsed)
            found += len(context.notes)
    hits = generic_hits = expected = 0
    now = datetime.now(UTC)
    for request, text, user in cases[20:]:
        truth = set(corpus.exact_top(embedder.vectors[text], user))
        expected += len(truth)
        with db.connect() as conn:
            got = relevant_notes(conn, request, ScopeConfig(), query=embedder.vectors[text],
                                 embedding_model=MODEL, min_similarity=-1.0, per_status=5,
                                 now=now)
            hits += len(truth & {n.id for n in got})
            conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
            for _ in range(3):  # statements are prepared on first use: this plan is generic
                got = relevant_notes(conn, request, ScopeConfig(),
                                     query=embedder.vectors[text], embedding_model=MODEL,
                                     min_similarity=-1.0, per_status=5, now=now)
            generic_hits += len(truth & {n.id for n in got})
            conn.exec_driver_sql("RESET plan_cache_mode")
            conn.rollback()
    return {
        "p50": pct(timings, 0.5), "p95": pct(timings, 0.95), "mean": statistics.fmean(timings),
        "recall": hits / max(1, expected), "generic_recall": generic_hits / max(1, expected),
        "injected": found / queries,
    }


def embedding_latency() -> tuple[float, float]:
    from worker.embeddings import LocalEmbedder

    embedder = LocalEmbedder()
    samples = [f"What chart should I use for the quarterly revenue review {i}?" for i in range(60)]
    embedder.embed(samples[:5])
    timings = []
    for text in samples:
        started = time.perf_counter()
        embedder.embed([text])
        timings.append((time.perf_counter() - started) * 1000)
    return pct(timings, 0.5), pct(timings, 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--mixes", default="0,0.02",
                        help="shares of notes that are company- or agent-wide")
    parser.add_argument("--data-dir", help="keep the embedded Postgres here, with a copy of "
                        "each loaded database, and start later runs from those copies")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    from db.migrate import migrate
    from worker.local.embedded import EmbeddedPostgres

    data_dir = (Path(args.data_dir) if args.data_dir
                else Path(tempfile.mkdtemp(prefix="memory-read-bench-")))
    pg = None
    database_url = os.environ.get("DATABASE_URL")
    if not database_url:
        pg = EmbeddedPostgres(data_dir / "pg")
        pg.start()
    try:
        lines = ["| notes | shared notes | p50 ms | p95 ms | mean ms | notes injected | "
                 "recall@5 | recall@5 (generic plan) | load s |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for mix in [float(m) for m in args.mixes.split(",")]:
            corpus = Corpus(mix)
            for size in sizes:
                corpus.grow(size - len(corpus.ids))
                if pg is not None:  # one database per (mix, size)
                    pg.database = f"bench_{round(mix * 1000)}_{size}"
                    loaded = prepare_database(pg, corpus, size, keep=bool(args.data_dir))
                    database_url = make_url(pg.admin_url()).set(
                        database=pg.database).render_as_string(hide_password=False)
                else:  # a given server: one database, reloaded for each size
                    assert database_url is not None
                    migrate(database_url)
                    started = time.perf_counter()
                    load(database_url, corpus.rows(size), corpus.fingerprint(size))
                    loaded = time.perf_counter() - started
                result = measure(database_url, corpus, args.queries)
                lines.append(
                    f"| {size:,} | {mix:.0%} | {result['p50']:.2f} | {result['p95']:.2f} | "
                    f"{result['mean']:.2f} | {result['injected']:.1f} | "
                    f"{result['recall']:.3f} | {result['generic_recall']:.3f} | "
                    f"{'reused' if loaded is None else f'{loaded:.0f}'} |")
                print(lines[-1], flush=True)
                if pg is not None:  # measured: free the disk (and page cache) it takes
                    from db.connector import dispose_all
                    from worker.reads.context import flush_all_recorders

                    flush_all_recorders()  # pending access bumps go to this database
                    dispose_all()
                    with psycopg.connect(pg.admin_url(), autocommit=True) as conn:
                        conn.execute(f'DROP DATABASE "{pg.database}" WITH (FORCE)')
        p50, p95 = embedding_latency()
        table = "\n".join(lines) + (
            f"\n\nInput embedding (MiniLM, one sentence, CPU): p50 {p50:.1f} ms, p95 {p95:.1f} ms"
            " — not included above.\n")
        print(table)
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / "read_path.md").write_text(table)
    finally:
        if pg is not None:
            pg.stop()


if __name__ == "__main__":
    main()
