"""Every install carries what dealer reads at run time; nothing depends on the current folder.

The wheel itself is built, installed and run from an unrelated folder by ``.ci/wheel-smoke``;
these tests keep the packaging configuration and the template lookup honest without a build.
"""

from __future__ import annotations

import re
import shutil
import tomllib
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hatchling.builders.wheel import WheelBuilder

import dealer
from dealer import render

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(dealer.__file__).resolve().parent
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def _pyproject() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_wheel_takes_the_package_whole_and_maps_the_templates() -> None:
    """The wheel takes the folder dealer/ whole, so a new subpackage needs no edit; the
    templates come from the top-level folder, rewritten by hatchling's ``sources``."""
    config = _pyproject()
    assert config["build-system"]["build-backend"] == "hatchling.build"
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["only-include"] == ["dealer", "templates"]
    assert wheel["sources"] == {"templates": "dealer/templates"}
    assert "setuptools" not in config.get("tool", {})


def _build(tmp_path: Path, version: str) -> set[str]:
    """The names in a wheel built from this tree by hatchling (``standard`` or ``editable``)."""
    built = list(WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=[version]))
    assert len(built) == 1
    return set(zipfile.ZipFile(built[0]).namelist())


def test_the_wheel_holds_every_module_template_and_migration(tmp_path) -> None:  # type: ignore[no-untyped-def]
    names = _build(tmp_path, "standard")
    on_disk = {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    on_disk |= {"dealer/" + p.relative_to(ROOT).as_posix() for p in (ROOT / "templates").rglob("*") if p.is_file()}
    assert len(on_disk) > 200
    assert on_disk - names == set(), "files dealer reads at run time are missing from the wheel"
    assert {"dealer/migrations/env.py", "dealer/migrations/script.py.mako",
            "dealer/templates/common/failed.txt", "dealer/templates/web/static/app.js"} <= names
    stray = {n for n in names if not (n.startswith("dealer/") or n.split("/")[0].endswith(".dist-info"))
             or "__pycache__" in n or n.endswith(".pyc")}
    assert stray == set()


def test_an_editable_install_runs_from_the_source_tree(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An editable wheel puts the repository on the path (dealer.render then finds the
    repository's templates/ beside the package) and copies nothing of the package."""
    built = list(WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["editable"]))
    wheel = zipfile.ZipFile(built[0])
    assert not any(n.startswith("dealer/") for n in wheel.namelist())
    paths = [wheel.read(n).decode() for n in wheel.namelist() if n.endswith(".pth")]
    assert paths == [str(ROOT)]


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
