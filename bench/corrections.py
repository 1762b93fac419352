"""Correction-detector benchmark: accuracy on the labeled pairs, and latency.

    .venv/bin/python bench/corrections.py                 # every data file, markdown to stdout
    .venv/bin/python bench/corrections.py --errors        # also list every misjudged pair
    .venv/bin/python bench/corrections.py --out /tmp/corrections.md

The data files and their roles (see FILES):

  * tests/data/correction_pairs_holdout13.tsv - HEADLINE: written blind (by someone who never
    saw the detector or the other data) as the judge of round 11, and scored blind on the
    round-10 and the round-11 detector (BLIND_AT_FREEZE). Then its one wrong merge (a
    residence that ended in 2019 beside the present one) and the one correction round 11 lost
    on it (a lifted rule with a new time) were fixed, and two change markers it showed were
    added ("rebooked for", an imperative "Move the X to"), so those cells are not blind.
  * tests/data/correction_pairs_holdout12.tsv - written blind (by someone who never
    saw the detector or the other data; personal notes, business notes and instructions to
    the agent) before round 11 started. Scored blind on the round-10 detector and on round 10
    with WordNet synonyms folded in (BLIND_AT_FREEZE: the same score, so WordNet was not
    shipped). Round 11 then fixed its one wrong merge (a goal for this year beside what was
    saved last year) and two change markers it showed ("rebooked to", "extended through"),
    so those cells are not blind.
  * tests/data/correction_pairs_holdout11.tsv - written blind (by someone who never
    saw the detector or the other data; personal notes, business notes and instructions to
    the agent) before round 10 started, and kept out of round 10. Scored blind on the
    round-10 detector (BLIND_AT_FREEZE); tuning data in round 11. The rules behind its three wrong
    merges (a plan and what happened, a habit and one cancelled occurrence, a past race and a
    planned one read as a restatement) were fixed, so those cells are not blind.
  * tests/data/correction_pairs_holdout10.tsv - written blind before round 9 started; scored
    blind on the round-9 detector; its only wrong merge (a return trip read as a corrected
    one) was fixed; round 10 (decisions as one slot's values, successors in a role) used it
    for tuning.
  * tests/data/correction_pairs_holdout9.tsv - written blind (half personal, half
    agent/business notes) before round 8 started; scored blind on the round-8 detector; its
    only wrong merge (an exception for another kind of thing, "hotfix branches ... rather
    than a squash", read as rejecting the rule for feature branches) was fixed; round 9
    (restatements turned around, frequencies made concrete, traded roles) used it for tuning.
  * tests/data/correction_pairs_holdout8.tsv - written blind (agent and business notes:
    devops, billing, support, HR, policies) before round 7 started; scored blind on the
    round-6 and the round-7 detector. Round 8 (business vocabulary and structure) then used it
    for tuning, so its numbers here are no longer blind.
  * tests/data/correction_pairs_holdout7.tsv - written blind before round 7 started; scored
    blind on the round-6 detector. Round 7 (past situations, a changed leading subject,
    change markers, business vocabulary) then used it for tuning.
  * tests/data/correction_pairs_holdout6.tsv - written blind before round 6 started; scored
    blind on the round-5 and the round-6 detector. Its only wrong merge (a reversal verb read
    inside "skip-level manager") was fixed and it became tuning data in round 7; one of its
    160 pairs, a paraphrase, happens to be in held-out set 5 too.
  * tests/data/correction_pairs_holdout5.tsv - written blind (by someone who never saw the
    detector or the other data) before round 5 started, and kept out of round 5. Scored blind
    on the round-4 and the round-5 detector (BLIND_AT_FREEZE). Round 6 (curated category ->
    member knowledge for entailment, state-ending events, one counted thing as a one-value
    slot, instructions to the assistant as preferences, more synonyms and number notations)
    then used it for tuning, so its numbers here are no longer blind.
  * tests/data/correction_pairs_holdout4.tsv - written blind (by someone who never saw the
    detector or the other data) before round 4 started, and kept out of round 4. Scored blind
    on the round-3 and the round-4 detector (BLIND_AT_FREEZE). Round 5 (another occasion vs a
    corrected date, category -> member entailment, acronyms, agent nouns, passive voice, clock
    times and amounts, one-value relational slots) then used it for tuning, so its numbers
    here are no longer blind.
  * tests/data/correction_pairs_holdout3.tsv - written blind after the round-3 detector was
    frozen and scored blind then (see BLIND_AT_FREEZE). One change followed: the "supports X
    is one value" rule behind its only wrong merge was removed. Round 4 (broader synonyms,
    light verbs, named-entity kinds, marker-gated value swaps) then used it for tuning, so its
    numbers here are no longer blind.
  * tests/data/correction_pairs_holdout2.tsv - written blind after the round-2 detector was
    frozen. Round 2 scored it blind; the three wrong-merge patterns it revealed (a compound
    subject, a changed subject modifier, a person's other attribute) were then fixed in round
    3, so its numbers here are no longer blind.
  * tests/data/correction_pairs.tsv - tuning set (round 1).
  * tests/data/correction_pairs_holdout.tsv - round-1 held-out set; folded into tuning in
    round 2, so no longer held out.
  * tests/data/correction_pairs_dev.tsv - adversarial probes written while tuning rounds 2
    and 4 to 10 (tuning data too; rounds 4 to 10 added lookalike distinct pairs across many
    domains, rounds 5 to 10 probes for each of their mechanisms);
    includes unmarked open-class swaps ("shops at Aldi" / "at Lidl") the detector does not
    attempt.

For each, with the MiniLM cosine the write path would pass and with `similarity=None`:

  1. the confusion matrix and per-relation precision / recall of `classify`;
  2. "same fact" decisions, which is what callers act on: `supersedes(verdict)` against the
     baseline "cosine >= 0.85 => same" (the write path's near-duplicate threshold). Reported:
     distinct pairs wrongly merged (the costly error), corrections / paraphrases / refinements
     recognized as the same fact;
  3. `classify` latency, p50 / p95 / max: cold (parse cache cleared before every call, as for
     notes never seen before), warm (both notes parsed before), and notes at the 2,000-char limit.
     The MiniLM embedding itself is not included.

The end-to-end outcome through the write path and a Memory Manager cycle is measured by
bench/corrections_e2e.py.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import string
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from worker.corrections import Relation, Verdict, classify, supersedes  # noqa: E402
from worker.corrections.parse import parse  # noqa: E402

DATA = ROOT / "tests" / "data"
# name -> (file, role). The first is the newest set written blind that the bench may read
# (tuned on in round 6; held-out set 6 is scored by its owner only).
FILES = {
    "held-out set 13": (DATA / "correction_pairs_holdout13.tsv",
                        "HEADLINE: written blind (personal, business and instructions to the "
                        "agent) as the judge of round 11: scored blind on round 10 and on "
                        "round 11 (below), then its one blind wrong merge - a residence that "
                        "ended in 2019 beside the present one - and the correction round 11 "
                        "had lost (a new time with a lifted rule) were fixed, and two change "
                        "markers it showed ('rebooked for', an imperative 'Move the X to') "
                        "added"),
    "held-out set 12": (DATA / "correction_pairs_holdout12.tsv",
                        "written blind before round 11 began: scored blind on round 10 and on "
                        "round 10 with WordNet synonyms (the same score; not shipped); tuning "
                        "data in round 11"),
    "held-out set 11": (DATA / "correction_pairs_holdout11.tsv",
                        "written blind before round 10 began and kept out of it; scored blind "
                        "on round 10 (below; its three wrong merges - a plan and what "
                        "happened, a habit and one cancelled occurrence, a past race and a "
                        "planned one - were then fixed); tuning data in round 11"),
    "held-out set 10": (DATA / "correction_pairs_holdout10.tsv",
                        "written blind before round 9 began and kept out of it; scored blind "
                        "on round 9 (below; its one wrong merge was then fixed); tuning data in "
                        "round 10"),
    "held-out set 9": (DATA / "correction_pairs_holdout9.tsv",
                       "written blind before round 8 began and kept out of it; scored blind on "
                       "round 8 (below; its one wrong merge was then fixed); tuning data in "
                       "round 9"),
    "held-out set 8": (DATA / "correction_pairs_holdout8.tsv",
                       "written blind (agent and business notes) before round 7 began and kept "
                       "out of it; scored blind on round 6 and on round 7 (below); tuning data "
                       "in round 8"),
    "held-out set 7": (DATA / "correction_pairs_holdout7.tsv",
                       "written blind before round 7 began; scored blind on round 6 (below); "
                       "tuning data in round 7"),
    "held-out set 6": (DATA / "correction_pairs_holdout6.tsv",
                       "written blind before round-6 tuning began and kept out of it; scored "
                       "blind on round 5 and on round 6 (below; its one wrong merge was then "
                       "fixed); tuning data in round 7"),
    "held-out set 5": (DATA / "correction_pairs_holdout5.tsv",
                       "written blind before round-5 tuning began and kept out of it; scored "
                       "blind on round 4 and on round 5 (below); used for tuning in round 6, "
                       "so no longer held out"),
    "held-out set 4": (DATA / "correction_pairs_holdout4.tsv",
                       "written blind before round-4 tuning began and kept out of it; scored "
                       "blind on round 3 and on round 4 (below); used for tuning in round 5, "
                       "so no longer held out"),
    "held-out set 3": (DATA / "correction_pairs_holdout3.tsv",
                       "written blind after the round-3 detector was frozen (blind scores "
                       "below); used for tuning in round 4, so no longer held out"),
    "held-out set 2": (DATA / "correction_pairs_holdout2.tsv",
                       "written blind after the round-2 detector was frozen; its three wrong "
                       "merges were then fixed (round 3), so it is no longer fully held out"),
    "tuning set": (DATA / "correction_pairs.tsv", "tuning (round 1)"),
    "held-out set 1": (DATA / "correction_pairs_holdout.tsv",
                       "round-1 held-out, folded into tuning in round 2: no longer held out"),
    "dev probes": (DATA / "correction_pairs_dev.tsv",
                   "adversarial probes written while tuning rounds 2 and 4 to 10: tuning "
                   "data"),
}
RELATIONS = [r.value for r in Relation]
# Scores of the held-out sets at the moment they were first run, on the detector frozen before
# they were written: recorded here, not recomputed (the detector has changed since).
BLIND_AT_FREEZE = [
    ["held-out set 2 (127)", "round 2", "0.85 (34/40)", "0.88 (35/40)",
     "0.57 (16/28) / 0.46 (13/28)", "0.95 (19/20)", "3 of 39 / 2 of 39"],
    ["held-out set 3 (108)", "round 3 (before one rule was removed)", "0.72 (23/32)",
     "0.72 (23/32)", "0.42 (11/26) / 0.27 (7/26)", "1.00 (18/18)", "1 of 32 / 1 of 32"],
    ["held-out set 4 (160)", "round 3", "0.82 (37/45)", "0.87 (39/45)",
     "0.60 (24/40) / 0.42 (17/40)", "0.43 (13/30)", "2 of 45 / 2 of 45"],
    ["held-out set 4 (160)", "round 4", "0.82 (37/45)", "0.84 (38/45)",
     "0.65 (26/40) / 0.53 (21/40)", "0.47 (14/30)", "2 of 45 / 2 of 45"],
    ["held-out set 5 (160)", "round 4", "0.76 (34/45)", "0.78 (35/45)",
     "0.47 (19/40) / 0.35 (14/40)", "0.13 (4/30)", "2 of 45 / 2 of 45"],
    ["held-out set 5 (160)", "round 5", "0.80 (36/45)", "0.82 (37/45)",
     "0.60 (24/40) / 0.47 (19/40)", "0.23 (7/30)", "0 of 45 / 0 of 45"],
    ["held-out set 6 (160)", "round 5", "0.76 (34/45)", "0.76 (34/45)",
     "0.50 (20/40) / 0.38 (15/40)", "0.43 (13/30)", "1 of 45 / 1 of 45"],
    ["held-out set 6 (160)", "round 6 (its wrong merge then fixed)", "0.78 (35/45)",
     "0.78 (35/45)", "0.55 (22/40) / 0.42 (17/40)", "0.70 (21/30)", "1 of 45 / 1 of 45"],
    ["held-out set 7 (160)", "round 6 (with that fix)", "0.73 (33/45)", "0.78 (35/45)",
     "0.35 (14/40) / 0.25 (10/40)", "0.77 (23/30)", "2 of 45 / 2 of 45"],
    ["held-out set 8 (160)", "round 6 (with that fix)", "0.51 (23/45)", "0.58 (26/45)",
     "0.20 (8/40) / 0.10 (4/40)", "0.40 (12/30)", "0 of 45 / 0 of 45"],
    ["held-out set 8 (160)", "round 7", "0.64 (29/45)", "0.71 (32/45)",
     "0.23 (9/40) / 0.12 (5/40)", "0.40 (12/30)", "0 of 45 / 0 of 45"],
    ["held-out set 9 (160)", "round 8 (its wrong merge then fixed)", "0.80 (36/45)",
     "0.80 (36/45)", "0.20 (8/40) / 0.12 (5/40)", "0.47 (14/30)", "1 of 45 / 1 of 45"],
    ["held-out set 10 (160)", "round 9 (its wrong merge then fixed)", "0.89 (40/45)",
     "0.89 (40/45)", "0.33 (13/40) / 0.15 (6/40)", "0.57 (17/30)", "1 of 45 / 1 of 45"],
    ["held-out set 11 (160)", "round 10 (its wrong merges then fixed)",
     "0.58 (26/45)", "0.64 (29/45)", "0.33 (13/40) / 0.15 (6/40)", "0.50 (15/30)",
     "3 of 45 / 2 of 45"],
    ["held-out set 12 (160)", "round 10 (its wrong merge then fixed in round 11)",
     "0.87 (39/45)", "0.89 (40/45)", "0.25 (10/40) / 0.18 (7/40)", "0.57 (17/30)",
     "1 of 45 / 1 of 45"],
    ["held-out set 12 (160)", "round 10 + WordNet synonyms (tried, not shipped)",
     "0.87 (39/45)", "0.89 (40/45)", "0.25 (10/40) / 0.18 (7/40)", "0.57 (17/30)",
     "1 of 45 / 1 of 45"],
    ["held-out set 13 (160)", "round 10", "0.78 (35/45)", "0.80 (36/45)",
     "0.20 (8/40) / 0.12 (5/40)", "0.60 (18/30)", "1 of 45 / 1 of 45"],
    ["held-out set 13 (160)", "round 11 (current; its wrong merge then fixed)", "0.76 (34/45)",
     "0.78 (35/45)", "0.20 (8/40) / 0.12 (5/40)", "0.60 (18/30)", "1 of 45 / 1 of 45"],
]
BASELINE_SAME = 0.85

Row = dict[str, str]


def load(path: Path) -> list[Row]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def cosines(rows: Sequence[Row]) -> list[float]:
    from worker.embeddings import LocalEmbedder

    embedder = LocalEmbedder(threads=1)
    texts = sorted({r["earlier"] for r in rows} | {r["later"] for r in rows})
    vectors: dict[str, np.ndarray] = {}
    for start in range(0, len(texts), 64):
        batch = texts[start:start + 64]
        vectors.update(zip(batch, embedder.embed(batch), strict=True))
    return [float(np.dot(vectors[r["earlier"]], vectors[r["later"]])) for r in rows]


def table(header: Sequence[str], body: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in body]
    return "\n".join(lines)


def ratio(hits: int, total: int) -> str:
    return f"{hits / total:.2f} ({hits}/{total})" if total else "n/a"


def accuracy(rows: Sequence[Row], verdicts: Sequence[Verdict]) -> str:
    confusion = Counter((r["relation"], v.relation.value) for r, v in zip(rows, verdicts,
                                                                          strict=True))
    matrix = table(["gold \\ predicted", *RELATIONS],
                   [[gold, *(confusion[gold, p] for p in RELATIONS)] for gold in RELATIONS])
    per_relation = []
    for relation in RELATIONS:
        true_positive = confusion[relation, relation]
        predicted = sum(confusion[g, relation] for g in RELATIONS)
        gold = sum(confusion[relation, p] for p in RELATIONS)
        per_relation.append([relation, ratio(true_positive, predicted),
                             ratio(true_positive, gold)])
    return matrix + "\n\n" + table(["relation", "precision", "recall"], per_relation)


def same_fact(rows: Sequence[Row], decisions: dict[str, Sequence[bool]]) -> str:
    body = []
    for name, same in decisions.items():
        def share(relation: str, want: bool, same: Sequence[bool] = same) -> str:
            picked = [s == want for r, s in zip(rows, same, strict=True)
                      if r["relation"] == relation]
            return ratio(sum(picked), len(picked))
        body.append([name, share("distinct", True), share("correction", True),
                     share("paraphrase", True), share("refinement", True)])
    return table(["decision rule", "distinct wrongly merged", "corrections superseding",
                  "paraphrases superseding", "refinements superseding"], body)


def percentiles(samples_ms: list[float]) -> list[str]:
    ordered = sorted(samples_ms)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return [f"{at(0.5):.3f}", f"{at(0.95):.3f}", f"{ordered[-1]:.3f}"]


def timed(call: Callable[[], object], before: Callable[[], object] | None = None) -> float:
    if before:
        before()
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def latency(rows: Sequence[Row], sims: Sequence[float], repeats: int) -> str:
    pairs = list(zip(rows, sims, strict=True)) * repeats
    clear = parse.cache_clear  # cold: both notes parsed inside the call
    cold = [timed(lambda r=r, s=s: classify(r["earlier"], r["later"], s), clear)
            for r, s in pairs]
    warm = [timed(lambda r=r, s=s: classify(r["earlier"], r["later"], s)) for r, s in pairs]
    rng = random.Random(7)

    def words(n: int) -> str:
        return " ".join("".join(rng.choice(string.ascii_lowercase)
                                for _ in range(rng.randint(2, 9))) for _ in range(n))[:2000]

    sentence = "User prefers bar charts with labels and a dark theme. "
    long_pairs = [((sentence * 40)[:2000], (sentence * 40)[:2000].replace("bar", "pie"))]
    long_pairs += [(words(400), words(400)) for _ in range(20)]
    long = [timed(lambda a=a, b=b: classify(a, b, 0.5), clear) for a, b in long_pairs * 5]
    return table(["classify()", "calls", "p50 ms", "p95 ms", "max ms"], [
        ["cold (parse cache cleared)", len(cold), *percentiles(cold)],
        ["warm (notes parsed before)", len(warm), *percentiles(warm)],
        ["2,000-char notes, cold", len(long), *percentiles(long)],
    ])


def summary(data: Mapping[str, Sequence[Row]],
            verdicts: Mapping[str, Mapping[str, Sequence[Verdict]]]) -> str:
    """One line per data file and mode: the issue's targets at a glance."""
    body = []
    for name, rows in data.items():
        for mode, found in verdicts[name].items():
            def rec(relation: str, found: Sequence[Verdict] = found,
                    rows: Sequence[Row] = rows) -> str:
                hits = [v.relation.value == relation for r, v in zip(rows, found, strict=True)
                        if r["relation"] == relation]
                return ratio(sum(hits), len(hits))
            merged = [supersedes(v) for r, v in zip(rows, found, strict=True)
                      if r["relation"] == "distinct"]
            corrected = [supersedes(v) for r, v in zip(rows, found, strict=True)
                         if r["relation"] == "correction"]
            body.append([f"{name} ({len(rows)})", mode, rec("correction"),
                         ratio(sum(corrected), len(corrected)), rec("paraphrase"),
                         rec("refinement"), f"{sum(merged)} of {len(merged)}"])
    return table(["data file (pairs)", "similarity", "correction recall",
                  "corrections superseding", "paraphrase recall", "refinement recall",
                  "distinct wrongly merged"], body)


