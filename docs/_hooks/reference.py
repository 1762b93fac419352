"""The generated reference pages: read from the code at build time, never written by hand.

MkDocs loads this file as a hook (`hooks:` in mkdocs.yml). A page holding a marker line

    <!-- generated: NAME -->

gets the marker replaced by what `GENERATORS[NAME]()` returns:

- `cli`: every command of `memory-worker`, walked from the Typer app (Typer vendors its own
  click, so the command tree is read by duck typing, never by isinstance against click);
- `configuration`: every field of `worker.settings.Settings`, its environment variables,
  type, default, bounds and the comment written above it in `worker/settings.py`;
- `schema`: every table of the declared schema (`db.models.metadata`);
- `metrics`: every Prometheus series created in `worker/ops/`;
- `dispositions`, `reason-codes`: the write outcomes of `db.enums.Disposition` and the
  admission reason codes of `worker/writes/admission/reasons.py`.

`<!-- include: PATH -->` is replaced by the file at PATH (from the project root) with its
headings moved one level down, so a guide kept beside the files it describes
(deploy/README.md) is also a page of the site.

A setting without a comment, a disposition or reason code without a description, or an
unknown marker is reported as a warning: `mkdocs build --strict` fails on it.
`tests/unit/test_docs_reference.py` calls the same functions.
"""

from __future__ import annotations

import ast
import io
import logging
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger("mkdocs.plugins.reference")

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)
INCLUDE = re.compile(r"^<!-- include: ([\w./-]+) -->$", re.M)


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(value: str) -> str:
    """`value` as inline code, safe for any backticks it holds."""
    fence = "``" if "`" in value else "`"
    pad = " " if "`" in value else ""
    return f"{fence}{pad}{value}{pad}{fence}"


# --- configuration -------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingDoc:
    name: str
    section: str
    env: tuple[str, ...]
    type: str
    default: str
    bounds: str
    description: str


@dataclass(frozen=True)
class SectionDoc:
    title: str
    intro: str


def _comment_text(lines: list[str]) -> str:
    return " ".join(line.strip()[1:].strip() for line in lines).strip()


def _is_header(line: str) -> bool:
    return line.strip().startswith("# ---")


def settings_source(source: str | None = None, settings_class: Any = None
                    ) -> tuple[list[SectionDoc], list[SettingDoc]]:
    """The sections and fields of the Settings class, in source order.

    A field's description is the block of comment lines directly above it (no blank line
    between; after the `# --- section ---` header when the block holds one), plus a comment
    at the end of its own lines. Any other comment block (followed by a blank line)
    introduces the current section.
    """
    if settings_class is None:
        from worker.settings import Settings as settings_class
    if source is None:
        source = (ROOT / "worker" / "settings.py").read_text()
    lines = source.splitlines()
    trailing: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and lines[token.start[0] - 1].strip()[:1] != "#":
            trailing[token.start[0]] = token.string[1:].strip()
    cls = next(node for node in ast.parse(source).body
               if isinstance(node, ast.ClassDef) and node.name == settings_class.__name__)
    fields = settings_class.model_fields
    sections: list[SectionDoc] = []
    docs: list[SettingDoc] = []
    consumed = 0  # lines before this index were already read

    def add_prose(block: list[str]) -> None:
        if block and sections:
            last = sections[-1]
            sections[-1] = SectionDoc(last.title, f"{last.intro} {_comment_text(block)}".strip())

    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name = node.target.id
        if name not in fields:
            continue
        blocks: list[list[str]] = [[]]
        for line in lines[consumed:node.lineno - 1]:
            if line.strip().startswith("#"):
                blocks[-1].append(line)
            elif blocks[-1]:
                blocks.append([])  # a blank line or code ends a block
        consumed = node.end_lineno or node.lineno
        attached = blocks.pop()
        for index, block in enumerate([*blocks, attached]):
            headers = [i for i, line in enumerate(block) if _is_header(line)]
            if headers:
                title = block[headers[-1]].strip().lstrip("#").strip().strip("-").strip()
                sections.append(SectionDoc(title, ""))
                block = block[headers[-1] + 1:]
            if index == len(blocks):
                attached = block
            else:
                add_prose(block)
        description = _comment_text(attached)
        extra = [trailing[n] for n in range(node.lineno, consumed + 1) if n in trailing]
        description = " ".join([description, *extra]).strip()
        info = fields[name]
        docs.append(SettingDoc(
            name=name, section=sections[-1].title if sections else "", env=env_names(name, info),
            type=ast.unparse(node.annotation), default=_default(info, node),
            bounds=_bounds(info), description=description))
    return sections, docs


