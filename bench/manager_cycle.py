"""Memory Manager benchmark: hardening throughput and model calls at 1k, 10k and 100k
provisional notes, and a full cycle with maintenance over the resulting pool.

    .venv/bin/python bench/manager_cycle.py                 # embedded Postgres in a temp dir
    .venv/bin/python bench/manager_cycle.py --sizes 1000,10000

Corpus: one scope per user (agent A, user u, company u % 100), ten provisional notes per
scope and two Active notes already there. Nine provisional notes in ten have no near
neighbour (random directions); one in ten is close to an Active note of its scope (cosine
≈ 0.8): half of those are clear paraphrases the built-in judge decides alone, half are
rewordings it is unsure of and hands to the model judge. The model judge is a local
OpenAI-compatible stub (tests/openai_stub.py) that answers "duplicate"; a run with the
built-in judge alone gives the throughput figure. Vectors are synthetic (no MiniLM) so the
numbers measure the manager, not the embedder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

DIMS = 384
MODEL = "bench-synthetic"
PER_SCOPE = 10
THINGS = ["bar charts", "dark mode", "metric units", "short answers", "morning meetings",
          "Python examples", "email summaries", "tabular data", "German translations",
          "weekly reports"]
PURPOSES = ["dashboards", "reports", "travel plans", "code reviews", "invoices", "slides",
            "release notes", "budgets", "meeting notes", "newsletters"]


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def near(rng: np.random.Generator, v: np.ndarray, noise: float = 0.75) -> np.ndarray:
    w = v + unit(rng) * noise
    return (w / np.linalg.norm(w)).astype(np.float32)


def corpus(size: int, seed: int = 11):
    """(provisional rows, active rows) as COPY tuples."""
    from worker.normalize import content_hash

    rng = np.random.default_rng(seed)
    provisional, active = [], []
    base = datetime.now(UTC) - timedelta(hours=1)
    for i in range(size):
        user = i // PER_SCOPE
        slot = i % PER_SCOPE
        scope = ("A", f"u{user}", f"c{user % 100}")
        created = base + timedelta(microseconds=i)
        thing, purpose = THINGS[user % 10], PURPOSES[(user // 10) % 10]
        if slot == 0:  # the scope's two Active notes, one of them the near partner
            partner = unit(rng)
            text = f"User likes {thing} more than anything else for {purpose}"
            active.append((uuid.uuid4(), *scope, "Preference", text, content_hash(text),
                           "Active", "Agent", partner, MODEL, created - timedelta(days=1)))
            other = f"User works in time zone UTC+{user % 12}"
            active.append((uuid.uuid4(), *scope, "Context", other, content_hash(other),
                           "Active", "Agent", unit(rng), MODEL, created - timedelta(days=1)))
            scope_partner = partner
        if slot == PER_SCOPE - 1:  # one in ten: close to the Active partner
            if user % 2 == 0:
                text = f"The user likes {thing} more than anything else for {purpose}."
            else:
                text = f"When showing {purpose}, the user would rather see {thing}"
            vector = near(rng, scope_partner)
        else:
            text = f"User fact {slot} of {user}: {THINGS[slot]} matter for {PURPOSES[slot]}"
            vector = unit(rng)
        provisional.append((uuid.uuid4(), *scope, "Preference", text, content_hash(text),
                            "Provisional", "Agent", vector, MODEL, created))
    return provisional, active


def load(database_url: str, size: int) -> None:
    provisional, active = corpus(size)
    with psycopg.connect(database_url) as conn:
        register_vector(conn)
        conn.execute("TRUNCATE notes, note_events, judge_memo, manager_cycles, trace_events "
                     "CASCADE")
        with conn.cursor() as cur, cur.copy(
            "COPY notes (id, agent_id, user_id, company_id, type, note, content_hash, status, "
            "author_type, embedding, embedding_model, created_at) FROM STDIN"
        ) as copy:
            for row in active + provisional:
                copy.write_row(row)
        conn.execute("UPDATE notes SET expires_at = created_at + interval '7 days' "
                     "WHERE status = 'Provisional'")
        conn.commit()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) notes")


class SyntheticEmbedder:
    """Consolidated notes need a vector; any fixed direction will do for timing."""

    model_name = MODEL

    def embed(self, texts):
        rng = np.random.default_rng(len(texts))
        return [unit(rng) for _ in texts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    from db.connector import get_database
    from db.migrate import migrate
    from tests.openai_stub import OpenAIStub
    from worker.local.embedded import EmbeddedPostgres
    from worker.manager.cycle import run_manager_cycle
    from worker.settings import Settings

    data_dir = Path(tempfile.mkdtemp(prefix="memory-manager-bench-"))
    pg = EmbeddedPostgres(data_dir / "pg")
    database_url = pg.start()
    migrate(database_url)
    db = get_database(database_url)
    lines = ["| provisional notes | judge | hardening s | notes/s | µs per note | "
             "model calls (cycle) | hardening calls per note | full cycle s (with maintenance) |",
             "|---|---|---|---|---|---|---|---|"]
    try:
        with OpenAIStub() as stub:
            stub.chat = lambda body: json.dumps({"relation": "duplicate", "confidence": 90})
            for size in sizes:
                for judge in ("builtin", "model"):
                    load(database_url, size)
                    settings = Settings(
                        database_url=database_url, redis_url="redis://unused",
                        llm_backend="builtin" if judge == "builtin" else "openai",
                        llm_base_url=stub.base_url, llm_model="stub",
                        manager_model_calls_per_cycle=10**9,
                        manager_model_tokens_per_cycle=10**12)
                    before = len(stub.chat_requests())
                    after_hardening: list[int] = []

                    def note_calls(record, before=before, seen=after_hardening):
                        if record["phase"] == "hardening":
                            seen.append(len(stub.chat_requests()) - before)

                    started = time.perf_counter()
                    report = run_manager_cycle(db, settings, SyntheticEmbedder(),
                                               now=datetime.now(UTC), force_maintenance=True,
                                               on_phase=note_calls)
                    total = time.perf_counter() - started
                    hardening = report.phases[0]
                    seconds = hardening["duration_ms"] / 1000
                    counts = hardening["counts"]
                    calls = len(stub.chat_requests()) - before
                    hardening_calls = after_hardening[0]
                    lines.append(
                        f"| {size:,} | {judge} | {seconds:.2f} | {size / seconds:,.0f} | "
                        f"{seconds / size * 1e6:,.0f} | {calls} | "
                        f"{hardening_calls / size:.3f} | {total:.1f} |")
                    print(lines[-1], json.dumps(counts), hardening["error"], flush=True)
        table = "\n".join(lines) + "\n"
        print(table)
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / "manager_cycle.md").write_text(table)
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
