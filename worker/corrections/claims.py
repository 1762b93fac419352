"""The decision's first rules: what the two notes assert, read whole.

Same words, an explicit rejection, another environment, a swapped comparison, a reversed
polarity, a category and its member, another occasion or time of life, another holder, a rival
value of one class, a negation on one side. Each is one question, `(pair) -> Verdict | None`,
over the content words, polarity and meaning of the pair (worker.corrections.pair); `observe_*`
steps only record a signal that later rules read. Their order, and their place before the
rules of `wording`, is `DECISION_RULES` in worker.corrections.decision: a rule may rely on
every rule before it having declined.
"""

from __future__ import annotations

from worker.corrections import lexicon, meaning, restate, rules
from worker.corrections.pair import ENVIRONMENTS, GENERIC, POSSESSION, STRONG_NAMES, Pair
from worker.corrections.verdict import Relation, Verdict

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
