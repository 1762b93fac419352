"""`memory-worker forget KIND ID`: erase a subject (worker/erasure/), or count what would go
(`--dry-run`); `memory-worker erasures`: the audit log; `memory-worker reapply-erasures
LOG`: erase again, in a restored backup, what the log says was erased. Registered by
worker/cli/__init__.py.

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
    from worker.erasure.audit import REQUESTED_BY_ERROR, valid_requester
    from worker.runtime import get_runtime

    try:
        subject = parse_subject(kind, subject_id, agent, company)
    except SubjectError as exc:
        print(f"memory-worker: {exc}")
        raise typer.Exit(2) from None
    requester = requested_by or getpass.getuser()
    if not dry_run and not valid_requester(requester):
        print(f"memory-worker: --by: {REQUESTED_BY_ERROR}")
        raise typer.Exit(2)
    if not dry_run and not yes:
        print(f"refusing to erase {subject.describe()} without --yes "
              "(see what would go with --dry-run)")
        raise typer.Exit(2)
    runtime = get_runtime()
    settings = runtime.settings
    report = run_forget(runtime.db, subject, requested_by=requester,
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
    from db.queries.audit import list_audit
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


def reapply_erasures(
    log_file: Annotated[typer.FileText, typer.Argument(
        metavar="LOG", help="The erasure log: `memory-worker erasures --json` output.")],
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: erase for good.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Say which logged subjects the restored rows hold; change nothing.")
    ] = False,
    requested_by: Annotated[str | None, typer.Option(
        "--by", help="Who asked (kept in the new audit records); default: the OS user.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """After restoring a backup taken before erasures: set their fences again and erase
    every logged subject the restored rows hold (matched by keyed hash; needs the same
    MEMORY_ERASURE_HASH_KEY). Run it with the workers stopped."""
    import json

    from worker.erasure.reapply import ErasureLogError
    from worker.erasure.reapply import reapply_erasures as run_reapply
    from worker.runtime import get_runtime

    if not dry_run and not yes:
        print("refusing to erase without --yes (see what matches with --dry-run)")
        raise typer.Exit(2)
    try:
        records = json.loads(log_file.read())
    except ValueError as exc:
        print(f"memory-worker: the erasure log is not JSON ({exc})")
        raise typer.Exit(2) from None
    runtime = get_runtime()
    settings = runtime.settings
    try:
        report = run_reapply(runtime.db, records, requested_by=(
            requested_by or f"reapply by {getpass.getuser()}"), dry_run=dry_run,
            redis_url=settings.require_redis_url(), embedding_model=settings.embedding_model)
    except ErasureLogError as exc:
        print(f"memory-worker: {exc}")
        raise typer.Exit(2) from None
    if as_json:
        dump(report.as_dict())
        return
    table = Table("subject hash", "kind", "logged as", "rows erased")
    for entry in report.matched:
        erased = "" if dry_run else str(sum(entry["counts"].values()))
        table.add_row(entry["subject_hash"][:16] + "…", entry["subject_kind"],
                      ", ".join(map(str, entry["logged_as"])), erased)
    console.print(table)
    verb = "would erase" if dry_run else "erased"
    print(f"{report.logged} logged subject(s): {verb} {len(report.matched)} found in the "
          f"restored rows; {len(report.unmatched)} not found"
          + ("" if dry_run else " (their fences are set again)"))
