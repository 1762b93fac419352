"""The connector's pools across dispose_all: what a process-wide reset must reach."""

from __future__ import annotations

import psycopg

from db.connector import dispose_all, get_database


def test_dispose_all_keeps_reaching_a_database_held_across_an_earlier_reset(services):
    # A solo-pool worker sends worker_process_init, hence dispose_all(), in its own process.
    # A Database held from before (a fixture, a runtime) must stay registered: the next
    # dispose_all, after its connections were killed, has to drop its pool too.
    db = get_database(services.database_url)
    dispose_all()
    assert get_database(services.database_url) is db
    with db.connect() as conn:
        backend = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    with psycopg.connect(services.admin_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        admin.execute(  # the kill is asynchronous: wait until the backend is gone
            "DO $$ BEGIN WHILE EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = "
            f"{int(backend)}) LOOP PERFORM pg_sleep(0.01); END LOOP; END $$")
    dispose_all()
    with db.connect() as conn:
        assert conn.exec_driver_sql("SELECT 1").scalar_one() == 1


def test_a_pool_inherited_through_fork_is_forgotten_not_closed(services):
    import os

    db = get_database(services.database_url)
    with db.connect() as conn:
        parent_backend = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            dispose_all()  # must not send a Terminate on the parent's socket
            with db.connect() as conn:
                other = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
            os.write(write, b"ok" if other != parent_backend else b"shared")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    assert os.read(read, 16) == b"ok"
    os.close(read)
    with db.connect() as conn:  # the parent's pooled connection still works
        assert conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() == parent_backend
