"""The shape of the code, as the README's architecture section draws it.

Every import of a fitwheel module counts, also the ones made inside functions and under
``TYPE_CHECKING``: a cycle through a function-level import is still a cycle.

- no import cycle between files, nor between packages;
- no file over 800 lines, no function over 150;
- the README's list of import edges between packages is exactly the code's;
- the neutral modules beside every layer import only each other.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "fitwheel"

#: the utilities every layer may import (the package root only gives ``__version__``); they
#: import only each other
NEUTRAL = frozenset(
    {
        "__init__",
        "errors",
        "fs",
        "paths",
        "proc",
        "toml",
        "_values",
        "integrity",
        "reporter",
        "threads",
        "memory",
    }
)
#: the entry point above every layer
ENTRY = frozenset({"__main__"})


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imported(name: str, path: Path) -> Iterator[str]:
    """The fitwheel modules ``name`` (at ``path``) imports, wherever the import stands."""
    modules = _modules()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith("fitwheel") and target != name:
                yield target


@cache
def _file_edges() -> dict[str, frozenset[str]]:
    return {name: frozenset(_imported(name, path)) for name, path in _modules().items()}


def _unit(module: str) -> str:
    """The package (``install``) or top-level module (``fs``) a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _package_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for source, targets in _file_edges().items():
        edges.setdefault(_unit(source), set())
        for target in targets:
            if _unit(target) != _unit(source):
                edges[_unit(source)].add(_unit(target))
    return edges


def _cycles(graph: dict[str, set[str]] | dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_cycle_between_files() -> None:
    assert _cycles(_file_edges()) == []


def test_no_cycle_between_packages() -> None:
    edges = _package_edges()
    for entry in ENTRY:
        edges.pop(entry, None)
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_file_over_800_lines_and_no_function_over_150() -> None:
    long_files, long_functions = [], []
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 800:
            long_files.append(name)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > 150:
                    long_functions.append(f"{name}.{node.name}")
    assert long_files == []
    assert long_functions == []


def test_neutral_modules_import_only_each_other() -> None:
    edges = _package_edges()
    for unit in NEUTRAL:
        assert edges.get(unit, set()) <= NEUTRAL, unit


def _readme_edges() -> dict[str, set[str]]:
    """The README's list: a line ``unit -> a, b, c`` (or ``-> nothing``) per package."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- import edges -->", 1)[1].split("```", 2)[1]
    listed: dict[str, set[str]] = {}
    for line in block.splitlines():
        match = re.match(r"^\s*([\w_]+)\s+->\s+(.*?)\s*$", line)
        if match is None:
            continue
        names = {n.strip() for n in match.group(2).split(",")} - {"nothing", ""}
        listed[match.group(1)] = names
    return listed


def test_readme_lists_the_import_edges_of_the_code() -> None:
    edges = _package_edges()
    actual = {
        unit: targets - NEUTRAL
        for unit, targets in edges.items()
        if unit not in NEUTRAL and unit not in ENTRY
    }
    assert _readme_edges() == actual
