"""The distribution's name (issue 34, item 3): `dealer` on the public package index is an
unrelated project, so dealer is published as ``dealer-moderator`` while its command and
its import name stay ``dealer``; every install hint names the distribution."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from dealer.extras import DISTRIBUTION, MissingExtra, install_command

ROOT = Path(__file__).resolve().parents[2]
# An install hint: pip (or pipx) install, then a quoted or bare requirement with an extra.
HINT = re.compile(r"""(?:pip|pipx)\s+install\s+(?:-\S+\s+)*['"]?([\w.\-/]+)\[""")


def test_the_distribution_is_ours_and_keeps_the_dealer_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION == "dealer-moderator"
    assert project["scripts"] == {"dealer": "dealer.cli:main"}
    assert install_command("discord") == "pip install 'dealer-moderator[discord]'"


def _hinted_files() -> list[Path]:
    # docs/ARCHITECTURE.md, the code's map, is left out: it is rewritten as a whole and
    # names extras only as labels of its modules.
    docs = [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "ARCHITECTURE.md"]
    places = [ROOT / "README.md", ROOT / ".env.example", *docs,
              *sorted((ROOT / "deploy").iterdir()), *sorted((ROOT / ".ci").iterdir()),
              *sorted((ROOT / "dealer").rglob("*.py"))]
    return [p for p in places if p.is_file()]


def test_every_install_hint_names_the_distribution() -> None:
    wrong = []
    for path in _hinted_files():
        text = path.read_text(encoding="utf-8")
        for match in HINT.finditer(text):
            if match.group(1) not in (DISTRIBUTION, "."):  # `.[discord]` from a clone
                wrong.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
        # An extra written alone (``dealer[web]``) is the distribution's too.
        wrong += [f"{path.relative_to(ROOT)}: {m.group(0)}"
                  for m in re.finditer(r"(?<![\w\-])dealer\[\w+\]", text)]
    assert wrong == []


def test_a_missing_extra_names_its_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from dealer.inbox import open_inbox

    monkeypatch.setitem(sys.modules, "imapclient", None)  # as if not installed
    with pytest.raises(MissingExtra) as raised:
        open_inbox("imap:mail.example.org")
    assert str(raised.value) == (
        "an IMAP inbox needs the extra email: pip install 'dealer-moderator[email]' "
        "(or pip install '.[email]' in a clone)"
    )
    assert isinstance(raised.value, ValueError)  # a setting that cannot be used, as before


def test_every_extra_in_pyproject_has_its_hint() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extra in set(extras) - {"test"}:
        assert install_command(extra) == f"pip install '{DISTRIBUTION}[{extra}]'"
    with pytest.raises(ValueError):
        install_command("nosuch")
