"""Static checks of the tree's shape: no import cycles between the project's modules (imports inside
functions counted too), and no function in model/ or train/ longer than a reader follows at once."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("tokenizer", "datasets_prep", "model", "train")
MAX_FUNCTION_LINES = 100


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _resolve(module: str, node: ast.ImportFrom | ast.Import, is_package: bool, known: set[str]) -> list[str]:
    """The project modules an import statement loads (a package's __init__ included)."""
    targets = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = module.split(".") if is_package else module.split(".")[:-1]
            pkg = pkg[: len(pkg) - (node.level - 1)]
            base = ".".join(pkg + ([base] if base else []))
        names = [base] + [f"{base}.{a.name}" for a in node.names]
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            targets.append(name)
    return targets


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(name, node, path.name == "__init__.py", known):
                    # a module importing its own package's __init__ (or a parent package) is not a cycle
                    if target != name and not name.startswith(target + "."):
                        graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        color[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if color.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in color:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        color[node] = 2
        return None

    for node in sorted(graph):
        if node not in color:
            found = visit(node)
            if found:
                return found
    return None


def test_the_checker_finds_a_cycle_when_there_is_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_between_modules():
    graph = import_graph()
    assert len(graph) > 50 and graph["train.trainer"], "the graph was not built"
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_no_function_in_model_or_train_is_over_100_lines():
    long = []
    for pkg in ("model", "train"):
        for path in (REPO / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1
                    if n > MAX_FUNCTION_LINES:
                        long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, long


def _kind_branches(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines comparing something with a recognizer's or a label's kind by name (`rec.kind == "ar"`,
    `kind in ("sat", ...)`)."""
    def strings(node: ast.AST) -> set:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
            return set().union(*(strings(e) for e in node.elts)) if node.elts else set()
        return set()

    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Compare) and any(strings(s) & names for s in [node.left, *node.comparators])]


def test_train_never_asks_which_recognizer_it_holds():
    """What train/ needs to know about a recognizer is an attribute or a method of it (model/recognizer.py):
    no comparison with a recognizer's kind or a label kind by name."""
    from model.registry import RECOGNIZERS

    names = set(RECOGNIZERS) | {"sat", "token"}
    assert _kind_branches(ast.parse('if rec.kind == "ar": pass\nif x in ("sat", "y"): pass\nif k == "z": pass'),
                          names) == [1, 2]
    found = []
    for path in sorted((REPO / "train").rglob("*.py")):
        found += [f"{path.relative_to(REPO)}:{n}" for n in _kind_branches(ast.parse(path.read_text()), names)]
    assert not found, found
