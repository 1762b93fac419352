"""Word lists and patterns for the correction detector (`worker.corrections`).

Pure data: closed vocabularies (value classes, predicates, markers) and the phrase rewrites that
bring paraphrases onto one surface form. Words are listed in plain form; the detector derives
its lookup keys with the same stemmer it applies to notes, so "Mondays" finds "monday".
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Who the note is about. First person ("I love blue charts") and third person ("User prefers
# blue charts") must align, so every subject word is dropped rather than mapped.
SUBJECT_WORDS = _words(
    "i me my mine myself user users user's they them their theirs themselves he him his she "
    "her hers we us our ours you your customer"
)

# Function words carrying neither slot nor value. Prepositions are NOT here: "lives in Berlin"
# and "lives with two roommates" differ only by one.
STOPWORDS = _words(
    "a an the this that these those and or but so very really just please do does did done "
    "will would should shall can could might must it its it's there here every each all any "
    "some much many always usually mostly generally typically often sometimes ever "
    "everything everywhere overall kind sort spelled spelt"
)

# Canonical preposition per group. in/on/at are one slot ("on Mondays" = "at 9" = "in May");
# over/than/vs mark a comparison ("X over Y").
PREPOSITIONS = {
    "in": "@in", "on": "@in", "at": "@in", "during": "@in", "inside": "@in", "within": "@in",
    "to": "@to", "into": "@to", "towards": "@to", "toward": "@to", "for": "@for",
    "with": "@with", "from": "@from", "by": "@by", "via": "@by", "through": "@by",
    "as": "@as", "of": "@of", "about": "@of", "per": "@per", "over": "@over",
    "near": "@near", "without": "@without", "between": "@between", "under": "@under",
    "up": "@up", "until": "@until", "till": "@until",
}
# Third-person pronouns point back at whoever the earlier note was about ("her name").
PRONOUNS = _words("he him his she her hers")
BE_WORDS = _words("is are was were be been being am")
NEGATORS = _words("not no never none neither nor nothing")

# Preference and usage verbs collapse to one predicate token: "love pie charts" and "never use
# pie charts" talk about the same slot. Negative verbs become the same token plus a negation.
PREFERENCE_VERBS = _words(
    "like love enjoy adore prefer preference preferred favor favour fond want wish need "
    "rather"
)
USAGE_VERBS = _words("use using turn set keep")
NEGATIVE_VERBS = _words("hate dislike detest loathe avoid despise")
# Verbs whose slot holds one value at a time ("prefers X for Y", "lives in X", "works as X").
EXCLUSIVE_VERBS = _words("live work born support bank name prefer want")
EXCLUSIVE_PREFERENCE_VERBS = _words(
    "prefer preference preferred favor favour want wish need rather"
)
# Verbs that take many objects: "speaks French" does not replace "speaks Spanish".
MULTI_VERBS = _words(
    "have own speak learn allergic visit travel read drink eat play collect know study "
    "watch listen follow like"
)

# Words that never anchor two notes to one topic. Category nouns ("jazz music", "Italian food")
# name the kind of a value, not a new fact.
GENERIC_WORDS = _words(
    "have get make take send give put time thing way lot bit music food cuisine genre "
    "stuff"
)

# Another holder of the fact: "User works at Google" vs "User's wife works at Google".
PERSON_NOUNS = _words(
    "wife husband partner spouse son daughter kid child children mother father mom dad parent "
    "parents brother sister sibling friend colleague coworker boss manager family "
    "grandmother grandfather grandma grandpa aunt uncle cousin roommate neighbor neighbour "
    "girlfriend boyfriend fiance fiancee baby toddler teenager client customer mentor"
)

# Single-word synonyms, folded before comparison (spelling variants included).
SYNONYMS = {
    "colour": "color", "favourite": "favorite", "grey": "gray", "centigrade": "celsius",
    "lengthy": "long", "concise": "short", "brief": "short", "terse": "short",
    "succinct": "short", "to-the-point": "short",
    "reply": "answer", "replies": "answer", "response": "answer", "responses": "answer",
    "study": "learn", "studying": "learn", "studies": "learn", "allergy": "allergic",
    "allergies": "allergic", "scheduled": "plan", "schedule": "plan", "planned": "plan",
    "plans": "plan", "remotely": "remote", "wfh": "remote", "kilometre": "kilometer",
    "km": "kilometer", "metre": "meter", "kg": "kilogram", "lbs": "pound", "lb": "pound",
    "euros": "eur", "euro": "eur", "€": "eur", "dollars": "usd", "dollar": "usd",
    "mobile": "phone", "cellphone": "phone", "e-mail": "email", "emailed": "email",
    "emails": "email", "informal": "casual", "indentation": "indent", "deployments": "deploy",
    "deployment": "deploy", "ship": "deploy", "ships": "deploy", "vscode": "vs-code",
    "golang": "go", "js": "javascript", "ts": "typescript", "nvim": "neovim",
    "code": "write", "codes": "write", "coding": "write", "travel": "go", "travels": "go",
    "traveling": "go", "travelling": "go",
}

# Closed value classes: two different members of one class in the same slot are competing
# values (blue vs red), which is what separates a correction from a different fact.
VALUE_CLASSES = {
    "color": "red blue green yellow orange purple violet pink black white gray brown teal navy "
             "cyan magenta gold silver beige maroon turquoise",
    "weekday": "monday tuesday wednesday thursday friday saturday sunday weekday weekend",
    "month": "january february march april may june july august september october november "
             "december",
    "season": "spring summer autumn fall winter",
    "daypart": "morning afternoon evening night noon midnight lunchtime",
    "relative": "before after earlier later early late",
    "system": "metric imperial",
    "temperature": "celsius fahrenheit kelvin",
    "distance": "kilometer mile meter feet foot yard inch centimeter millimeter",
    "weight": "kilogram pound gram ounce stone",
    "language": "english german french spanish italian portuguese dutch japanese chinese "
                "mandarin cantonese korean russian arabic hindi polish swedish norwegian danish "
                "finnish greek turkish hebrew ukrainian czech vietnamese indonesian",
    "proglang": "python java kotlin go rust javascript typescript ruby php scala swift haskell "
                "elixir cpp csharp perl julia clojure lua dart ocaml fortran cobol",
    "currency": "eur usd gbp sterling jpy yen chf franc cad aud sek nok inr rupee cny yuan",
    "channel": "email phone call slack teams sms text whatsapp signal telegram zoom",
    "platform": "windows linux macos mac osx ios android iphone ubuntu debian fedora chromeos",
    "editor": "vim neovim emacs vs-code intellij pycharm sublime nano xcode eclipse",
    "theme": "dark light",
    "toggle": "toggle-on toggle-off enabled disabled",
    "format": "pdf csv excel xlsx docx html markdown json xml txt plaintext",
    "transport": "car bike bicycle bus train tram subway metro scooter taxi motorbike ferry",
    "indent": "tab space",
    "seat": "aisle window middle",
    "length": "short long detailed verbose",
    "formality": "formal casual friendly",
    "frequency": "daily weekly monthly yearly annual hourly quarterly biweekly fortnightly",
    "diet": "vegan vegetarian pescatarian omnivore keto paleo carnivore",
    "marital": "single married divorced widowed engaged separated",
    "work_mode": "remote office hybrid onsite",
    "chart_type": "bar pie line scatter area histogram donut column heatmap",
    "scale": "logarithmic log linear",
    "orientation": "horizontal vertical portrait landscape",
    "size": "small medium large big tiny huge",
    "magnitude": "hundred thousand million billion trillion",
    # Times of day without digits and ordinals compete with numbers ("11pm" vs "midnight").
    "number": "noon midnight first second third fourth fifth sixth seventh eighth ninth tenth",
    "handedness": "left-handed right-handed ambidextrous",
    "cloud": "aws azure gcp",
    "browser": "chrome firefox safari edge brave opera vivaldi",
}

# Past participles after which "have" is an auxiliary ("I've relocated"), not possession.
PARTICIPLES = _words(
    "been gone got gotten made done taken given become begun left sold quit grown known seen "
    "written driven flown switched moved changed started stopped decided"
)

# Irregular forms the suffix stripper cannot reach.
IRREGULAR = {
    "has": "have", "had": "have", "went": "go", "goes": "go", "gone": "go", "flew": "fly",
    "flown": "fly", "drove": "drive", "driven": "drive", "ran": "run", "wrote": "write",
    "written": "write", "made": "make", "took": "take", "taken": "take", "sold": "sell",
    "bought": "buy", "got": "get", "sent": "send", "left": "leave", "ate": "eat",
    "eaten": "eat", "drank": "drink", "drunk": "drink", "spoke": "speak", "spoken": "speak",
    "knew": "know", "known": "know", "began": "begin", "begun": "begin", "kept": "keep",
    "born": "born", "children": "kid", "child": "kid", "kids": "kid", "people": "person",
}

# Antonyms whose negation is the other word: "doesn't like meetings before 10" restates
# "prefers meetings after 10".
ANTONYMS = {"before": "after", "after": "before", "earlier": "later", "later": "earlier",
            "early": "late", "late": "early"}

NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
}

# Phrase rewrites applied to the lower-cased text, in order. Each maps several surface forms of
# one idea onto one; none of them encodes a particular note.
PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"\bcan not stand\b|\bcannot stand\b", " hate "),
        (r"\bwould (?:much )?rather\b|\bhad rather\b", " prefer "),
        (r"\brather than\b|\bmore than\b|\bthan\b", " over "),
        (r"\b(?:is|are|am|was) (?:based|located|situated) in\b", " live in "),
        (r"\bresid(?:es|e|ing)\b", " live "),
        (r"\bfrom home\b|\bwork(?:s|ing)? remote(?:ly)?\b", " work remote "),
        (r"\bfull[- ]time\b", " fulltime "),
        (r"\bon[- ]site\b|\bin[- ]person\b", " onsite "),
        (r"\b(?:is |are |am |was )?a (?:big )?fans? of\b|\bfans? of\b", " support "),
        (r"\b(?:to )?be called\b|\bgo(?:es)? by\b|\bcall me\b|\bcall (?:the )?user\b|"
         r"\bcall them\b", " name is "),
        # "manager is named Priya" states the slot's value like "manager is Daniel" does.
        (r"\b(?:is|are|was) (?:called|named)\b|\b(?:called|named)\b(?= [a-z])", " is "),
        (r"\bvs\.? code\b|\bvisual studio code\b", " vs-code "),
        (r"\bplain[- ]?text\b", " plaintext "),
        (r"\b(?:phone|voice|telephone) (call(?:s|ed|ing)?)\b", r" \1 "),
        (r"\bc\+\+", " cpp "),
        (r"\bc#", " csharp "),
        (r"\btwice\b", " 2 times "),
        (r"\bonce (?:a|per) week\b|\bevery week\b|\beach week\b", " weekly "),
        (r"\bonce (?:a|per) day\b|\bevery day\b|\beach day\b", " daily "),
        (r"\bonce (?:a|per) month\b|\bevery month\b|\beach month\b", " monthly "),
        (r"\bonce (?:a|per) year\b|\bevery year\b|\beach year\b", " yearly "),
        (r"\b(first|1st) quarter\b", " q1 "),
        (r"\b(second|2nd) quarter\b", " q2 "),
        (r"\b(third|3rd) quarter\b", " q3 "),
        (r"\b(fourth|4th) quarter\b", " q4 "),
        (r"(\d)\s*(?:a\.m\.|am)\b", r"\1am"),
        (r"(\d)\s*(?:p\.m\.|pm)\b", r"\1pm"),
        (r"\b(\d+)(?:st|nd|rd|th)\b", r"\1"),
        (r"\bo'?clock\b", " "),
        (r"\b(on|off)\s*(?=[.!;,]|$)", r" toggle-\1 "),
    )
)

CONTRACTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"\bcan't\b|\bcannot\b", "can not"),
        (r"\bwon't\b", "will not"),
        (r"n't\b", " not"),
        (r"\bi'm\b", "i am"),
        (r"'re\b", " are"),
        (r"'ve\b", " have"),
        (r"'ll\b", " will"),
        (r"'d\b", " would"),
        (r"\b(it|that|there|he|she|what|who|where|here)'s\b", r"\1 is"),
        (r"'s\b|s'(?=\s)", ""),
    )
)

# Explicit rejection of a value: "Mochi, not Miso", "not Notion but Obsidian", "instead of
# PDF", "switched from VS Code to Neovim". Group 1 is the rejected value.
_VALUE = r"((?:[\w$€£+./:-]+\s*){1,3}?)"
REJECTIONS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bnot\s+" + _VALUE + r"\s*,?\s*but\b"),
    re.compile(r"\binstead of\s+" + _VALUE + r"(?=[,.;!]|$)"),
    re.compile(r"\binstead of\s+(\S+)"),
    re.compile(r",\s*not\s+" + _VALUE + r"\s*[.!]*\s*$"),
    re.compile(r"\b(?:switch(?:ed)?|chang(?:ed|e)|mov(?:ed|e))\s+from\s+" + _VALUE + r"\s+to\b"),
    re.compile(r"\brather than\s+" + _VALUE + r"(?=[,.;!]|$)"),
)

# Correction markers, searched in the lower-cased text and removed before tokenizing. A marker
# only counts when the later note has it and the earlier does not.
STRONG_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("changed_mind", r"\bchanged? (?:my|their|his|her|our) minds?\b|\bon second thoughts?\b"),
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
        ("leading_rather", r"^\W*rather\b"),
        ("now_pref", r"\bnow (?=(?:prefers?|likes?|loves?|wants?|uses?|lives|works|is|are)\b)"),
        ("from_now_on", r"\bfrom now on\b|\bgoing forward\b|\bfrom here on\b"),
        ("switched", r"\b(?:switch|upgrade|downgrade)(?:ed|d|es|s|ing)? (?:\w+ )?(?:over |back )?"
                     r"(?:to|from)\b"
                     r"|\bswapped (?:to|for)\b"),
        ("changed_to", r"\bchang(?:ed|es|e) (?=(?:\w+ ){0,2}to\b)|\b(?:went|gone|goes|go) "
                       r"(?:up|down) to\b|\b(?:increased|decreased|raised|lowered|rose|fell|"
                       r"dropped|reduced|grew) to\b"),
        ("relocated", r"\b(?:relocated|relocating|moved|moving|moves) (?:\w+ )?(?:back )?to\b"),
        ("rescheduled", r"\b(?:slipped|pushed(?: back)?|postponed|delayed|rescheduled|bumped"
                        r"|brought forward) (?:to|until|till)\b"),
        ("became", r"\b(?:went|go|goes|became|become|becomes|turned|turns|got|gets|get) "
                   r"(?=(?:a |an )?(?:vegan|vegetarian|pescatarian|remote|hybrid|keto|married|"
                   r"divorced|engaged|separated|single)\b)"),
        ("back", r"\b(?:back (?:in|at|to|on)|returned to)\b"),
    )
)
WEAK_MARKERS = re.compile(r"\bnow\b|\bthese days\b|\bnowadays\b|\bcurrently\b|\bagain\b")
ADDITIVE_MARKERS = re.compile(
    r"\balso\b|\btoo\b|\bas well\b|\badditionally\b|\bin addition\b|\bbesides\b|\banother\b"
    r"|\bboth\b|\bplus\b|\bother\b|\bextra\b"
)
# Reversal verbs negate what follows ("sold the Tesla", "gave up on learning piano").
REVERSALS = re.compile(
    r"\b(?:no longer|no more|stopped|stops|stop|quit|quitting|gave up(?: on)?|give up(?: on)?|"
    r"given up(?: on)?|sold|ditched|dropped(?! to\b)|cancel+ed|skip|skips|skipped|omit|omits|"
    r"omitted|leave out|left(?= (?!side\b|hand\b|of\b|or\b|and\b|to\b|aligned\b)\w))\b"
)
CLAUSE_SPLIT = re.compile(r"[;]|,\s+|\s+-\s+|\bbut\b|\bwhile\b|\band\b")
HAS_DIGIT = re.compile(r"\d")
TOKEN = re.compile(r"[$€£]?[\w]+(?:[-+:./,][\w]+)*[+-]?\d*")


# --- Lookups: the stemmer and the canonical form every word list above is matched in. ------


def stem(word: str) -> str:
    """Light suffix stripping so inflections meet ("prefers"/"preferred", "Mondays")."""
    if len(word) <= 3 or HAS_DIGIT.search(word):
        return word
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("sses", "ss")):
        if word.endswith(suffix) and len(word) > 4:
            return word[: -len(suffix)] + repl
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # "preferred" -> "prefer", "planning" -> "plan"
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]  # "move"/"moved"/"moving" all end as "mov"
    return word


_SYNONYM_STEMS = {stem(k): v for k, v in SYNONYMS.items()} | SYNONYMS


@lru_cache(maxsize=16384)
def canon(raw: str) -> str:
    """The canonical form of one lower-cased word: numbers as digits, irregular forms and
    synonyms folded, then stemmed."""
    if raw in NUMBER_WORDS:
        return NUMBER_WORDS[raw]
    raw = IRREGULAR.get(raw, raw)
    target = _SYNONYM_STEMS.get(raw) or _SYNONYM_STEMS.get(stem(raw))
    return stem(target) if target else stem(raw)


def keys(words: frozenset[str]) -> frozenset[str]:
    return frozenset(canon(w) for w in words)


_CLASS_OF: dict[str, frozenset[str]] = {}
for _name, _members in VALUE_CLASSES.items():
    for _member in _members.split():
        _CLASS_OF[canon(_member)] = _CLASS_OF.get(canon(_member), frozenset()) | {_name}


@lru_cache(maxsize=16384)
def value_classes(token: str) -> frozenset[str]:
    """Closed classes a canonical token belongs to; any number is in "number"."""
    if HAS_DIGIT.search(token):
        return frozenset({"number"})
    if len(token) == 1 and token.isalpha():
        return frozenset({"letter"})  # "building A" -> "building C"
    return _CLASS_OF.get(token, frozenset())


_DASHES = re.compile(r"\s*[\u2014\u2013]\s*|\s+-\s+")
_COLON = re.compile(r"(?<=[a-z])\s*:\s+")


def normalize(text: str) -> str:
    """Lower-cased NFKC text with one apostrophe, one dash and contractions expanded."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = t.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    t = _DASHES.sub(" - ", t)
    for pattern, replacement in CONTRACTIONS:
        t = pattern.sub(replacement, t)
    return t


