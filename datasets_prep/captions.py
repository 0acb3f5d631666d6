"""Space-tokenized captions (CoMER, TAMER, HME100K `name<TAB>tokens` lines) <-> LaTeX labels, so a label
exported and read back is the same label.

Why: peers split a caption on whitespace, one token per word, and in math mode whitespace means
nothing. In text mode (`\\mbox{...}`, `\\text{...}`) it does: `\\mbox { T r }` read as written is
`\\mbox{ T r }`, three spaces the original `\\mbox{Tr}` never had. So the reader joins the words of a
text-mode group back together. A space that is a token (a text-mode space, or the control space `\\ `
of math mode, which CROHME writes in `1011\\ 1110_2`) cannot be a word; the writer spells both as
`\\space` (TeX's own macro for a space), and the reader turns it back into the one its mode has. (A
control space inside text mode, or a `\\space` written as such, comes back as the other spelling.)
"""
from __future__ import annotations

from tokenizer.lexer import TEXT_COMMANDS, TEXT_SPACE, detokenize

SPACE_WORD = "\\space"
CONTROL_SPACE = "\\ "


def to_caption(tokens: list[str]) -> str | None:
    """Tokens (tokenizer.tokenize) -> caption words joined by single spaces; None when a token
    cannot be a word (one holding whitespace other than the two spaces above)."""
    words = []
    for t in tokens:
        if t in (TEXT_SPACE, CONTROL_SPACE):
            words.append(SPACE_WORD)
        elif not t or any(c.isspace() for c in t):
            return None
        else:
            words.append(t)
    return " ".join(words) if words else None


def from_caption(raw: str) -> str:
    """A caption's label -> LaTeX: math-mode words joined by single spaces (as the file has them),
    each text-mode group `\\mbox { T r }` joined back to `\\mbox{Tr}`, `\\space` there a space."""
    words = raw.split()
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in TEXT_COMMANDS and i + 1 < len(words) and words[i + 1] == "{":
            depth, j, inner = 1, i + 2, []
            while j < len(words):
                t = words[j]
                depth += (t == "{") - (t == "}")
                if depth == 0:
                    break
                inner.append(TEXT_SPACE if t == SPACE_WORD else t)
                j += 1
            if depth == 0:
                out.append(w + "{" + detokenize(inner) + "}")
                i = j + 1
                continue
        out.append(CONTROL_SPACE if w == SPACE_WORD else w)
        i += 1
    return " ".join(out)
