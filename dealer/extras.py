"""The distribution (``dealer-moderator``) and its extras: the one place an install command is written."""

from __future__ import annotations

DISTRIBUTION = "dealer-moderator"
"""The name dealer is installed by (``[project] name`` in pyproject.toml)."""

EXTRAS = ("discord", "email", "discourse", "webhook", "web", "metrics")
"""The optional extras (``[project.optional-dependencies]``, the test extra apart)."""


class MissingExtra(ImportError, ValueError):
    """A feature's library is not installed; the message names the install command."""


def install_command(extra: str) -> str:
    """``pip install 'dealer-moderator[discord]'``: how to install an extra."""
    if extra not in EXTRAS:
        raise ValueError(f"{extra!r} is no extra of {DISTRIBUTION} (extras: {', '.join(EXTRAS)})")
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing(extra: str, feature: str) -> MissingExtra:
    """The error for ``feature`` lacking ``extra``, with its install commands."""
    return MissingExtra(f"{feature} needs the extra {extra}: {install_command(extra)} "
                        f"(or pip install '.[{extra}]' in a clone)")
