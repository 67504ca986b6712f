#!/usr/bin/env python3
"""Fail if any module of the package imports itself back, directly or through others (an import cycle).

import-linter's contracts (`.importlinter`) keep the layers and the independence of packages; they say nothing
about cycles inside one layer. This builds the same import graph (grimp, which import-linter uses; imports under
`if TYPE_CHECKING:` left out, imports inside functions included) and prints every strongly connected group of
modules with the lines that close it. Run by `make typecheck` (so by `make check` and `make test`).
Usage: scripts/import_cycles.py [PACKAGE]   (default rocketmq_operator)
"""

from __future__ import annotations

import sys

import grimp


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted; iterative, no recursion limit."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def main(argv: list[str]) -> int:
    package = argv[1] if len(argv) > 1 else "rocketmq_operator"
    built = grimp.build_graph(package, exclude_type_checking_imports=True, cache_dir=None)
    graph = {m: set(built.find_modules_directly_imported_by(m)) & built.modules for m in built.modules}
    found = cycles(graph)
    for group in found:
        members = set(group)
        print(f"import cycle among {len(group)} modules:", file=sys.stderr)
        for importer in group:
            for imported in sorted(graph[importer] & members):
                lines = [d["line_number"] for d in built.get_import_details(importer=importer, imported=imported)]
                print(f"  {importer} -> {imported} (line {', '.join(map(str, lines))})", file=sys.stderr)
    if found:
        print(
            f"error: {len(found)} import cycle(s) in {package}; fix: move what both sides need into a module "
            "neither imports back (docs/architecture.md)",
            file=sys.stderr,
        )
        return 1
    print(f"{package}: no import cycles ({len(graph)} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
