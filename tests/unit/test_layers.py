"""The import layering of DESIGN.md: floors only point down (cli -> shell/views -> store,
games -> helpers), and no dealer module imports itself back through others.

Read from the source with ``ast``: every import counts, those inside functions too (a
function-level import is still a dependency), except under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import dealer

ROOT = Path(dealer.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in sorted(ROOT.rglob("*.py"))
        if "migrations" not in path.relative_to(ROOT).parts and "templates" not in path.parts
    }


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(path: Path, known: set[str]) -> set[str]:
    """The dealer modules ``path`` imports."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking_only(node):
            for child in node.orelse:  # type: ignore[attr-defined]
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {name for name in found if name in known}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports(path, known) - {name} for name, path in mods.items()}


def within(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def offences(importer: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{a} imports {b}"
        for a, targets in graph().items() if within(a, *importer)
        for b in targets if within(b, *forbidden)
    )


def test_the_walk_sees_the_modules_and_their_imports() -> None:
    edges = graph()
    assert {"dealer.cli", "dealer.cli.daemon", "dealer.views", "dealer.shell.passes",
            "dealer.store.queries", "dealer.games.base", "dealer.inbox.memory"} <= set(edges)
    assert "dealer.store.queries" in edges["dealer.shell.steps"]
    assert "dealer.shell.passes" in edges["dealer.cli.daemon"]  # a function-level import counts
    assert "dealer.cli.daemon" in edges["dealer.cli"]  # a package's __init__ is a module too


def test_games_import_no_shell_store_port_or_view() -> None:
    assert offences(
        ("dealer.games",),
        ("dealer.shell", "dealer.store", "dealer.inbox", "dealer.publish", "dealer.views", "dealer.cli"),
    ) == []


def test_ports_import_no_game_and_not_the_test_helpers() -> None:
    assert offences(
        ("dealer.inbox", "dealer.publish"),
        ("dealer.games", "dealer.testing", "dealer.shell", "dealer.store", "dealer.views", "dealer.cli"),
    ) == []


def test_the_store_imports_no_shell_view_or_cli() -> None:
    assert offences(("dealer.store",), ("dealer.shell", "dealer.views", "dealer.cli")) == []


def test_views_read_without_the_shell() -> None:
    assert offences(("dealer.views",), ("dealer.shell", "dealer.cli")) == []


def test_the_status_page_reads_through_the_views_only() -> None:
    # dealer.web shows what dealer.views reads; it writes nothing, so it needs no shell.
    assert offences(("dealer.web",), ("dealer.shell", "dealer.cli", "dealer.games")) == []
    importers = {a for a, targets in graph().items() if "dealer.web" in targets}
    assert importers and all(within(a, "dealer.cli") for a in importers)


def test_nothing_imports_the_cli_but_the_entry_point() -> None:
    # The package composes its own modules and `python -m dealer.cli` runs it; no other
    # module of dealer reaches up into the CLI.
    importers = {a for a, targets in graph().items() if any(within(t, "dealer.cli") for t in targets)}
    assert "dealer.cli.__main__" in importers
    assert {a for a in importers if not within(a, "dealer.cli")} <= {"dealer.__main__"}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_among_dealer_modules() -> None:
    assert cycles(graph()) == []


def module_level_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The dealer modules ``path`` (module ``name``) imports when it is itself imported:
    the imports of its module level, those under ``if``/``try`` (``TYPE_CHECKING``
    included: a circle a type checker follows is still a circle) and relative ones
    (``from . import x``, ``from .base import y``); none inside a function or a class."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def absolute(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = package.split(".")
        base = base[: len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = absolute(node)
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    found.add(sub if sub in known else module)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {each for each in found if each in known} - {name}


def module_level_graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: module_level_imports(name, path, known) for name, path in mods.items()}


def test_the_module_level_walk_sees_relative_and_type_checking_imports(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    source = tmp_path / "pkg" / "a.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import b\n"
        "from .c import thing\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.d import Other\n"
        "def later():\n"
        "    from pkg import e\n",
        encoding="utf-8",
    )
    known = {"pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e"}
    assert module_level_imports("pkg.a", source, known) == {"pkg.b", "pkg.c", "pkg.d"}


def test_no_import_circles_among_dealer_modules_at_module_level() -> None:
    assert cycles(module_level_graph()) == []
