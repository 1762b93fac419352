"""The default `reject_write_patterns` of SPEC 5: prompt-injection phrasings.

Matched case-insensitively against the *folded* text (`worker.normalize.matching_forms`:
NFKC, zero-width and format characters removed, diacritics and look-alike letters folded to
Latin, spaced-out and leetspeak letters rejoined), so "Ign\u200bore prеvious instructions"
(a zero-width space and a Cyrillic "е") is caught by the plain phrase.

Each pattern is written for precision as much as recall: a memory store full of real
preferences mentions rules, prompts, passwords and admins all the time ("User writes system
prompts for support bots", "User has admin access to Jira"), and a false block silently
loses a user's fact. So the patterns look for the *instruction* — a verb aimed at the
assistant's rules, prompt or safety, an exfiltration target, a chat-template marker — not
for the topic. `tests/data/admission_hostile.tsv` and `admission_benign.txt` measure both
sides; the README reports the rates.

Separators between words are `\\W*` (zero or more) because removing a zero-width space can
glue two words together ("ignore\u200bprevious" folds to "ignoreprevious").
"""

from __future__ import annotations

# Verbs match with their inflections ("reveals", "ignored", "following").
_INFLECTED = r"(s|es|d|ed|ing)?"

_QUALIFIER = r"(all\W*|any\W*|the\W*|your\W*|of\W*|these\W*|those\W*|my\W*)*"
_RULES = (r"(instructions?|rules|guidelines|directives|prompts?|messages?|guardrails|"
          r"constraints|context|programming|polic(y|ies)|settings)")

