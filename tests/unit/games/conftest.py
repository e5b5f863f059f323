"""Checks shared by the games' tests."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any, Callable

import pytest

from dealer.games.base import Rejected
from dealer.testing import RulesShell


def _help_is_valid_now(shell: RulesShell, actor: str, at: datetime, *, tried: bool = True) -> list[str]:
    """Check ``help`` for ``actor`` at ``at`` against the declarations; return its lines.

    - every help line's example parses to a declaration that is valid now (or has its form,
      with a field left for the player to fill, written as the field's label: ``CARD``);
    - with ``tried``, every example help shows is accepted when sent now (on a copy of the
      shell, so nothing changes);
    - the declared examples of every command that is not valid now are refused now.
    """
    commands = shell.rules.commands
    lines = shell.rules.help(shell.state, actor)
    valid = commands.valid_now(shell.state, actor)
    for line in lines:
        if line.startswith("("):
            continue  # a note (the Hall's opening time), not a command
        example = line.split(" — ")[0]
        try:
            command, _ = commands.read(example)
            filled = True
        except Rejected:
            # A field left for the player to fill, written as its label (``card CARD``).
            command = commands.fits(example)
            assert command is not None, f"help offers {example!r}, which is no command's form"
            labels = {fld.label for fld in command.fields.values()}
            assert labels & set(example.split()), f"help offers {example!r}, which does not parse"
            filled = False
        assert command in valid, f"help offers {example!r}, whose command is not valid now"
        if tried and filled:
            refused = RulesShell.send(copy.deepcopy(shell), actor, example, at)
            assert refused is None, f"help offers {example!r}, refused: {refused.what}"
    for command in commands:
        if command in valid:
            continue
        for example in command.examples:
            refused = RulesShell.send(copy.deepcopy(shell), actor, example.line, at)
            assert refused is not None, f"{example.line!r} is accepted but not in help"
    return lines


@pytest.fixture
def help_is_valid_now() -> Callable[..., Any]:
    """``help_is_valid_now(shell, actor, at, tried=True)``: see :func:`_help_is_valid_now`."""
    return _help_is_valid_now
