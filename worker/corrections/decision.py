"""The decision: an ordered tuple of small named rules over one pair of parsed notes.

Like the write path's guards, each rule is one question, `(pair) -> Verdict | None` (the pair
and what the rules read of it are in `pair`); the first verdict wins, and a pair no rule claims
is DISTINCT (merging two facts loses a memory, keeping a duplicate costs little). Some steps
only observe: they record a signal that later rules and the verdict's signal list read
(`observe_*`, always None). Order is meaning: a rule may rely on every rule before it having
declined.

The rules themselves live in `claims` (what the notes assert, read whole) and `wording` (where
their words differ); this module is their order.
"""

from __future__ import annotations

from collections.abc import Callable

from worker.corrections.claims import (
    against_what_was_wanted,
    another_occasion,
    another_time_of_life,
    category_of_member,
    class_value_change,
    comparison_swap,
    explicit_rejection,
    frequency_made_concrete,
    holder_change,
    marked_flip_on_shared_topic,
    member_of_category,
    negated_antonym,
    negated_clause,
    negation_agrees,
    nothing_to_compare,
    observe_fragment,
    observe_polarity_flip,
    observe_value_class_conflict,
    other_environment,
    polarity_flip_alone,
    rejection_taken_back,
    role_swap,
    same_tokens,
    sentence_turned_around,
)
from worker.corrections.pair import Pair, pair_of
from worker.corrections.parse import Note
from worker.corrections.verdict import Relation, Verdict
from worker.corrections.wording import (
    block_subject_change,
    detail_dropped_or_added,
    equivalent_verb,
    generic_words_differ,
    head_change,
    marker_on_shared_topic,
    observe_predicate_change,
    observe_predicate_family_change,
    observe_spread_and_slots,
    phrasal_verb,
    predicate_restated,
    restated,
    same_content_words,
    single_value_change,
    words_in_front,
)

Rule = Callable[[Pair], Verdict | None]


DECISION_RULES: tuple[Rule, ...] = (
    nothing_to_compare,
    same_tokens,
    explicit_rejection,
    rejection_taken_back,
    other_environment,
    comparison_swap,
    negated_clause,
    observe_polarity_flip,
    against_what_was_wanted,
    member_of_category,
    category_of_member,
    frequency_made_concrete,
    another_occasion,
    another_time_of_life,
    holder_change,
    role_swap,
    sentence_turned_around,
    observe_fragment,
    observe_value_class_conflict,
    class_value_change,
    negation_agrees,
    marked_flip_on_shared_topic,
    negated_antonym,
    polarity_flip_alone,
    observe_predicate_family_change,
    same_content_words,
    observe_predicate_change,
    words_in_front,
    phrasal_verb,
    block_subject_change,
    equivalent_verb,
    generic_words_differ,
    head_change,
    predicate_restated,
    detail_dropped_or_added,
    single_value_change,
    observe_spread_and_slots,
    marker_on_shared_topic,
    restated,
)


def decide(old: Note, new: Note, similarity: float | None) -> Verdict:
    """The first verdict of `DECISION_RULES`; DISTINCT when none claims the pair."""
    pair = pair_of(old, new, similarity)
    for rule in DECISION_RULES:
        found = rule(pair)
        if found is not None:
            return found
    return pair.verdict(Relation.DISTINCT, 0.8 if not pair.anchors else 0.65)
