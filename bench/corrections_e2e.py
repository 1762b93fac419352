"""Corrections end to end: what the notes of a scope look like after a labelled pair of writes.

    .venv/bin/python bench/corrections_e2e.py                 # all data files, embedded Postgres
    .venv/bin/python bench/corrections_e2e.py --limit 20      # a quick look (20 pairs a file)
    .venv/bin/python bench/corrections_e2e.py --no-detector   # only the end-to-end tables

For every labelled (earlier, later, relation) pair of every data file of bench/corrections.py
(the same files, the same roles), each pair in scopes of its own user so pairs never meet:

  * same run: both notes written by one run through the real write path
    (`worker.writes.apply.apply_memory_write`, the real MiniLM embedder), then the notes left
    injectable (Active or Provisional) in the scope are counted. Expected: 1 for a correction,
    paraphrase or refinement (the run's own note is replaced), 2 for distinct facts.
  * cross run: the two notes written by two runs, then one Memory Manager cycle
    (`worker.manager.cycle.run_manager_cycle`, built-in judge, no model) over all pairs, then
    the Active notes of the scope are counted. Expected: 1 for a correction (the earlier note
    Revoked, the later one Active), ideally 1 for a paraphrase or refinement, 2 for distinct.

Postgres is an embedded server under /tmp/corr-e2e-pg (a fresh database every run). The
detector report of bench/corrections.py is printed first; both go to
bench/results/corrections.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import psycopg  # noqa: E402

from bench.corrections import FILES, RELATIONS, load, ratio, report, table  # noqa: E402

DATABASE = "corr_e2e"
STORED = {"written", "superseded-own", "deduped"}  # dispositions that keep the content


@dataclass
class Pair:
    file: str
    index: int
    earlier: str
    later: str
    relation: str
    same_dispositions: tuple[str, str] = ("", "")
    cross_dispositions: tuple[str, str] = ("", "")
    cross_ids: tuple[str | None, str | None] = (None, None)
    same_left: int = -1  # injectable notes of the same-run scope
    cross_active: int = -1  # Active notes of the cross-run scope after the cycle
    cross_statuses: tuple[str, str] = ("", "")  # (earlier, later) status after the cycle

    @property
    def same_user(self) -> str:
        return f"same-{self.index}"

    @property
    def cross_user(self) -> str:
        return f"cross-{self.index}"

    @property
    def expected(self) -> int:
        return 2 if self.relation == "distinct" else 1

    @property
    def cross_ok(self) -> bool:
        if self.relation == "correction":  # recency wins: the earlier note is gone
            return self.cross_statuses == ("Revoked", "Active")
        return self.cross_active == self.expected

    @property
    def stored(self) -> bool:
        return all(d in STORED for d in (*self.same_dispositions, *self.cross_dispositions))


def run(run_id: str, user: str) -> dict[str, Any]:
    return {"run_id": run_id, "agent_id": "A", "user_id": user, "company_id": "C"}


def fresh_database(pg_dir: Path) -> tuple[Any, str]:
    from worker.local.embedded import EmbeddedPostgres

    pg = EmbeddedPostgres(pg_dir, database=DATABASE)
    pg.start()
    with psycopg.connect(pg.admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    return pg, pg.url


def write_pairs(pairs: Sequence[Pair], deps: Any) -> None:
    from worker.writes.apply import WriteResult, apply_memory_write

    def apply(context: dict[str, Any], note: str, seq: int) -> tuple[str, str | None]:
        outcome = apply_memory_write(deps, context, {"note": note, "type": "Preference"}, seq)
        assert isinstance(outcome, WriteResult), outcome
        return str(outcome.disposition), outcome.note_id

    for n, pair in enumerate(pairs, 1):
        same = run(f"same-{pair.index}", pair.same_user)
        pair.same_dispositions = (apply(same, pair.earlier, 1)[0],
                                  apply(same, pair.later, 2)[0])
        (d1, id1), (d2, id2) = (apply(run(f"cross-{pair.index}-a", pair.cross_user),
                                      pair.earlier, 1),
                                apply(run(f"cross-{pair.index}-b", pair.cross_user),
                                      pair.later, 1))
        pair.cross_dispositions, pair.cross_ids = (d1, d2), (id1, id2)
        if n % 100 == 0:
            print(f"  {n}/{len(pairs)} pairs written", file=sys.stderr, flush=True)


def count_notes(url: str, pairs: Sequence[Pair], *, cross: bool) -> None:
    with psycopg.connect(url) as conn:
        if not cross:
            rows = conn.execute(
                "SELECT user_id, count(*) FROM notes WHERE user_id LIKE 'same-%%' "
                "AND status IN ('Active', 'Provisional') GROUP BY user_id").fetchall()
            left: dict[str, int] = dict(rows)
            for pair in pairs:
                pair.same_left = left.get(pair.same_user, 0)
            return
        rows = conn.execute(
            "SELECT user_id, count(*) FROM notes WHERE user_id LIKE 'cross-%%' "
            "AND status = 'Active' GROUP BY user_id").fetchall()
        active: dict[str, int] = dict(rows)
        status: dict[str, str] = dict(conn.execute(
            "SELECT id::text, status FROM notes WHERE user_id LIKE 'cross-%%'").fetchall())
    for pair in pairs:
        pair.cross_active = active.get(pair.cross_user, 0)
        first, second = pair.cross_ids
        pair.cross_statuses = (status.get(first or "", "-"), status.get(second or "", "-"))


def share(pairs: Sequence[Pair], relation: str, test: Any) -> str:
    picked = [p for p in pairs if p.relation == relation]
    return ratio(sum(1 for p in picked if test(p)), len(picked))


def outcome_table(name: str, pairs: Sequence[Pair]) -> str:
    body = []
    for relation in RELATIONS:
        expected = "2 notes" if relation == "distinct" else "1 note"
        cross = ("earlier Revoked, later Active" if relation == "correction"
                 else f"{expected} Active")
        body.append([relation, sum(p.relation == relation for p in pairs),
                     f"{expected}: " + share(pairs, relation,
                                             lambda p: p.same_left == p.expected),
                     f"{cross}: " + share(pairs, relation, lambda p: p.cross_ok)])
    merged_same = sum(p.relation == "distinct" and p.same_left < 2 for p in pairs)
    merged_cross = sum(p.relation == "distinct" and p.cross_active < 2 for p in pairs)
    distinct = sum(p.relation == "distinct" for p in pairs)
    body.append(["**distinct wrongly merged**", distinct, f"{merged_same} of {distinct}",
                 f"{merged_cross} of {distinct}"])
    return table([f"{name}: relation", "pairs", "same run (notes left injectable)",
                  "cross run + one cycle (Active notes)"], body)


def detail_table(pairs: Sequence[Pair]) -> str:
    """What was actually left, per relation: the count distributions."""
    body = []
    for relation in RELATIONS:
        picked = [p for p in pairs if p.relation == relation]
        same = Counter(p.same_left for p in picked)
        cross = Counter(p.cross_statuses for p in picked)
        body.append([relation,
                     ", ".join(f"{k} left: {v}" for k, v in sorted(same.items())),
                     ", ".join(f"{a}/{b}: {v}" for (a, b), v in cross.most_common())])
    return table(["relation", "same run: notes left", "cross run: earlier/later status"],
                 body)


def misses(pairs: Sequence[Pair]) -> str:
    body = [[p.file, p.relation, p.same_left, f"{p.cross_statuses[0]}/{p.cross_statuses[1]}",
             p.earlier, p.later]
            for p in pairs if p.relation == "distinct" and (p.same_left < 2
                                                             or p.cross_active < 2)]
    return table(["file", "gold", "same run left", "cross run statuses", "earlier", "later"],
                 body) if body else "None."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-dir", type=Path, default=Path("/tmp/corr-e2e-pg"))
    parser.add_argument("--limit", type=int, default=0, help="pairs per file (0 = all)")
    parser.add_argument("--no-detector", action="store_true",
                        help="skip the detector report of bench/corrections.py")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" /
                        "corrections.md")
    args = parser.parse_args()

    from db.connector import get_database
    from db.migrate import migrate
    from worker.embeddings import LocalEmbedder
    from worker.manager.cycle import run_manager_cycle
    from worker.runtime import Runtime
    from worker.settings import Settings

    pairs: list[Pair] = []
    for name, (path, _) in FILES.items():
        rows = load(path)[: args.limit or None]
        pairs += [Pair(name, len(pairs) + i, r["earlier"], r["later"], r["relation"])
                  for i, r in enumerate(rows)]

    pg, url = fresh_database(args.pg_dir)
    try:
        migrate(url)
        settings = Settings(database_url=url, redis_url="redis://unused", llm_backend="builtin")
        embedder = LocalEmbedder(threads=1)
        runtime = Runtime(settings=settings, embedder_override=embedder)
        started = time.perf_counter()
        write_pairs(pairs, runtime.write_deps())
        written_s = time.perf_counter() - started
        count_notes(url, pairs, cross=False)
        started = time.perf_counter()
        cycle = run_manager_cycle(get_database(url), settings, embedder, now=datetime.now(UTC))
        cycle_s = time.perf_counter() - started
        count_notes(url, pairs, cross=True)
    finally:
        pg.stop()

    out = [report()] if not args.no_detector else []
    out += ["# Corrections end to end", "",
            f"{len(pairs)} labelled pairs, each in scopes of its own user; {4 * len(pairs)} "
            f"writes through `apply_memory_write` with the MiniLM embedder ({written_s:.0f} s), "
            f"then one Memory Manager cycle with the built-in judge ({cycle_s:.1f} s, "
            f"{cycle.model_calls} model calls). Same run: both notes from one run, notes left "
            "injectable (Active or Provisional) before the cycle. Cross run: one note per run, "
            "Active notes after the cycle; a correction counts only if the earlier note was "
            "Revoked and the later one is Active.", ""]
    not_stored = [p for p in pairs if not p.stored]
    if not_stored:
        kinds = Counter(d for p in not_stored for d in (*p.same_dispositions,
                                                        *p.cross_dispositions)
                        if d not in STORED)
        out += [f"{len(not_stored)} pairs had a write not stored by the write path "
                f"({', '.join(f'{k}: {v}' for k, v in kinds.items())}); they are counted "
                "as they ended.", ""]
    for name, (path, role) in FILES.items():
        picked = [p for p in pairs if p.file == name]
        out += [f"## {name} ({len(picked)} pairs)", "", f"`{path.relative_to(ROOT)}` - {role}.",
                "", outcome_table(name, picked), "", detail_table(picked), ""]
    out += ["## Distinct pairs merged end to end", "", misses(pairs), ""]
    text = "\n".join(out)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
