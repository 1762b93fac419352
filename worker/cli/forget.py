"""`memory-worker forget KIND ID`: erase a subject (worker/erasure/), or count what would go
(`--dry-run`); `memory-worker erasures`: the audit log. Registered by worker/cli/__init__.py.

Runs in the CLI's own process against the database and Redis (no worker needed), as
`memory.forget` does on the manager queue."""

from __future__ import annotations

import getpass
from typing import Annotated

import typer
from rich.table import Table

from worker.cli.output import console, dump


def forget(
    kind: Annotated[str, typer.Argument(help="user, company, agent or conversation.")],
    subject_id: Annotated[str, typer.Argument(metavar="ID", help="The subject's id.")],
    agent: Annotated[str | None, typer.Option(help="Narrow a user erasure to this agent.")] = None,
    company: Annotated[str | None, typer.Option(
        help="Narrow a user erasure to this company.")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: erase for good.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Count what would go, per table; change nothing.")] = False,
    requested_by: Annotated[str | None, typer.Option(
        "--by", help="Who asked (kept in the audit record); default: the OS user.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Erase every row and Redis key holding a subject's memory or identity; its writes
    queued before the erasure are refused when they arrive."""
    from worker.erasure import SubjectError, parse_subject
    from worker.erasure import forget as run_forget
    from worker.runtime import get_runtime

    try:
        subject = parse_subject(kind, subject_id, agent, company)
    except SubjectError as exc:
        print(f"memory-worker: {exc}")
        raise typer.Exit(2) from None
    if not dry_run and not yes:
        print(f"refusing to erase {subject.describe()} without --yes "
              "(see what would go with --dry-run)")
        raise typer.Exit(2)
    runtime = get_runtime()
    settings = runtime.settings
    report = run_forget(runtime.db, subject, requested_by=requested_by or getpass.getuser(),
                        dry_run=dry_run, redis_url=settings.require_redis_url(),
                        embedding_model=settings.embedding_model)
    if as_json:
        dump(report.as_dict())
        return
    verb = "would erase" if dry_run else "erased"
    table = Table("table / key", "rows")
    for name, count in sorted(report.counts.items()):
        table.add_row(name, str(count))
    console.print(table)
    audit = "" if report.audit_id is None else f" (audit record {report.audit_id})"
    print(f"{verb} {subject.describe()}: {sum(report.counts.values())} rows and keys{audit}")


def erasures(
    limit: Annotated[int, typer.Option(help="How many, newest first.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The erasure audit log: who asked, the subject's kind and keyed hash, counts, when.
    Keep a copy outside database backups (see README: restoring a backup)."""
    from db.queries.erasure import list_audit
    from worker.runtime import get_runtime

    with get_runtime().db.read() as conn:
        records = list_audit(conn, limit)
    if as_json:
        dump(records)
        return
    table = Table("id", "started", "kind", "subject hash", "by", "status", "rows")
    for r in records:
        table.add_row(str(r["id"]), r["started_at"].isoformat(timespec="seconds"),
                      r["subject_kind"], r["subject_hash"][:16] + "…", r["requested_by"],
                      r["status"], str(sum(int(v) for v in (r["counts"] or {}).values())))
    console.print(table)
