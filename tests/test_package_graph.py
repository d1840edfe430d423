"""The packages import only packages before them in the pipeline, and docs/architecture.md
shows the graph as it is (every import counted, those inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

import tilewright

PACKAGE = Path(tilewright.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
# The pipeline order; a package may import only those before it.
ORDER = (
    "config",
    "ir",
    "arith",
    "layout",
    "script",
    "schedule",
    "target",
    "transform",
    "artifact",
    "codegen",
    "runtime",
    "backend",
    "tirx",
    "driver",
    "meta_schedule",
    "demo",
)
# TVM-shaped namespaces that only re-export: they may import anything.
FACADES = ("__init__", "tir", "s_tir", "nd", "relax")


def package_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def import_graph() -> dict[str, set[str]]:
    """Package → the tilewright packages its modules import."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = package_of(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                names = names[:1] if node.module != "tilewright" else names[1:]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "tilewright" and len(parts) > 1 and parts[1] != source:
                    graph.setdefault(source, set()).add(parts[1])
    return graph


def graph_text() -> str:
    """The graph as docs/architecture.md shows it: one line per package, in pipeline order."""
    graph = import_graph()
    lines = []
    for package in ORDER:
        deps = sorted(graph.get(package, set()) - {"config"}, key=ORDER.index)
        lines.append(f"{package:<10} <- {', '.join(deps) if deps else '(nothing)'}")
    return "\n".join(lines)


def test_every_package_is_in_the_order():
    packages = {package_of(p) for p in PACKAGE.rglob("*.py")}
    assert packages - set(ORDER) - set(FACADES) == set()


def test_imports_point_only_to_earlier_packages():
    backwards = [
        f"{source} imports {target}"
        for source, targets in import_graph().items()
        if source not in FACADES
        for target in targets
        if target not in FACADES and ORDER.index(target) >= ORDER.index(source)
    ]
    assert backwards == []


def test_the_runtime_generates_no_code():
    assert not import_graph()["runtime"] & {"codegen", "transform", "script", "schedule"}


def test_architecture_doc_shows_the_graph():
    assert graph_text() in ARCHITECTURE.read_text(), (
        "docs/architecture.md's package graph is out of date; it should read:\n" + graph_text()
    )
