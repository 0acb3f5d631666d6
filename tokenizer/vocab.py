"""Vocabularies: SAT symbol + modifier ids for the diffusion model, plain LaTeX tokens for the baseline.

Both reserve their special ids at the bottom, save to JSON (embedded in checkpoints via to_dict),
report out-of-vocabulary items instead of failing silently, and decode any id sequence a model can
emit back to a LaTeX string.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .errors import LatexError
from .files import atomic_write_json
from .lexer import detokenize, tokenize
from .sat import extended_masks, split_streams

PLACEHOLDER = "\\square"
"""What a MASK or UNK symbol decodes to, so a model's output always decodes to a LaTeX string."""

Modifier = tuple[tuple[str, ...], tuple[str, ...]]
EMPTY_MODIFIER: Modifier = ((), ())
SAT_FORMAT = "gryphone.sat-vocab"
TOKEN_FORMAT = "gryphone.token-vocab"
FORMAT_VERSION = 1


def _as_ints(ids) -> list[int]:
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    return [int(x) for x in ids]


def _too_long(n: int, max_len: int, what: str) -> LatexError:
    return LatexError("too-long", f"the label needs {n} {what}, more than the maximum length {max_len}", None)


def _write_json(path: str | os.PathLike, data: dict) -> None:
    atomic_write_json(path, data, indent=1)


def _read_json(path: str | os.PathLike) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: vocabulary file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON vocabulary ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a vocabulary must be a JSON object, found {type(data).__name__}")
    return data


def _check_unique(items: list, what: str) -> None:
    seen = set()
    for i, item in enumerate(items):
        if item in seen:
            raise ValueError(f"duplicate {what} {item!r} at id {i}")
        seen.add(item)


@dataclass
class EncodedLabel:
    """Fixed-length id arrays for one label (PAD-filled after `length` positions)."""

    symbols: np.ndarray
    modifiers: np.ndarray
    length: int
    oov_symbols: list[str] = field(default_factory=list)
    oov_modifiers: list[tuple] = field(default_factory=list)


class _JsonFile:
    """save/load as JSON through to_dict/from_dict; a bad file raises ValueError naming it."""

    def save(self, path: str | os.PathLike) -> None:
        _write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike):
        data = _read_json(path)
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None


