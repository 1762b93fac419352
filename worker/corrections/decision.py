"""The decision: an ordered tuple of small named rules over one pair of parsed notes.

Like the write path's guards, each rule is one question, `(pair) -> Verdict | None` (the pair
and what the rules read of it are in `pair`); the first verdict wins, and a pair no rule claims
is DISTINCT (merging two facts loses a memory, keeping a duplicate costs little). Some steps
only observe: they record a signal that later rules and the verdict's signal list read
(`observe_*`, always None). Order is meaning: a rule may rely on every rule before it having
declined.
"""

from __future__ import annotations

from collections.abc import Callable

from worker.corrections import lexicon, meaning, restate, rules
from worker.corrections.pair import (
    ENVIRONMENTS,
    GENERIC,
    POSSESSION,
    STRONG_NAMES,
    Pair,
    pair_of,
)
from worker.corrections.parse import Block, Note, content
from worker.corrections.verdict import (
    PARAPHRASE_MIN_SIMILARITY,
    PREDICATE_CHANGE_MIN_SIMILARITY,
    Relation,
    Verdict,
)

Rule = Callable[[Pair], Verdict | None]


# -- Same words, rejections, environments, comparisons ----------------------------------------

def nothing_to_compare(p: Pair) -> Verdict | None:
    if not p.old.content or not p.new.content:
        return p.verdict(Relation.DISTINCT, 0.5, "no_content")
    return None


def same_tokens(p: Pair) -> Verdict | None:
    old, new = p.old, p.new
    if old.tokens == new.tokens and old.negated == new.negated and not p.strong and (
            not old.rejected):
        return p.verdict(Relation.PARAPHRASE, 0.95, "same_content")
    return None


def explicit_rejection(p: Pair) -> Verdict | None:
    """"Mochi, not Miso": the later note rejects a value the earlier one asserted."""
    positive = p.e_content - p.old.against
    # A rejected value naming a rival the earlier note lacks ("the staging database was
    # replaced" against "the production database runs Postgres") is about another thing.
    rival = any(lexicon.value_classes(t) or t in ENVIRONMENTS for t in p.rejected - p.e_content)
    if not p.old.negated and p.rejected & positive and not rival and not rules.other_kind(
            p.old, p.new):
        return p.verdict(Relation.CORRECTION, 0.95, "explicit_rejection")
    return None


def rejection_taken_back(p: Pair) -> Verdict | None:
    """The later note goes back to what the earlier one rejected ("replaced Zoom with Teams" ->
    "uses Zoom for calls"), and says little else."""
    taken_back = ((p.old.rejected - p.e_content) & (p.new.pro - p.new.rejected)) - GENERIC
    if taken_back and not p.new.negated and len(p.l_content - taken_back - GENERIC) <= 2:
        return p.verdict(Relation.CORRECTION, 0.75, "explicit_rejection")
    return None


def other_environment(p: Pair) -> Verdict | None:
    """Another environment and another value ("Production uses the live key" / "the staging key
    in tests was wrong"): another system. A changed environment alone ("deploys to staging" ->
    "actually to production") stays a value."""
    e_env, l_env = p.e_only & ENVIRONMENTS, p.l_only & ENVIRONMENTS
    if e_env and l_env and ((p.e_only - e_env) | (p.l_only - l_env)) - GENERIC:
        return p.verdict(Relation.DISTINCT, 0.75, "subject_change")
    return None


def comparison_swap(p: Pair) -> Verdict | None:
    if p.old.comparison and p.new.comparison:
        (el, er), (ll, lr) = p.old.comparison, p.new.comparison
        if el & lr and er & ll and not el & ll:
            return p.verdict(Relation.CORRECTION, 0.9, "comparison_swap")
    return None


# -- Polarity ---------------------------------------------------------------------------------

