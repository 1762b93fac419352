"""`python -m worker.cli`: the same as `memory-worker`."""

from worker.cli import main

main()
