"""Validation: a small recursive-descent parse of a token list with an explicit arity table (docs/sat.md §4).

validate(tokens) returns the parse (a list of nodes; a plain int is a one-token atom) or raises
LatexError naming the token position and what was expected. The parse also feeds position_forest.
It is deliberately lenient where TeX is (a script with no base, `&` and `\\\\` anywhere, unknown
commands are symbols) and strict where an HMER label would be ambiguous (unbalanced braces,
two superscripts on one base, a missing argument, unpaired \\left/\\right or \\begin/\\end).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import repeat
from typing import Sequence, Union

from .errors import LatexError
from .sat import OPTIONAL_ARG_COMMANDS

MAX_DEPTH = 200
"""Nesting deeper than this is rejected (kind "too-deep") rather than risking Python's recursion limit."""

# name -> (takes an optional [...] argument, number of mandatory arguments)
ARITY: dict[str, tuple[bool, int]] = {}
for _name in ("frac", "dfrac", "tfrac", "cfrac", "binom", "dbinom", "tbinom", "overset", "underset", "stackrel",
              "textcolor", "colorbox", "raisebox", "href", "htmlId", "htmlClass", "htmlStyle", "htmlData",
              "sideset"):
    ARITY["\\" + _name] = (False, 2)
for _name in ("hat", "widehat", "bar", "overline", "underline", "vec", "dot", "ddot", "dddot", "ddddot", "tilde",
              "widetilde", "check", "widecheck", "breve", "acute", "grave", "mathring", "overrightarrow",
              "overleftarrow", "overleftrightarrow", "underrightarrow", "underleftarrow", "underleftrightarrow",
              "overbrace", "underbrace", "overbracket", "underbracket", "overgroup", "undergroup",
              "overlinesegment", "underlinesegment", "utilde", "Overrightarrow", "overleftharpoon",
              "overrightharpoon", "underbar", "cancel", "bcancel", "xcancel", "sout", "boxed", "phantom",
              "hphantom", "vphantom", "textcircled", "mathrm", "mathit", "mathbf", "mathsf", "mathtt", "mathcal",
              "mathscr", "mathfrak", "mathbb", "mathnormal", "mathsfit", "boldsymbol", "bm", "pmb", "mathop",
              "mathrel", "mathbin", "mathord", "mathpunct", "mathopen", "mathclose", "mathinner", "operatorname",
              "operatorname*", "text", "mbox", "hbox", "textrm", "textbf", "textit", "texttt", "textsf", "textup",
              "textnormal", "textmd", "textsl", "textsc", "emph", "fbox", "color", "pmod", "tag", "label",
              "substack", "mathllap", "mathrlap", "mathclap", "llap", "rlap", "clap", "hspace", "vspace",
              "underrightarrow", "vcenter", "lefteqn"):
    ARITY["\\" + _name] = (False, 1)
for _name in OPTIONAL_ARG_COMMANDS:
    ARITY[_name] = (True, 1)
ARITY.update({"\\smash": (True, 1), "\\makebox": (True, 1), "\\framebox": (True, 1), "\\rule": (True, 2),
              "\\fcolorbox": (False, 3), "\\genfrac": (False, 6), "\\\\": (True, 0)})

ENV_ARITY: dict[str, tuple[bool, int]] = {
    "array": (False, 1), "darray": (False, 1), "subarray": (False, 1), "alignedat": (False, 1),
    "alignat": (False, 1), "alignat*": (False, 1), "tabular": (False, 1), "matrix*": (True, 0),
    "pmatrix*": (True, 0), "bmatrix*": (True, 0), "Bmatrix*": (True, 0), "vmatrix*": (True, 0),
    "Vmatrix*": (True, 0),
}
STAR_COMMANDS = frozenset({"\\hspace", "\\vspace"})
SEPARATORS = frozenset({"&", "\\\\", "\\cr", "\\newline"})
LIMITS = frozenset({"\\limits", "\\nolimits"})

# Tokens that end a sequence (or are unpaired where they occur), and tokens that cannot be an argument.
_TERMINATORS = frozenset({"}", "\\right"})
_NOT_ARGUMENT = frozenset({"}", "^", "_", "&", "\\\\", "\\cr", "\\right", "\\middle", "\\left", "\\limits",
                           "\\nolimits"})
