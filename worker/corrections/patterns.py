"""Surface patterns for the correction detector (`worker.corrections`): correction markers,
explicit rejections and reversal verbs, and the functions that apply them and the phrase
rewrites (contractions, idioms, multi-word names: `data/early_phrases.tsv`,
`data/phrases.tsv`) to a note's text before it is tokenized.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from worker.corrections import numbers, vocabulary

# Explicit rejection of a value: "Mochi, not Miso", "not Notion but Obsidian", "instead of
# PDF", "switched from VS Code to Neovim". Group 1 is the rejected value.
_VALUE = r"((?:[\w$€£+./:-]+\s*){1,3}?)"
_DET = r"(?:the |my |their |his |her |our |its |a |an )?"
# Where a left value ends: punctuation, the end, or the next clause or qualifier.
_END = (r"(?=\s*(?:[,.;!]|$)|\s+(?:and|but|to|for|in|at|after|last|this|since|because|"
        r"when|program|course|account|subscription|plan)\b)")
REJECTIONS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bnot\s+" + _VALUE + r"\s*,?\s*but\b"),
    re.compile(r"\binstead of\s+" + _VALUE + r"(?=[,.;!]|$)"),
    re.compile(r"\binstead of\s+(\S+)"),
    re.compile(r",\s*not\s+" + _VALUE + r"\s*[.!]*\s*$"),
    re.compile(r"\b(?:switch(?:ed)?|chang(?:ed|e)|mov(?:ed|e)|went|go(?:es)?|gone)\s+from\s+"
               + _VALUE + r"\s+to\b"),
    # The slot may stand between the verb and "from" ("changed majors from biology to
    # chemistry", "moved all their accounts from Chase to ...").
    re.compile(r"\b(?:switch(?:ed|es)?|chang(?:ed|es|e)|mov(?:ed|es|e))\s+(?:[\w'-]+\s+){1,4}?"
               r"from\s+" + _VALUE + r"\s+to\b"),
    re.compile(r"\brather than\s+" + _VALUE + r"(?=[,.;!]|$)"),
    # "replaced Zoom with Teams", "traded the car for a bike", "swapped tea for coffee"
    re.compile(r"\b(?:replac(?:ed|es|e|ing))\s+" + _VALUE + r"\s+with\b"),
    # A successor in a role names the one who left it: "Tom replaced Sarah as head of HR".
    re.compile(r"\b(?:replac(?:ed|es|ing)|succeed(?:ed|s|ing))\s+" + _VALUE + r"\s+as\b"),
    # The passive names the old value first: "Jira was replaced by Linear", "the Reno
    # warehouse has been superseded by Phoenix". Anchored at a clause start so the subject,
    # not a word before it, is what was replaced.
    re.compile(r"(?:^|[,;:]\s*)\W*" + _DET + _VALUE + r"\s+(?:was|were|is|are|has been|have been|"
               r"got|gets|is being|will be) (?:replaced|superseded|succeeded) (?:by|with)\b"),
    re.compile(r"\b(?:trad(?:ed|es|e|ing)(?: in)?|swap(?:ped|s)?|exchang(?:ed|es|e))\s+"
               + _VALUE + r"\s+for\b"),
    # Leaving a tool, provider or program: "migrated off Jira", "I'm off Notion", "moved away
    # from AWS", "withdrew from the MBA", "closed the Chase account", "dropped Zendesk for".
    re.compile(r"\b(?:migrat|mov|switch|got|came)(?:ed|es|e|ing)? (?:off(?: of)?|away from)\s+"
               + _DET + _VALUE + _END),
    re.compile(r"\b(?:i am|user is|they are|he is|she is|we are|team is) (?:off|done with)\s+"
               + _DET + _VALUE + _END),
    re.compile(r"\bwithdr(?:ew|awn|aws|aw|awing) from\s+" + _DET + _VALUE + _END),
    re.compile(r"\bclos(?:ed|es|e|ing) (?:down )?" + _DET + _VALUE
               + r"\s*(?:bank |checking |savings |brokerage )?accounts?\b"),
)

# Markers read from a verb of change alone ("raised ... to", "reassigned", "down to"): with
# another subject in front they speak of another thing ("Basic plan price raised to $12").
CHANGE_VERB_MARKERS = frozenset({"adjusted", "reassigned", "down_to", "moved_slot", "rescheduled"})

# Correction markers, searched in the lower-cased text and removed before tokenizing. A marker
# only counts when the later note has it and the earlier does not.
STRONG_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("changed_mind", r"\bchanged? (?:my|their|his|her|our) (?:minds?|requests?|preferences?)\b"
                         r"|\bon second thoughts?\b"),
        ("scratch_that", r"\b(?:scratch|forget|ignore|strike) (?:that|this)\b"),
        ("meant", r"\b(?:i|they|user|we) (?:actually )?meant\b|\bi mean\b"),
        ("make_that", r"\bmake (?:that|it)\b"),
        ("no_wait", r"\bno,? wait\b|^\W*wait\b"),
        ("leading_no", r"^\W*(?:no|nope|nah)\b\s*[,.!:;-]"),
        ("apology", r"^\W*(?:sorry|oops|my bad)\b"),
        ("correction", r"\bcorrection\b\s*:?|\bcorrected\b|\bupdate\s*:"),
        ("actually", r"\bactually\b|\bturns out\b"),
        ("instead", r"\binstead\b"),
        ("anymore", r"\bany ?more\b|\bnot anymore\b"),
        # A rule lifted: "Meetings before 10 am are fine now" after "Don't schedule meetings
        # before 10 am".
        ("now_allowed", r"\b(?:is|are) (?:fine|ok|okay|allowed|permitted) now\b"
                        r"|\b(?:is|are) now (?:fine|ok|okay|allowed|permitted)\b"),
        ("leading_rather", r"^\W*rather\b"),
        ("now_pref", r"\bnow (?=(?:prefers?|likes?|loves?|wants?|uses?|lives|works|is|are)\b)"),
        ("from_now_on", r"\bfrom now on\b|\bgoing forward\b|\bfrom here on\b"),
        # The word between "switched" and "to" is the slot and stays ("switched mains to Ana");
        # so does the plural after a past "changed" ("changed lawyers": a new one).
        ("switched", r"\b(?:switch|upgrade|downgrade|migrate)(?:ed|d|es|s|ing)? "
                     r"(?P<keep>(?:(?!(?:over|back|to|from)\b)\w+ ){0,3})(?:over |back )?"
                     r"(?:to|from)\b"
                     r"|\b(?:changed|switched|swapped) (?:(?:my|their|his|her|our) )?"
                     r"(?=\w+s\b(?! to\b| from\b| for\b| with\b))"
                     r"|\bswapped (?:to|for)\b|\bupgrade\s*:|\breplac(?:ed|es|e|ing)\b"
                     r"|\b(?:trad|swapp|exchang)(?:ed|es|e|ing)?\b(?= .*\bfor\b)"),
        ("changed_to", r"\bchang(?:ed|es|e) (?=(?:\w+ ){0,4}to\b)|\b(?:went|gone|goes|go) "
                       r"(?:up|down) to\b|\b(?:increased|decreased|raised|lowered|rose|fell|"
                       r"dropped|reduced|grew|cut|slashed|trimmed|bumped|upped|capped|"
                       r"doubled|halved|extended|shortened) to\b(?=\s+\S)"),
        ("down_to", r"\bdown to(?=\s+\$?\d)|\b(?:is|are|was|were) up to(?=\s+\$?\d)"),
        # The slot stands between the verb and the new amount ("lowered the savings target to
        # $5,000", "raised the Pro plan price to $20"): it stays, and the amount becomes its value.
        ("adjusted", r"\b(?:increased|decreased|raised|lowered|reduced|cut|bumped|upped|extended|"
                     r"shortened|trimmed|capped) (?P<keep>(?:(?!to\b)[\w$'#.-]+ ){1,4}?)to\b"
                     r"(?=\s+\S)"),
        # A thing handed to another owner, or renamed or repriced: "reassigned to the database
        # team" says "assigned to" anew.
        ("reassigned", r"\bre-?(?=(?:assign|nam|brand|pric|allocat|rout|categoriz|classifi|"
                       r"label)(?:ed|es|e|ing)?\b)"),
        # The words between "moved" and "to" name what moved ("moved car insurance to
        # Progressive", "moved the standup to 10am"): that slot stays and gets the new value.
        # Household words ("moved the family to Denver") still say the user moved house, and
        # the user's whole holdings ("moved everything to GCP", "their accounts to a credit
        # union") are the user's choice moving: both stay relocations.
        # ("Move the daily digest to 6:15 am": an instruction to change the slot)
        ("moved_slot", r"\b(?:moved|moving|moves|^\W*move) (?:the )?"
                       r"(?P<keep>(?!(?:home|house) to\b)"
                       r"(?!(?:the|my|our|their|his|her|it|back|here|there|away|out|over|"
                       r"abroad|family|kids|them|us|in|with|recently|just|finally|permanently|"
                       r"all|everyone|everything)\b)\w+(?: \w+)?) to\b"),
        ("relocated", r"\b(?:relocated|relocating|moved|moving|moves) (?:\w+ ){0,2}?"
                      r"(?:back )?to\b"),
        # A person who transfers goes elsewhere ("transferred to Cedar Ridge Academy"); money
        # transferred to savings has an object in between and is no move.
        ("transferred", r"\btransfer(?:red|ring|s)? to\b"),
        # The thing rescheduled may stand before "to" ("rescheduled the cleaning to June 5"):
        # it stays, like the slot after "moved".
        # ("rebooked to depart at 2:15 pm", "extended through August 2028")
        ("rescheduled", r"\b(?:slipped|pushed(?: back)?|postponed|delayed|rescheduled|bumped"
                        r"|rebooked|brought forward) (?P<keep>(?:(?!(?:to|until|till)\b)"
                        r"[\w'-]+ ){0,3}?)(?:to|until|till)\b"
                        r"|\b(?:rebooked|rescheduled) for\b"),
        ("rescheduled", r"\bextended (?P<keep>(?:(?!(?:through|until|till)\b)[\w'-]+ ){0,3}?)"
                        r"(?:through|until|till)\b"),
        ("became", r"\b(?:went|go|goes|became|become|becomes|turned|turns|got|gets|get) "
                   r"(?=(?:a |an )?(?:vegan|vegetarian|pescatarian|remote|hybrid|keto|married|"
                   r"divorced|engaged|separated|single)\b)"),
        ("back", r"\b(?:back (?:in|at|to|on)|returned to)\b"),
    )
)
# A leading "Since <event>" clause ("Since the reorg, the user reports to ...") dates a new
# state as "now" does; the clause itself is no part of the fact.
# "As of April," dates a new state the same way (the date is when it began, not the fact).
WEAK_MARKERS = re.compile(r"\bnow\b|\bthese days\b|\bnowadays\b|\bcurrently\b|\bagain\b"
                          r"|^\W*(?:as of|effective|starting|from) (?:[\w-]+ ){0,2}?[\w-]+\s*,"
                          r"|\brecently\b|\blately\b|\blast (?:week|month|year)\b"
                          r"|^\W*since (?:the |a |an |my |their |our |his |her )?[\w-]+(?: [\w-]+)?"
                          r"(?:\s*,\s*|\s+(?=(?:the user|user|i|they|he|she|we)\b))")
# The period a note is scoped to: "this year" beside "last year" are two periods, whatever
# "last year" otherwise says of a recent change.
THIS_PERIOD = re.compile(r"\bthis (?:week|month|quarter|year|season|semester)\b")
LAST_PERIOD = re.compile(r"\blast (?:week|month|quarter|year|season|semester)\b")
ADDITIVE_MARKERS = re.compile(
    r"\balso\b|\btoo\b|\bas well\b|\badditionally\b|\bin addition\b|\bbesides\b|\banother\b"
    r"|\bboth\b|\bplus\b|\bother\b|\bextra\b"
)
# Reversal verbs negate what follows ("sold the Tesla", "gave up on learning piano"); never
# inside a hyphenated compound ("skip-level manager", "non-stop flights", "stop-motion").
REVERSALS = re.compile(
    r"(?<!-)\b(?:no longer|no more|stopped|stops|stop|quit|quitting|gave up(?: on)?|"
    r"give up(?: on)?|"
    r"given up(?: on)?|sold|ditched|(?:gave|give|given|giving) away|(?:got|gets|get|getting) "
    r"rid of|(?:threw|throws|thrown) (?:out|away)|dropped(?! to\b)|cancel+ed|skip|skips|"
    r"skipped|omit|omits|"
    r"omitted|leave out|(?:is|are|am|was|were|be) (?:done|finished|through) with|"
    r"left(?= (?!side\b|hand\b|of\b|or\b|and\b|to\b|aligned\b)\w)|"
    r"turn(?:ed|s|ing)? off|switch(?:ed|es|ing)? off|"
    r"(?<!is )(?<!are )(?<!am )(?<!was )(?<!were )(?<!got )(?<!get )used to|"
    # A verdict on a stated fact takes it back: "using bookings for revenue was wrong".
    r"(?:was|were|is|are) (?:wrong|incorrect|mistaken|a mistake|an error|outdated|out of date)"
    r"(?= *(?:[;,.!]|$)))\b(?!-\w)"
)
CLAUSE_SPLIT = re.compile(r"[;]|,\s+|\s+-\s+|\bbut\b|\bwhile\b|\band\b")


_DASHES = re.compile(r"\s*[\u2014\u2013]\s*|\s+-\s+")
_COLON = re.compile(r"(?<=[a-z])\s*:\s+")


# The phrase rewrites, in file order: contractions and the idioms a marker would eat, then,
# after the markers, every other equivalence.
_EARLY = tuple((re.compile(pattern), replacement)
               for pattern, replacement in vocabulary.EARLY_PHRASES)
_REWRITES = tuple((re.compile(pattern), replacement)
                  for pattern, replacement in vocabulary.PHRASES)

# Multi-word names and categories of the category knowledge, joined into one token ("rocket
# league" -> "rocket-league") so that a member or a compound category stays one value. Only the
# spaced spelling is rewritten: a hyphenated one is already kept whole by the parser. One
# alternation for all of them, longest first, keeps parsing fast.
_HYPHENATED = sorted((w for w in vocabulary.CATEGORY_WORDS if "-" in w),
                     key=lambda w: (-len(w), w))
_JOIN = re.compile(r"\b(" + "|".join(re.escape(p).replace("\\-", " ") for p in _HYPHENATED)
                   + r")s?\b")


def join(text: str) -> str:
    """Join the spaced spelling of every multi-word member ("rocket league" -> "rocket-league")."""
    if " " not in text:
        return text
    return _JOIN.sub(lambda m: " " + m.group(1).replace(" ", "-") + " ", text)


def prepare_text(text: str) -> str:
    """Lower-cased NFKC text with one apostrophe, one dash and contractions expanded, and the
    equivalences that must be seen before correction markers are read."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = t.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    t = numbers.one_notation(_DASHES.sub(" - ", t))
    for pattern, replacement in _EARLY:
        t = pattern.sub(replacement, t)
    return t


