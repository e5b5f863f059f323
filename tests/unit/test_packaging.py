"""Every install carries what dealer reads at run time; nothing depends on the current folder.

The wheel itself is built, installed and run from an unrelated folder by ``.ci/wheel-smoke``;
these tests keep the packaging configuration and the template lookup honest without a build.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from datetime import datetime, timezone
from pathlib import Path

import pytest

import dealer
from dealer import render

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(dealer.__file__).resolve().parent
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def _setuptools() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_the_package_list_names_every_package_and_maps_the_templates() -> None:
    config = _setuptools()
    on_disk = {
        ".".join(init.parent.relative_to(PACKAGE.parent).parts)
        for init in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert set(config["packages"]) == on_disk | {"dealer.templates"}, (
        "pyproject.toml's [tool.setuptools] packages must list every package under dealer/"
    )
    assert config["package-dir"] == {"dealer.templates": "templates"}
    data = config["package-data"]
    assert data["dealer.templates"] == ["**/*"]
    assert "migrations/versions/*.py" in data["dealer"] and "migrations/*.py" in data["dealer"]


def test_templates_are_found_from_the_package_whatever_the_current_folder(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    assert not (tmp_path / "templates").exists()
    assert render.templates_dir() == ROOT / "templates"
    render.environment.cache_clear()
    try:
        body = render.render("common/failed.txt", NOW, line="bet gold 30")
    finally:
        render.environment.cache_clear()
    assert body.startswith("dealer could not handle this message; the host has been told.\n> bet gold 30\n")


def test_a_wheel_install_reads_the_templates_inside_the_package(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """In a wheel the templates sit at dealer/templates; that copy wins over any other."""
    installed = tmp_path / "site-packages" / "dealer"
    shutil.copytree(ROOT / "templates", installed / "templates")
    monkeypatch.setattr(render.resources, "files", lambda package: installed)
    assert render.templates_dir() == installed / "templates"


def test_missing_templates_are_named_plainly(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(render.resources, "files", lambda package: tmp_path / "dealer")
    monkeypatch.setattr(render, "__file__", str(tmp_path / "dealer" / "render.py"))
    with pytest.raises(render.TemplatesMissing, match="templates are not installed"):
        render.templates_dir()


def test_every_template_the_code_names_exists() -> None:
    named = set()
    for source in PACKAGE.rglob("*.py"):
        named |= set(re.findall(r"[\"']((?:common|roulette|races|hall)/[a-z_]+\.txt)[\"']", source.read_text()))
    assert "common/failed.txt" in named
    missing = sorted(n for n in named if not (ROOT / "templates" / n).is_file())
    assert missing == []


def test_the_migrations_live_inside_the_package() -> None:
    from dealer.store.db import MIGRATIONS

    assert MIGRATIONS.resolve().is_relative_to(PACKAGE)
    assert sorted(p.name for p in (MIGRATIONS / "versions").glob("0*.py"))[:2] == [
        "0001_initial_schema.py", "0002_hot_path_indexes.py"
    ]
