"""The package layering holds: each package imports only the packages its row of
`MAY_IMPORT` names, every row is used, and no import circle exists; the README's
"Layers" section and DEVELOPERS.md's layout table state the same table.

Imports are read with `ast` from every module of `fia_fuzz`, at any depth
(an import inside a function counts: a lazy import is still a dependency),
except under `if TYPE_CHECKING:`, which never runs.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

import fia_fuzz

ROOT = Path(fia_fuzz.__file__).parent
REPO = ROOT.parent
#: Package -> the other packages of fia_fuzz it imports, bottom first: a row names only
#: rows above it. `numerics` holds the host arithmetic the model, the golden and the differ
#: share (our narrowing, exact casts, BLAS threads); `op` the op's model (case, call view,
#: geometry); `rules` the legality model on it. `spec` is the public facade over `op` and
#: `rules`: no row names it.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "numerics": frozenset(),
    "op": frozenset({"numerics"}),
    "rules": frozenset({"op"}),
    "files": frozenset({"op", "rules"}),
    "strategies": frozenset({"op", "rules"}),
    "golden": frozenset({"numerics", "op", "rules"}),
    "diff": frozenset({"numerics", "op"}),
    "runners": frozenset({"golden", "op", "rules"}),
    "metamorphic": frozenset({"op", "rules", "runners"}),
    "reports": frozenset({"diff", "op"}),
    "campaign": frozenset({"diff", "files", "golden", "metamorphic", "numerics", "op",
                           "reports", "rules", "runners", "strategies"}),
    "cli": frozenset({"campaign", "diff", "files", "op", "reports", "rules", "runners",
                      "strategies"}),
    "__main__": frozenset({"cli"}),
    "spec": frozenset({"op", "rules"}),
}
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


def packages(graph: Graph) -> Graph:
    """Package -> the other packages its modules import."""
    out: Graph = {}
    for src, targets in graph.items():
        a = package_of(src)
        if a:
            out.setdefault(a, set()).update(b for b in map(package_of, targets) if b and b != a)
    return out


def disallowed(graph: Graph, table: dict[str, frozenset[str]] = MAY_IMPORT) -> list[str]:
    """Every import of a package that the importer's row of `table` does not name."""
    bad = []
    for src, targets in sorted(graph.items()):
        a = package_of(src)
        for dst in sorted(targets):
            b = package_of(dst)
            if not a or not b or a == b:
                continue
            if a not in table:
                bad.append(f"{src}: package {a} has no row")
            elif b not in table[a]:
                bad.append(f"{src} ({a}) imports {dst} ({b}), which its row does not name")
    return bad