def env_names(name: str, info: Any) -> tuple[str, ...]:
    """The environment variables a field is read from, the usual one first."""
    alias = info.validation_alias
    choices = getattr(alias, "choices", None)
    if choices:
        return tuple(str(choice) for choice in choices)
    if isinstance(alias, str):
        return (alias,)
    return (f"MEMORY_{name.upper()}",)


def _default(info: Any, node: ast.AnnAssign) -> str:
    if info.default_factory is not None:
        return "computed (see the description)"
    value = info.default
    if value is None:
        return "unset"
    if isinstance(value, tuple):
        if not value:
            return "none"
        shown = ", ".join(_code(str(item)) for item in value)
        if len(shown) > 120 and node.value is not None:
            where = ast.unparse(node.value)
            return f"{len(value)} entries ({_code(where)} in the source)"
        return shown
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, bool):
        return _code("true" if value else "false")
    return _code(str(value))


def _bounds(info: Any) -> str:
    symbols = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    parts = []
    for item in info.metadata:
        for attr, symbol in symbols.items():
            bound = getattr(item, attr, None)
            if bound is not None:
                parts.append(f"{symbol} {bound}")
    return ", ".join(parts)


def _link_settings(text: str, docs: list[SettingDoc]) -> str:
    """Field names in a description become links to their settings."""
    names = {doc.name: doc.env[0] for doc in docs if "_" in doc.name}
    if not names:
        return text
    pattern = re.compile(r"`?\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\b`?")
    return pattern.sub(lambda m: f"[`{names[m.group(1)]}`](#{names[m.group(1)].lower()})", text)


def undocumented_settings(source: str | None = None, settings_class: Any = None) -> list[str]:
    """Fields of the Settings class without a description."""
    return [doc.name for doc in settings_source(source, settings_class)[1]
            if not doc.description]


def configuration_markdown() -> str:
    sections, docs = settings_source()
    for name in undocumented_settings():
        log.warning("reference: setting %r has no comment above it in worker/settings.py", name)
    out: list[str] = []
    intros = {section.title: section.intro for section in sections}
    current = None
    for doc in docs:
        description = _link_settings(doc.description, docs)
        if doc.section != current:
            current = doc.section
            out += [f"## {current[:1].upper() + current[1:]}", ""]
            if intros.get(current):
                out += [intros[current], ""]
        out += [f"### `{doc.env[0]}`", ""]
        facts = [f"type {_code(doc.type)}", f"default {doc.default}"]
        if doc.bounds:
            facts.append(doc.bounds)
        if len(doc.env) > 1:
            facts.append("also read as " + ", ".join(_code(e) for e in doc.env[1:]))
        out += [description, "", "Type " + " · ".join(facts)[5:] + ".", ""]
    return "\n".join(out)


# --- CLI -----------------------------------------------------------------------------------


