"""No import cycle anywhere among lobug's modules; lazy imports inside functions count too.

The layering of lobug's top-level packages is checked by `lint-imports` (pyproject.toml,
[tool.importlinter]); this test also forbids cycles *inside* a package, module by module.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping

import grimp


def strongly_connected(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's SCCs (iterative) that are cycles: two or more modules, or one importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> Iterator[str]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return iter(sorted(edges.get(node, ())))

    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, visit(root))]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    work.append((child, visit(child)))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in edges.get(node, ()):
                        found.append(sorted(component))
    return sorted(found)


def shortest_cycle(edges: Mapping[str, set[str]], component: list[str]) -> list[str]:
    """The shortest path from the component's first module back to itself (BFS inside it)."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(edges.get(node, ())):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover


def import_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {
        module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules
    }


def describe_cycles(graph: grimp.ImportGraph) -> list[str]:
    """One readable paragraph per cycle: its modules, then one concrete loop with line numbers."""
    edges = import_edges(graph)
    reports = []
    for component in strongly_connected(edges):
        cycle = shortest_cycle(edges, component)
        steps = []
        for importer, imported in zip(cycle, cycle[1:], strict=False):
            details = graph.get_import_details(importer=importer, imported=imported)
            lines = ",".join(str(d["line_number"]) for d in details) or "?"
            steps.append(f"    {importer} (line {lines}) imports {imported}")
        reports.append(
            f"import cycle among {len(component)} modules: {', '.join(component)}\n"
            + "\n".join(steps)
        )
    return reports


def test_no_import_cycle_among_lobug_modules() -> None:
    graph = grimp.build_graph("lobug", cache_dir=None)
    assert len(graph.modules) > 50  # the whole package was found, not an empty graph
    cycles = describe_cycles(graph)
    assert not cycles, "\n\n".join(cycles)


def test_cycle_report_names_the_modules_and_lines() -> None:
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e"):
        graph.add_module(name)
    for importer, imported, line in [
        ("pkg.a", "pkg.b", 3),
        ("pkg.b", "pkg.c", 4),
        ("pkg.c", "pkg.a", 5),  # a → b → c → a
        ("pkg.c", "pkg.d", 6),  # d is below the cycle, not part of it
        ("pkg.e", "pkg.e", 7),  # a module importing itself
    ]:
        graph.add_import(
            importer=importer, imported=imported, line_number=line, line_contents="import x"
        )
    reports = describe_cycles(graph)
    assert reports == [
        "import cycle among 3 modules: pkg.a, pkg.b, pkg.c\n"
        "    pkg.a (line 3) imports pkg.b\n"
        "    pkg.b (line 4) imports pkg.c\n"
        "    pkg.c (line 5) imports pkg.a",
        "import cycle among 1 modules: pkg.e\n    pkg.e (line 7) imports pkg.e",
    ]
    graph.remove_import(importer="pkg.c", imported="pkg.a")
    graph.remove_import(importer="pkg.e", imported="pkg.e")
    assert describe_cycles(graph) == []