def stated_table(text: str, heading: str) -> dict[str, frozenset[str]]:
    """The package table under `heading` (a Markdown heading line) of a document: each row
    `| `pkg` | `a`, `b` | ...` (or `nothing`), names with or without `fia_fuzz.`."""
    section = text.split(f"\n{heading}\n", 1)[1]
    section = re.split(r"\n#+ ", section, maxsplit=1)[0]
    out: dict[str, frozenset[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = [re.findall(r"`(?:fia_fuzz\.)?([\w.]+)`", c) for c in cells[:2]]
        if line.startswith("|") and len(cells) >= 2 and len(names[0]) == 1:
            out[names[0][0]] = frozenset(names[1])
    return out


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


def test_every_package_has_a_row(graph: Graph) -> None:
    found = {package_of(m) for m in graph} - {""}
    assert found == set(MAY_IMPORT), (sorted(found - set(MAY_IMPORT)),
                                      sorted(set(MAY_IMPORT) - found))


def test_no_import_outside_the_table(graph: Graph) -> None:
    assert disallowed(graph) == []


def test_every_row_is_what_the_package_imports(graph: Graph) -> None:
    """The table states what is, not what might be: an import a package dropped leaves its
    row (update the table, the README's Layers section and DEVELOPERS.md together)."""
    found = packages(graph)
    assert {p: sorted(found.get(p, set())) for p in MAY_IMPORT} == \
        {p: sorted(r) for p, r in MAY_IMPORT.items()}


def test_the_table_is_bottom_first_and_the_facade_unused() -> None:
    """Each row names only rows above it (so the table has no circle and orders the
    packages into layers), and no package imports the public facade `spec`."""
    seen: set[str] = set()
    for pkg, row in MAY_IMPORT.items():
        assert row <= seen, (pkg, sorted(row - seen))
        seen.add(pkg)
    assert not any("spec" in row for row in MAY_IMPORT.values())


@pytest.mark.parametrize("doc, heading", [("README.md", "## Layers"),
                                          ("DEVELOPERS.md", "## Layout")])
def test_the_docs_state_the_table(doc: str, heading: str) -> None:
    text = (REPO / doc).read_text(encoding="utf-8")
    assert stated_table(text, heading) == MAY_IMPORT
    assert list(stated_table(text, heading)) == list(MAY_IMPORT)  # the same order


def with_packages(graph: Graph) -> Graph:
    """`graph` plus, for each import, the packages above the imported module: Python runs
    their __init__ first (the importer's own packages have run already)."""
    out: Graph = {}
    for src, targets in graph.items():
        extra = set()
        for t in targets:
            parent = t.rpartition(".")[0]
            while "." in parent:
                if parent in graph and parent != src and not src.startswith(parent + "."):
                    extra.add(parent)
                parent = parent.rpartition(".")[0]
        out[src] = targets | extra
    return out


def test_no_import_circle(graph: Graph) -> None:
    assert circles(graph) == []


def test_no_import_circle_through_a_package_init(graph: Graph) -> None:
    """A module importing `pkg.mod` runs `pkg/__init__` first: a package whose __init__
    (or a module it imports) is imported back that way is a circle too."""
    assert circles(with_packages(graph)) == []
    planted = {"fia_fuzz.a": {"fia_fuzz.b.x"}, "fia_fuzz.b": {"fia_fuzz.b.y"},
               "fia_fuzz.b.x": set(), "fia_fuzz.b.y": {"fia_fuzz.a"}}
    assert circles(planted) == []
    assert circles(with_packages(planted)) == [["fia_fuzz.a", "fia_fuzz.b", "fia_fuzz.b.y"]]


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
    bad = disallowed(import_graph(copy))
    assert bad == ["fia_fuzz.op.geometry (op) imports fia_fuzz.campaign.coordinator (campaign), "
                   "which its row does not name"]


def test_checker_finds_sibling_imports_and_circles() -> None:
    graph: Graph = {
        "fia_fuzz.golden.api": {"fia_fuzz.strategies.cases"},
        "fia_fuzz.strategies.cases": set(),
        "fia_fuzz.campaign.a": {"fia_fuzz.campaign.b"},
        "fia_fuzz.campaign.b": {"fia_fuzz.campaign.c"},
        "fia_fuzz.campaign.c": {"fia_fuzz.campaign.a"},
        "fia_fuzz.extra.x": set(),
        "fia_fuzz.reports.y": {"fia_fuzz.extra.x"},
    }
    bad = disallowed(graph)
    assert len(bad) == 2 and "strategies" in bad[0] and "extra" in bad[1]
    assert circles(graph) == [["fia_fuzz.campaign.a", "fia_fuzz.campaign.b",
                               "fia_fuzz.campaign.c"]]


def test_the_docs_table_reader() -> None:
    text = ("# T\n## Layers\nBottom first.\n\n| package | imports |\n| --- | --- |\n"
            "| `op` | nothing |\n| `fia_fuzz.rules` | `op` |\n| `cli` | `op`, `rules` (lazy) |\n"
            "\n## Next\n| `x` | `y` |\n")
    assert stated_table(text, "## Layers") == {"op": frozenset(), "rules": frozenset({"op"}),
                                               "cli": frozenset({"op", "rules"})}


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
