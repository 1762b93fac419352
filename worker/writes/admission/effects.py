"""Admission by effect: what a note would make an agent do, in six languages.

A note is memory about the user. Phrasing-based screening (`patterns.py`) catches "ignore
previous instructions" in English; it misses the same override in German, a standing rule to
forward conversations to an address, a request for card numbers, an authority claim, a
payload hidden in base64. These rules look for the *effect* instead: sending something to a
literal address, contacting or deceiving other users, asking for secrets or payment, changing
the assistant's rules, or a damaging claim about a third party. The rules are data
(`effect_rules.toml`); this module loads, compiles and applies them.

A match either blocks the write (the effect is clear) or quarantines it (doubtful: it becomes
a candidate, never injected until an operator promotes it, so nothing benign is lost).
Regexes only, compiled once: no model call on the write path (bench/screening.py measures it).
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from worker.normalize import matching_forms
from worker.writes.admission.decoding import decoded_payloads
from worker.writes.admission.effect_model import load_model
from worker.writes.admission.prefilter import Prefilter

Action = Literal["block", "quarantine"]
LATIN_LANGS = ("en", "de", "fr", "es")


class Effect(StrEnum):
    SEND_TO_ADDRESS = "send-to-address"
    CONTACT_USERS = "contact-users"
    REQUEST_SECRETS = "request-secrets"
    CHANGE_RULES = "change-rules"
    THIRD_PARTY_CLAIM = "third-party-claim"
    # A readable payload hidden in an encoding, with no other effect found in it: doubtful.
    ENCODED_PAYLOAD = "encoded-payload"
    # No rule matched, but the learned model (effect_model.py) finds it reads like the
    # hostile notes: doubtful.
    DOUBTFUL = "doubtful"


@dataclass(frozen=True)
class EffectRule:
    effect: Effect
    action: Action
    lang: str
    index: int  # position in the rule file: names the rule in traces (the text never goes)
    all: tuple[re.Pattern[str], ...]
    none: tuple[re.Pattern[str], ...]
    third_party: bool
    # The ids of its `all` patterns: the rule can match only if the prefilter allows each.
    needs: frozenset[int]


@dataclass(frozen=True)
class EffectFinding:
    effect: Effect
    action: Action
    lang: str
    rule: int | None
    encoding: str | None = None  # the payload's encoding, when it was found decoded

    def detail(self) -> dict[str, Any]:
        found: dict[str, Any] = {"effect": self.effect.value, "lang": self.lang}
        if self.rule is not None:
            found["rule"] = self.rule
        if self.encoding:
            found["encoding"] = self.encoding
        return found


_MACRO = re.compile(r"<<([A-Z_]+)>>")


def fold_for_effects(text: str) -> str:
    """Lower case, diacritics stripped (é -> e, й -> и), invisible characters dropped,
    whitespace collapsed; unlike `fold_for_matching`, Cyrillic stays Cyrillic."""
    composed = unicodedata.normalize("NFKC", text)
    visible = "".join(ch for ch in composed if unicodedata.category(ch) != "Cf")
    decomposed = unicodedata.normalize("NFKD", visible.casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(unicodedata.normalize("NFKC", bare).split())


def _expand(pattern: str, macros: dict[str, str]) -> str:
    for _ in range(5):  # macros may name macros
        expanded = _MACRO.sub(lambda m: macros[m.group(1)], pattern)
        if expanded == pattern:
            return expanded
        pattern = expanded
    raise ValueError(f"macro nesting too deep in {pattern[:60]!r}")


def _compile(pattern: str, macros: dict[str, str]) -> re.Pattern[str]:
    # The file is written in folded form; folding the pattern too keeps a stray accent in it
    # from silently never matching.
    # Not case-folded: that would turn `\\W` into `\\w`.
    decomposed = unicodedata.normalize("NFKD", _expand(pattern, macros))
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return re.compile(unicodedata.normalize("NFKC", bare), re.IGNORECASE)


@lru_cache(maxsize=1)
def load_rules() -> tuple[tuple[EffectRule, ...], dict[str, re.Pattern[str]]]:
    """The rules of effect_rules.toml, compiled, and the THIRD_<lang> patterns."""
    data = tomllib.loads((resources.files("worker.writes.admission") / "effect_rules.toml")
                        .read_text(encoding="utf-8"))
    macros: dict[str, str] = data["macros"]
    rules = []
    for index, raw in enumerate(data["rule"]):
        required = tuple(_compile(p, macros) for p in raw["all"])
        rules.append(EffectRule(
            effect=Effect(raw["effect"]), action=raw["action"], lang=raw["lang"], index=index,
            all=required, none=tuple(_compile(p, macros) for p in raw.get("none", ())),
            third_party=bool(raw.get("third_party", False)),
            needs=frozenset(id(p) for p in required)))
    third = {name.removeprefix("THIRD_").lower(): _compile(body, macros)
             for name, body in macros.items() if name.startswith("THIRD_")}
    return tuple(rules), third


@lru_cache(maxsize=2)
def rules_for(action: Action) -> tuple[EffectRule, ...]:
    """The rules of one action, in file order."""
    return tuple(rule for rule in load_rules()[0] if rule.action == action)


@lru_cache(maxsize=1)
def _prefilter() -> Prefilter:
    rules, _ = load_rules()
    return Prefilter(p for rule in rules for p in (*rule.all, *rule.none))


def warm() -> None:
    """Compile the rules and build the prefilter now (worker start), not on the first write."""
    _prefilter()
    rules_for("block")
    rules_for("quarantine")
    load_model()


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[a-z]")
# A name inside a sentence: a capitalised word that does not open it ("Maria Keller",
# "Tom"). German capitalises every noun, so there a name is two capitalised words in a row.
_NAME = re.compile(r"(?<![.!?:;]\s)(?<!^)(?<![.!?:;])\b[A-ZÀ-ÖØ-ÞА-ЯЁ][a-zß-öø-ÿа-яё]+\b")
_TWO_NAMES = re.compile(
    r"\b(?!(?:Der|Die|Das|Den|Dem|Des|Ein|Eine|Einer|Einem|Einen|Mein|Meine|Sein|Seine|Ihr|Ihre)\b)"
    r"[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+\s+(?!(?:Nutzer|Benutzer|Kunde|Kundin)\b)[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+\b")
# A common Chinese surname and a one- or two-character given name ("陈建国").
_CHINESE_NAME = re.compile(
    "[王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁"
    "任沈姚卢姜崔钟谭陆汪范廖贾夏韦邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵严覃戴莫孔汤][\u4e00-\u9fff]{1,2}"
    "(?=[\u4e00-\u9fff，,。])")
_NOT_NAMES = frozenset({
    "User", "I", "The", "My", "He", "She", "They", "We", "You", "Der", "Die", "Das", "Er",
    "Sie", "Ich", "Le", "La", "Les", "Il", "Elle", "Je", "El", "Ella", "Yo", "Los", "Las",
    "Пользователь", "Он", "Она", "Я", "Они", "Mr", "Mrs", "Ms", "Dr", "Monday", "Friday",
})


def _languages(folded: str) -> set[str]:
    langs = {"any"}
    if _LATIN.search(folded):
        langs.update(LATIN_LANGS)
    if _CYRILLIC.search(folded):
        langs.add("ru")
    if _CJK.search(folded):
        langs.add("zh")
    return langs


def mentions_third_party(original: str, folded: str, lang: str,
                         third: dict[str, re.Pattern[str]]) -> bool:
    """Someone other than the user: a role noun or pronoun of the language, or a name."""
    role = third.get(lang)
    if role is not None and role.search(folded):
        return True
    if lang == "zh":
        return bool(_CHINESE_NAME.search(original))
    if lang == "de":
        return bool(_TWO_NAMES.search(original))
    return any(m.group() not in _NOT_NAMES for m in _NAME.finditer(original))


class _Searches:
    """Each distinct pattern searched at most once per form: rules share their parts (the
    address, the sensitive-data and group lists), and most notes match none of them."""

    def __init__(self, form: str, prefilter: Prefilter) -> None:
        self.form = form
        self.possible = prefilter.possible(form)
        # Keyed by id: hashing a compiled pattern hashes its whole program.
        self.found: dict[int, bool] = {}

    def __call__(self, pattern: re.Pattern[str]) -> bool:
        key = id(pattern)
        hit = self.found.get(key)
        if hit is None:
            hit = self.found[key] = (key in self.possible
                                     and pattern.search(self.form) is not None)
        return hit


def _matches(rule: EffectRule, search: _Searches, primary: _Searches) -> bool:
    """Every `all` pattern in this form, and no `none` pattern in it or in the note's plain
    fold (a negation or an own address must not be lost to look-alike folding)."""
    return (all(search(p) for p in rule.all)
            and not any(search(p) or primary(p) for p in rule.none))


def _first_match(forms: Iterable[tuple[str, set[str]]], original: str,
                 action: Action) -> EffectFinding | None:
    _, third = load_rules()
    forms = list(forms)
    primary = _search_for(forms[0][0])
    for form, langs in forms:
        search = _search_for(form)
        for rule in rules_for(action):
            if rule.lang not in langs:
                continue
            if not rule.needs <= search.possible or not _matches(rule, search, primary):
                continue
            if rule.third_party and not mentions_third_party(original, form, rule.lang, third):
                continue
            return EffectFinding(rule.effect, rule.action, rule.lang, rule.index)
    return None


@lru_cache(maxsize=64)
def _search_for(form: str) -> _Searches:
    """One note's searches serve both passes (block, then quarantine)."""
    return _Searches(form, _prefilter())


