"""dealer uses its libraries through their public API only.

A library's private names and internal modules change without notice between minor
releases (Jinja's compiler did); pyproject.toml pins compatible ranges on the promise
that only the public API is used. Read from the source with ``ast``, every import counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import dealer

ROOT = Path(dealer.__file__).parent

JINJA_PUBLIC_MODULES = {"jinja2", "jinja2.ext", "jinja2.meta", "jinja2.nativetypes", "jinja2.sandbox"}
"""Jinja's documented modules; jinja2.compiler, .nodes, .runtime, .utils are its internals."""


def _imports() -> list[tuple[str, str, list[str]]]:
    """``(file, module, names)`` for every import of a module outside dealer."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(ROOT.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                found += [(where, alias.name, []) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((where, node.module, [alias.name for alias in node.names]))
    return [(where, module, names) for where, module, names in found if module.split(".")[0] != "dealer"]


def test_the_reader_finds_the_imports() -> None:
    modules = {module for _, module, _ in _imports()}
    assert {"jinja2", "markupsafe", "sqlalchemy"} <= modules


def test_no_private_module_or_name_of_a_library_is_imported() -> None:
    private = [
        (where, module, names) for where, module, names in _imports()
        if any(part.startswith("_") and part != "__future__" for part in module.split("."))
        or any(name.startswith("_") for name in names)
    ]
    assert private == []


def test_jinja_is_used_through_its_public_modules() -> None:
    internal = [(where, module) for where, module, _ in _imports()
                if module.split(".")[0] == "jinja2" and module not in JINJA_PUBLIC_MODULES]
    assert internal == []