class SATVocab(_JsonFile):
    """Symbol and modifier ids for SAT positions; ids 0, 1, 2 are PAD, MASK, UNK in both."""

    PAD = 0
    MASK = 1
    UNK = 2
    SPECIAL_SYMBOLS = ("<pad>", "<mask>", "<unk>")
    SPECIAL_MODIFIERS: tuple[Modifier, ...] = ((("<pad>",), ()), (("<mask>",), ()), (("<unk>",), ()))

    def __init__(self, symbols: Sequence[str], modifiers: Sequence[Modifier], *, extended: bool = False):
        self.symbols: list[str] = list(symbols)
        self.modifiers: list[Modifier] = [(tuple(p), tuple(q)) for p, q in modifiers]
        self.extended = bool(extended)
        self.build_skipped = 0
        self.build_skipped_examples: list[tuple[str, str]] = []
        if tuple(self.symbols[:3]) != self.SPECIAL_SYMBOLS:
            raise ValueError(f"symbol ids 0-2 must be {self.SPECIAL_SYMBOLS}, found {self.symbols[:3]}")
        if tuple(self.modifiers[:3]) != self.SPECIAL_MODIFIERS:
            raise ValueError(f"modifier ids 0-2 must be the PAD/MASK/UNK markers, found {self.modifiers[:3]}")
        if EMPTY_MODIFIER not in self.modifiers:
            raise ValueError("the empty modifier ((), ()) is missing")
        _check_unique(self.symbols, "symbol")
        _check_unique(self.modifiers, "modifier")
        self._sym_id = {s: i for i, s in enumerate(self.symbols)}
        self._mod_id = {m: i for i, m in enumerate(self.modifiers)}
        self.empty_modifier_id = self._mod_id[EMPTY_MODIFIER]

    # -- building ----------------------------------------------------------------------------------
    @classmethod
    def build(cls, labels: Iterable[str], *, extended: bool = False, min_count: int = 1) -> "SATVocab":
        """Count symbols and (pre, post) pairs over labels; items seen fewer than min_count times are left
        to UNK. Labels that fail to lex or encode are skipped and counted in .build_skipped."""
        sym_counts: Counter = Counter()
        mod_counts: Counter = Counter()
        skipped = 0
        examples: list[tuple[str, str]] = []
        for label in labels:
            try:
                pres, syms, posts = _streams(label, extended)
            except LatexError as err:
                skipped += 1
                if len(examples) < 10:
                    examples.append((label, err.verdict()))
                continue
            sym_counts.update(syms)
            mod_counts.update(zip(pres, posts))
        vocab = cls.from_counts(sym_counts, mod_counts, extended=extended, min_count=min_count)
        vocab.build_skipped = skipped
        vocab.build_skipped_examples = examples
        return vocab

    @classmethod
    def from_counts(cls, symbol_counts: Counter, modifier_counts: Counter, *, extended: bool = False,
                    min_count: int = 1) -> "SATVocab":
        """A vocabulary from symbol and (pre, post) counts, most frequent first."""
        symbols = list(cls.SPECIAL_SYMBOLS) + _ranked(symbol_counts, min_count, set(cls.SPECIAL_SYMBOLS))
        mods = _ranked(modifier_counts, min_count, {EMPTY_MODIFIER, *cls.SPECIAL_MODIFIERS})
        modifiers = list(cls.SPECIAL_MODIFIERS) + [EMPTY_MODIFIER] + mods
        return cls(symbols, modifiers, extended=extended)

    @property
    def num_symbols(self) -> int:
        return len(self.symbols)

    @property
    def num_modifiers(self) -> int:
        return len(self.modifiers)

    # -- encoding ----------------------------------------------------------------------------------
    def encode(self, latex: str, max_len: int = 150) -> EncodedLabel:
        """Label -> PAD-filled id arrays of length max_len; LatexError if unencodable or too long."""
        pres, syms, posts = _streams(latex, self.extended)
        n = len(syms)
        if n > max_len:
            raise _too_long(n, max_len, "SAT positions")
        sym_ids = np.zeros(max_len, dtype=np.int64)
        mod_ids = np.zeros(max_len, dtype=np.int64)
        get_sym = self._sym_id.get
        get_mod = self._mod_id.get
        oov_s: list[str] = []
        oov_m: list[tuple] = []
        s_list = []
        m_list = []
        for sym, mod in zip(syms, zip(pres, posts)):
            s = get_sym(sym)
            if s is None:
                s = self.UNK
                oov_s.append(sym)
            m = get_mod(mod)
            if m is None:
                m = self.UNK
                oov_m.append(mod)
            s_list.append(s)
            m_list.append(m)
        sym_ids[:n] = s_list
        mod_ids[:n] = m_list
        return EncodedLabel(sym_ids, mod_ids, n, oov_s, oov_m)

    def decode(self, symbols: Sequence[int], modifiers: Sequence[int]) -> str:
        """Ids -> LaTeX, reading up to the first PAD symbol; MASK/UNK become a placeholder symbol and
        special or unknown modifier ids the empty modifier, so any model output decodes."""
        sym_ids = _as_ints(symbols)
        mod_ids = _as_ints(modifiers)
        tokens: list[str] = []
        n_sym = len(self.symbols)
        n_mod = len(self.modifiers)
        for k, s in enumerate(sym_ids):
            if s == self.PAD:
                break
            sym = self.symbols[s] if 3 <= s < n_sym else PLACEHOLDER
            m = mod_ids[k] if k < len(mod_ids) else self.empty_modifier_id
            pre, post = self.modifiers[m] if 3 <= m < n_mod else EMPTY_MODIFIER
            tokens.extend(pre)
            tokens.append(sym)
            tokens.extend(post)
        return detokenize(tokens)

    def oov(self, latex: str) -> tuple[list[str], list[Modifier]]:
        """(out-of-vocabulary symbols, out-of-vocabulary modifiers) of one label, without a length limit."""
        pres, syms, posts = _streams(latex, self.extended)
        return ([s for s in syms if s not in self._sym_id],
                [m for m in zip(pres, posts) if m not in self._mod_id])

    # -- persistence -------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"format": SAT_FORMAT, "version": FORMAT_VERSION, "extended": self.extended,
                "symbols": list(self.symbols), "modifiers": [[list(p), list(q)] for p, q in self.modifiers]}

    @classmethod
    def from_dict(cls, d: dict) -> "SATVocab":
        if not isinstance(d, dict) or d.get("format") != SAT_FORMAT:
            raise ValueError(f"not a SAT vocabulary (format {d.get('format') if isinstance(d, dict) else d!r})")
        if d.get("version") != FORMAT_VERSION:
            raise ValueError(f"SAT vocabulary version {d.get('version')!r} is not supported (expected "
                             f"{FORMAT_VERSION})")
        symbols = d.get("symbols")
        modifiers = d.get("modifiers")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise ValueError("'symbols' must be a list of strings")
        if not isinstance(modifiers, list) or not all(_is_modifier(m) for m in modifiers):
            raise ValueError("'modifiers' must be a list of [pre, post] pairs of string lists")
        return cls(symbols, [(tuple(p), tuple(q)) for p, q in modifiers], extended=bool(d.get("extended", False)))

    def __repr__(self) -> str:
        return (f"SATVocab({self.num_symbols} symbols, {self.num_modifiers} modifiers, "
                f"extended={self.extended})")


