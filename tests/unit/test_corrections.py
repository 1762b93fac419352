"""Correction detector (`worker.corrections`): the issue's examples, the aggregate targets on the
labeled pairs, and output hygiene.

Pure: no database, no model. Similarities are the real default embedder's (all-MiniLM-L6-v2)
cosines, cached in `tests/data/minilm_cosines.tsv` (`tests.cosines`; checked against the live
model in the integration tier). Speed is measured by `bench/corrections.py`, not asserted here.

Data files (bench/corrections.py reports all of them):
  * correction_pairs.tsv and correction_pairs_holdout.tsv - the tuning set. The second was the
    round-1 held-out set and was folded into tuning in round 2; the targets are asserted on both.
  * correction_pairs_dev.tsv - adversarial probes written while tuning rounds 2 and 4 to 10:
    no distinct pair may be merged, the rest has regression floors.
  * correction_pairs_holdout2.tsv, correction_pairs_holdout3.tsv, correction_pairs_holdout4.tsv,
    correction_pairs_holdout5.tsv - written blind (rounds 2, 3 and before rounds 4 and 5);
    later used for tuning (rounds 3, 4, 5 and 6). Only checked for well-formedness and output
    hygiene here.
  * correction_pairs_holdout6.tsv to correction_pairs_holdout10.tsv - written blind before
    rounds 6 to 9 (set 8 was scored blind on rounds 6 and 7); tuning data in rounds 7 to 10.
    Only well-formedness and output hygiene here.
  * correction_pairs_holdout11.tsv - written blind before round 10; tuning data in round 11.
  * correction_pairs_holdout12.tsv - written blind before round 11; tuning data in round 11.
  * correction_pairs_holdout13.tsv - written blind as the judge of round 11: scored blind on
    rounds 10 and 11 (bench). Only well-formedness and output hygiene here.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import cosines
from tests.cosines import Cosine
from worker.corrections import (
    SUPERSEDE_MIN_CONFIDENCE,
    Relation,
    Verdict,
    classify,
    supersedes,
)

DATA = Path(__file__).parent.parent / "data"
TRAIN = DATA / "correction_pairs.tsv"
HOLDOUT = DATA / "correction_pairs_holdout.tsv"  # round-1 held-out, folded into tuning
DEV = DATA / "correction_pairs_dev.tsv"
HOLDOUT2 = DATA / "correction_pairs_holdout2.tsv"
HOLDOUT3 = DATA / "correction_pairs_holdout3.tsv"
HOLDOUT4 = DATA / "correction_pairs_holdout4.tsv"
HOLDOUT5 = DATA / "correction_pairs_holdout5.tsv"  # blind for round 5; tuning data in round 6
HOLDOUT6 = DATA / "correction_pairs_holdout6.tsv"  # blind for round 6; tuning data in round 7
HOLDOUT7 = DATA / "correction_pairs_holdout7.tsv"  # blind for round 6 (after); tuning in round 7
HOLDOUT8 = DATA / "correction_pairs_holdout8.tsv"  # blind for rounds 6 and 7; tuning in round 8
HOLDOUT9 = DATA / "correction_pairs_holdout9.tsv"  # blind for round 8; tuning in round 9
HOLDOUT10 = DATA / "correction_pairs_holdout10.tsv"  # blind for round 9; tuning in round 10
HOLDOUT11 = DATA / "correction_pairs_holdout11.tsv"  # blind for round 10; tuning in round 11
HOLDOUT12 = DATA / "correction_pairs_holdout12.tsv"  # blind for round 10; tuning in round 11
HOLDOUT13 = DATA / "correction_pairs_holdout13.tsv"  # blind for rounds 10 and 11
TUNING = (TRAIN, HOLDOUT)
ALL_FILES = (TRAIN, HOLDOUT, DEV, HOLDOUT2, HOLDOUT3, HOLDOUT4, HOLDOUT5, HOLDOUT6,
             HOLDOUT7, HOLDOUT8, HOLDOUT9, HOLDOUT10, HOLDOUT11, HOLDOUT12,
             HOLDOUT13)

# Every signal name the detector may emit: fixed vocabulary, never note text.
KNOWN_SIGNALS = frozenset({
    "added_detail", "additive_marker", "another_occasion", "class_value_change", "comparison_swap",
    "correction_marker", "dropped_detail", "entailment", "explicit_rejection", "fragment",
    "generic_words_differ", "head_change", "holder_change", "marker_on_shared_topic",
    "equivalent_verb", "multi_span_change", "negated_antonym", "negation_agrees", "no_content",
    "object_swap", "phrasal_verb", "polarity_flip", "rival_verb", "role_swap",
    "polarity_reversal", "predicate_change", "predicate_family_change", "reordered", "restated",
    "scheduled",
    "same_content", "shared_anchor", "similarity_high", "similarity_low", "similarity_mid",
    "slot_mismatch", "slot_value_change", "subject_change", "value_class_conflict",
    "weak_marker",
})



def load_pairs(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


@pytest.fixture(scope="module")
def cosine() -> Iterator[Cosine]:
    """MiniLM's cosine of a pair, from `tests/data/minilm_cosines.tsv` (see `tests.cosines`);
    with RECORD_COSINES=1 from the live model, rewriting the cache with what this run used."""
    if not os.environ.get(cosines.RECORD_ENV):
        cached = cosines.load()

        def lookup(a: str, b: str) -> float:
            if (a, b) not in cached:
                pytest.fail(f"no cached MiniLM cosine for {a!r} / {b!r}: run "
                            f"{cosines.RECORD_ENV}=1 pytest tests/unit/test_corrections.py")
            return cached[(a, b)]

        yield lookup
        return
    rows = [row for path in (*TUNING, DEV) for row in load_pairs(path)]
    yield cosines.record(cosines.minilm([r["earlier"] for r in rows] + [r["later"] for r in rows]))
    cosines.write_recorded()


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
    ("User prefers phone calls over email.", "User prefers email over phone calls."),
    ("The user's cat is called Miso.", "the cat's name is Mochi, not Miso"),
    ("The user's cat is called Mochi.", "the cat's name is Miso, not Mochi"),
    ("User's team meeting is on Fridays.", "no, Mondays"),
    ("User lives in Munich.", "User moved to Berlin."),
    ("I love bar charts", "never use bar charts, pie charts only"),
]


# Two periods, a goal and what was done, a lifted rule for another thing (round 11).
PERIODS_AND_GOALS = [
    ("The user's savings goal this year is 12000 dollars.",
     "The user saved 9500 dollars last year."),
    ("Our reading goal this year is 30 books.", "The user read 22 books last year."),
    ("Don't call Ana after 9 pm.", "Texts to Ana after 9 pm are fine now."),
    ("The user lived in Madrid from 2015 to 2019.", "The user now lives in Valencia."),
]

# A lifted rule and changes told with "rebooked" / "extended through" (round 11).
LIFTED_AND_REBOOKED = [
    ("Never use emojis in replies.", "Emojis in replies are fine now."),
    ("The train to Leeds leaves at 9:10.", "The train to Leeds was rebooked to leave at 11:40."),
    ("The free trial ends on May 1.", "The free trial was extended through May 15."),
    ("No calls before 9 am.", "Calls from 8 am are fine now."),
]


@pytest.mark.parametrize("earlier, later", CORRECTIONS + LIFTED_AND_REBOOKED)
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


# A "not X" that the earlier note already rejects agrees with it; it is not a reversal.
AGREEMENTS = [
    ("User likes bar charts more than pie charts for dashboards",
     "Bars, not pies, on dashboards"),
    ("User prefers bar charts over pie charts.", "Never pie charts, bars only."),
    ("User prefers answers without emoji.", "User doesn't want emoji in answers."),
]


@pytest.mark.parametrize("earlier, later", AGREEMENTS + [(b, a) for a, b in AGREEMENTS])
def test_agreeing_with_a_rejection_is_not_a_correction(judge, earlier, later):
    assert judge(earlier, later).relation is not Relation.CORRECTION
    assert classify(earlier, later, 0.8).relation is not Relation.CORRECTION


def test_wanting_what_was_rejected_is_a_correction(judge):
    for earlier, later in [("User prefers answers without emoji.", "User wants emoji in answers."),
                           ("User drinks coffee with milk.",
                            "User drinks coffee without milk now."),
                           ("User prefers bar charts over pie charts.",
                            "User doesn't like bar charts anymore.")]:
        assert judge(earlier, later).relation is Relation.CORRECTION, (earlier, later)


# Facts that look alike but are two: another verb (a particle), another head noun, another
# object of one habit, another holder, another subject, another attribute of a person.
LOOKALIKES = [
    ("User works on Mondays.", "User works out on Mondays."),
    ("User logs in at 8.", "User logs off at 8."),
    ("User's home office has a window.", "User's home office has a window seat."),
    ("User has a bike.", "User has a bike rack."),
    ("User prefers email.", "User prefers email newsletters."),
    ("User checks email at 9am.", "User checks Slack at 9am."),
    ("User learns Spanish on weekends.", "User learns French on weekends."),
    ("User likes red wine.", "User likes white wine."),
    ("User's dog is called Max.", "User's dog's vet is called Max."),
    ("User's cat is called Toast.", "User's cat sitter is called Toast."),
    ("User's work laptop is a Dell.", "User's personal laptop is a Dell."),
    ("User's partner is vegan.", "User's partner is a vet."),
    ("User never works weekends.", "User never works late."),
    ("User is vegetarian.", "User is a vegetarian cook."),
]


@pytest.mark.parametrize("earlier, later", LOOKALIKES + [(b, a) for a, b in LOOKALIKES])
def test_lookalike_facts_are_never_merged(judge, earlier, later):
    verdict = judge(earlier, later)
    assert not supersedes(verdict), verdict


# Synonym and antonym knowledge (curated, offline): restatements that share few words, and
# corrections whose values are antonyms rather than members of an obvious list.
KNOWLEDGE_PARAPHRASES = [
    ("User is vegetarian.", "The user doesn't eat meat."),
    ("User wakes up at 6am.", "User gets up at 6am."),
    ("I can't eat nuts.", "User is allergic to nuts."),
    ("User takes the train to work.", "User commutes to work by train."),
    ("User owns a Tesla Model 3.", "User drives a Tesla Model 3."),
    ("User prefers window seats.", "User likes to sit by the window."),
    ("User prefers bar charts over line charts.",
     "User likes bar charts better than line charts."),
]
ANTONYM_CORRECTIONS = [
    ("User prefers mild salsa.", "User prefers hot salsa."),
    ("User is on the night shift.", "User is on the day shift."),
    ("User prefers summaries at the end.", "User prefers summaries at the start."),
    ("User is retired.", "User went back to work part-time."),
    ("I eat meat", "I went vegan last month"),
    ("The user takes the bus to work.", "The user cycles to work now."),
]


@pytest.mark.parametrize("earlier, later", KNOWLEDGE_PARAPHRASES)
def test_restatements_needing_synonyms_supersede(judge, earlier, later):
    for a, b in ((earlier, later), (later, earlier)):
        verdict = judge(a, b)
        assert verdict.relation is Relation.PARAPHRASE and supersedes(verdict), (a, b, verdict)


@pytest.mark.parametrize("earlier, later", ANTONYM_CORRECTIONS)
def test_corrections_needing_antonyms_supersede(judge, earlier, later):
    verdict = judge(earlier, later)
    assert verdict.relation is Relation.CORRECTION and supersedes(verdict), verdict


# Round 5. Another occasion: a repeatable past event on another date, or the user's own habit
# on another day, is a second fact; a scheduled thing's day or a marked change still corrects.
OCCASIONS = [
    ("User visited Japan in 2019.", "User visited Japan in 2023."),
    ("User visited Japan in 2019.", "User visited Japan again in 2023."),
    ("User ran the Berlin marathon in 2017.", "User ran the Berlin marathon in 2019."),
    ("User is in the office on Wednesdays.", "User is in the office on Thursdays."),
    ("User works from home on Tuesdays.", "User works from home on Thursdays."),
    ("User's friend is Sofia.", "User's friend is Daniel."),
]
DAY_CORRECTIONS = [
    ("Weekly sync is on Mondays.", "no, Fridays"),
    ("User's book club meets on Tuesdays.", "User's book club meets on Thursdays."),
    ("User is in the office on Mondays.", "User is in the office on Fridays now."),
    ("User visited Peru in 2020.", "Actually, user visited Peru in 2021."),
    ("User's thesis advisor is Professor Kim.", "User's thesis advisor is Professor Alvarez."),
    ("User's default browser is Safari.", "User changed their default browser to Firefox."),
    ("User is majoring in biology.", "User changed majors from biology to chemistry."),
]
# A member where the earlier note named the category implies it: a refinement.
ENTAILMENTS = [
    ("User plays an instrument.", "User plays the violin in a community orchestra."),
    ("User's child plays an instrument.", "User's son plays the cello."),
    ("User has a pet bird.", "User has a green-cheeked conure named Kiwi."),
    ("User has a food allergy.", "User has a severe shellfish allergy."),
]
NOT_ENTAILED = [
    ("User plays a sport.", "User watches volleyball."),
    ("User has a bird.", "User wants a cockatiel."),
    ("User doesn't play any sport.", "User doesn't play tennis."),
    ("User takes a medication for headaches.", "User takes ibuprofen for back pain."),
]
NOTATION_PARAPHRASES = [
    ("User works at IBM.", "User works at International Business Machines."),
    ("User signed an NDA with their employer.",
     "User signed a non-disclosure agreement with their employer."),
    ("User plays guitar.", "User is a guitarist."),
    ("User supports Arsenal.", "User is an Arsenal fan."),
    ("User's landlord raised the rent.", "The rent was raised by user's landlord."),
    ("User's flight lands at 6 pm.", "User's flight arrives at 18:00."),
    ("User's standup is at 9:30 am.", "User's standup starts at half past nine in the morning."),
    ("User saves $200 a month.", "User saves two hundred dollars a month."),
    ("User has a PhD in physics.", "User holds a doctorate in physics."),
    # (round 11: accents dropped, a person's holder in apposition, a passive with its verb in
    # front)
    ("The team offsite is in Zürich.", "The team offsite is in Zurich."),
    ("Sam, the user's husband, works at Google.", "The user's husband Sam works at Google."),
    ("Send the weekly report to Dana before Friday noon.",
     "The weekly report must be sent to Dana before Friday noon."),
]


@pytest.mark.parametrize("earlier, later", OCCASIONS + PERIODS_AND_GOALS)
def test_another_occasion_is_another_fact(judge, earlier, later):
    verdict = judge(earlier, later)
    assert verdict.relation is Relation.DISTINCT and not supersedes(verdict), verdict


@pytest.mark.parametrize("earlier, later", DAY_CORRECTIONS)
def test_one_value_slots_and_marked_changes_still_correct(judge, earlier, later):
    verdict = judge(earlier, later)
    assert verdict.relation is Relation.CORRECTION and supersedes(verdict), verdict


@pytest.mark.parametrize("earlier, later", ENTAILMENTS)
def test_a_member_refines_its_category(judge, earlier, later):
    verdict = judge(earlier, later)
    assert verdict.relation is Relation.REFINEMENT and supersedes(verdict), verdict


@pytest.mark.parametrize("earlier, later", NOT_ENTAILED)
def test_a_member_under_another_verb_or_negation_is_no_refinement(judge, earlier, later):
    assert not supersedes(judge(earlier, later))



@pytest.mark.parametrize("earlier, later", NOTATION_PARAPHRASES)
def test_restatements_in_another_notation_supersede(earlier, later):
    for a, b in ((earlier, later), (later, earlier)):
        verdict = classify(a, b)
        assert verdict.relation is Relation.PARAPHRASE and supersedes(verdict), (a, b, verdict)


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


def run_on(request: pytest.FixtureRequest, paths: tuple[Path, ...]) -> Run:
    rows = [row for path in paths for row in load_pairs(path)]
    with_minilm = request.param == "with-minilm"
    cos = request.getfixturevalue("cosine") if with_minilm else None
    return with_minilm, rows, verdicts(rows, cos)


@pytest.fixture(scope="module", params=["structure-only", "with-minilm"])
def train(request: pytest.FixtureRequest) -> Run:
    return run_on(request, TUNING)


@pytest.fixture(scope="module", params=["structure-only", "with-minilm"])
def dev(request: pytest.FixtureRequest) -> Run:
    return run_on(request, (DEV,))


def merged_distinct(run: Run) -> list[tuple[str, str, Verdict]]:
    _, rows, found = run
    return [(r["earlier"], r["later"], v) for r, v in zip(rows, found, strict=True)
            if r["relation"] == "distinct" and supersedes(v)]


def test_no_distinct_pair_is_merged(train, dev):
    assert merged_distinct(train) == []
    assert merged_distinct(dev) == []


def test_correction_recall(train):
    _, rows, found = train
    assert recall(rows, found, "correction") >= 0.95


def test_paraphrase_recall_target(train):
    _, rows, found = train
    assert recall(rows, found, "paraphrase") >= 0.9


def test_refinement_recall(train):
    _, rows, found = train
    assert recall(rows, found, "refinement") >= 0.9


def test_dev_probe_floors(dev):
    """Regression floors under the measured level on the adversarial probes (round 4:
    correction 0.91, paraphrase 0.87 with MiniLM / 0.86 without): unmarked open-class swaps
    ("shops at Aldi" / "at Lidl") stay unsolved by design."""
    with_minilm, rows, found = dev
    assert recall(rows, found, "correction") >= 0.85
    assert recall(rows, found, "paraphrase") >= (0.82 if with_minilm else 0.8)


# --- Output hygiene and the supersede rule ----------------------------------------------------


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.stem)
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


@pytest.mark.parametrize("path, minimum, size", [
    (TRAIN, {"correction": 70, "paraphrase": 40, "refinement": 25, "distinct": 60}, 200),
    (HOLDOUT, {"correction": 10, "paraphrase": 10, "refinement": 10, "distinct": 10}, 50),
    (DEV, {"correction": 50, "paraphrase": 30, "refinement": 10, "distinct": 50}, 200),
    (HOLDOUT2, {"correction": 20, "paraphrase": 15, "refinement": 10, "distinct": 20}, 80),
    (HOLDOUT3, {"correction": 20, "paraphrase": 15, "refinement": 10, "distinct": 20}, 80),
    # written blind to one brief: 45 / 40 / 30 / 45 pairs
    *((path, {"correction": 30, "paraphrase": 30, "refinement": 20, "distinct": 30}, 150)
      for path in (HOLDOUT4, HOLDOUT5, HOLDOUT6, HOLDOUT7, HOLDOUT8, HOLDOUT9, HOLDOUT10,
                   HOLDOUT11, HOLDOUT12, HOLDOUT13)),
], ids=lambda p: p.stem if isinstance(p, Path) else "")
def test_data_files_are_well_formed(path, minimum, size):
    rows = load_pairs(path)
    assert len(rows) >= size
    counts = {relation: 0 for relation in minimum}
    for row in rows:
        assert set(row) == {"earlier", "later", "relation", "domain"}
        assert row["earlier"].strip() and row["later"].strip() and row["domain"].strip()
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", row["domain"])
        counts[row["relation"]] += 1  # KeyError on an unknown label
    assert all(counts[relation] >= n for relation, n in minimum.items()), counts
    pairs = [(r["earlier"], r["later"]) for r in rows]
    assert len(pairs) == len(set(pairs))


def test_held_out_sets_share_no_pair_with_any_other_file():
    def keys(path: Path) -> set[tuple[str, str]]:
        return {(r["earlier"].lower(), r["later"].lower()) for r in load_pairs(path)}

    # Written independently, held-out sets 4 and 5, and 5 and 6, happen to share one
    # paraphrase each; the earlier set was tuned on in the next round, so that one pair of the
    # later set is not blind (bench/corrections.py says so).
    known = {frozenset((HOLDOUT5, HOLDOUT4)): {("user is a vegan.", "user follows a vegan diet.")},
             frozenset((HOLDOUT6, HOLDOUT5)): {("user's flat is on the fourth floor.",
                                                "user's apartment is on the 4th floor.")}}
    for held_out in (HOLDOUT, HOLDOUT2, HOLDOUT3, HOLDOUT5, HOLDOUT6, HOLDOUT7,
                     HOLDOUT8, HOLDOUT9, HOLDOUT10, HOLDOUT11, HOLDOUT12,
                     HOLDOUT13):
        for other in ALL_FILES:
            if other != held_out:
                shared = keys(held_out) & keys(other)
                assert shared == known.get(frozenset((held_out, other)), set()), (held_out.name,
                                                                       other.name)
