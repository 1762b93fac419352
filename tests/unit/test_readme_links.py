"""Every relative link of README.md resolves: the file exists and, with an anchor, the
heading is there (GitHub's anchors). The docs site's links are checked by the strict build
(`mkdocs build --strict`, part of `make test`)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    fenced = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.*)", line)):
            found.add(github_anchor(match.group(1)))
    return found


def relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return [target for target in LINK.findall(text)
            if not re.match(r"[a-z]+:", target)]


def test_every_relative_link_of_the_readme_resolves():
    links = relative_links(README)
    assert links, "the README links into the docs"
    broken = []
    for target in links:
        file_part, _, anchor = target.partition("#")
        path = (README.parent / file_part) if file_part else README
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading #{anchor}")
    assert broken == []


def test_the_anchor_rule_matches_github():
    assert github_anchor("Five-minute tour") == "five-minute-tour"
    assert github_anchor("How a write is applied (`memory.write`)") == \
        "how-a-write-is-applied-memorywrite"
