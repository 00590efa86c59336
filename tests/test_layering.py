"""The package layering (README "Layers", DEVELOPERS.md) holds, and no import circle exists.

Imports are read with `ast` from every module of `fia_fuzz`, at any depth
(an import inside a function counts: a lazy import is still a dependency),
except under `if TYPE_CHECKING:`, which never runs. A package may import its
own modules and any package of a lower layer; never one of a higher layer,
nor another package of its own layer.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

import fia_fuzz

ROOT = Path(fia_fuzz.__file__).parent
#: Lowest first. `op` holds the op's model (case, call view, geometry), `rules` the
#: legality model on it; `files`, `strategies` and `golden` build on both and ignore
#: each other. `spec` is the public facade over `op` and `rules`: nothing imports it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("op",),
    ("rules",),
    ("files", "strategies", "golden"),
    ("runners",),
    ("diff",),
    ("metamorphic",),
    ("reports",),
    ("campaign",),
    ("cli",),
    ("__main__",),
    ("spec",),
)
RANK = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
GEOMETRY = "fia_fuzz.op.geometry"
COMPOSITION = "fia_fuzz.runners.composition"
#: All that the independent second implementation may import of ours: the call
#: view of the case model (dims read from shapes), the A2 profile's tree-mask
#: mode number (to refuse it), and the torch conversion.
COMPOSITION_MAY_IMPORT = ("fia_fuzz.op.call", "fia_fuzz.rules.profiles.atlas_a2",
                          "fia_fuzz.runners.torch_convert")

Graph = dict[str, set[str]]


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at `root`."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(tree: ast.AST, name: str, is_package: bool, mods: dict[str, Path]) -> set[str]:
    """The modules of `mods` that the imports of `tree` name (TYPE_CHECKING blocks skipped).

    `from pkg import name` names pkg.name when that is a module, else pkg (its
    __init__); the parent packages Python runs on the way are not counted
    (they are not what the code asks for).
    """
    out: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = name.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                mod = ".".join(base + ([mod] if mod else []))
            out.update(f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod
                       for a in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return {t for t in out if t in mods and t != name}


def import_graph(root: Path) -> Graph:
    """Module -> the modules of the same package it imports."""
    mods = modules(root)
    return {name: _targets(ast.parse(path.read_text(encoding="utf-8")), name,
                           path.name == "__init__.py", mods)
            for name, path in mods.items()}


def package_of(module: str) -> str:
    """The top-level subpackage (layer key) of a module: fia_fuzz.op.call -> op."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward(graph: Graph) -> list[str]:
    """Every import of a higher layer, or of another package of the same layer."""
    bad = []
    for src, targets in sorted(graph.items()):
        a = package_of(src)
        for dst in sorted(targets):
            b = package_of(dst)
            if not a or not b or a == b:
                continue
            if a not in RANK or b not in RANK:
                bad.append(f"{src} -> {dst}: {a if a not in RANK else b} is in no layer")
            elif RANK[b] >= RANK[a]:
                bad.append(f"{src} ({a}, layer {RANK[a]}) imports {dst} ({b}, layer {RANK[b]})")
    return bad


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(ROOT)


def test_every_package_has_a_layer(graph: Graph) -> None:
    packages = {package_of(m) for m in graph} - {""}
    assert packages <= set(RANK), sorted(packages - set(RANK))


def test_no_upward_import(graph: Graph) -> None:
    assert upward(graph) == []


def test_no_import_circle(graph: Graph) -> None:
    assert circles(graph) == []


def test_geometry_imports_nothing_of_ours(graph: Graph) -> None:
    """op/geometry.py is the bottom of the stack: call.py and params.py read it."""
    assert graph[GEOMETRY] == set()


def test_composition_stays_independent(graph: Graph) -> None:
    """runners/composition cross-checks the golden, so it shares none of its code."""
    for name, targets in graph.items():
        if not name.startswith(COMPOSITION):
            continue
        ours = {t for t in targets if not t.startswith(COMPOSITION)}
        assert not any(t.startswith("fia_fuzz.golden") or t == GEOMETRY for t in ours), name
        assert ours <= set(COMPOSITION_MAY_IMPORT), (name, sorted(ours))


def test_checker_finds_a_planted_upward_import(tmp_path: Path) -> None:
    """A copy of the package with op importing campaign fails the layering check."""
    copy = tmp_path / "fia_fuzz"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    planted = copy / "op" / "geometry.py"
    planted.write_text(planted.read_text(encoding="utf-8")
                       + "\nfrom fia_fuzz.campaign import coordinator  # noqa\n", encoding="utf-8")
    bad = upward(import_graph(copy))
    assert bad == ["fia_fuzz.op.geometry (op, layer 0) imports "
                   "fia_fuzz.campaign.coordinator (campaign, layer 7)"]


def test_checker_finds_sibling_imports_and_circles() -> None:
    graph: Graph = {
        "fia_fuzz.golden.api": {"fia_fuzz.strategies.cases"},
        "fia_fuzz.strategies.cases": set(),
        "fia_fuzz.campaign.a": {"fia_fuzz.campaign.b"},
        "fia_fuzz.campaign.b": {"fia_fuzz.campaign.c"},
        "fia_fuzz.campaign.c": {"fia_fuzz.campaign.a"},
    }
    assert len(upward(graph)) == 1 and "strategies" in upward(graph)[0]
    assert circles(graph) == [["fia_fuzz.campaign.a", "fia_fuzz.campaign.b",
                               "fia_fuzz.campaign.c"]]


def test_lazy_and_type_checking_imports_are_read_right(tmp_path: Path) -> None:
    """An import inside a function is an edge; one under TYPE_CHECKING is not."""
    pkg = tmp_path / "fia_fuzz"
    (pkg / "spec").mkdir(parents=True)
    (pkg / "cli").mkdir()
    for d in (pkg, pkg / "spec", pkg / "cli"):
        (d / "__init__.py").write_text("")
    (pkg / "cli" / "main.py").write_text("")
    (pkg / "spec" / "lazy.py").write_text(
        "def f():\n    from fia_fuzz.cli import main\n    return main\n")
    (pkg / "spec" / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fia_fuzz.cli import main\n")
    graph = import_graph(pkg)
    assert graph["fia_fuzz.spec.lazy"] == {"fia_fuzz.cli.main"}
    assert graph["fia_fuzz.spec.typed"] == set()