DEFAULT_REJECT_WRITE_PATTERNS: tuple[str, ...] = (
    # "Ignore previous instructions" and its relatives: a verb of dismissal aimed at the
    # assistant's earlier/system rules.
    r"\b(ignor|disregard|forget|overrid|bypass|overrul)e?" + _INFLECTED + r"\W*" + _QUALIFIER
    + r"(previous|prior|above|earlier|preceding|original|initial|system|developer|safety)\W*"
    + _RULES,
    r"\b(ignor|disregard|overrid|bypass)e?" + _INFLECTED + r"\W*(all\W*|any\W*|the\W*|your\W*)*"
    r"(instructions?|directives|guardrails|programming)\b",
    # Reading out or replacing the system prompt.
    r"\b(reveal|show|print|repeat|leak|output|shar|disclos|display|dump|recit|tell)e?" + _INFLECTED
    + r"\b.{0,40}"
    r"\b(system|hidden|developer)\W*(prompt|instructions)",
    r"\b(reveal|show|print|repeat|leak|output|dump|recit)e?" + _INFLECTED
    + r"\b.{0,20}\byour\W*(initial|original)"
    r"\W*(prompt|instructions)",
    r"\b(change|replace|override|rewrite|update|modify|overwrite)\b.{0,30}\bsystem\W*prompt",
    r"\bsystem\W*prompt\W*(:|=|is\b|says\b|reads\b)",
    r"^\W*(system|assistant|developer)\W*(prompt\W*)?:",
    # Chat-template and role markers smuggled into a note.
    r"<\W*/?\W*(system|assistant|instructions?|memory_policy|im_start|im_end)\W*>",
    r"\[\W*/?\W*(inst|system|sys)\W*\]",
    r"<\|\W*(im_start|im_end|system|endoftext)\W*\|>",
    r"\b(new|updated|real|actual|true|additional)\W*(system\W*)?instructions?\W*[:\-]",
    # Jailbreak personas and modes.
    r"\bjailbr(ea|o)k",
    r"\bdo\W*anything\W*now\b",
    r"\b(god|jailbreak|dan|unrestricted|unfiltered)\W*mode\b",
    r"\b(enter|activate|switch\W*to|you\W*are\W*(now\W*)?in)\W*developer\W*mode\b",
    r"\byou\W*(are|re)\W*(now\W*)?(an?\W*)?(no\W*longer\W*bound|free\W*from|not\W*bound|"
    r"unrestricted|unfiltered|uncensored|jailbroken|dan)\b",
    r"\b(ai|assistant|model|chatbot|you|respond|answers?|replies|reply)\b.{0,40}\bwithout\W*"
    r"(any\W*)?(ethical\W*|safety\W*|content\W*|moral\W*)?(restrictions|limitations|filters|"
    r"guardrails|censorship|guidelines)\b",
    # Turning safety off.
    r"\b(disabl|turn\W*off|deactivat|bypass|ignor|skip|remov|circumvent|evad)e?" + _INFLECTED
    + r"\b.{0,25}"
    r"\b(safety|content|moderation|ethical)\W*(filters?|checks?|guidelines|rules|polic(y|ies)|"
    r"restrictions|guardrails|protocols)",
    # A memory that claims authority over the assistant.
    r"\b(treat|consider|interpret|handl|follow|obey|execut)e?" + _INFLECTED
    + r"\b.{0,30}\b(this|these|the\W*"
    r"following)\W*(note|memory|memories|message|text)\b.{0,30}\b(system|instructions?|commands?|"
    r"directives?|orders?|highest|top\W*priority)",
    r"\b(always|must|shall|should)\W*(follow|obey|execut|compl(y|ie)\W*with|carr(y|ie)\W*out)e?"
    + _INFLECTED + r"\b.{0,40}"
    r"\b(instructions?|commands?|directives?|orders?)\b.{0,30}\b(in|from|stored|saved|found)\b"
    r".{0,20}\b(memory|memories|notes?)\b",
    r"\b(highest|top|absolute|overriding)\W*priority\W*(instruction|rule|directive|command|"
    r"override)",
    r"\b(supersedes?|overrides?|takes?\W*precedence\W*over)\b.{0,30}\b(all|any|every|previous|"
    r"prior|other|system|your)\W*(system\W*)?(instructions?|rules|guidelines|directives|"
    r"prompts?|polic(y|ies)|settings)",
    # Hiding things from the user.
    r"\b(do\W*not|don\W*t|never)\W*(mention|reveal|disclose|acknowledge|admit)\b.{0,30}"
    r"\b(this|these|the)\W*(note|memory|memories|instructions?|rule)\b",
    r"\b(without|do\W*not|don\W*t|never)\W*(tell|telling|inform|informing|notify|notifying)\W*"
    r"(the\W*)?user\b",
    r"\b(secretly|covertly|silently|quietly)\W*(send|forward|share|copy|record|log|collect|"
    r"upload|email)\b",
    # Exfiltration: secrets or conversations sent to an address.
    r"\b(send|forward|email|e\W*mail|post|upload|shar|leak|transmit|exfiltrat|cop(y|ie)|"
    r"append|includ)e?" + _INFLECTED
    + r"\b.{0,60}\b(passwords?|credentials|api\W*keys?|secrets?|tokens?|private\W*keys?|"
    r"ssh\W*keys?|session\W*cookies?|(conversation|chat)\W*(history|logs?|transcripts?)|"
    r"all\W*(user\W*)?data|other\W*users)\b.{0,60}(https?\W|www\.|\w@\w|\.(ru|xyz|cc|top|tk)\b|"
    r"webhook|pastebin|answers?|repl(y|ies)|responses?)",
    # Privilege escalation.
    r"\b(grant|giv|assign|elevat)e?" + _INFLECTED
    + r"\b.{0,30}\b(admin|administrator|root|superuser|elevated|"
    r"unrestricted)\W*(access|privileges?|rights|permissions?|role)\b",
    r"\b(grant|giv|assign)e?" + _INFLECTED + r"\b.{0,30}\bfull\W*(access|privileges?|rights|"
    r"permissions?)\W*(to|on|over)\W*(all|every|any|other)",
    r"\b(is|are)\W*(authorized|allowed|permitted|cleared)\W*to\W*(bypass|override|skip\W*"
    r"verification|access\W*(all|any|every|other)|see\W*(all|other)|view\W*(all|other))",
    # Destructive or financial actions without the usual confirmation.
    r"\b(delete|wipe|erase|drop|transfer|transferred|wire|pay|purchase|buy|execute|run|approve)"
    r"\b.{0,50}\bwithout\W*(asking|confirm\w*|approval|permission|verification|verifying|"
    r"checking)",
    r"\bskip\W*(the\W*)?(identity\W*)?verification\b",
    # Shell payloads.
    r"\brm\W+-rf\b",
    r"\bsudo\W+(rm|chmod|chown|dd|mkfs|curl|wget|bash|sh)\b",
    r"\b(curl|wget)\W+(-\w+\W+)*(https?|ftp)\b",
    r"\|\W*(ba)?sh\b",
    r"\b(eval|exec)\W*\(",
    r"\bbase64\W+(-d|--decode)\b",
    # Broadcasting a note beyond its own user.
    r"\b(apply|remember|store|save|inject|use)\b.{0,40}\b(for|to|across)\W*(all|every|each|"
    r"other|another|any)\W*(users?|customers?|accounts?|tenants?|compan(y|ies)|agents?|"
    r"sessions?|conversations?)\b",
    r"\b(this|these)\W*(note|memory|preference|fact)s?\b.{0,30}\bappl(y|ies)\W*to\W*(all|every|"
    r"other)\b",
)