_STRUCTURAL = frozenset({"{", "}", "^", "_", "\\left", "\\right", "\\middle", "]"})


@dataclass(slots=True)
class Group:
    open: int
    close: int
    body: list


@dataclass(slots=True)
class Optional:
    open: int
    close: int
    body: list


@dataclass(slots=True)
class Command:
    """A command with arguments: token `index`, optional `[...]`, mandatory args; `star` for \\hspace*."""
    index: int
    opt: Union["Optional", None]
    args: list
    star: int | None = None


@dataclass(slots=True)
class Scripts:
    """A base (None for a prescript like `_{2}^{4}He`) with its sub- and superscript."""
    base: object
    limits: int | None = None
    sub_op: int | None = None
    sub: object = None
    sup_op: int | None = None
    sup: object = None


@dataclass(slots=True)
class LeftRight:
    left: int          # index of \left; its delimiter is left + 1
    right: int         # index of \right; its delimiter is right + 1
    body: list = field(default_factory=list)


@dataclass(slots=True)
class Middle:
    index: int         # \middle; its delimiter is index + 1


@dataclass(slots=True)
class Env:
    begin: int
    end: int
    name: str
    opt: Union["Optional", None]
    args: list
    body: list


Node = Union[int, Group, Optional, Command, Scripts, LeftRight, Middle, Env]
_OPENER_KIND = {"}": "unbalanced-brace", "]": "unbalanced-bracket", "right": "unpaired-left", "env": "unpaired-begin"}


def _show(tok: str) -> str:
    return repr(tok) if len(tok) < 40 else repr(tok[:37] + "...")