RELOCATE = "zzrelocate"  # left where "moved to" stood; `corrections` decides what it means


def _marker_replacement(name: str) -> Callable[[re.Match[str]], str]:
    """What a marker leaves behind: the relocation token, a kept slot word, or a space."""
    def replace(match: re.Match[str]) -> str:
        if name == "relocated":
            return f" {RELOCATE} "
        if name == "moved_slot":
            return f" {match['keep']} is "
        if name == "adjusted":
            return f" {match['keep']} is "
        return f" {match.groupdict().get('keep') or ''} "
    return replace


def extract_cues(text: str) -> tuple[str, frozenset[str], list[str]]:
    """Take the discourse cues out of normalized text: the names of the markers found
    ("now" for weak ones, "additive", "reversal"), and the values explicitly rejected."""
    markers = {name for name, pattern in STRONG_MARKERS if pattern.search(text)}
    if "moved_slot" in markers:
        markers.discard("relocated")  # one "moved ... to": a named thing moved, not the user
    for name, pattern in (("now", WEAK_MARKERS), ("additive", ADDITIVE_MARKERS),
                          ("reversal", REVERSALS), ("this_period", THIS_PERIOD),
                          ("last_period", LAST_PERIOD)):
        if pattern.search(text):
            markers.add(name)
    rejected: list[str] = []
    for pattern in REJECTIONS:
        rejected += [m.group(1) for m in pattern.finditer(text)]
        text = pattern.sub(" , ", text)
    for name, pattern in STRONG_MARKERS:
        if name in markers:
            text = pattern.sub(_marker_replacement(name), text)
    text = WEAK_MARKERS.sub(" ", text)
    text = ADDITIVE_MARKERS.sub(" , ", text)  # "and also avoids eggs" opens its own clause
    return REVERSALS.sub(" not ", text), frozenset(markers), rejected


def rewrite(text: str) -> str:
    """Apply the phrase rewrites (after markers and rejections were taken out)."""
    text = _COLON.sub(" is ", text)  # "Date format: X" = "date format is X"
    text = join(text)  # "rocket league" -> "rocket-league"
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    return text
