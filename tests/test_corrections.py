"""Correction detector (`worker.corrections`): the issue's examples, the aggregate targets on the
labeled pairs, and output hygiene.

Pure: no database. Similarities come from the real default embedder (all-MiniLM-L6-v2, offline),
built here in a module-scoped fixture rather than through conftest's `embedder` fixture, which
starts Postgres. Speed is measured by `bench/corrections.py`, not asserted here.

tests/data/correction_pairs.tsv is the tuning set. tests/data/correction_pairs_holdout.tsv was
written after the detector was frozen and is only checked for well-formedness here: asserting
on it would turn it into a tuning target. The bench reports both.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.corrections import (
    SUPERSEDE_MIN_CONFIDENCE,
    Relation,
    Verdict,
    classify,
    supersedes,
)

DATA = Path(__file__).parent / "data"
TRAIN = DATA / "correction_pairs.tsv"
HOLDOUT = DATA / "correction_pairs_holdout.tsv"

# Every signal name the detector may emit: fixed vocabulary, never note text.
KNOWN_SIGNALS = frozenset({
    "added_detail", "additive_marker", "class_value_change", "comparison_swap",
    "correction_marker", "dropped_detail", "explicit_rejection", "fragment",
    "generic_words_differ", "head_change", "holder_change", "marker_on_shared_topic",
    "multi_span_change", "negated_antonym", "no_content", "object_swap", "polarity_flip",
    "polarity_reversal", "predicate_change", "predicate_family_change", "restated",
    "same_content", "shared_anchor", "similarity_high", "similarity_low", "similarity_mid",
    "slot_mismatch", "slot_value_change", "subject_change", "value_class_conflict",
    "weak_marker",
})

Cosine = Callable[[str, str], float]


def load_pairs(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


@pytest.fixture(scope="module")
def cosine() -> Cosine:
    from worker.embeddings import LocalEmbedder

    embedder = LocalEmbedder(threads=1)
    cache: dict[str, np.ndarray] = {}

    def vectors(texts: list[str]) -> None:
        missing = sorted({t for t in texts if t not in cache})
        for start in range(0, len(missing), 64):
            batch = missing[start:start + 64]
            cache.update(zip(batch, embedder.embed(batch), strict=True))

    def cos(a: str, b: str) -> float:
        vectors([a, b])
        return float(np.dot(cache[a], cache[b]))  # vectors are L2-normalized

    rows = load_pairs(TRAIN)
    vectors([r["earlier"] for r in rows] + [r["later"] for r in rows])
    return cos


@pytest.fixture(params=["structure-only", "with-minilm"])
def judge(request: pytest.FixtureRequest) -> Callable[[str, str], Verdict]:
    """classify() both ways callers will use it: without a similarity and with MiniLM's."""
    if request.param == "structure-only":
        return lambda a, b: classify(a, b)
    cos: Cosine = request.getfixturevalue("cosine")
    return lambda a, b: classify(a, b, cos(a, b))


# --- The examples ---------------------------------------------------------------------

CORRECTIONS = [
    ("I love blue charts!", "actually, red charts!"),
    ("User's favorite chart color is blue.", "User's favorite chart color is red."),
    ("User's favorite chart color is red.", "User's favorite chart color is blue."),
    ("User prefers metric units.", "User prefers imperial units."),
    ("User prefers imperial units.", "User prefers metric units."),
    ("User prefers dark mode.", "User prefers light mode."),
    ("User prefers light mode.", "User prefers dark mode."),
    ("I love pie charts", "never use pie charts, bar charts only"),
    ("User likes cats.", "User dislikes cats."),
    ("User dislikes cats.", "User likes cats."),
    ("User's team meeting is on Mondays.", "no, Fridays"),
    ("User lives in Berlin.", "User moved to Munich."),
    ("User prefers email over phone calls.", "User prefers phone calls over email."),
    ("The user's cat is called Miso.", "the cat's name is Mochi, not Miso"),
]


@pytest.mark.parametrize("earlier, later", CORRECTIONS)
def test_corrections_supersede(judge, earlier, later):
    verdict = judge(earlier, later)
    assert verdict.relation is Relation.CORRECTION, verdict
    assert supersedes(verdict)


DISTINCT = [
    ("User prefers bar charts.", "User prefers dark backgrounds on charts."),
    ("User works in Berlin.", "User was born in Berlin."),
    ("User has a dog.", "User has a cat."),
    ("User speaks French.", "User speaks Spanish."),
    ("User prefers bar charts.", "User lives in Berlin."),
    ("User prefers tea.", "Actually, the user lives in Oslo."),
    ("User works at Google.", "User's wife works at Google."),
    ("User's daughter starts school in September.", "User's son starts school in August."),
]


@pytest.mark.parametrize("earlier, later", DISTINCT + [(b, a) for a, b in DISTINCT])
def test_distinct_facts_on_one_topic_are_never_merged(judge, earlier, later):
    verdict = judge(earlier, later)
    assert verdict.relation is Relation.DISTINCT, verdict
    assert not supersedes(verdict)


@pytest.mark.parametrize("earlier, later, relation", [
    ("User prefers bar charts over pie charts.",
     "The user likes bar charts more than pie charts.", Relation.PARAPHRASE),
    ("I love blue charts!", "User loves blue charts.", Relation.PARAPHRASE),
    ("User's manager is named Priya.", "Priya is the user's manager.", Relation.PARAPHRASE),
    ("User prefers bar charts.", "User prefers horizontal bar charts with labels.",
     Relation.REFINEMENT),
    ("User lives in Germany.", "User lives in Berlin, Germany.", Relation.REFINEMENT),
])
def test_restatements_and_refinements_supersede(judge, earlier, later, relation):
    verdict = judge(earlier, later)
    assert verdict.relation is relation, verdict
    assert supersedes(verdict)


