"""Parsing for the correction detector (`worker.corrections`): one memory note becomes a
canonical token sequence plus what the note asserts and rejects. (Two such sequences are
aligned into the spans where they differ in worker/corrections/align.py.)

First and third person are folded (subject words dropped), synonyms and equivalent phrases
unified, preference and usage verbs collapsed into one predicate token, prepositions into a few
slot markers. Pure and cached.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import takewhile

from worker.corrections import lexicon, patterns, vocabulary

MAX_TEXT_CHARS = 2000

PRED = "PRED"  # any preference/usage verb; the kind is kept on the note
BE = "="
RELOCATE = patterns.RELOCATE

# Lexicon words in the canonical form `_tokenize` produces.
PREF, USE = lexicon.keys(lexicon.PREFERENCE_VERBS), lexicon.keys(lexicon.USAGE_VERBS)
NEG = lexicon.keys(lexicon.NEGATIVE_VERBS)
EXCLUSIVE, MULTI = lexicon.keys(lexicon.EXCLUSIVE_VERBS), lexicon.keys(lexicon.MULTI_VERBS)
EXCLUSIVE_PREF = lexicon.keys(lexicon.EXCLUSIVE_PREFERENCE_VERBS)
PERSON = lexicon.keys(lexicon.PERSON_NOUNS)
GENERIC = lexicon.keys(lexicon.GENERIC_WORDS) | {PRED, BE}
ANTONYMS = {lexicon.canon(a): lexicon.canon(b) for a, b in lexicon.ANTONYMS.items()}
PARTICLES = frozenset(lexicon.PREPOSITIONS.get(p, p) for p in lexicon.PARTICLES)
OPTIONAL_PARTICLES = frozenset((lexicon.canon(v), lexicon.PREPOSITIONS.get(p, p))
                               for v, p in lexicon.OPTIONAL_PARTICLES)
_RUN = lexicon.canon("run")
_SOFTWARE = frozenset({"platform", "editor", "browser"})  # "runs Linux" = "uses Linux"
_LEXICON_WORDS = frozenset(lexicon.SYNONYMS) | lexicon.CATEGORY_WORDS | frozenset(
    w for members in lexicon.VALUE_CLASSES.values() for w in members.split())


def structural(token: str) -> bool:
    return token in (PRED, BE) or token.startswith("@")


def is_content(token: str) -> bool:
    return not structural(token)


@dataclass(frozen=True)
class Note:
    tokens: tuple[str, ...]  # content words, "@prep", "=" (copula) and PRED, in order
    negated: bool
    clauses: tuple[tuple[frozenset[str], bool], ...]  # (content, negated) per clause
    markers: frozenset[str]
    rejected: frozenset[str]  # values the note explicitly rejects
    has_subject: bool
    pronoun: bool  # refers back with he/she/her...
    verbs: frozenset[str]  # stems behind PRED tokens ("prefer", "lik", "us", ...)
    clause_starts: frozenset[int]  # token indices where a clause begins
    comparison: tuple[frozenset[str], frozenset[str]] | None  # (preferred, dispreferred)
    # What the note speaks against: the losing side of "X over Y", what follows "without", the
    # object of a negated clause ("bars, not pies"; "no emoji in answers" is against emoji,
    # not answers). Another note saying "not Y" then agrees with it.
    against: frozenset[str]
    # The user is the grammatical subject ("User is in the office", not "User's standup is"):
    # the note states a habit of the user's own rather than a property of a scheduled thing.
    own: bool = False
    event: bool = False  # told in the past tense of a repeatable event ("visited", "ran")
    acronyms: frozenset[str] = frozenset()  # written in capitals ("IBM"), lower-cased
    names: frozenset[str] = frozenset()  # canonical words capitalized inside a sentence
    instruction: bool = False  # an imperative to the assistant ("Use metric units")
    whole: bool = False  # speaks of all of the user's things of a kind ("all of their tasks")
    # The main verb is a simple past ("Learned French in high school"): the note tells what
    # was, so a later "now"/"currently" about the same activity adds to it, not replaces it.
    past: bool = False
    # The named thing the note is about when it opens with one before its verb ("Production
    # runs Postgres 14", "Staging was upgraded to ..."): "" for the user, a person or none.
    lead: str = ""

    # Computed once per note (the rules ask for them many times per pair, and parsed notes
    # are cached): a frozen dataclass's fields never change, so neither do these.
    @cached_property
    def content(self) -> frozenset[str]:
        return frozenset(filter(is_content, self.tokens))

    @cached_property
    def pro(self) -> frozenset[str]:
        """What the note speaks for: its content, less what it is against and what both sides
        of its comparison share ("charts" in "bar charts over pie charts")."""
        shared = self.comparison[0] & self.comparison[1] if self.comparison else frozenset()
        return self.content - self.against - shared - GENERIC


def _split_compound(raw: str) -> list[str]:
    """"dark-roast" -> "dark roast"; lexicon words ("left-handed") and compounds with a short
    or function-word part ("sister-in-law", "x-axis") stay whole."""
    if "-" not in raw or raw in _LEXICON_WORDS or lexicon.HAS_DIGIT.search(raw):
        return [raw]
    parts = raw.split("-")
    if all(len(p) >= 3 and p not in lexicon.STOPWORDS and p not in lexicon.PREPOSITIONS
           for p in parts):
        return parts
    return [raw]


def _tokenize(text: str) -> tuple[list[str], int, int, set[str]]:
    """Canonical tokens of one clause, its negation count, subject mentions (1 = the user,
    2 = a pronoun), and the verbs behind its PRED tokens."""
    tokens: list[str] = []
    negations, subject, verbs = 0, 0, set()
    words = [w for raw in lexicon.TOKEN.findall(text) for w in _split_compound(raw)]
    for index, raw in enumerate(words):
        raw = raw.rstrip(".,") if lexicon.HAS_DIGIT.search(raw) else raw.strip(".,:/+-")
        if raw == RELOCATE:
            tokens.append(raw)
        elif raw in lexicon.SUBJECT_WORDS:
            subject |= 2 if raw in lexicon.PRONOUNS else 1
        elif raw in lexicon.NEGATORS:
            negations += 1
        elif raw in lexicon.BE_WORDS:
            if not tokens and index + 1 < len(words) and words[index + 1].endswith("ing") and (
                    lexicon.canon(words[index + 1]) not in PREF):
                continue  # progressive aspect: "is learning Spanish" = "learns Spanish"
            if not tokens or tokens[-1] != BE:
                tokens.append(BE)
        elif raw in lexicon.PREPOSITIONS:
            tokens.append(lexicon.PREPOSITIONS[raw])
        elif raw in ("a", "an") and index == len(words) - 1:
            tokens.append("a")  # a trailing letter is a value ("building A"), not an article
        elif raw in ("have", "has", "had") and index + 1 < len(words) and (
                words[index + 1] in lexicon.PARTICIPLES or words[index + 1] == RELOCATE
                or words[index + 1].endswith("ed")):
            continue  # auxiliary: "I've relocated", "has switched"
        elif raw in lexicon.STOPWORDS or not raw:
            continue
        elif (stem := lexicon.canon(raw)) in NEG or stem in PREF or stem in USE or (
                stem == _RUN and any(lexicon.value_classes(lexicon.canon(w)) & _SOFTWARE
                                     for w in words[index + 1:index + 3])):
            negations += stem in NEG
            verbs.add(lexicon.canon("use") if stem == _RUN else stem)
            tokens.append(PRED)
        else:
            tokens.append(stem)
    return tokens, negations, subject, verbs


def _comparison(tokens: list[str]) -> tuple[frozenset[str], frozenset[str]] | None:
    if "@over" not in tokens:
        return None
    pivot = tokens.index("@over")  # "X over Y": the words next to "over", up to a structure
    left = frozenset(takewhile(is_content, reversed(tokens[:pivot])))
    right = frozenset(takewhile(is_content, tokens[pivot + 1:]))
    return (left, right) if left and right else None


def _without(tokens: list[str]) -> frozenset[str]:
    """Content right after "without" ("answers without emoji" speaks against emoji)."""
    out: set[str] = set()
    for i, token in enumerate(tokens):
        if token == "@without":
            out.update(takewhile(is_content, tokens[i + 1:]))
    return frozenset(out)


def _object(tokens: list[str]) -> frozenset[str]:
    """The content of a clause up to its first qualifying preposition: "no emoji in answers"
    is about emoji ("not to be contacted on weekends": the leading "to" does not count)."""
    out: set[str] = set()
    for token in tokens:
        if token.startswith("@") and out:
            break
        if is_content(token):
            out.add(token)
    return frozenset(out)


_SUBJECT = re.compile(r"\b(user|i|they|he|she|we|my|their|his|her|our)('s|s')?(?!\w)")
_NOMINATIVE = frozenset({"user", "i", "they", "he", "she", "we"})
# An instruction to the assistant ("Use metric units for this user", "Don't show pie charts")
# states the user's preference in the assistant's words.
_INSTRUCTION = re.compile(r"^\W*(?:please |always |never |do not |don'?t )?(?:use|show|keep|"
                          r"give|write|format|display|avoid|turn|put|include|add|set|send)\b")
# "all of their tasks in Notion": everything of the kind in one place, so that place is one
# value ("in Todoist" replaces it).
_WHOLE = re.compile(r"\ball (?:of )?(?:their|my|his|her|our|the user's) ")
_PAST_EVENT = re.compile(r"\b(?:" + "|".join(sorted(lexicon.PAST_EVENT_VERBS)) + r")\b")
_MAIN_VERB = re.compile(r"^\W*(?:(?:the )?user|i|they|he|she|we)?\s*([a-z]+)\b")
_NOT_PAST = frozenset(vocabulary.WORD_SETS["not-past"])  # mostly adjectives: a state
_ACRONYM = re.compile(r"\b[A-Z]{2,6}\b")
_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-Z][a-z]+\b")
# Passive voice, one clause: "the rent was raised by user landlord" -> "user landlord raised
# the rent", so both voices meet as one token order.
_PASSIVE = re.compile(r"^\s*(?P<obj>(?:[\w'-]+\s+){0,4}?[\w'-]+)\s+(?:was|were|is|are|has been|"
                      r"have been|had been|got|gets|get)\s+(?P<verb>[a-z]+)\s+by\s+"
                      r"(?P<agent>(?:[\w'-]+\s*){1,4}?)\s*[.!]*\s*$")
_DETERMINERS = frozenset({"the", "a", "an", "my", "their", "his", "her", "our", "user"})
# Units and means that follow "by" without being an agent ("paid by the hour", "sent by mail").
_MEANS = frozenset(vocabulary.WORD_SETS["means"])


def _active(clause: str) -> str:
    """A passive clause with a named agent, said in the active voice. Means and times after
    "by" ("paid by card", "done by Friday") are no agents and stay."""
    match = _PASSIVE.match(clause)
    if not match:
        return clause
    verb = match["verb"]
    if not (verb.endswith(("ed", "en")) or verb in lexicon.IRREGULAR
            or verb in lexicon.PARTICIPLES):
        return clause
    agent = [w for w in match["agent"].split() if w not in _DETERMINERS]
    if not agent or agent[0] in _MEANS or lexicon.HAS_DIGIT.search(agent[0]) or (
            lexicon.value_classes(lexicon.canon(agent[0]))):
        return clause
    return f" {match['agent']} {verb} {match['obj']} "


_CITY, _STATE = lexicon.canon("city"), lexicon.canon("state")


def _drop_city(tokens: list[str]) -> list[str]:
    """ "New York City" is New York, "Mexico City" Mexico's capital: "city" after a known city
    name adds nothing ("lives in New York City" / "based in NYC"). "State" after one names
    another place (New York State is not New York City), so the two become one token that
    neither refines nor restates the city."""
    out: list[str] = []
    for t in tokens:
        if out and t in (_CITY, _STATE) and "city" in lexicon.value_classes(out[-1]):
            if t == _STATE:
                out[-1] = f"{out[-1]}_{t}"
            continue
        out.append(t)
    return out


# A name put first with its holder in apposition ("Arjun, Priya's son, is 7"): the holder
# goes in front as in "Priya's son Arjun is 7", so both spellings parse alike.
_APPOSITION = re.compile(r"^(?P<name>[A-Z][a-z]+), (?P<holder>(?:the user's|my|his|her|their|"
                         r"our|[A-Z][a-z]+'s) (?:[a-z-]+ )?[a-z-]+), ")
_ANIMALS = frozenset({"dog", "cat", "pet", "puppy", "kitten", "horse"})


def _plain(text: str) -> str:
    """The note cut to its limit, accents dropped ("Kraków" = "Krakow", "Tomás" is a name),
    curly apostrophes made plain, an apposition turned around."""
    text = "".join(c for c in unicodedata.normalize("NFKD", text[:MAX_TEXT_CHARS])
                   if not unicodedata.combining(c)).replace("\u2019", "'")
    match = _APPOSITION.match(text)
    # (only a person's relation to its holder: "Juno, the user's dog, is a black Lab" already
    # reads as the dog's own fact)
    if match and match["holder"].rsplit(" ", 1)[-1] in lexicon.PERSON_NOUNS - _ANIMALS:
        text = f"{match['holder']} {match['name']} {text[match.end():]}"
    return text


@lru_cache(maxsize=4096)
def parse(text: str) -> Note:
    text = _plain(text)
    t, markers, rejected = patterns.extract_cues(patterns.prepare_text(text))
    t = patterns.rewrite(t)
    tokens: list[str] = []
    clauses: list[tuple[frozenset[str], bool]] = []
    subject, verbs, starts = 0, set(), set()
    negated_objects: list[frozenset[str]] = []
    for clause in patterns.CLAUSE_SPLIT.split(t):
        c_tokens, c_neg, c_subject, c_verbs = _tokenize(_active(clause))
        c_tokens = _drop_city(c_tokens)
        starts.add(len(tokens))
        tokens += c_tokens
        subject |= c_subject
        verbs |= c_verbs
        if content := frozenset(filter(is_content, c_tokens)):
            clauses.append((content, c_neg % 2 == 1))
            if c_neg % 2 == 1:
                negated_objects.append(_object(c_tokens) or content)
    # The note's polarity is its main (first) clause's: in "is vegetarian and also avoids
    # eggs" the second clause's "avoids" does not negate the first.
    negated = bool(clauses) and clauses[0][1]
    rejected_tokens = frozenset(x for r in rejected for x in _tokenize(patterns.rewrite(r))[0])
    comparison = _comparison(tokens)
    against: set[str] = set().union(*negated_objects)
    if not negated:
        against |= _without(tokens)
        if comparison:
            against |= comparison[1] - comparison[0]
    lower = unicodedata.normalize("NFKC", text).lower()  # (_plain cut it and set its quotes)
    first = _SUBJECT.search(lower)
    own = bool(first) and first is not None and first[1] in _NOMINATIVE and not first[2]
    return Note(tuple(tokens), negated, tuple(clauses), markers,
                frozenset(filter(is_content, rejected_tokens)), bool(subject),
                bool(subject & 2), frozenset(verbs), frozenset(starts), comparison,
                frozenset(against) - GENERIC, own, bool(_PAST_EVENT.search(lower)),
                frozenset(a.lower() for a in _ACRONYM.findall(text)),
                frozenset(lexicon.canon(n.lower()) for n in _NAME.findall(text)),
                bool(_INSTRUCTION.match(lower)), bool(_WHOLE.search(lower)), _past(lower),
                _lead(lower))


# A thing-subject: up to three words before a copula, an auxiliary or a verb of use or change.
# Only such verbs count, so a note that opens with its own verb ("Uses Windows", "Takes 20 mg")
# has no subject here.
_LEAD = re.compile(
    r"^\W*(?:the |our |a |an |this |that )?(?P<lead>(?:[\w#.+-]+ ){0,2}?[\w#.+-]+) "
    r"(?:is|are|was|were|has|have|had|will|got|gets|now|runs?|uses?|hosts?|handles?|stores?|"
    r"costs?|switched|upgraded|downgraded|migrated|moved|changed|replaced|raised|lowered|"
    r"increased|decreased|reassigned|renamed|repriced|went|goes|cut|reduced|bumped|slashed|"
    r"trimmed|doubled|halved|capped|extended|shortened|rescheduled|postponed|delayed|pushed|"
    r"ships?|happens?|starts?|ends?|closes?|renews?|expires?|launches?)\b")
# A label's colon stands for a copula ("Offsite budget: $20,000" = "budget is $20,000").
_LABEL = re.compile(r"(?<=[a-z])\s*:\s+")
# Labels of the note itself ("Note:", "Update:") are no subject.
_NOTE_LABEL = re.compile(r"^\W*(?:note|update|correction|remember|reminder|fyi|memo|context|"
                         r"info|important|heads up)\s*:\s*")
# A marker in front of the subject ("Actually, hotfixes ship on Fridays") is no part of it.
# (a bare "no" must end in punctuation: "no longer uses" opens with its verb)
_INTERJECTION = re.compile(r"^\W*(?:(?:actually|in fact)\b[,:]?\s*|(?:correction|so|ok|okay|"
                           r"well|oh|oops|sorry|wait|no|nope|update|fyi)\s*[,:!.;-]+\s*)+")
# A leading date of the new state ("As of April, the Team plan is ...") stands before the lead.
_DATED_OPENING = re.compile(r"^\W*(?:as of|effective|starting|from|since) (?:[\w-]+ ){0,2}?"
                            r"[\w-]+\s*,\s*")
# Leads that are the user, a person or a pronoun: a subject of the user's own facts, which
# markers may well correct under another wording ("User's layout is" / "User switched to").
_NOT_LEAD = frozenset(vocabulary.WORD_SETS["not-lead"])
_JOINERS = frozenset({"and", "or", "with", "but", "in", "at", "on", "for", "to"})
# Verbs a note may open with: such a note names no thing of its own before its verb.
_OPENING_VERBS = frozenset(vocabulary.WORD_SETS["opening-verb"])


_PEOPLE = lexicon.SUBJECT_WORDS | lexicon.PERSON_NOUNS


def _lead(lower: str) -> str:
    # ("Offsite budget: $20,000" has the lead a copula would give it)
    opening = _DATED_OPENING.sub("", _NOTE_LABEL.sub("", _INTERJECTION.sub("", lower)))
    match = _LEAD.match(_LABEL.sub(" is ", opening, count=1))
    if not match:
        return ""
    words = match["lead"].split()
    first = words[0]
    if set(words) & _NOT_LEAD or lexicon.canon(first) in _PEOPLE or (
            set(words) & _JOINERS or first in lexicon.PAST_FORMS or first.endswith("ed")
            or first in _OPENING_VERBS):
        return ""  # a note that opens with its verb ("Uses Windows and has a Mac")
    return " ".join(words)


def _past(lower: str) -> bool:
    """Whether the note's first word after its subject is a simple past verb."""
    match = _MAIN_VERB.match(lower)
    word = match[1] if match else ""
    if word in _NOT_PAST or (word == "used" and re.match(r"^\W*(?:\w+ )?used to\b", lower)):
        return False  # "used to" is a reversal marker: no longer, not only before
    return (len(word) >= 5 and word.endswith("ed")) or word in lexicon.PAST_FORMS or word == "used"
