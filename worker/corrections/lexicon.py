"""Word lists for the correction detector (`worker.corrections`), and the stemmer they are
matched with.

Pure data: closed vocabularies (value classes, predicates, subjects, prepositions). Words are
listed in plain form; the detector derives its lookup keys with the same stemmer it applies to
notes, so "Mondays" finds "monday". Surface patterns live in `correction_patterns`, curated
synonym / antonym knowledge in `correction_knowledge` (merged in here).
"""

from __future__ import annotations

import re
from functools import lru_cache

from worker.corrections import categories as categories
from worker.corrections import entities as entities
from worker.corrections import knowledge as knowledge
from worker.corrections import synonyms as synonyms


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
    "a an the this these those and or but so very really just please do does did done "
    "will would should shall can could might must it its it's there here every each all any "
    "some much many always usually mostly generally typically often sometimes ever "
    "everything everywhere overall kind sort spelled spelt still mr mrs ms dr prof "
    # Focus and frequency adverbs that leave the fact as it was ("always flies KLM" = "only
    # flies KLM"); "never" is a negator, not here.
    "only exclusively normally regularly primarily avid keen"
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
    # Relative pronouns open a qualifying phrase ("emails that open with 'Dear'").
    "that": "@rel", "which": "@rel", "who": "@rel", "whose": "@rel",
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

# Verbs that carry little of their own meaning ("keeps a garden" = "has a garden", "works at a
# standing desk" = "uses one"). Two content verbs ("learns" / "teaches Spanish", "reads" /
# "writes novels") are two activities however similar the rest; a light verb may restate one.
LIGHT_VERBS = _words("have keep use get take make do go work hold put give own")

# Another holder of the fact: "User works at Google" vs "User's wife works at Google".
PERSON_NOUNS = _words(
    "wife husband partner spouse son daughter kid child children mother father mom dad parent "
    "parents brother sister sibling friend colleague coworker boss manager family "
    "grandmother grandfather grandma grandpa aunt uncle cousin roommate neighbor neighbour "
    "girlfriend boyfriend fiance fiancee baby toddler teenager client customer mentor "
    "pet cat dog puppy kitten horse "  # a pet's habits are not the user's
    "vet doctor dentist teacher landlord landlady coach trainer therapist lawyer accountant "
    "nanny tutor assistant"
)

# Titles that stand before a name ("Professor Kim", "Coach Rivera"); "Dr" is a stopword.
TITLES = _words("professor doctor coach dean judge pastor rabbi imam reverend officer "
                "sergeant captain chef")
# Relations one person has many of at once: naming another one adds a person.
MULTI_RELATIONS = _words(
    "friend colleague coworker co-worker classmate teammate neighbor neighbour cousin child "
    "kid son daughter sibling brother sister nephew niece grandchild aunt uncle client "
    "student roommate acquaintance pet")

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
    "gave": "give", "given": "give", "built": "build", "paid": "pay", "drew": "draw",
    "drawn": "draw", "chose": "choose", "chosen": "choose", "told": "tell", "taught": "teach",
    "brought": "bring", "caught": "catch", "held": "hold", "met": "meet", "saw": "see",
    "seen": "see", "won": "win", "lost": "lose", "swam": "swim", "did": "do",
}

# Simple past forms of irregular verbs (and "was"/"were"): a note led by one tells what was.
PAST_FORMS = _words(
    "was were had went flew drove ran wrote made took sold bought got sent left ate drank spoke "
    "knew began kept gave built paid drew chose told taught brought caught held met saw won "
    "lost swam did grew"
)

# Past tenses of things one does again and again (trips, visits, races, meetings): the same
# event on another date is another occasion, not a corrected date ("visited Japan in 2019" /
# "in 2023"). Verbs of once-only events (born, married, graduated) are not here.
PAST_EVENT_VERBS = _words(
    "visited went traveled travelled attended met ran flew saw hiked climbed toured completed "
    "finished took won competed stayed spent vacationed holidayed backpacked raced swam skied "
    "camped sailed performed played watched did had got been drove cycled biked walked"
)

# Antonyms whose negation is the other word: "doesn't like meetings before 10" restates
# "prefers meetings after 10".
ANTONYMS = {"before": "after", "after": "before", "earlier": "later", "later": "earlier",
            "early": "late", "late": "early"}

NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
}

# Particles that make a phrasal verb: "works" / "works out" are two activities.
PARTICLES = _words("out up off down away around")
OPTIONAL_PARTICLES = frozenset(tuple(p.split()) for p in knowledge.OPTIONAL_PARTICLES)

