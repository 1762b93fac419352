"""The decision's last rules: where the aligned notes' words differ.

Reached only when every rule of `claims` has declined: the two notes assert the same kind of
thing, and what is left is how their wording differs. A changed verb family, words put in
front, a phrasal verb, another subject or head noun, only generic words, a restated predicate,
detail dropped or added, one value replaced, a correction marker on a shared topic, a close
restatement. The rules read the alignment's blocks and changes (worker.corrections.pair);
their order is `DECISION_RULES` in worker.corrections.decision.
"""

from __future__ import annotations

from worker.corrections import meaning, rules
from worker.corrections.align import Block, content
from worker.corrections.pair import GENERIC, POSSESSION, Pair
from worker.corrections.verdict import (
    PARAPHRASE_MIN_SIMILARITY,
    PREDICATE_CHANGE_MIN_SIMILARITY,
    Relation,
    Verdict,
)

# -- Where the words differ -------------------------------------------------------------------

def observe_predicate_family_change(p: Pair) -> None:
    """"likes X" vs "uses X": both predicates, but not the same fact without more evidence. (An
    instruction to the assistant, "Use metric units", is the user's preference: "prefers metric
    units" restates it.)"""
    old, new = p.old, p.new
    instructed = old.instruction != new.instruction
    p.family_change = p.fire("predicate_family_change", bool(old.verbs and new.verbs) and (
        bool(old.verbs & rules.PREF) != bool(new.verbs & rules.PREF)) and not instructed)


def same_content_words(p: Pair) -> Verdict | None:
    if not p.e_only and not p.l_only:
        confidence = 0.5 if p.family_change and not p.sim_high else 0.9
        return p.verdict(Relation.PARAPHRASE, confidence, "same_content")
    return None


def observe_predicate_change(p: Pair) -> None:
    """Only the verb differs ("drives a hatchback" / "car is a hatchback", "speaks German" / "is
    learning German"): MiniLM rates such pairs by what they share, so only a very high cosine
    restates. A single swapped value ("with Bob" / "with Alice") never does."""
    b = p.blocks
    p.predicate_only = p.fire("predicate_change", len(b) == 1 and b[0].start == 0 and not b[0].tail)


def words_in_front(p: Pair) -> Verdict | None:
    """Words put in front of the whole earlier note change its subject or its verb ("User's son
    is learning Japanese"), they do not refine it; after "switched to" they are the new value.
    Words moved there from later in the note change nothing ("has an Echo smart speaker")."""
    b = p.blocks
    if b and b[0].start == 0 and not b[0].earlier and not p.fragment and (
            set(content(b[0].later)) - GENERIC - p.e_content) and not p.strong:
        return p.verdict(Relation.DISTINCT, 0.7, "subject_change")
    return None


def _one_block(p: Pair) -> Block | None:
    return p.blocks[0] if len(p.blocks) == 1 and not p.strong else None


def phrasal_verb(p: Pair) -> Verdict | None:
    """"works" / "works out": another verb."""
    block = _one_block(p)
    if block is not None and rules.phrasal(p.old, block):
        return p.verdict(Relation.DISTINCT, 0.8, "phrasal_verb")
    return None


def block_subject_change(p: Pair) -> Verdict | None:
    block = _one_block(p)
    if block is not None and rules.subject_change(p.old, block):
        return p.verdict(Relation.DISTINCT, 0.7, "subject_change")
    return None


def equivalent_verb(p: Pair) -> Verdict | None:
    """"drives" / "owns a Tesla"; after a subject, "flight lands" / "arrives at 6pm"."""
    block = _one_block(p)
    if block is not None and rules.same_verb(block) and (p.predicate_only or block.start > 0):
        return p.verdict(Relation.PARAPHRASE, 0.7, "equivalent_verb")
    return None


def _one_sided(p: Pair) -> bool:
    """Words only left or only arrived: a restatement, a head change, or detail."""
    return not p.e_only or not p.l_only


def generic_words_differ(p: Pair) -> Verdict | None:
    """Only generic words differ. ("likes dogs" / "has dogs" is not one fact: a liking is not a
    possession.)"""
    changed = p.e_only | p.l_only
    possession = bool(p.old.verbs) != bool(p.new.verbs) and changed & POSSESSION
    if _one_sided(p) and not changed - GENERIC and not possession:
        return p.verdict(Relation.PARAPHRASE, 0.75, "generic_words_differ")
    return None