def _forms(text: str) -> list[tuple[str, set[str]]]:
    """The forms a note is screened in, each with the rule languages that apply to it: the
    effect fold (every script), and for Latin-script rules the look-alike-folded forms of
    `matching_forms` (Cyrillic "е" in "ignоre" read as Latin)."""
    folded = fold_for_effects(text)
    langs = _languages(folded)
    forms = [(folded, langs)]
    if "en" not in langs:  # no Latin letter to disguise: the look-alike forms add nothing
        return forms
    latin = {"any", *LATIN_LANGS}
    for form in dict.fromkeys(matching_forms(text)):
        if form != folded:
            forms.append((form, latin))
    return forms


def screen_effects(text: str) -> EffectFinding | None:
    """The strongest effect the note would have: a block before a quarantine. A rule's block
    stands when the learned model agrees the note is out of the ordinary; otherwise it is
    held. Encoded payloads are decoded and screened too; one that decodes to readable text
    and has no other effect is held (memory about a user has no reason to hide its words)."""
    forms = _forms(text)
    model = load_model()
    found = _first_match(forms, text, "block")
    if found:
        if model is not None and not model.confirms_block(forms[0][0]):
            # One signal is not enough to lose a note: held, under the same effect.
            return EffectFinding(found.effect, "quarantine", found.lang, found.rule)
        return found
    payloads = decoded_payloads(text)
    for encoding, decoded in payloads:
        decoded_forms = _forms(decoded)
        hit = (_first_match(decoded_forms, decoded, "block")
               or _first_match(decoded_forms, decoded, "quarantine"))
        if hit:
            return EffectFinding(hit.effect, hit.action, hit.lang, hit.rule, encoding)
    found = _first_match(forms, text, "quarantine")
    if found:
        return found
    if payloads:
        return EffectFinding(Effect.ENCODED_PAYLOAD, "quarantine", "any", None, payloads[0][0])
    if model is not None and model.flags(forms[0][0]):
        return EffectFinding(Effect.DOUBTFUL, "quarantine", "any", None)
    return None