class TokenVocab(_JsonFile):
    """Plain LaTeX-token ids for the autoregressive baseline: PAD, BOS, EOS, UNK = 0, 1, 2, 3."""

    PAD = 0
    BOS = 1
    EOS = 2
    UNK = 3
    SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")

    def __init__(self, tokens: Sequence[str]):
        self.tokens: list[str] = list(tokens)
        if tuple(self.tokens[:4]) != self.SPECIALS:
            raise ValueError(f"token ids 0-3 must be {self.SPECIALS}, found {self.tokens[:4]}")
        _check_unique(self.tokens, "token")
        self._id = {t: i for i, t in enumerate(self.tokens)}
        self.build_skipped = 0
        self.build_skipped_examples: list[tuple[str, str]] = []

    @classmethod
    def build(cls, labels: Iterable[str], min_count: int = 1) -> "TokenVocab":
        counts: Counter = Counter()
        skipped = 0
        examples: list[tuple[str, str]] = []
        for label in labels:
            try:
                counts.update(tokenize(label))
            except LatexError as err:
                skipped += 1
                if len(examples) < 10:
                    examples.append((label, err.verdict()))
        vocab = cls(list(cls.SPECIALS) + _ranked(counts, min_count, set(cls.SPECIALS)))
        vocab.build_skipped = skipped
        vocab.build_skipped_examples = examples
        return vocab

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, latex: str, max_len: int) -> np.ndarray:
        """BOS tokens EOS, PAD-filled to max_len; LatexError(kind="too-long") if it does not fit."""
        toks = tokenize(latex)
        if len(toks) + 2 > max_len:
            raise _too_long(len(toks) + 2, max_len, "tokens with BOS and EOS")
        out = np.zeros(max_len, dtype=np.int64)
        get = self._id.get
        out[0] = self.BOS
        out[1:len(toks) + 1] = [get(t, self.UNK) for t in toks]
        out[len(toks) + 1] = self.EOS
        return out

    def oov(self, latex: str) -> list[str]:
        return [t for t in tokenize(latex) if t not in self._id]

    def decode(self, ids: Sequence[int]) -> str:
        """Ids -> LaTeX: skips BOS, stops at EOS or PAD, UNK (or an id out of range) becomes a placeholder."""
        out: list[str] = []
        n = len(self.tokens)
        for i in _as_ints(ids):
            if i == self.EOS or i == self.PAD:
                break
            if i == self.BOS:
                continue
            out.append(self.tokens[i] if 4 <= i < n else PLACEHOLDER)
        return detokenize(out)

    def to_dict(self) -> dict:
        return {"format": TOKEN_FORMAT, "version": FORMAT_VERSION, "tokens": list(self.tokens)}

    @classmethod
    def from_dict(cls, d: dict) -> "TokenVocab":
        if not isinstance(d, dict) or d.get("format") != TOKEN_FORMAT:
            raise ValueError(f"not a token vocabulary (format {d.get('format') if isinstance(d, dict) else d!r})")
        if d.get("version") != FORMAT_VERSION:
            raise ValueError(f"token vocabulary version {d.get('version')!r} is not supported")
        tokens = d.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ValueError("'tokens' must be a list of strings")
        return cls(tokens)

    def __repr__(self) -> str:
        return f"TokenVocab({len(self.tokens)} tokens)"


def _streams(latex: str, extended: bool):
    tokens = tokenize(latex)
    if extended:
        return split_streams(tokens, *extended_masks(tokens))
    return split_streams(tokens)


def _ranked(counts: Counter, min_count: int, exclude: set) -> list:
    """Items by descending count, ties in a stable order (by repr), those under min_count dropped."""
    items = [(c, k) for k, c in counts.items() if c >= min_count and k not in exclude]
    items.sort(key=lambda ck: (-ck[0], repr(ck[1])))
    return [k for _, k in items]


def _is_modifier(m) -> bool:
    return (isinstance(m, list) and len(m) == 2 and all(isinstance(part, list) for part in m)
            and all(isinstance(x, str) for part in m for x in part))