def head_change(p: Pair) -> Verdict | None:
    """"a window" / "a window seat": another head noun."""
    if _one_sided(p) and len(p.blocks) == 1 and rules.new_head(p.old, p.new, p.blocks[0]):
        return p.verdict(Relation.DISTINCT, 0.7, "head_change")
    return None


def predicate_restated(p: Pair) -> Verdict | None:
    if _one_sided(p) and p.predicate_only:
        confidence = 0.6 + (p.similarity or 0.0) - PREDICATE_CHANGE_MIN_SIMILARITY
        return p.verdict(Relation.PARAPHRASE, confidence if p.predicate_sim else 0.5)
    return None


def detail_dropped_or_added(p: Pair) -> Verdict | None:
    if not _one_sided(p):
        return None
    if not p.l_only:
        return p.verdict(Relation.PARAPHRASE, 0.45, "dropped_detail")
    confidence = 0.8 if p.related and not p.family_change else 0.5
    return p.verdict(Relation.REFINEMENT, confidence, "added_detail")


def single_value_change(p: Pair) -> Verdict | None:
    """One span changed to a rival value (blue -> red, "rents" -> "owns", a one-value slot)."""
    if len(p.changes) != 1:
        return None
    change = p.changes[0]
    rule = rules.value_change(p.old, change, p.marked, p.new.names)
    if rule and (p.related or rule == "class_value_change") and not p.additive:
        confidence = 0.85 if rule == "class_value_change" else 0.7
        return p.verdict(Relation.CORRECTION, confidence + 0.05 * p.marked, rule)
    # The object in front of a kept qualifier changed ("code in Python" -> "tests in Python"):
    # another object, whatever marker comes with it.
    after = p.old.tokens[change.end] if change.end < len(p.old.tokens) else ""
    p.fire("object_swap", after.startswith("@") and not any(
        t.startswith("@") for t in change.earlier))
    return None


def observe_spread_and_slots(p: Pair) -> None:
    p.fire("multi_span_change", len(p.changes) != 1)
    # What left and what arrived are values of different classes ("concise" -> "in Spanish",
    # "bar charts" -> "dark backgrounds"): another slot, whatever marker comes with it.
    p.fire("slot_mismatch", bool(p.e_classes and p.l_classes and not p.conflict))


def _marked_topic(p: Pair) -> bool:
    # One value replaced after the same verb or copula ("uses a trackpad" -> "uses a mouse
    # now", "is a data engineer" -> "is a product manager now") shares the slot even when the
    # verb is the only word in common.
    changes = p.changes
    frame = len(changes) == 1 and changes[0].start > 0 and (
        bool(p.old.verbs & p.new.verbs) or p.old.tokens[:changes[0].start] == (rules.BE,))
    return bool((p.anchors or frame) and not p.additive and p.related and not p.elsewhere and not (
        {"object_swap", "slot_mismatch"} & set(p.signals)))


def marker_on_shared_topic(p: Pair) -> Verdict | None:
    if p.strong and _marked_topic(p):
        return p.verdict(Relation.CORRECTION, 0.75, "marker_on_shared_topic")
    if p.weak and _marked_topic(p) and len(p.changes) == 1:
        return p.verdict(Relation.CORRECTION, 0.65, "marker_on_shared_topic")
    return None


def restated(p: Pair) -> Verdict | None:
    """Several small differences and a high cosine. (A date word on one side only, "did a
    triathlon last August" / "is training for one this August", makes two facts however close
    their wording.)"""
    redated = any(map(meaning.dating, p.e_only | p.l_only))
    if p.sim_high and p.aligned and not p.conflict and not p.strong and not redated and (
            len(p.blocks) > 1 or (p.predicate_only and p.predicate_sim)):
        assert p.similarity is not None
        confidence = 0.6 + (p.similarity - PARAPHRASE_MIN_SIMILARITY)
        return p.verdict(Relation.PARAPHRASE, confidence, "restated")
    return None