HAS_DIGIT = re.compile(r"\d")
# A date pattern spelled with its letters ("dd/mm/yyyy", "yyyy-mm-dd"; the stemmer may turn a
# final y into i).
DATE_FORMAT = re.compile(r"^(?:[dmy]{1,4}[-/. ]){2}[dmyi]{1,4}$")
TOKEN = re.compile(r"[$€£]?[\w]+(?:[-+:./,][\w]+)*[+-]?\d*")


# --- Lookups: the stemmer and the canonical form every word list above is matched in. ------


_NESS_NOUNS = _words("business witness harness wilderness fitness")


def stem(word: str) -> str:
    """Light suffix stripping so inflections meet ("prefers"/"preferred", "Mondays")."""
    if len(word) <= 3 or HAS_DIGIT.search(word):
        return word
    if word.endswith(("ies", "ied")):
        # "pies" -> "pie" (as "pie"), "flies" -> "fly" (as "fly"), "cities" -> "citi" (as
        # "city" -> "citi")
        base = word[:-3]
        return word[:-1] if len(base) <= 1 else base + "y" if len(base) == 2 else base + "i"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ness") and len(word) > 7 and word not in _NESS_NOUNS:
        word = word[:-4]  # "blindness" -> "blind"
    if word.endswith(("ection", "ption")) and len(word) > 9:
        word = word[:-3]  # "interruption" -> "interrupt", like "interrupted"
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # "preferred" -> "prefer", "planning" -> "plan"
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]  # "move"/"moved"/"moving" all end as "mov"
    if word.endswith("y") and len(word) > 3:
        word = word[:-1] + "i"  # "pie"/"pies", "study"/"studies" meet as "pi", "studi"
    return word


ATTRIBUTE_CLASSES = (*knowledge.ATTRIBUTE_CLASSES, *entities.ATTRIBUTE_NAMES)
# Kinds of named things a person may have several of: they compete only in a one-value slot or
# after a correction marker (see `correction_entities`).
OPEN_CLASSES = frozenset(entities.OPEN_CLASSES)
SYNONYMS = SYNONYMS | knowledge.SYNONYMS | synonyms.SYNONYMS
_SOURCES = (VALUE_CLASSES, knowledge.VALUE_CLASSES, entities.OPEN_CLASSES,
            entities.ATTRIBUTE_SCALES)
VALUE_CLASSES = {name: " ".join(source.get(name, "") for source in _SOURCES)
                 for name in frozenset().union(*_SOURCES)}
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


# Unordered pairs of canonical verbs that state the same fact about one object.
VERB_EQUIVALENTS = frozenset(
    frozenset((canon(a), canon(b)))
    for group in knowledge.VERB_EQUIVALENTS for a in group.split() for b in group.split()
    if canon(a) != canon(b)
)


# Unordered pairs of canonical verbs that rival each other for one object ("rents" / "owns").
RIVAL_VERBS = frozenset(frozenset(canon(v) for v in pair.split())
                        for pair in entities.RIVAL_VERBS)


def _hyponyms() -> dict[str, frozenset[str]]:
    """Canonical category noun -> every canonical member, nested categories included."""
    direct: dict[str, set[str]] = {}
    for keys_, spec in (*knowledge.HYPERNYMS.items(), *categories.ALL.items()):
        classes, _, extra = spec.partition("+")
        members = {canon(w) for c in classes.split() for w in VALUE_CLASSES[c].split()}
        members |= {canon(w) for w in extra.split()}
        for category in keys_.split():
            direct.setdefault(canon(category), set()).update(members)
    closed = {k: set(v) for k, v in direct.items()}
    for _ in range(3):  # nesting is shallow: pet > bird > conure, europe > france > paris
        for members in closed.values():
            members |= {m for k in list(members) if k in closed for m in closed[k]}
    return {k: frozenset(v - {k}) for k, v in closed.items()}


# Category noun -> members that imply it ("instrument" -> cello, piano, ...).
HYPONYMS = _hyponyms()
# Raw words of the category knowledge the tokenizer keeps whole ("low-fodmap").
CATEGORY_WORDS = categories.WORDS


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
    if DATE_FORMAT.match(token):
        return frozenset({"date_format"})  # "DD/MM/YYYY" -> "YYYY-MM-DD"
    return _CLASS_OF.get(token, frozenset())
