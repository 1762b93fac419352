"""`memory-worker up` says what went wrong where it went wrong: a child that exits while the
stack waits for the write worker is reported with the end of its log, not a pointer to a file."""

from __future__ import annotations

import time

from worker.local.stack import Child, log_tail, wait_for_workers


def test_a_child_that_exits_is_reported_with_its_log_tail(tmp_path, capsys):
    child = Child("writes", ["sh", "-c", "for i in $(seq 1 30); do echo line $i; done; "
                                         "echo 'ImportError: no module named x'; exit 3"],
                  tmp_path / "writes.log")
    child.start({})
    assert child.process is not None
    child.process.wait(timeout=10)
    started = time.monotonic()
    assert wait_for_workers([child], timeout=30) is False
    assert time.monotonic() - started < 5, "no waiting for a ping once a child is gone"
    out = capsys.readouterr().out
    assert "writes exited (code 3)" in out
    assert "ImportError: no module named x" in out and "line 30" in out
    assert "line 1\n" not in out, "only the tail"


def test_log_tail_of_a_missing_or_empty_log(tmp_path):
    assert log_tail(tmp_path / "none.log") == "(no log)"
    (tmp_path / "empty.log").write_text("")
    assert log_tail(tmp_path / "empty.log") == "(empty log)"