def test_a_less_specific_restatement_does_not_replace_the_detailed_note(judge):
    verdict = judge("User prefers horizontal bar charts with labels.", "User prefers bar charts.")
    assert verdict.relation is not Relation.CORRECTION
    assert not supersedes(verdict)  # superseding would lose "horizontal" and "with labels"


# --- Aggregate targets on the tuning set ------------------------------------------------------


def verdicts(rows: list[dict[str, str]], cos: Cosine | None) -> list[Verdict]:
    return [classify(r["earlier"], r["later"], cos(r["earlier"], r["later"]) if cos else None)
            for r in rows]


def recall(rows: list[dict[str, str]], found: list[Verdict], relation: str) -> float:
    hits = [v.relation.value == relation for r, v in zip(rows, found, strict=True)
            if r["relation"] == relation]
    return sum(hits) / len(hits)


Run = tuple[bool, list[dict[str, str]], list[Verdict]]  # (with MiniLM?, rows, verdicts)


@pytest.fixture(scope="module", params=["structure-only", "with-minilm"])
def train(request: pytest.FixtureRequest) -> Run:
    rows = load_pairs(TRAIN)
    with_minilm = request.param == "with-minilm"
    cos = request.getfixturevalue("cosine") if with_minilm else None
    return with_minilm, rows, verdicts(rows, cos)


def test_no_distinct_pair_is_merged(train):
    _, rows, found = train
    merged = [(r["earlier"], r["later"], v) for r, v in zip(rows, found, strict=True)
              if r["relation"] == "distinct" and supersedes(v)]
    assert merged == []


def test_correction_recall(train):
    _, rows, found = train
    assert recall(rows, found, "correction") >= 0.95


@pytest.mark.xfail(strict=True, reason="target not met: paraphrases needing world knowledge "
                   "('is vegetarian' / 'doesn't eat meat') are kept apart; see the bench")
def test_paraphrase_recall_target(train):
    _, rows, found = train
    assert recall(rows, found, "paraphrase") >= 0.9


def test_paraphrase_recall_floor(train):
    """Regression floor just under the measured level (0.77 with MiniLM, 0.64 without)."""
    with_minilm, rows, found = train
    assert recall(rows, found, "paraphrase") >= (0.75 if with_minilm else 0.62)


def test_refinement_recall(train):
    _, rows, found = train
    assert recall(rows, found, "refinement") >= 0.9


# --- Output hygiene and the supersede rule ----------------------------------------------------


@pytest.mark.parametrize("path", [TRAIN, HOLDOUT], ids=["train", "holdout"])
def test_signals_are_names_never_note_text(path):
    for row in load_pairs(path):
        for similarity in (None, 0.1, 0.5, 0.95):
            verdict = classify(row["earlier"], row["later"], similarity)
            assert set(verdict.signals) <= KNOWN_SIGNALS, (row, verdict)
            assert 0.0 <= verdict.confidence <= 1.0


def test_distinct_never_supersedes_and_the_threshold_is_shared():
    assert not supersedes(Verdict(Relation.DISTINCT, 1.0, ()))
    for relation in (Relation.CORRECTION, Relation.PARAPHRASE, Relation.REFINEMENT):
        assert supersedes(Verdict(relation, SUPERSEDE_MIN_CONFIDENCE, ()))
        assert not supersedes(Verdict(relation, SUPERSEDE_MIN_CONFIDENCE - 0.01, ()))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300),
       st.one_of(st.none(), st.floats(min_value=-1.0, max_value=1.0)))
def test_any_input_yields_a_well_formed_verdict(earlier, later, similarity):
    verdict = classify(earlier, later, similarity)
    assert isinstance(verdict.relation, Relation)
    assert 0.0 <= verdict.confidence <= 1.0
    assert set(verdict.signals) <= KNOWN_SIGNALS


def test_a_note_never_corrects_itself_and_long_notes_are_accepted():
    for text in ("User prefers bar charts.", "I love blue charts!", "no, Fridays"):
        assert classify(text, text).relation is Relation.PARAPHRASE
    long_note = "User prefers bar charts with labels and a dark theme. " * 60  # > 2000 chars
    assert classify(long_note, long_note).relation is Relation.PARAPHRASE
    # Beyond sentence length no span analysis runs: a value swap is never merged there.
    assert not supersedes(classify(long_note, long_note.replace("bar", "pie"), 0.99))


# --- The data files themselves ----------------------------------------------------------------


@pytest.mark.parametrize("path, minimum", [
    (TRAIN, {"correction": 70, "paraphrase": 40, "refinement": 25, "distinct": 60}),
    (HOLDOUT, {"correction": 10, "paraphrase": 10, "refinement": 10, "distinct": 10}),
], ids=["train", "holdout"])
def test_data_files_are_well_formed(path, minimum):
    rows = load_pairs(path)
    assert len(rows) >= (200 if path == TRAIN else 50)
    counts = {relation: 0 for relation in minimum}
    for row in rows:
        assert set(row) == {"earlier", "later", "relation", "domain"}
        assert row["earlier"].strip() and row["later"].strip() and row["domain"].strip()
        assert re.fullmatch(r"[a-z]+", row["domain"])
        counts[row["relation"]] += 1  # KeyError on an unknown label
    assert all(counts[relation] >= n for relation, n in minimum.items()), counts
    pairs = [(r["earlier"], r["later"]) for r in rows]
    assert len(pairs) == len(set(pairs))


def test_holdout_shares_no_pair_with_the_tuning_set():
    train = {(r["earlier"].lower(), r["later"].lower()) for r in load_pairs(TRAIN)}
    assert not [r for r in load_pairs(HOLDOUT) if (r["earlier"].lower(), r["later"].lower())
                in train]
