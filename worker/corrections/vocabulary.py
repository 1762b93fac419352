"""More curated equivalences for the correction detector: abbreviations and synonyms of work
(devops, billing, support, sales, HR, scheduling, security) and everyday idioms that state one
fact two ways ("is a teetotaler" = "does not drink alcohol", "sci-fi" = "science fiction").

Pure data, merged into `correction_synonyms`. Every entry is a true synonym wherever it appears
in a memory note; abbreviations with more than one common reading ("PM": afternoon or product
manager, "dev": developer or development, "auth": authentication or authorization) are left out.
"""

from __future__ import annotations

# One word -> its canonical word.
SYNONYMS = {
    # Engineering and operations.
    "repo": "repository", "repos": "repository", "prod": "production", "k8s": "kubernetes",
    "db": "database", "dbs": "database", "config": "configuration", "configs": "configuration",
    "env": "environment", "envs": "environment", "infra": "infrastructure",
    "docs": "documentation", "doc": "document", "perf": "performance",
    "prs": "pr", "mtg": "meeting", "mtgs": "meeting",
    "dept": "department", "msg": "message", "msgs": "message", "approx": "approximately",
    "sign-off": "approval", "signoff": "approval", "coverage": "insurance",
    # Everyday words of one meaning.
    "sci-fi": "science-fiction", "scifi": "science-fiction", "teetotaller": "teetotaler",
    "promotional": "marketing", "via": "through", "nightly": "night",
}

# Multi-word names and idioms -> one form (after the phrases of `correction_synonyms`).
PHRASES: tuple[tuple[str, str], ...] = (
    (r"\bscience fiction\b", " science-fiction "),
    (r"\bpull requests?\b|\bmerge requests?\b", " pr "),
    (r"\bend of (?:the )?(?:business )?day\b|\bclose of business\b|\bcob\b", " eod "),
    (r"\bend of (?:the )?week\b", " eow "),
    (r"\bestimated time of arrival\b", " eta "),
    (r"\bas soon as possible\b", " asap "),
    (r"\bpaid time off\b", " pto "),
    (r"\bhuman resources\b", " hr "),
    (r"\bquality assurance\b", " qa "),
    (r"\bout of (?:the )?office\b", " ooo "),
    (r"\bone[- ]on[- ]ones?\b|\b1[:-]1s?\b", " one-on-one "),
    (r"\bstand-?up meetings?\b|\bstand-ups?\b|\bdaily scrums?\b", " standup "),
    (r"\bformula (?:1|one)\b", " f1 "),
    (r"\b(?:first|1st) quarter\b", " q1 "), (r"\b(?:second|2nd) quarter\b", " q2 "),
    (r"\b(?:third|3rd) quarter\b", " q3 "), (r"\b(?:fourth|4th) quarter\b", " q4 "),
    (r"\bchief executive(?: officer)?\b", " ceo "),
    (r"\bchief technology officer\b", " cto "),
    (r"\bchief financial officer\b", " cfo "),
    # Working from home is working remotely ("WFH").
    (r"\bworks? from home\b|\bwfh\b|\bworks? remotely\b", " works remote "),
    # Alcohol: "is a teetotaler" = "does not drink alcohol" = "abstains from alcohol".
    (r"\b(?:is|are|am) (?:a )?teetotal(?:er|ler)?\b|\babstains? from alcohol\b"
     r"|\b(?:does|do) not drink(?: any)? alcohol\b|\bdrinks? no alcohol\b",
     " does not drink alcohol "),
    # Intolerance reads as not tolerating: "is lactose intolerant" = "can't digest lactose".
    (r"\b(?:is|are|am) (\w+) intolerant\b|\b(?:is|are|am) intolerant (?:to|of) (\w+)\b",
     r" can not digest \1\2 "),
    # A degree one earned is a degree one has: "earned a master's" = "has a master's degree".
    (r"\bmaster's(?: degree)?\b", " mastersdegree "),
    (r"\bbachelor's(?: degree)?\b", " bachelorsdegree "),
    (r"\b(?:earned|obtained|received|completed|got|holds?|held) (?:a |an |her |his |their )?"
     r"(?=mastersdegree|doctorate|bachelorsdegree)", " has a "),
    # Enrolment: "signed up for PyCon" = "registered for PyCon".
    (r"\bsign(?:s|ed)? up for\b|\bregister(?:s|ed)? for\b", " registered for "),
    # A person "based in" a city lives there.
    (r"^\W*(?:(?:is|are|am) )?based (?:in|out of)\b", " lives in "),
    (r"\b(user|i|they|he|she|we) (?:is |are |am )?based (?:in|out of)\b", r" \1 lives in "),
    # A ticket "concerns" / "is regarding" its topic: it is about it.
    (r"(?<!has )(?<!have )(?<!any )(?<!some )(?<!no )\b(?:concerns|regards|is regarding|"
     r"relates to|pertains to)\b(?! about)", " is about "),
    # Coverage through an employer: "through work" = "through the employer".
    (r"\b(?:through|via) (?:the |my |their |his |her )?(?:employer|job|work|company)\b",
     " through work "),
)