class _Parser:
    __slots__ = ("t", "n", "i")

    def __init__(self, tokens: Sequence[str]):
        self.t = tokens
        self.n = len(tokens)
        self.i = 0

    # -- sequences -------------------------------------------------------------------------------
    def seq(self, stop: str | None, opener: int, depth: int) -> list:
        """Parse until the terminator `stop` ('}', ']', 'right', 'env'; None = end of input)."""
        if depth > MAX_DEPTH:
            raise LatexError("too-deep", f"token {opener}: nesting deeper than {MAX_DEPTH} levels", opener)
        t = self.t
        n = self.n
        nodes: list = []
        while self.i < n:
            i = self.i
            tok = t[i]
            if tok in _STRUCTURAL:
                if tok == "{":
                    self.i = i + 1
                    body = self.seq("}", i, depth + 1)
                    nodes.append(Group(i, self.i, body))
                    self.i += 1
                elif tok == "^" or tok == "_":
                    self.script(nodes, i, depth)
                elif tok == "]":
                    if stop == "]":
                        return nodes
                    nodes.append(i)
                    self.i = i + 1
                elif tok == "\\left":
                    nodes.append(self.left_right(i, depth))
                elif tok == "\\middle":
                    self.delimiter(i, "\\middle")
                    nodes.append(Middle(i))
                    self.i = i + 2
                else:  # "}" or "\right"
                    want = "}" if tok == "}" else "right"
                    if stop == want:
                        return nodes
                    self.misplaced(tok, i, stop, opener)
            elif tok in ARITY:
                nodes.append(self.command(i, depth))
            elif tok[0] == "\\" and tok[-1] == "}" and len(tok) > 6:
                if tok.startswith("\\begin{"):
                    nodes.append(self.env(i, depth))
                elif tok.startswith("\\end{"):
                    if stop == "env":
                        return nodes
                    self.misplaced(tok, i, stop, opener)
                else:  # \mathbb{R}
                    nodes.append(i)
                    self.i = i + 1
            else:
                nodes.append(i)
                self.i = i + 1
        if stop is not None:
            self.unclosed(stop, opener, None)
        return nodes

    def misplaced(self, tok: str, i: int, stop: str | None, opener: int):
        if stop is not None:
            self.unclosed(stop, opener, i)
        if tok == "}":
            raise LatexError("unbalanced-brace", f"token {i}: '}}' has no matching '{{'", i)
        if tok == "\\right":
            raise LatexError("unpaired-right", f"token {i}: '\\right' has no matching '\\left'", i)
        raise LatexError("unknown-environment-end", f"token {i}: {_show(tok)} has no matching \\begin", i)

    def unclosed(self, stop: str, opener: int, at: int | None):
        where = "the end of the input" if at is None else f"{_show(self.t[at])} at token {at}"
        what = {"}": "'{' is never closed (expected '}'",
                "]": "'[' of the optional argument is never closed (expected ']'",
                "right": "'\\left' is not closed (expected '\\right'",
                "env": f"{_show(self.t[opener])} is not closed (expected "
                       f"{_show(self.t[opener].replace('begin', 'end', 1))}"}[stop]
        raise LatexError(_OPENER_KIND[stop], f"token {opener}: {what} before {where})", opener)

    # -- scripts ---------------------------------------------------------------------------------
    def script(self, nodes: list, i: int, depth: int) -> None:
        t = self.t
        op = t[i]
        self.i = i + 1
        prev = nodes[-1] if nodes else None
        limits = None
        if type(prev) is int and t[prev] in LIMITS:
            limits = nodes.pop()
            prev = nodes[-1] if nodes else None
        if type(prev) is Scripts:
            sc = prev
            if limits is not None:
                sc.limits = limits
        else:
            head = prev if type(prev) is int else prev.index if type(prev) is Command else None
            if head is not None and t[head] in SEPARATORS:
                prev = None
            if prev is not None:
                nodes.pop()
            sc = Scripts(prev, limits)
            nodes.append(sc)
        first = sc.sup_op if op == "^" else sc.sub_op
        if first is not None:
            name = "superscript" if op == "^" else "subscript"
            raise LatexError("double-script",
                             f"token {i}: a second {name} {op!r} on one base (the first is at token {first}); "
                             f"brace the first one, e.g. {{x^{{a}}}}^{{b}}", i)
        arg = self.argument(i, depth, f"{op!r}")
        if op == "^":
            sc.sup_op, sc.sup = i, arg
        else:
            sc.sub_op, sc.sub = i, arg

    # -- arguments -------------------------------------------------------------------------------
    def argument(self, owner: int, depth: int, what: str):
        """One mandatory argument: a {group} or a single token (a command takes its own arguments)."""
        j = self.i
        t = self.t
        if j >= self.n:
            raise LatexError("missing-argument",
                             f"token {owner}: {what} expects an argument ({{group}} or one token), found the end "
                             f"of the input", owner)
        tok = t[j]
        if tok == "{":
            self.i = j + 1
            body = self.seq("}", j, depth + 1)
            g = Group(j, self.i, body)
            self.i += 1
            return g
        if tok in _NOT_ARGUMENT or tok.startswith(("\\end{", "\\begin{")):
            raise LatexError("missing-argument",
                             f"token {owner}: {what} expects an argument ({{group}} or one token), found "
                             f"{_show(tok)} at token {j}", owner)
        if tok in ARITY:
            return self.command(j, depth + 1)
        self.i = j + 1
        return j

    def command(self, i: int, depth: int) -> Command | int:
        if depth > MAX_DEPTH:  # `\sqrt\sqrt\sqrt...x` nests through arguments, not groups
            raise LatexError("too-deep", f"token {i}: nesting deeper than {MAX_DEPTH} levels", i)
        t = self.t
        name = t[i]
        has_opt, nargs = ARITY[name]
        self.i = i + 1
        star = None
        if name in STAR_COMMANDS and self.i < self.n and t[self.i] == "*":
            star = self.i
            self.i += 1
        opt = None
        if has_opt and self.i < self.n and t[self.i] == "[":
            if name == "\\\\" and not self._has_close_bracket(self.i):
                return Command(i, None, [])  # `\\` then a visible `[`
            opt = self.optional(self.i, depth)
        if not nargs and opt is None and star is None:
            return i  # `\\` with no spacing argument is a plain separator atom
        args = []
        for _ in range(nargs):
            args.append(self.argument(i, depth, _show(name)))
        return Command(i, opt, args, star)

    def _has_close_bracket(self, j: int) -> bool:
        t = self.t
        for k in range(j + 1, self.n):
            if t[k] == "]":
                return True
            if t[k] in ("{", "}", "&", "\\\\"):
                return False
        return False

    def optional(self, j: int, depth: int) -> Optional:
        self.i = j + 1
        body = self.seq("]", j, depth + 1)
        o = Optional(j, self.i, body)
        self.i += 1
        return o

    # -- delimiters and environments ---------------------------------------------------------------
    def delimiter(self, i: int, name: str) -> None:
        j = i + 1
        if j >= self.n:
            raise LatexError("missing-argument",
                             f"token {i}: {name} expects a delimiter (e.g. '(' or '.'), found the end of the input",
                             i)
        tok = self.t[j]
        if tok in _NOT_ARGUMENT or tok == "{" or tok.startswith(("\\end{", "\\begin{")):
            raise LatexError("missing-argument",
                             f"token {i}: {name} expects a delimiter (e.g. '(' or '.'), found {_show(tok)} at "
                             f"token {j}", i)

    def left_right(self, i: int, depth: int) -> LeftRight:
        self.delimiter(i, "\\left")
        self.i = i + 2
        body = self.seq("right", i, depth + 1)
        r = self.i
        self.delimiter(r, "\\right")
        self.i = r + 2
        return LeftRight(i, r, body)

    def env(self, i: int, depth: int) -> Env:
        t = self.t
        begin = t[i]
        name = begin[7:-1]
        has_opt, nargs = ENV_ARITY.get(name, (False, 0))
        self.i = i + 1
        opt = None
        if has_opt and self.i < self.n and t[self.i] == "[":
            opt = self.optional(self.i, depth)
        args = [self.argument(i, depth, _show(begin)) for _ in range(nargs)]
        body = self.seq("env", i, depth + 1)
        e = self.i
        end = t[e]
        if end[5:-1] != name:
            expected = _show("\\end{" + name + "}")
            raise LatexError("mismatched-environment",
                             f"token {e}: {_show(end)} closes {_show(begin)} opened at token {i} (expected "
                             f"{expected})", e)
        self.i = e + 1
        return Env(i, e, name, opt, args, body)


