"""Function-level imports are few and each says why (issue 48): one inside a function hides a
module's dependencies and costs a lookup per call, so it is kept only where it pays -- it keeps
``sluice --help`` (or doctor / inspect, which read only footers) free of torch, numpy or pyarrow,
defers torch.distributed, CUDA, DuckDB or an optional package to the call that needs it, or
breaks a real cycle -- and says so on its line as ``# deferred: <reason>``. An
``importlib.import_module`` call inside a function counts the same."""

import ast
import re
from pathlib import Path

import sluice

ROOT = Path(sluice.__file__).parent

#: At most this many function-level imports in sluice/ (issue 48: 139 before, 60 the goal).
LIMIT = 60

#: A reason: ``# deferred:`` then at least three words.
REASON = re.compile(r"#.*\bdeferred: \S+(?: \S+){2,}")


def _is_import_module(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id == "import_module")


def function_level_imports(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, text) of every import statement or ``import_module`` call inside a function."""
    found = []

    def visit(node: ast.AST, in_function: bool, path: Path, lines: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and (isinstance(child, (ast.Import, ast.ImportFrom)) or _is_import_module(child)):
                found.append((str(path.relative_to(root.parent)), child.lineno, lines[child.lineno - 1]))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                  path, lines)

    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        visit(ast.parse(text), False, path, text.splitlines())
    return found


def test_few_function_level_imports():
    found = function_level_imports()
    assert len(found) <= LIMIT, f"{len(found)} function-level imports (at most {LIMIT}):\n" + "\n".join(
        f"{f}:{n}: {t.strip()}" for f, n, t in found)


def test_each_function_level_import_says_why():
    missing = [f"{f}:{n}: {t.strip()}" for f, n, t in function_level_imports() if not REASON.search(t)]
    assert not missing, "function-level imports without '# deferred: <reason>':\n" + "\n".join(missing)


def test_the_count_sees_nested_functions_and_import_module(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        "import os\n"
        "def f():\n"
        "    import json  # deferred: only this call needs json\n"
        "    def g():\n"
        "        from sys import path\n"
        "    return importlib.import_module('x')\n"
        "class C:\n"
        "    def h(self):\n"
        "        import re  # deferred\n")
    found = function_level_imports(pkg)
    assert [n for _, n, _ in found] == [3, 5, 6, 9]
    assert [n for _, n, t in found if not REASON.search(t)] == [5, 6, 9]
