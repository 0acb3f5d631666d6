"""CROHME 2023's symbol label graphs (SymLG, `.lg`) -> LaTeX, for the samples that have no InkML.

A SymLG file lists symbols and the spatial relations of the symbol layout tree:

    O, F_1, F, 1.0, O            # object: id, label, weight, path from the root ("O", "ORSup", ...)
    O, z_1, z, 1.0, OSub
    R, F_1, z_1, Sub, 1.0        # relation: parent, child, Right|Sub|Sup|Above|Below|Inside, weight
    EO, ...                      # the same, as some writers spell it

LaTeX is read off the tree: a node, then its Sub/Sup scripts, then whatever is Right of it. A `-`
with Above and Below children is a fraction, `\\sqrt` with an Inside child a root (an Above child
there is its index), a big operator's Above/Below are its limits, any other Above/Below becomes
`\\overset`/`\\underset`. Labels spelled as words in the files (`COMMA`, `\\lt`, `\\gt`) are mapped
back. Anything the tree does not allow (no root, a cycle, two children under one relation, an unknown
relation) is a SymLGError naming the line, never a guess.
"""
from __future__ import annotations

from dataclasses import dataclass, field

RELATIONS = {"right": "Right", "r": "Right", "sub": "Sub", "sup": "Sup", "above": "Above", "a": "Above",
             "below": "Below", "b": "Below", "inside": "Inside", "i": "Inside"}
LABELS = {"COMMA": ",", "comma": ",", "COMMAT": ",", "\\lt": "<", "\\gt": ">", "\\lbrace": "\\{", "\\rbrace": "\\}",
          "\\ldots": "\\ldots", "\\frac": "-", "\\dots": "\\ldots"}
BIG_OPERATORS = {"\\sum", "\\int", "\\prod", "\\lim", "\\bigcup", "\\bigcap", "\\oint", "\\coprod"}
FRACTION_BARS = {"-", "\\frac", "\\over"}
MAX_OBJECTS = 5000
MAX_DEPTH = 100
"""Deepest nesting (scripts of scripts, fractions in fractions) read; real expressions stay under 10,
and the reader recurses once per level."""


class SymLGError(ValueError):
    """A label graph that is not a layout tree; the message names the line or node."""


@dataclass
class _Node:
    label: str
    children: dict[str, str] = field(default_factory=dict)  # relation -> child id


def parse(text: str, where: str = "") -> tuple[dict[str, _Node], str]:
    """(nodes, root id) of a SymLG file's text."""
    nodes: dict[str, _Node] = {}
    parents: dict[str, str] = {}
    relations = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        at = f"{where}:{lineno}"
        parts = [p.strip() for p in line.split(",")]
        kind = parts[0]
        if kind == "O":
            if len(parts) < 3:
                raise SymLGError(f"{at}: object line needs id and label: {line!r}")
            if parts[1] in nodes:
                raise SymLGError(f"{at}: object {parts[1]!r} defined twice")
            nodes[parts[1]] = _Node(LABELS.get(parts[2], parts[2]))
            if len(nodes) > MAX_OBJECTS:
                raise SymLGError(f"{at}: more than {MAX_OBJECTS} objects")
        elif kind in ("R", "EO"):
            if len(parts) < 4:
                raise SymLGError(f"{at}: relation line needs parent, child and relation: {line!r}")
            rel = RELATIONS.get(parts[3].lower())
            if rel is None:
                raise SymLGError(f"{at}: unknown relation {parts[3]!r}")
            relations.append((parts[1], parts[2], rel, at))
    if not nodes:
        raise SymLGError(f"{where}: no objects")
    for parent, child, rel, at in relations:
        if parent not in nodes or child not in nodes:
            raise SymLGError(f"{at}: relation between unknown objects {parent!r} -> {child!r}")
        if child in parents:
            raise SymLGError(f"{at}: object {child!r} has two parents")
        if rel in nodes[parent].children:
            raise SymLGError(f"{at}: object {parent!r} has two {rel} children")
        nodes[parent].children[rel] = child
        parents[child] = parent
    roots = [n for n in nodes if n not in parents]
    if len(roots) != 1:
        raise SymLGError(f"{where}: the relations leave {len(roots)} roots ({', '.join(roots[:5])}), not one")
    return nodes, roots[0]


