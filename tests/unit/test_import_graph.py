"""No import cycle in sluice/: the graph is built from the source (module-level imports,
imports inside functions and ``importlib`` strings alike), so a cycle hidden behind a
function-level import fails here too. A module started as its own process (``"-m", "sluice.x"``
in a call's arguments) is a process boundary, not an import, and is not counted."""

import ast
import re
from pathlib import Path

import sluice

ROOT = Path(sluice.__file__).parent

#: Cycles that exist today and are being taken apart; the list may only shrink.
KNOWN: list[set[str]] = []

#: Lower layers never import from these upper ones.
UPPER = ("sluice.exec", "sluice.plan", "sluice.sql", "sluice.physical", "sluice.engine", "sluice.cli", "sluice.commands", "sluice.launch",
         "sluice.launch_worker", "sluice.shell")
LOWER = ("sluice.ranks", "sluice.io", "sluice.expr", "sluice.kernels", "sluice.chunk", "sluice.types", "sluice.errors", "sluice.arrow", "sluice.catalog",
         "sluice.config", "sluice.metrics")
#: Upward imports that exist today; the list may only shrink.
KNOWN_UPWARD: set[tuple[str, str]] = set()
#: The measured policies (``adapt/``: scan modes, decoder choice, calibration, spill codec) use
#: storage and its measurements; storage and what lies below it never import them (they are
#: handed a policy object), and the policies import nothing above storage.
ADAPT = "sluice.adapt"
BELOW_ADAPT = tuple(m for m in LOWER if m != "sluice.ranks")


def _modules() -> dict[str, Path]:
    mods = {}
    for p in ROOT.rglob("*.py"):
        parts = ("sluice",) + p.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def import_graph() -> dict[str, set[str]]:
    mods = _modules()

    def resolve(name):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        out = set()
        tree = ast.parse(p.read_text())
        spawned = set()  # ("-m", "sluice.x"): a process entry point, not an import
        for n in ast.walk(tree):
            if isinstance(n, ast.Call):
                args = n.args
                spawned |= {id(b) for a, b in zip(args, args[1:])
                            if isinstance(a, ast.Constant) and a.value == "-m"}
        for n in ast.walk(tree):
            if id(n) in spawned:
                continue
            if isinstance(n, ast.Import):
                out |= {resolve(a.name) for a in n.names if a.name.startswith("sluice")}
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                if base.startswith("sluice"):
                    out |= {resolve(f"{base}.{a.name}") if f"{base}.{a.name}" in mods else resolve(base) for a in n.names}
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and re.fullmatch(r"sluice(\.\w+)+", n.value):
                out.add(resolve(n.value))  # importlib.import_module("sluice....")
            elif isinstance(n, ast.JoinedStr) and n.values and isinstance(n.values[0], ast.Constant) \
                    and re.fullmatch(r"sluice(\.\w+)*\.", str(n.values[0].value)):
                prefix = n.values[0].value  # importlib.import_module(f"sluice.pkg.{name}"): any module there
                out |= {k for k in mods if k.startswith(prefix)}
        out.discard(None)
        out.discard(m)
        graph[m] = out
    return graph


def _cycles(graph) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative enough)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
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
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_no_new_import_cycle():
    cycles = _cycles(import_graph())
    new = [c for c in cycles if c not in KNOWN]
    assert not new, f"import cycles: {new}"


def test_known_cycles_are_still_cycles():
    """When a known cycle is taken apart, take it off the list (so it cannot come back)."""
    cycles = _cycles(import_graph())
    assert all(k in cycles for k in KNOWN), [k for k in KNOWN if k not in cycles]


def test_lower_layers_do_not_import_upper_ones():
    graph = import_graph()
    upward = {(a, b) for a, deps in graph.items() if a.startswith(LOWER) for b in deps if b.startswith(UPPER)}
    assert upward <= KNOWN_UPWARD, sorted(upward - KNOWN_UPWARD)
    assert KNOWN_UPWARD <= upward, sorted(KNOWN_UPWARD - upward)  # gone: take it off the list


def test_storage_does_not_import_the_policies_above_it():
    graph = import_graph()
    up = {(a, b) for a, deps in graph.items() if a.startswith(BELOW_ADAPT) for b in deps if b.startswith(ADAPT)}
    assert not up, sorted(up)
    above = {(a, b) for a, deps in graph.items() if a.startswith(ADAPT) for b in deps if b.startswith(UPPER)}
    assert not above, sorted(above)


#: Cycles between areas that exist today (issue 48: chunk.py uses kernels/, which build chunks);
#: the list may only shrink.
KNOWN_AREA_CYCLES: list[set[str]] = [{"sluice.chunk", "sluice.kernels"}]


def test_no_cycle_between_areas():
    """Areas (``sluice.io``, ``sluice.exec``, ..., a top-level module alone) as one node each:
    no two import each other, however indirectly."""
    def area(m):
        parts = m.split(".")
        return ".".join(parts[:2])
    graph: dict[str, set[str]] = {}
    for a, deps in import_graph().items():
        graph.setdefault(area(a), set()).update(area(b) for b in deps if area(b) != area(a))
    cycles = _cycles(graph)
    assert [c for c in cycles if c not in KNOWN_AREA_CYCLES] == [], cycles
    assert all(k in cycles for k in KNOWN_AREA_CYCLES), "a known cycle is gone: take it off the list"


def test_the_graph_sees_function_level_and_importlib_imports():
    graph = import_graph()
    assert "sluice.physical.lower" in graph["sluice.engine"]
    assert "sluice.exec.csv_scan" in graph["sluice.physical.lower"]  # imported inside a function
    assert "sluice.expr.functions.cast" in graph["sluice.expr.functions"]  # importlib, by an f-string