def negated_clause(p: Pair) -> Verdict | None:
    """A clause that negates the earlier note's content: "no longer vegetarian" (about the same
    holder: "User's sister is no longer vegetarian" says nothing of the user)."""
    core = p.e_content - GENERIC
    other_holder = bool(p.holders & (p.e_content ^ p.l_content))
    for clause, negated in p.new.clauses:
        shared = clause - GENERIC
        reverses = negated != p.old.negated and (shared <= core or core <= shared)
        if reverses and core & shared and not p.additive and not p.agrees and not other_holder:
            return p.verdict(Relation.CORRECTION, 0.9, "polarity_reversal")
    return None


def observe_polarity_flip(p: Pair) -> None:
    p.flip = p.fire("polarity_flip", p.old.negated != p.new.negated)


def against_what_was_wanted(p: Pair) -> Verdict | None:
    """What one note speaks against the other wants: "answers without emoji" -> "emoji in
    answers now", "coffee with milk" -> "coffee without milk"."""
    old, new = p.old, p.new
    if not (p.flip or old.negated or p.additive) and (p.l_content - GENERIC) <= p.e_content and (
            old.against & new.pro or new.against & old.pro):
        return p.verdict(Relation.CORRECTION, 0.75, "polarity_reversal")
    return None


# -- Meaning: categories, schedules, occasions, holders ----------------------------------------

def member_of_category(p: Pair) -> Verdict | None:
    """A member where the earlier note named the category ("plays the cello" for "plays an
    instrument"): the later note implies the earlier, so replacing it loses nothing."""
    if not p.strong and not p.additive and meaning.implies(p.old, p.new):
        return p.verdict(Relation.REFINEMENT, 0.75, "entailment")
    return None


def category_of_member(p: Pair) -> Verdict | None:
    """The later note names the category of what the earlier named ("lives in Austin" -> "lives
    in Texas"): nothing was corrected, and replacing the earlier loses detail."""
    if not p.strong and not p.weak and meaning.implies(p.new, p.old):
        return p.verdict(Relation.PARAPHRASE, 0.45, "dropped_detail")
    return None


def frequency_made_concrete(p: Pair) -> Verdict | None:
    """"a weekly call" -> "a call every Sunday at 6 p.m."."""
    if not p.strong and not p.weak and p.related and restate.scheduled(
            p.old, p.new, p.e_only, p.l_only):
        return p.verdict(Relation.REFINEMENT, 0.7, "scheduled")
    return None


def another_occasion(p: Pair) -> Verdict | None:
    """Another trip on another date, the user's habit on another day: both hold. ("back" is a
    marker, but a return to a past event's place is another occasion.)"""
    old, new = p.old, p.new
    returning = p.fresh & STRONG_NAMES == {"back"}
    if (not p.strong or returning) and not (old.negated or new.negated) and (
            meaning.another_occasion(old, new, p.e_only, p.l_only)
            or (not p.weak and meaning.another_day(old, new, p.e_only, p.l_only))):
        return p.verdict(Relation.DISTINCT, 0.8, "another_occasion")
    return None


def another_time_of_life(p: Pair) -> Verdict | None:
    """A plan and what happened, a habit and one exception to it, this year's and last year's,
    a state that ended ("lived in Madrid from 2015 to 2019") and the present one: both hold."""
    old, new = p.old, p.new
    if meaning.plan_and_outcome(old, new) or meaning.one_occurrence(old, new) or (
            meaning.other_period(old, new) or (not p.strong and meaning.ended_state(old, new))):
        return p.verdict(Relation.DISTINCT, 0.8, "another_occasion")
    return None


def holder_change(p: Pair) -> Verdict | None:
    """The fact moved to another holder ("User's wife works at Google"): never the same."""
    old, new = p.old, p.new
    if (p.holders & (p.e_only | p.l_only) or rules.holder_chain(old, new)
            or rules.holder_moved(old, new)) and new.has_subject and not new.pronoun:
        return p.verdict(Relation.DISTINCT, 0.8, "holder_change")
    return None


def role_swap(p: Pair) -> Verdict | None:
    if not (p.e_only | p.l_only) - GENERIC and rules.roles_swapped(p.old, p.new):
        return p.verdict(Relation.DISTINCT, 0.7, "role_swap")
    return None


