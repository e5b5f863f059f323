"""``python -m dealer.cli``: the ``dealer`` command, as the console script runs it."""

from dealer.cli import main

main()