def to_latex(text: str, where: str = "") -> str:
    """A SymLG file's text -> LaTeX tokens joined by spaces (the captions' spelling)."""
    nodes, root = parse(text, where)
    _check_depth(nodes, root, where)
    out: list[str] = []
    seen: set[str] = set()
    _row(nodes, root, out, seen, where)
    if len(seen) != len(nodes):
        raise SymLGError(f"{where}: {len(nodes) - len(seen)} objects are not reachable from the root")
    return " ".join(out)


def _check_depth(nodes: dict[str, _Node], root: str, where: str) -> None:
    """SymLGError when the tree nests deeper than MAX_DEPTH (a 1000-deep Sup chain), found without
    recursion before the recursive reading starts."""
    stack, seen = [(root, 0)], set()
    while stack:
        node_id, depth = stack.pop()
        if node_id in seen:
            continue  # a cycle: reported by the reading itself
        seen.add(node_id)
        if depth > MAX_DEPTH:
            raise SymLGError(f"{where}: nested more than {MAX_DEPTH} levels deep (at object {node_id!r})")
        for rel, child in nodes[node_id].children.items():
            stack.append((child, depth if rel == "Right" else depth + 1))


def _row(nodes: dict[str, _Node], start: str, out: list[str], seen: set[str], where: str) -> None:
    node_id: str | None = start
    while node_id is not None:
        if node_id in seen:
            raise SymLGError(f"{where}: a cycle through {node_id!r}")
        seen.add(node_id)
        node = nodes[node_id]
        _symbol(nodes, node, out, seen, where)
        node_id = node.children.get("Right")


def _group(nodes, child: str | None, out: list[str], seen: set[str], where: str) -> None:
    out.append("{")
    if child is not None:
        _row(nodes, child, out, seen, where)
    out.append("}")


def _symbol(nodes: dict[str, _Node], node: _Node, out: list[str], seen: set[str], where: str) -> None:
    ch = node.children
    above, below, inside = ch.get("Above"), ch.get("Below"), ch.get("Inside")
    if node.label in FRACTION_BARS and above is not None and below is not None:
        out.append("\\frac")
        _group(nodes, above, out, seen, where)
        _group(nodes, below, out, seen, where)
    elif node.label == "\\sqrt" and inside is not None:
        out.append("\\sqrt")
        if above is not None:  # the index of an n-th root sits above-left
            out.append("[")
            _row(nodes, above, out, seen, where)
            out.append("]")
        _group(nodes, inside, out, seen, where)
    elif node.label in BIG_OPERATORS or (above is None and below is None):
        out.extend(_label_tokens(node.label))
        if inside is not None:
            raise SymLGError(f"{where}: {node.label!r} has an Inside child")
        if below is not None:
            out.append("_")
            _group(nodes, below, out, seen, where)
        if above is not None:
            out.append("^")
            _group(nodes, above, out, seen, where)
    else:  # a symbol with something stacked on it
        if below is not None:
            out.append("\\underset")
            _group(nodes, below, out, seen, where)
        if above is not None:
            out.append("\\overset")
            _group(nodes, above, out, seen, where)
        out.append("{")
        out.extend(_label_tokens(node.label))
        out.append("}")
    if "Sub" in ch:
        out.append("_")
        _group(nodes, ch["Sub"], out, seen, where)
    if "Sup" in ch:
        out.append("^")
        _group(nodes, ch["Sup"], out, seen, where)


def _label_tokens(label: str) -> list[str]:
    """A multi-digit number (some writers keep `12` as one object) is one token per digit."""
    if len(label) > 1 and label.isdigit():
        return list(label)
    return [label]