def sentence_turned_around(p: Pair) -> Verdict | None:
    """"Dec 20 is when the freeze begins": the aligner would read a new subject, but every
    content word is matched in the other note. (A liking is no use, "likes dogs" / "has dogs"
    no possession: those keep their own rules below.)"""
    pref_change = bool(p.old.verbs & rules.PREF) != bool(p.new.verbs & rules.PREF)
    changed = p.e_only | p.l_only
    if changed and not (p.strong or p.weak or p.additive) and not pref_change and not (
            changed & POSSESSION) and restate.reordered_restatement(
            p.old, p.new, p.e_only, p.l_only):
        return p.verdict(Relation.PARAPHRASE, 0.7, "reordered")
    return None


# -- Values of one class ----------------------------------------------------------------------

def observe_fragment(p: Pair) -> None:
    p.fragment = p.fire("fragment", not p.new.has_subject and len(p.l_content) <= len(p.e_content))


def observe_value_class_conflict(p: Pair) -> None:
    """Some value of the earlier note has a same-class rival in the later one (Mondays/Fridays)."""
    p.conflict = p.fire("value_class_conflict", bool(p.e_classes & p.l_classes))


def class_value_change(p: Pair) -> Verdict | None:
    """A marked rival value of one class. Competing values are evidence of their own, so a
    fragment's low cosine ("no, Teams." = 0.07 against "I prefer Zoom for calls") does not veto
    them. A rival thing with the polarity turned too ("Don't call Ana after 9 pm" / "Texts to
    Ana after 9 pm are fine now") lifts nothing of the earlier rule; a new time or amount ("no
    meetings before 10 am" / "from 8:30 am is fine now") moves it."""
    # A short later note that only names the new value ("no, Teams.", "Switched to Firefox")
    # needs no shared word; one with a verb of its own ("now works in Munich") does.
    bare = not {t for t in p.l_only if not lexicon.value_classes(t)} & (
        rules.EXCLUSIVE | rules.MULTI | rules.LIGHT)
    # (a date that comes with the new value is no verb of its own: "got married last spring")
    undated = {t for t in p.l_content - {rules.RELOCATE} if not meaning.dating(t)}
    if p.conflict and p.marked and not p.elsewhere and not (
            p.flip and p.rival_thing and not p.value_marker) and (
            p.anchors or p.fragment or (bare and len(undated) <= 2)):
        return p.verdict(Relation.CORRECTION, 0.8, "class_value_change")
    return None


# -- A negation on one side -------------------------------------------------------------------

def negation_agrees(p: Pair) -> Verdict | None:
    if p.flip and p.agrees and not p.strong:
        if p.e_content == p.l_content:
            return p.verdict(Relation.PARAPHRASE, 0.7, "negation_agrees")
        if p.e_content < p.l_content:
            return p.verdict(Relation.REFINEMENT, 0.65, "negation_agrees")
        return p.verdict(Relation.PARAPHRASE, 0.45, "negation_agrees")
    return None


def marked_flip_on_shared_topic(p: Pair) -> Verdict | None:
    if p.flip and p.strong and p.anchors and not p.additive and p.related and (
            p.value_marker or not p.rival_thing):
        return p.verdict(Relation.CORRECTION, 0.7, "marker_on_shared_topic")
    return None


def negated_antonym(p: Pair) -> Verdict | None:
    """"is not happy" / "is sad": the negation of the antonym is the same fact."""
    if p.flip and len(p.e_only) == 1 and len(p.l_only) == 1 and not p.strong:
        (a,), (b,) = p.e_only, p.l_only
        if rules.ANTONYMS.get(a) == b:
            return p.verdict(Relation.PARAPHRASE, 0.7, "negated_antonym")
    return None


def polarity_flip_alone(p: Pair) -> Verdict | None:
    return p.verdict(Relation.DISTINCT, 0.7) if p.flip else None


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
