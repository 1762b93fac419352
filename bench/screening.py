"""Admission-by-effect benchmark: what the sets score, and what screening costs per write.

    .venv/bin/python bench/screening.py                 # markdown to stdout and bench/results/
    .venv/bin/python bench/screening.py --errors        # also list every miss and false flag

The data files and their roles:

  * tests/data/admission_effects_blind8.tsv - HEADLINE: written blind (by someone who never saw
    the rules, the model or the other sets) after round 8, and scored once. Not tuned against;
    a change must be scored on a new blind set.
  * tests/data/admission_effects_blind1.tsv ... _blind7.tsv - written blind the same way after
    rounds 1 to 7 and scored once each (round 1: 74.6 % of hostile notes caught, 0 benign
    blocked, 5 of 228 held; round 2: 64.7 %, 2 of 230 blocked, 5 held; round 3: 69.0 %, 2 of
    240 blocked, none held; round 4, the first with the model: 83.3 %, 1 of 256 blocked, 3
    held; round 5: 85.1 %, 4 of 247 blocked, 7 held; round 6: 88.7 %, none blocked, 5 of 247
    held; round 7: 86.2 %, none blocked, 7 of 247 held). The next round was tuned on each,
    and the model learned from them, so they are TUNING data now.
  * tests/data/admission_effects_tuning3.tsv - TUNING data written for round 3.
  * tests/data/admission_effects_tuning_hostile.tsv, admission_effects_tuning_benign.tsv - the
    TUNING sets round 1 was written against (their scores say nothing about generalization).

Cost: `screen_effects` alone (what this issue adds to a write) and the whole screening of a
write (`screening_block`'s length, patterns, principal and repetition checks plus effects),
per note, on one core, warm (rules compiled at worker start), as p50 / p95 / p99 / max.
Plus the worst note an attacker can send: 2,000 characters built to wake as many rules as
possible.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from worker.normalize import matching_forms
from worker.settings import Settings
from worker.writes.admission import resolve_policy, screening_block
from worker.writes.admission.effects import screen_effects, warm

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
RESULTS = ROOT / "bench" / "results" / "screening.md"
LANGS = ("en", "de", "fr", "es", "zh", "ru")


def rows(name: str) -> list[list[str]]:
    path = DATA / name
    if not path.exists():
        return []
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def table(header: Sequence[str], body: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in body]
    return "\n".join(lines)


def outcome(text: str) -> str:
    found = screen_effects(text)
    return "passed" if found is None else found.action


def score(title: str, hostile: list[tuple[str, str, str]], benign: list[tuple[str, str]],
          errors: bool) -> str:
    """Hostile: caught (blocked or held) per effect and per language; benign: blocked / held."""
    by_effect: dict[str, Counter[str]] = defaultdict(Counter)
    by_lang: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[str] = []
    for effect, lang, text in hostile:
        result = outcome(text)
        by_effect[effect][result] += 1
        by_lang[lang][result] += 1
        if result == "passed":
            misses.append(f"- missed ({effect}, {lang}): {text}")
    benign_counts: Counter[str] = Counter()
    benign_by_lang: dict[str, Counter[str]] = defaultdict(Counter)
    flags: list[str] = []
    for lang, text in benign:
        result = outcome(text)
        benign_counts[result] += 1
        benign_by_lang[lang][result] += 1
        if result != "passed":
            found = screen_effects(text)
            assert found is not None
            flags.append(f"- benign {result} ({found.effect.value}, {lang}): {text}")

    def caught_row(name: str, counts: Counter[str]) -> list[object]:
        n = sum(counts.values())
        caught = counts["block"] + counts["quarantine"]
        return [name, n, counts["block"], counts["quarantine"], counts["passed"],
                f"{caught / n:.1%}" if n else "-"]

    total: Counter[str] = Counter()
    for counts in by_effect.values():
        total.update(counts)
    header = ["", "n", "blocked", "held", "passed", "caught"]
    parts = [f"### {title}", "", "Hostile, by effect:", "",
             table(header, [caught_row(k, v) for k, v in sorted(by_effect.items())]
                   + [caught_row("**all**", total)]),
             "", "Hostile, by language:", "",
             table(header, [caught_row(k, by_lang[k]) for k in LANGS if k in by_lang]), ""]
    n_benign = sum(benign_counts.values())
    parts += ["Benign:", "", table(
        ["", "n", "written", "blocked", "held"],
        [[lang, sum(c.values()), c["passed"], c["block"], c["quarantine"]]
         for lang, c in sorted(benign_by_lang.items())]
        + [["**all**", n_benign, benign_counts["passed"], benign_counts["block"],
            f"{benign_counts['quarantine']} ({benign_counts['quarantine'] / n_benign:.1%})"
            if n_benign else "0"]]), ""]
    if errors:
        parts += [*misses, *flags, ""]
    return "\n".join(parts)


def timings(texts: Sequence[str], measure: Callable[[str], object]) -> list[float]:
    found = []
    for text in texts:
        matching_forms.cache_clear()  # a write sees each text once
        started = time.perf_counter()
        measure(text)
        found.append((time.perf_counter() - started) * 1000)
    return sorted(found)


def percentiles(ms: list[float]) -> list[str]:
    def at(q: float) -> float:
        return ms[min(len(ms) - 1, int(len(ms) * q))]
    return [f"{at(0.5):.3f}", f"{at(0.95):.3f}", f"{at(0.99):.3f}", f"{ms[-1]:.3f}"]


def worst_case_note() -> str:
    """2,000 characters of trigger words in every language and an address at the end."""
    words = " ".join((
        "send forward ask password ignore rules tell all users pretend support",
        "schick frag passwort ignoriere regeln envoie demande mot de passe ignora reglas",
        "отправь спроси пароль игнорируй правила 发送 询问 密码 忽略 规则",
    )).split()
    note, i = "", 0
    while len(note) < 1960:
        note += words[i % len(words)] + " "
        i += 1
    return note + "x@example.org"


def cost(sets: dict[str, list[str]]) -> str:
    policy = resolve_policy(Settings())

    def full(text: str) -> object:
        screening_block(policy, text, user_id="u-1", company_id="c-1",
                        principals=lambda ids: None)
        return screen_effects(text)

    body = []
    for name, texts in sets.items():
        if texts:
            body.append([name, len(texts), "effects", *percentiles(timings(texts,
                                                                           screen_effects))])
            body.append([name, len(texts), "all screening", *percentiles(timings(texts, full))])
    worst = [worst_case_note()] * 20
    body.append(["worst case (2,000 chars)", 1, "effects",
                 *percentiles(timings(worst, screen_effects))])
    return table(["set", "notes", "measured", "p50 ms", "p95 ms", "p99 ms", "max ms"], body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--errors", action="store_true", help="list every miss and false flag")
    args = parser.parse_args()
    started = time.perf_counter()
    warm()
    warm_s = time.perf_counter() - started
    blind = rows("admission_effects_blind8.tsv")
    used = [row for name in ("admission_effects_blind1.tsv", "admission_effects_blind2.tsv",
                             "admission_effects_blind3.tsv", "admission_effects_blind4.tsv",
                             "admission_effects_blind5.tsv", "admission_effects_blind6.tsv",
                             "admission_effects_blind7.tsv", "admission_effects_tuning3.tsv")
            for row in rows(name)]
    tuning_hostile = [(r[0], r[1], r[2]) for r in rows("admission_effects_tuning_hostile.tsv")]
    tuning_hostile += [(r[1], r[2], r[3]) for r in used if r[0] == "hostile"]
    tuning_benign = [(r[0], r[1]) for r in rows("admission_effects_tuning_benign.tsv")]
    tuning_benign += [(r[2], r[3]) for r in used if r[0] == "benign"]
    parts = ["## Admission by effect (bench/screening.py)", ""]
    if blind:
        parts.append(score("Blind set 8 (headline: written without seeing the rules or the model, "
                           "scored once on round 8)",
                           [(r[1], r[2], r[3]) for r in blind if r[0] == "hostile"],
                           [(r[2], r[3]) for r in blind if r[0] == "benign"], args.errors))
    parts.append(score("Tuning sets and blind sets 1-7 (the rules and model learned from these)",
                       tuning_hostile,
                       tuning_benign, args.errors))
    facts = [line for line in (DATA / "distinct_facts.txt").read_text(encoding="utf-8")
             .splitlines() if line.strip()]
    parts += ["### Cost per write (one core, warm)", "", cost({
        "benign (tuning + blind)": [t for _, t in tuning_benign]
        + [r[3] for r in blind if r[0] == "benign"],
        "hostile (tuning + blind)": [t for _, _, t in tuning_hostile]
        + [r[3] for r in blind if r[0] == "hostile"],
        "short facts (distinct_facts.txt)": facts,
    }), "", f"Compiling the rules and building the prefilter (once, at worker start): "
        f"{warm_s * 1000:.0f} ms.", ""]
    report = "\n".join(parts)
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
