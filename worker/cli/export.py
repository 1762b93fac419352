"""`memory-worker export KIND ID`: everything held about a subject as JSON Lines
(worker/erasure/export.py), to a file or stdout; `memory-worker exports`: the audit log of
exports. Registered by worker/cli/__init__.py.

Streams straight from Postgres in the CLI's own process (no worker needed); `memory.export`
does the same on the manager queue, into a file on the worker's host."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from worker.cli.output import console, database_reachable, dump


def export(
    kind: Annotated[str, typer.Argument(help="user, company, agent or conversation.")],
    subject_id: Annotated[str, typer.Argument(metavar="ID", help="The subject's id.")],
    requested_by: Annotated[str, typer.Option(
        "--by", help="Who asked (kept in the audit record).")],
    agent: Annotated[str | None, typer.Option(help="Narrow a user export to this agent.")] = None,
    company: Annotated[str | None, typer.Option(
        help="Narrow a user export to this company.")] = None,
    output: Annotated[str, typer.Option(
        "--output", "-o", metavar="FILE|-",
        help="Write the export here (created readable by its owner only; written in full or "
             "not at all); '-' for stdout.")] = "-",
) -> None:
    """Export everything held about a subject — notes of every status with their history,
    examples, conversations and their messages, memory candidates — as JSON Lines: a header
    line, one line per record, a trailer with the counts. The same rows `forget` would
    erase. A summary goes to stderr."""
    from worker.erasure import SubjectError, parse_subject
    from worker.erasure.audit import valid_requester
    from worker.erasure.export import export_subject, export_to_file
    from worker.runtime import get_runtime

    try:
        subject = parse_subject(kind, subject_id, agent, company)
    except SubjectError as exc:
        print(f"memory-worker: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    if not valid_requester(requested_by):
        print("memory-worker: --by must name who asked (1-200 characters)", file=sys.stderr)
        raise typer.Exit(2)
    path = None if output == "-" else Path(output)
    if path is not None and (path.is_dir() or not path.parent.is_dir()):
        print(f"memory-worker: {output} is a directory or its directory does not exist",
              file=sys.stderr)
        raise typer.Exit(2)
    database_reachable()  # before a file is created: a database that is down says so first
    db = get_runtime().db
    if path is None:
        try:
            report = export_subject(db, subject, sys.stdout, requested_by=requested_by)
        except BrokenPipeError:  # `| head`: the reader left; the audit record says failed
            print("memory-worker: stdout was closed before the export finished",
                  file=sys.stderr)
            raise typer.Exit(1) from None
        where = "stdout"
    else:
        report = export_to_file(db, subject, path, requested_by=requested_by)
        where = str(path)
    counts = ", ".join(f"{n} {table}" for table, n in report.counts.items())
    print(f"exported {subject.describe()} to {where}: {counts} "
          f"(audit record {report.audit_id})", file=sys.stderr)


def exports(
    limit: Annotated[int, typer.Option(help="How many, newest first.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The export audit log: who asked, the subject's kind and keyed hash, counts, when."""
    from db.queries.audit import list_audit
    from worker.erasure.export import AUDIT_TABLE
    from worker.runtime import get_runtime

    with get_runtime().db.read() as conn:
        records = list_audit(conn, limit, table=AUDIT_TABLE)
    if as_json:
        dump(records)
        return
    table = Table("id", "started", "kind", "subject hash", "by", "status", "records")
    for r in records:
        counts = r["counts"] or {}
        table.add_row(str(r["id"]), r["started_at"].isoformat(timespec="seconds"),
                      r["subject_kind"], r["subject_hash"][:16] + "…", r["requested_by"],
                      r["status"], str(sum(int(v) for k, v in counts.items()
                                           if k != "note_events")))
    console.print(table)