def _walk(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, command
    children = getattr(command, "commands", None)
    if isinstance(children, dict):
        for name in sorted(children):
            child = children[name]
            if not getattr(child, "hidden", False):
                yield from _walk(child, [*path, name])


def cli_commands() -> list[tuple[str, Any]]:
    """Every command of `memory-worker` as (full name, command object), groups included."""
    import typer.main

    from worker.cli import cli

    root = typer.main.get_command(cli)
    return [(" ".join(["memory-worker", *path]), command) for path, command in _walk(root, [])]


def _usage(name: str, command: Any) -> str:
    pieces = [name]
    params = [p for p in getattr(command, "params", []) if not getattr(p, "hidden", False)]
    if any(p.param_type_name == "option" for p in params):
        pieces.append("[OPTIONS]")
    for param in params:
        if param.param_type_name == "argument":
            word = (param.name or "").upper()
            if getattr(param, "nargs", 1) == -1:
                word += "..."
            pieces.append(word if param.required else f"[{word}]")
    if isinstance(getattr(command, "commands", None), dict):
        pieces.append("COMMAND [ARGS]...")
    return " ".join(pieces)


def cli_markdown() -> str:
    out: list[str] = []
    for name, command in cli_commands():
        depth = name.count(" ")
        if depth:
            out += [f"{'#' * min(depth + 1, 4)} `{name}`", ""]
        help_text = (getattr(command, "help", None) or "").strip()
        if help_text:
            out += [help_text.replace("\b\n", ""), ""]
        out += ["```", _usage(name, command), "```", ""]
        ctx = command.context_class(command, info_name=name.split()[-1])
        rows = []
        for param in getattr(command, "params", []):
            if getattr(param, "hidden", False):
                continue
            record = param.get_help_record(ctx) if param.param_type_name == "option" else None
            if param.param_type_name == "argument":
                left = (param.name or "").upper()
                text = getattr(param, "help", None) or ""
                if param.required:
                    text = f"{text} (required)".strip()
            elif record:
                left, text = record
            else:
                continue
            rows.append(f"| {_code(left)} | {_cell(text)} |")
        rows.append("| `--help` | Show the command's help and exit. |")
        out += ["| argument or option | meaning |", "|---|---|", *rows, ""]
        children = getattr(command, "commands", None)
        if isinstance(children, dict) and children:
            out += ["Commands: " + ", ".join(
                f"`{child}`" for child in sorted(children)) + ".", ""]
    return "\n".join(out)


# --- schema --------------------------------------------------------------------------------


def _created_in() -> dict[str, str]:
    created: dict[str, str] = {}
    for path in sorted((ROOT / "db" / "migrations").glob("*.sql")):
        for match in re.finditer(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", path.read_text(),
                                 re.I):
            created.setdefault(match.group(1), path.name)
    return created


def schema_markdown() -> str:
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CheckConstraint, CreateIndex

    import db.models
    from db.models import metadata

    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    created = _created_in()
    modules = {}
    for module_name in ("memory", "runs", "conversations", "manager", "erasure"):
        module = getattr(db.models, module_name)
        modules[module_name] = (module.__doc__ or "").strip().splitlines()[0]
    out: list[str] = []
    for table in sorted(metadata.sorted_tables, key=lambda t: t.name):
        out += [f"### `{table.name}`", ""]
        origin = created.get(table.name)
        if origin:
            out += [f"Created by `db/migrations/{origin}`.", ""]
        out += ["| column | type | null | default | key |", "|---|---|---|---|---|"]
        for column in table.columns:
            key = []
            if column.primary_key:
                key.append("primary key")
            for fk in column.foreign_keys:
                key.append(f"→ `{fk.target_fullname}`")
            default = ""
            if column.server_default is not None:
                arg = getattr(column.server_default, "arg", None)
                default = _code(str(getattr(arg, "text", arg)))
            if column.computed is not None:
                default = "generated: " + _code(str(column.computed.sqltext))
            out.append(f"| `{column.name}` | {_code(str(column.type.compile(dialect)))} | "
                       f"{'yes' if column.nullable else 'no'} | {_cell(default)} | "
                       f"{' '.join(key)} |")
        out.append("")
        checks = [c for c in table.constraints if isinstance(c, CheckConstraint)]
        if checks:
            out += ["Checks:", ""]
            out += [f"- {_code(_cell(str(c.sqltext)))}" for c in checks]
            out.append("")
        if table.indexes:
            out += ["Indexes:", ""]
            for index in sorted(table.indexes, key=lambda i: i.name or ""):
                ddl = str(CreateIndex(index).compile(dialect=dialect))
                out.append(f"- {_code(_cell(ddl))}")
            out.append("")
    return "\n".join(out)


# --- metrics -------------------------------------------------------------------------------

_METRIC_TYPES = {"Counter": "counter", "Histogram": "histogram", "Gauge": "gauge",
                 "Summary": "summary", "GaugeMetricFamily": "gauge",
                 "CounterMetricFamily": "counter"}


@dataclass(frozen=True)
class MetricDoc:
    name: str
    type: str
    labels: tuple[str, ...]
    help: str
    source: str


def metrics() -> list[MetricDoc]:
    """Every series created in worker/ops/*.py, read from the calls that create them."""
    found = []
    for path in sorted((ROOT / "worker" / "ops").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            kind = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if kind not in _METRIC_TYPES or len(node.args) < 2:
                continue
            try:
                name, text = ast.literal_eval(node.args[0]), ast.literal_eval(node.args[1])
            except ValueError:
                continue
            labels: Any = ()
            if len(node.args) > 2:
                labels = ast.literal_eval(node.args[2])
            for keyword in node.keywords:
                if keyword.arg in ("labels", "labelnames"):
                    labels = ast.literal_eval(keyword.value)
            if _METRIC_TYPES[kind] == "counter" and not name.endswith("_total"):
                name += "_total"
            found.append(MetricDoc(name, _METRIC_TYPES[kind], tuple(labels), text,
                                   str(path.relative_to(ROOT))))
    return sorted(found, key=lambda m: m.name)


def metrics_markdown() -> str:
    out = ["| series | type | labels | what it counts |", "|---|---|---|---|"]
    for metric in metrics():
        labels = ", ".join(f"`{label}`" for label in metric.labels) or "—"
        out.append(f"| `{metric.name}` | {metric.type} | {labels} | {_cell(metric.help)} |")
    return "\n".join(out) + "\n"


# --- dispositions and reason codes ---------------------------------------------------------

# What each disposition means to the agent that sent the write; the enum is the list, this is
# the prose. A value missing here is a build warning (strict: an error).
DISPOSITIONS = {
    "written": "Stored as a new `Provisional` note (author `Agent`, tier `Standard`, "
               "TTL `MEMORY_PROVISIONAL_TTL_DAYS`); `note_id` is the new note.",
    "superseded-own": "Replaced a note this run wrote earlier (last write wins within a run).",
    "deduped": "An exact normalized restatement of an existing note: that note is "
               "reinforced, nothing new is stored; `note_id` is the existing note.",
    "skipped-duplicate": "The run already stored the same note; `note_id` is the earlier one.",
    "skipped-cap": "The run reached its cap of new notes (`per_run_cap`).",
    "skipped-disabled": "The agent's `allow_memory_write` is off: nothing was saved, and the "
                        "agent must not tell the user it was.",
    "skipped-stale": "A late write (older than what its run already applied) that would have "
                     "overridden a later write of its run; `note_id` is the note holding the "
                     "newer statement.",
    "rejected-type": "Only `Preference` and `Context` are accepted in flight.",
    "rejected-invalid": "A malformed payload: missing or mistyped fields, too long, invalid "
                        "Unicode, extra arguments, a broken envelope, a poison message.",
    "blocked": "Write admission stopped it; `reason_code` says which check (below).",
    "candidate": "Internal memory (a run `source` not in `MEMORY_TRUSTED_SOURCES`) held for "
                 "promotion in `memory_candidates`, never injected; `candidate_id` names it.",
    "error": "An infrastructure failure. Not counted, recorded so the run's later writes go "
             "on, and applied normally when the same write is retried.",
    "rejected-erased": "The run's subject was erased after the run began (the erasure fence).",
    "forgotten": "A forget request (`memory.forget.fact`) revoked notes; `forgotten` lists them.",
    "nothing-to-forget": "A forget request matched no note of the run's user.",
}


def dispositions_markdown() -> str:
    from db.enums import Disposition

    out = ["| disposition | meaning |", "|---|---|"]
    for value in Disposition:
        meaning = DISPOSITIONS.get(value.value)
        if meaning is None:
            log.warning("reference: disposition %r has no description in docs/_hooks/"
                        "reference.py", value.value)
            meaning = ""
        out.append(f"| `{value.value}` | {_cell(meaning)} |")
    extra = set(DISPOSITIONS) - {d.value for d in Disposition}
    for name in sorted(extra):
        log.warning("reference: %r is described but is no Disposition", name)
    return "\n".join(out) + "\n"


def reason_codes_markdown() -> str:
    from worker.writes.admission import reasons

    sentences: dict[Any, str] = getattr(reasons, "_SENTENCES", {})
    out = ["| `reason_code` | the sentence in `reason` (after “Not saved: ”) |", "|---|---|"]
    for code in reasons.ReasonCode:
        sentence = sentences.get(code)
        if sentence is None:
            log.warning("reference: reason code %r has no sentence", code.value)
            sentence = ""
        out.append(f"| `{code.value}` | {_cell(sentence)} |")
    return "\n".join(out) + "\n"


# --- the hook ------------------------------------------------------------------------------

GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_markdown,
    "configuration": configuration_markdown,
    "schema": schema_markdown,
    "metrics": metrics_markdown,
    "dispositions": dispositions_markdown,
    "reason-codes": reason_codes_markdown,
}


def _demote(text: str) -> str:
    out = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,5} ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def render(markdown: str) -> str:
    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            log.warning("reference: unknown generated block %r", name)
            return ""
        return GENERATORS[name]()

    def included(match: re.Match[str]) -> str:
        path = ROOT / match.group(1)
        if not path.is_file():
            log.warning("reference: cannot include %s", match.group(1))
            return ""
        return _demote(path.read_text())

    return INCLUDE.sub(included, MARKER.sub(generated, markdown))


def on_page_markdown(markdown: str, **_: Any) -> str:
    return render(markdown)
