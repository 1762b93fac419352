"""Read-path benchmark: context build latency and recall@5 at 10k, 100k and 1M notes.

    .venv/bin/python bench/read_path.py            # embedded Postgres, data in a temp folder
    .venv/bin/python bench/read_path.py --sizes 10000,100000

Notes are spread over 10,000 users (100 companies, one agent). Two mixes: every note
user-level (Agent + User + Company), and 2 % shared notes (1.9 % company-level over 100
companies, 0.1 % agent-wide — at 1M that is ~190 company notes and ~1,000 agent-wide notes
every request also sees). Vectors
are drawn around 200 topic centres so that a query has genuinely similar notes. Latency is
`build_context` end to end (configuration read, scoped query, rendering, handing access stats
to the background recorder) with the query vector precomputed; the MiniLM embedding of an
input is measured separately. Recall@5 compares the top 5 with a brute-force numpy search over
the notes the request may see, under custom plans and under forced generic plans.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

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

    def vector_near(self, topic: int, noise: float = 0.035) -> np.ndarray:
        v = self.centres[topic] + self.rng.standard_normal(DIMS).astype(np.float32) * noise
        return v / np.linalg.norm(v)

    def grow(self, count: int) -> list[tuple]:
        rows = []
        kinds = self.rng.random(count)
        for i in range(count):
            user = int(self.rng.integers(USERS))
            company = user % COMPANIES
            if kinds[i] < self.shared_fraction * 0.05:
                user, company = -1, -1
            elif kinds[i] < self.shared_fraction:
                user = -1
            vector = self.vector_near(int(self.rng.integers(TOPICS)))
            note_id = uuid.uuid4()
            self.ids.append(note_id)
            self.vectors.append(vector)
            self.users.append(user)
            self.companies.append(company)
            rows.append((note_id, "A", None if user < 0 else f"user-{user}",
                         None if company < 0 else f"company-{company}", "Context",
                         f"note {len(self.ids)}", note_id.hex, "Active", vector, MODEL))
        return rows

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


def load(database_url: str, rows: Sequence[tuple]) -> None:
    with psycopg.connect(database_url) as conn:
        register_vector(conn)
        with conn.cursor() as cur, cur.copy(
            "COPY notes (id, agent_id, user_id, company_id, type, note, content_hash, status, "
            "embedding, embedding_model) FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row(row)
        conn.commit()
        # Steady state, as autovacuum would leave it: hint bits and visibility map set,
        # statistics current, dirty pages flushed (not written back during the measurement).
        conn.autocommit = True
        conn.execute("VACUUM (ANALYZE) notes")
        conn.execute("CHECKPOINT")


class PrecomputedEmbedder:
    """Hands back the query vectors the benchmark drew (embedding measured separately)."""

    model_name = MODEL

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [self.vectors[t] for t in texts]


def measure(database_url: str, corpus: Corpus, queries: int) -> dict[str, float]:
    from db.connector import get_database
    from db.queries import retrieval as q
    from db.scope import RequestScope, ScopeConfig
    from worker.context import ContextDeps, build_context
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
        embedder.vectors[text] = corpus.vector_near(int(rng.integers(TOPICS)))
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
            got = q.relevant_notes(conn, request, ScopeConfig(), query=embedder.vectors[text],
                                   embedding_model=MODEL, min_similarity=-1.0, per_status=5,
                                   now=now)
            hits += len(truth & {n.id for n in got})
            conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
            for _ in range(3):  # statements are prepared on first use: this plan is generic
                got = q.relevant_notes(conn, request, ScopeConfig(),
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
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    from db.migrate import migrate
    from worker.embedded import EmbeddedPostgres

    data_dir = Path(tempfile.mkdtemp(prefix="memory-read-bench-"))
    pg = None
    database_url = os.environ.get("DATABASE_URL")
    if not database_url:
        pg = EmbeddedPostgres(data_dir / "pg")
        database_url = pg.start()
    try:
        migrate(database_url)
        lines = ["| notes | shared notes | p50 ms | p95 ms | mean ms | notes injected | "
                 "recall@5 | recall@5 (generic plan) | load s |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for mix in [float(m) for m in args.mixes.split(",")]:
            with psycopg.connect(database_url, autocommit=True) as conn:
                conn.execute("TRUNCATE notes CASCADE")
            corpus = Corpus(mix)
            for size in sizes:
                started = time.perf_counter()
                load(database_url, corpus.grow(size - len(corpus.ids)))
                loaded = time.perf_counter() - started
                result = measure(database_url, corpus, args.queries)
                lines.append(
                    f"| {size:,} | {mix:.0%} | {result['p50']:.2f} | {result['p95']:.2f} | "
                    f"{result['mean']:.2f} | {result['injected']:.1f} | "
                    f"{result['recall']:.3f} | {result['generic_recall']:.3f} | {loaded:.0f} |")
                print(lines[-1], flush=True)
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
