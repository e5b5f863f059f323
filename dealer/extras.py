"""The distribution and its extras: the one place an install command is written.

dealer is published as ``dealer-moderator`` (``dealer`` on the public package index is an
unrelated project); its command and its import name stay ``dealer``. Each optional
platform comes as an extra, and a feature whose library is missing says which command
installs it.
"""

from __future__ import annotations

DISTRIBUTION = "dealer-moderator"
"""The name dealer is installed by (``[project] name`` in pyproject.toml)."""

EXTRAS = ("discord", "email", "discourse", "webhook", "web", "metrics")
"""The optional extras (``[project.optional-dependencies]``, the test extra apart)."""


class MissingExtra(ImportError, ValueError):
    """A feature's library is not installed; the message names the install command. (A
    ValueError too: a setting naming the feature is what cannot be used.)"""


def install_command(extra: str) -> str:
    """``pip install 'dealer-moderator[discord]'``: how to install an extra."""
    if extra not in EXTRAS:
        raise ValueError(f"{extra!r} is no extra of {DISTRIBUTION} (extras: {', '.join(EXTRAS)})")
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing(extra: str, feature: str) -> MissingExtra:
    """The error for ``feature`` (``an IMAP inbox``) lacking ``extra``, install commands
    included (from the index, and from a clone)."""
    return MissingExtra(f"{feature} needs the extra {extra}: {install_command(extra)} "
                        f"(or pip install '.[{extra}]' in a clone)")
