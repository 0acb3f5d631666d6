"""Valid LaTeX out: whatever the decoder's argmax says, what the samplers return parses."""
from __future__ import annotations

from collections import Counter

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import SATVocab, tokenize
from tokenizer.grammar import check_valid
from tokenizer.lexer import detokenize
from model.repair import delete_until_valid, is_valid, repair_ids

LABELS = ["24-\\frac{6}{7}", "x^{2}+y_{i}", "\\sqrt{x}+\\frac{a}{b}", "\\left(x\\right)", "a^{b^{c}}", "{x}"]
VOCAB = SATVocab.build(LABELS)
TOKENS = ["x", "2", "+", "{", "}", "^", "_", "\\frac", "\\sqrt", "\\left(", "\\right)", "[", "]", "&", "\\\\",
          "\\begin{matrix}", "\\end{matrix}", "\\text", "a"]


def test_a_fraction_without_denominator_is_repaired_at_its_cheapest_edit():
    enc = VOCAB.encode("24-\\frac{6}{7}", 12)
    sym, mod = enc.symbols.tolist(), enc.modifiers.tolist()
    # the decoder is sure of everything but whether the label goes on after `\frac{6}`: its argmax
    # ends it there (PAD), which leaves the fraction without its denominator
    sym_logp = torch.full((12, VOCAB.num_symbols), -20.0)
    mod_logp = torch.full((12, VOCAB.num_modifiers), -20.0)
    for i, (s, m) in enumerate(zip(sym, mod)):
        sym_logp[i, s] = 0.0
        mod_logp[i, m] = 0.0
    broken_sym = list(sym)
    broken_sym[enc.length - 1] = VOCAB.PAD  # "\frac{6}" and nothing after: invalid
    sym_logp[enc.length - 1, VOCAB.PAD] = -0.1
    sym_logp[enc.length - 1, sym[enc.length - 1]] = -2.5
    assert not is_valid(VOCAB.decode(broken_sym, mod))
    stats: Counter = Counter()
    out = repair_ids(VOCAB, broken_sym, mod, sym_logp, mod_logp, stats)
    assert out == "24-\\frac{6}{7}"
    assert stats == Counter(raw_invalid=1, repaired=1)


def test_valid_outputs_are_returned_unchanged():
    enc = VOCAB.encode("x^{2}+y_{i}", 12)
    stats: Counter = Counter()
    logp = torch.zeros(12, max(VOCAB.num_symbols, VOCAB.num_modifiers))
    out = repair_ids(VOCAB, enc.symbols.tolist(), enc.modifiers.tolist(), logp[:, :VOCAB.num_symbols],
                     logp[:, :VOCAB.num_modifiers], stats)
    assert out == "x^{2}+y_{i}" and not stats


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=14))
def test_deletion_repair_always_ends_valid(tokens):
    out = delete_until_valid(detokenize(tokens))
    check_valid(tokenize(out))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_any_decoder_output_is_repaired_to_a_parse(seed):
    g = torch.Generator().manual_seed(seed)
    n = 10
    sym_logp = torch.randn(n, VOCAB.num_symbols, generator=g).log_softmax(-1)
    mod_logp = torch.randn(n, VOCAB.num_modifiers, generator=g).log_softmax(-1)
    sym = torch.randint(0, VOCAB.num_symbols, (n,), generator=g).tolist()
    mod = torch.randint(0, VOCAB.num_modifiers, (n,), generator=g).tolist()
    stats: Counter = Counter()
    out = repair_ids(VOCAB, sym, mod, sym_logp, mod_logp, stats)
    assert is_valid(out), out
    assert stats["raw_invalid"] == stats["repaired"] + stats["last_resort"]