def validate(tokens: Sequence[str]) -> list:
    """Parse a token list; raises LatexError naming the position and what was expected."""
    p = _Parser(tokens)
    try:
        return p.seq(None, 0, 0)
    except RecursionError:  # a guard under MAX_DEPTH: whatever nests, the caller gets a LatexError
        raise LatexError("too-deep", "nesting too deep to parse", 0) from None


# -- fast acceptance ---------------------------------------------------------------------------------
# Most labels are plain: atoms, groups, scripts, fixed-arity commands, \left...\right. For those,
# validity is decided without building a tree: each token maps to a class character and innermost
# groups are reduced to "g" by regex (C speed) until none is left. The reduction accepts only what the
# parser accepts; anything it cannot reduce (errors, environments, nested optionals, a command as a
# script argument, ...) goes to the parser, which decides and names the error.
_CLASS: dict[str, str] = {"{": "{", "}": "}", "^": "^", "_": "_", "[": "[", "]": "]", "\\left": "L",
                          "\\right": "R", "\\middle": "M"}
for _name, _spec in ARITY.items():
    _CLASS[_name] = {(False, 1): "1", (False, 2): "2", (True, 1): "o"}.get(_spec, "X")
for _name in STAR_COMMANDS:
    _CLASS[_name] = "X"
for _name in LIMITS:
    _CLASS[_name] = "l"
for _name in SEPARATORS:
    _CLASS[_name] = "s"

_A = r"[ag]"
_SC = rf"(?:\^{_A}(?:_{_A})?|_{_A}(?:\^{_A})?)"
_DELIM = r"[a\[\]]"
# A sequence is bases, each with an optional \limits and scripts. A base is a one-character atom or a
# command with its arguments. A run of one-character atoms is taken in one possessive step (`++`: C
# speed, and no backtracking into the run, which no other alternative could start with anyway); only
# its last atom can carry scripts. Same language as one atom per step (tests/test_tokenizer_validate.py
# checks it against that reference form), 1.5-2x faster on real class strings.
_CMD_IN_OPT = rf"(?:1{_A}|2{_A}{_A}|o{_A}|M{_DELIM})"
_SEQ_IN_OPT = rf"{_SC}?(?:[agr\[]++l?{_SC}?|{_CMD_IN_OPT}l?{_SC}?|l(?![\^_])|s(?!\[){_SC}?)*"
_CMD = rf"(?:1{_A}|2{_A}{_A}|o(?:\[{_SEQ_IN_OPT}\])?{_A}|M{_DELIM})"
_SEQ = rf"{_SC}?(?:[agr\[\]]++l?{_SC}?|{_CMD}l?{_SC}?|l(?![\^_])|s(?!\[){_SC}?)*"
_GROUP_RE = re.compile(r"\{" + _SEQ + r"\}")
_LEFT_RIGHT_RE = re.compile(rf"L{_DELIM}{_SEQ}R{_DELIM}")
_TOP_RE = re.compile(_SEQ)
_MAX_PASSES = 50

