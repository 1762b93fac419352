"""The detector's shape: one public surface, and a decision made of named rules each of which
decides some labeled pair (a rule nothing reaches is dead weight or hidden by an earlier one)."""

from __future__ import annotations

import csv
from collections import Counter

import worker.corrections as corrections
from tests import cosines
from tests.helpers import DATA
from worker.corrections import Relation, Verdict
from worker.corrections.decision import DECISION_RULES
from worker.corrections.pair import pair_of
from worker.corrections.parse import parse


def test_the_public_surface_is_classify_supersedes_relation_and_verdict():
    assert set(corrections.__all__) == {
        "classify", "supersedes", "Relation", "Verdict", "SUPERSEDE_MIN_CONFIDENCE",
        "PARAPHRASE_MIN_SIMILARITY", "PREDICATE_CHANGE_MIN_SIMILARITY"}


def test_rules_are_named_once():
    names = [rule.__name__ for rule in DECISION_RULES]
    assert len(names) == len(set(names))


def deciding_rule(earlier: str, later: str, similarity: float | None) -> tuple[str, Verdict]:
    """The rules run one by one, outside `decide`: which one answered, and its verdict."""
    pair = pair_of(parse(earlier), parse(later), similarity)
    for rule in DECISION_RULES:
        found = rule(pair)
        if found is not None:
            return rule.__name__, found
    return "default", pair.verdict(Relation.DISTINCT, 0.8 if not pair.anchors else 0.65)


def test_every_rule_decides_some_labeled_pair_and_classify_is_the_rules_in_order():
    cached = cosines.load()
    fired: Counter[str] = Counter()
    for name in ("correction_pairs.tsv", "correction_pairs_holdout.tsv",
                 "correction_pairs_dev.tsv"):
        with (DATA / name).open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                earlier, later = row["earlier"], row["later"]
                for similarity in (None, cached.get((earlier, later))):
                    name, verdict = deciding_rule(earlier, later, similarity)
                    fired[name] += 1
                    assert verdict == corrections.classify(earlier, later, similarity)
    deciding = [r.__name__ for r in DECISION_RULES if not r.__name__.startswith("observe_")]
    assert [name for name in deciding if not fired[name]] == []
    assert fired["default"] > 0
