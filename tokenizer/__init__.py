"""SAT: a symbol-aware LaTeX tokenizer for handwritten math recognition.

tokenize/detokenize (lexing), validate (parse with errors that name the position), encode/decode
(SAT-L positions), SATVocab/TokenVocab (ids), normalize/clean_crohme_truth, position_forest, and
label_verdict (one call: is this label usable?). Metrics live in tokenizer.metrics.
"""
from .errors import LatexError
from .forest import position_forest
from .grammar import validate
from .lexer import MODIFIERS, detokenize, tokenize
from .normalize import clean_crohme_truth, normalize
from .sat import Position, decode, encode, is_canonical
from .verdict import label_verdict
from .vocab import EncodedLabel, SATVocab, TokenVocab

__all__ = [
    "LatexError", "tokenize", "detokenize", "validate", "encode", "decode", "Position", "is_canonical",
    "SATVocab", "TokenVocab", "EncodedLabel", "normalize", "clean_crohme_truth", "label_verdict",
    "position_forest", "MODIFIERS",
]