# Environments, for callers that class tokens with token_class (tokenizer.chunkcheck): `\\begin{name}`
# is "B" (no argument), "b" (one mandatory argument: array's column spec) or "p" (an optional [...]
# first: the starred matrices), `\\end{name}` is "E". An environment reduces like a group, to "r": a
# base but not an argument (the parser takes no environment as an argument or a delimiter). The
# reduction pairs each "E" with the nearest open "B"/"b"/"p", as braces pair; that the paired names are
# equal is for env_names_nest to say.
_ENV_CLASS = {(False, 0): "B", (False, 1): "b", (True, 0): "p"}
assert set(ENV_ARITY.values()) <= set(_ENV_CLASS), "ENV_ARITY grew a new shape: give it a class"
_ENV_GROUP_RE = re.compile(rf"(?:B|b{_A}|p(?:\[{_SEQ_IN_OPT}\]|(?!\[))){_SEQ}E")
TOKEN_CLASSES = frozenset(_CLASS.values()) | frozenset(_ENV_CLASS.values()) | {"E", "a"}
"""Every class character token_class can give."""


def token_class(token: str) -> str:
    """The reduction's class character of a token, environments included (quick_accept leaves those to
    the parser and classes them with _CLASS alone)."""
    c = _CLASS.get(token)
    if c is not None:
        return c
    if token[-1:] == "}" and len(token) > 6:  # the parser's test for an environment token
        if token.startswith("\\begin{"):
            return _ENV_CLASS[ENV_ARITY.get(token[7:-1], (False, 0))]
        if token.startswith("\\end{"):
            return "E"
    return "a"


def env_names_nest(tokens: Sequence[str]) -> bool:
    """Whether the environment tokens among `tokens`, paired as the reduction pairs them (each end with
    the nearest open begin), pair equal names; with no environment, True."""
    open_names: list[str] = []
    for t in tokens:
        if t.startswith("\\begin{"):
            open_names.append(t[7:-1])
        elif t.startswith("\\end{"):
            if not open_names or open_names.pop() != t[5:-1]:
                return False
    return not open_names


def quick_accept(tokens: Sequence[str]) -> bool:
    """True only if validate(tokens) certainly succeeds; False means 'ask the parser'."""
    c = "".join(map(_CLASS.get, tokens, repeat("a")))
    if "X" in c:
        return False
    joined = "".join(tokens)
    if "\\begin{" in joined or "\\end{" in joined:  # environments: the parser pairs their names
        return False
    return _TOP_RE.fullmatch(reduce_groups(c)) is not None


def reduce_groups(c: str) -> str:
    """Reduce innermost groups (and \\left...\\right pairs, and environments classed by token_class) of a
    class string until none is left or nothing changes. What is left of a line that cannot be reduced
    still holds `{`, `L` or an environment's class, which _TOP_RE never accepts. Line-local (no pattern
    spans a line break), so a string of many lines joined by newlines reduces each line as it would
    alone (tokenizer.chunkcheck relies on it).

    The commonest groups (`{a}`, `{aa}`, `{aaa}`: 81% of the groups in the shared corpora) are always
    innermost and valid, so plain replaces reduce them first, at memchr speed; the regex does the rest.
    Reducing some valid innermost groups early leaves the same result (no two reductions overlap)."""
    c = c.replace("{a}", "g").replace("{aa}", "g").replace("{aaa}", "g")
    for _ in range(_MAX_PASSES):
        if "{" not in c and "L" not in c and "E" not in c:
            break
        reduced = _GROUP_RE.sub("g", c)
        if "L" in reduced:
            reduced = _LEFT_RIGHT_RE.sub("r", reduced)  # a base, but not an argument
        if "E" in reduced:
            reduced = _ENV_GROUP_RE.sub("r", reduced)  # an environment: likewise
        if reduced == c:
            break
        c = reduced
    return c


def check_valid(tokens: Sequence[str]) -> None:
    """Raise LatexError if the tokens do not validate; the fast way to ask 'is it valid?'."""
    if not quick_accept(tokens):
        validate(tokens)