def errors(rows: Sequence[Row], verdicts: Sequence[Verdict], sims: Sequence[float]) -> str:
    body = [[r["relation"], v.relation.value, "yes" if supersedes(v) else "no",
             f"{v.confidence:.2f}", f"{s:.2f}", r["earlier"], r["later"], ", ".join(v.signals)]
            for r, v, s in zip(rows, verdicts, sims, strict=True)
            if r["relation"] != v.relation.value]
    return table(["gold", "predicted", "supersedes", "conf", "cos", "earlier", "later",
                  "signals"], body)


def report(*, show_errors: bool = False, repeats: int = 5) -> str:
    """The detector report as markdown (also used by bench/corrections_e2e.py)."""
    data = {name: load(path) for name, (path, _) in FILES.items()}
    all_rows = [row for rows in data.values() for row in rows]
    all_sims = cosines(all_rows)
    sims, offset = {}, 0
    for name, rows in data.items():
        sims[name], offset = all_sims[offset:offset + len(rows)], offset + len(rows)
    found = {name: {
        "MiniLM": [classify(r["earlier"], r["later"], s)
                   for r, s in zip(rows, sims[name], strict=True)],
        "none": [classify(r["earlier"], r["later"]) for r in rows],
    } for name, rows in data.items()}

    out = ["# Correction detector", "", "Targets (issue): correction recall >= 0.95, distinct "
           "wrongly merged 0, paraphrase recall >= 0.9. Recall is of the exact relation; "
           "\"superseding\" is what the write path acts on (`supersedes()`).", "",
           "Data files:", ""]
    out += [f"- **{name}**: `{path.relative_to(ROOT)}` - {role}"
            for name, (path, role) in FILES.items()]
    out += ["", "## Summary", "", summary(data, found), "",
            "Blind scores, recorded when each held-out set was first run on the detector "
            "frozen before it was written (paraphrase recall and wrong merges: with MiniLM / "
            "without):", "",
            table(["held-out set", "detector", "correction recall", "corrections superseding",
                   "paraphrase recall", "refinement recall", "distinct wrongly merged"],
                  BLIND_AT_FREEZE), ""]
    for name, rows in data.items():
        counts = Counter(r["relation"] for r in rows)
        with_sim, without = found[name]["MiniLM"], found[name]["none"]
        out += [f"## {name}: {len(rows)} pairs "
                f"({', '.join(f'{counts[r]} {r}' for r in RELATIONS)})", "",
                f"`{FILES[name][0].relative_to(ROOT)}` - {FILES[name][1]}.", "",
                "### classify() with the MiniLM cosine", "", accuracy(rows, with_sim), "",
                "### classify() with similarity=None", "", accuracy(rows, without), "",
                "### Same fact? supersedes() vs the cosine baseline", "",
                same_fact(rows, {
                    "supersedes(), MiniLM cosine": [supersedes(v) for v in with_sim],
                    "supersedes(), similarity=None": [supersedes(v) for v in without],
                    f"baseline: cosine >= {BASELINE_SAME}": [s >= BASELINE_SAME
                                                            for s in sims[name]],
                }), ""]
        if show_errors:
            out += ["### Misjudged pairs (with the MiniLM cosine)", "",
                    errors(rows, with_sim, sims[name]), ""]
    out += ["## Latency", "", latency(all_rows, all_sims, repeats), ""]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", action="store_true", help="list every misjudged pair")
    parser.add_argument("--repeats", type=int, default=5, help="latency passes over the pairs")
    parser.add_argument("--out", type=Path, help="also write the markdown to this file")
    args = parser.parse_args()
    text = report(show_errors=args.errors, repeats=args.repeats)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
