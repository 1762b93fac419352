"""Migration files: what `db/migrations/` holds, read without a database.

`NNNN_name.sql`, numbered in the order they apply; a file's identity in the ledger is its
version and the checksum of its whole text (db/migrate.py refuses an applied file that was
edited afterwards). A first line

    -- migrate: no-transaction

marks a file that runs in autocommit, one statement at a time; `split_statements` cuts its
text into those statements the way the server's lexer would, and `statements_of` refuses what
cannot be cut safely. Anything else after `-- migrate:` is an error, not a comment.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_FILENAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

# A first-line directive: `-- migrate: no-transaction`. Anything else after `-- migrate:` is
# refused rather than ignored, so a typo cannot silently run a file in a transaction.
_DIRECTIVE = re.compile(r"^--\s*migrate:\s*(?P<what>.*?)\s*$", re.IGNORECASE)
NO_TRANSACTION = "no-transaction"


class MigrationError(RuntimeError):
    pass


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        # The whole file, marker line included: unchanged for every file applied so far.
        return hashlib.sha256(self.sql.encode()).hexdigest()

    @property
    def filename(self) -> str:
        return self.path.name

    @property
    def transactional(self) -> bool:
        first_line = self.sql.split("\n", 1)[0]
        match = _DIRECTIVE.match(first_line.strip())
        if match is None:
            return True
        if match.group("what").lower() == NO_TRANSACTION:
            return False
        raise MigrationError(
            f"{self.filename}: unknown directive {first_line.strip()!r} "
            f"(the only one is '-- migrate: {NO_TRANSACTION}')")


def discover(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = _FILENAME.match(path.name)
        if not match:
            raise MigrationError(f"migration file name not NNNN_name.sql: {path.name}")
        found.append(Migration(match.group(1), match.group(2), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"duplicate migration versions in {directory}")
    return found


# --- splitting a file into statements ------------------------------------------------------

@dataclass(frozen=True)
class Statement:
    sql: str  # the text sent to the server, comments inside it kept
    line: int  # 1-based line of the file where it starts, for error messages
    code: str  # the same text with comments and string/dollar-quoted bodies blanked out


# A dollar-quote opener: `$$` or `$tag$` (tag: an identifier without `$`, not starting with a
# digit, so `$1` is a parameter, not a quote).
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$")
_IDENT_CHAR = re.compile(r"[A-Za-z0-9_$\u0080-\uffff]")


def split_statements(sql: str) -> list[Statement]:
    """Split SQL text on the semicolons that end statements, the way the server's lexer sees
    them: not inside '...' (with '' and, for E'...', backslash escapes), "...", $tag$...$tag$,
    -- comments or nested /* */ comments. Pieces holding only whitespace and comments are
    dropped. Sending each piece as its own query is what lets a no-transaction file use
    CREATE INDEX CONCURRENTLY: one query string holding several statements runs as one
    implicit transaction."""
    statements: list[Statement] = []
    code: list[str] = []  # the current statement with comments/literal bodies blanked
    start = 0
    i = 0
    n = len(sql)

    def blank(text: str) -> str:
        return "".join("\n" if c == "\n" else " " for c in text)

    def finish(end: int) -> None:
        nonlocal start
        text = sql[start:end]
        code_text = "".join(code)
        code.clear()
        if code_text.strip():
            # `code` is aligned with the text character for character: the first code
            # character is where the statement proper starts, after its leading comments.
            lead = len(code_text) - len(code_text.lstrip())
            line = sql.count("\n", 0, start + lead) + 1
            statements.append(Statement(text.strip(), line, code_text.strip()))
        start = end + 1

    while i < n:
        c = sql[i]
        if c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end == -1 else end
            code.append(blank(sql[i:end]))
            i = end
        elif c == "/" and sql.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if sql.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif sql.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            if depth:
                raise MigrationError(
                    f"unterminated /* comment at line {sql.count(chr(10), 0, i) + 1}")
            code.append(blank(sql[i:j]))
            i = j
        elif c in "'\"":
            # E'...' (any case, not the tail of an identifier like `name'`) takes backslashes.
            escapes = (c == "'" and i > 0 and sql[i - 1] in "eE"
                       and (i < 2 or not _IDENT_CHAR.match(sql[i - 2])))
            j = i + 1
            while True:
                if j >= n:
                    raise MigrationError(
                        f"unterminated {c} quote at line {sql.count(chr(10), 0, i) + 1}")
                if escapes and sql[j] == "\\":
                    j += 2
                elif sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:  # '' or "" inside: an escaped quote
                        j += 2
                    else:
                        break
                else:
                    j += 1
            # Identifiers stay readable in `code` (index names are looked up there).
            code.append(sql[i:j + 1] if c == '"' else c + blank(sql[i + 1:j]) + c)
            i = j + 1
        elif c == "$" and (i == 0 or not _IDENT_CHAR.match(sql[i - 1])):
            match = _DOLLAR_TAG.match(sql, i)
            if match is None:  # $1: a parameter
                code.append(c)
                i += 1
                continue
            tag = match.group(0)
            end = sql.find(tag, match.end())
            if end == -1:
                raise MigrationError(
                    f"unterminated {tag} quote at line {sql.count(chr(10), 0, i) + 1}")
            code.append(tag + blank(sql[match.end():end]) + tag)
            i = end + len(tag)
        elif c == ";":
            finish(i)
            i += 1
        else:
            code.append(c)
            i += 1
    finish(n)
    return statements


# A SQL-standard function body (`BEGIN ATOMIC ... END`) holds unquoted semicolons that belong
# to the function; psql tracks them by counting BEGIN/END. No migration needs one in a
# no-transaction file, so it is refused instead of being split wrongly.
_BEGIN_ATOMIC = re.compile(r"\bBEGIN\s+ATOMIC\b", re.IGNORECASE)


def statements_of(migration: Migration) -> list[Statement]:
    statements = split_statements(migration.sql)
    for statement in statements:
        if _BEGIN_ATOMIC.search(statement.code):
            raise MigrationError(
                f"{migration.filename}, line {statement.line}: a BEGIN ATOMIC function body "
                "cannot be split into statements; use a $$-quoted body in a no-transaction "
                "migration")
    return statements