RELOCATE = "zzrelocate"  # left where "moved to" stood; `corrections` decides what it means


def extract_cues(text: str) -> tuple[str, frozenset[str], list[str]]:
    """Take the discourse cues out of normalized text: the names of the markers found
    ("now" for weak ones, "additive", "reversal"), and the values explicitly rejected."""
    markers = {name for name, pattern in STRONG_MARKERS if pattern.search(text)}
    for name, pattern in (("now", WEAK_MARKERS), ("additive", ADDITIVE_MARKERS),
                          ("reversal", REVERSALS)):
        if pattern.search(text):
            markers.add(name)
    rejected: list[str] = []
    for pattern in REJECTIONS:
        rejected += [m.group(1) for m in pattern.finditer(text)]
        text = pattern.sub(" , ", text)
    for name, pattern in STRONG_MARKERS:
        if name in markers:
            text = pattern.sub(f" {RELOCATE} " if name == "relocated" else " ", text)
    text = WEAK_MARKERS.sub(" ", text)
    text = ADDITIVE_MARKERS.sub(" , ", text)  # "and also avoids eggs" opens its own clause
    return REVERSALS.sub(" not ", text), frozenset(markers), rejected


def rewrite(text: str) -> str:
    """Apply the phrase rewrites (after markers and rejections were taken out)."""
    text = _COLON.sub(" is ", text)  # "Date format: X" = "date format is X"
    for pattern, replacement in PHRASES:
        text = pattern.sub(replacement, text)
    return text
