"""The newcomer's docs stay true and short: every path they name exists, and each page
keeps to its size (docs/ARCHITECTURE.md one screen-length page, bench/README.md under
200 lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAPS = ["docs/ARCHITECTURE.md", "docs/HOT_PATH.md", "bench/README.md"]


def named_paths(page: Path) -> set[str]:
    """The files and folders a page names: in backquotes (``shell/steps.py``,
    ``dealer/store/``), as a link's target, or as a row of a code block's map."""
    text = page.read_text(encoding="utf-8")
    quoted = {q for q in re.findall(r"`([^`\s]+)`", text) if re.fullmatch(r"[\w.*-]+(/[\w.*-]*)+|[\w-]+\.(py|md)", q)}
    linked = {target for target in re.findall(r"\]\(([^)#\s]+)\)", text) if "://" not in target}
    blocks = re.findall(r"```\n(.*?)```", text, flags=re.S)
    firsts = [line.split()[0] for block in blocks for line in block.splitlines() if line.strip()]
    mapped = {word for word in firsts if re.fullmatch(r"[\w.*-]+(/[\w.*-]*)+|[\w-]+\.py", word)}
    return quoted | linked | mapped


def exists(name: str, page: Path) -> bool:
    """Whether ``name`` is a file or folder beside the page, at the repository's root, or
    in ``dealer/`` (the pages name dealer's modules from inside the package)."""
    bases = [page.parent, ROOT, ROOT / "dealer"]
    return any(list(base.glob(name.rstrip("/"))) for base in bases)


@pytest.mark.parametrize("page", MAPS)
def test_every_path_a_map_names_exists(page: str) -> None:
    path = ROOT / page
    names = named_paths(path)
    assert len(names) > 5, names
    assert sorted(n for n in names if not exists(n, path)) == []


def test_the_reader_finds_paths_and_misses_none() -> None:
    page = ROOT / "docs/ARCHITECTURE.md"
    names = named_paths(page)
    assert {"dealer/shell/", "shell/ingest.py", "HOT_PATH.md", "tests/unit/test_layers.py"} <= names
    assert not exists("shell/no_such_module.py", page)


def test_the_pages_keep_to_their_size() -> None:
    lines = {page: len((ROOT / page).read_text(encoding="utf-8").splitlines()) for page in MAPS}
    assert lines["docs/ARCHITECTURE.md"] <= 80
    assert lines["bench/README.md"] < 200
