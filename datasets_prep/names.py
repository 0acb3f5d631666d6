"""One check for every name that becomes a folder under --out: split names (--split, --splits, the
splits a shard folder lists) and export renames.

Why: a split name is joined to the output folder, so `../victim/train` wrote and deleted shards in
another folder, and `export --rename train=../../x` wrote outside --out. A plain name has letters,
digits, `_`, `-` and `.` only: no separator, not `.`/`..`, not hidden (a leading `.` would also
collide with the converter's own `.progress`).
"""
from __future__ import annotations

MAX_NAME = 100


def is_plain(name: object) -> bool:
    """Whether `name` is a plain name (see the module docstring)."""
    return (isinstance(name, str) and 0 < len(name) <= MAX_NAME and not name.startswith(".")
            and all(c.isalnum() or c in "_-." for c in name) and name.isprintable())


def plain_name(name: object, what: str = "split name") -> str:
    """`name` itself if it is plain; ValueError saying why (one line, the name escaped) otherwise."""
    if not is_plain(name):
        shown = ascii(name) if isinstance(name, str) else type(name).__name__
        raise ValueError(f"{what} {shown[:60]} is not a plain name (letters, digits, '_', '-', '.'; no path "
                         "separator, not '.' or '..', no leading '.')")
    return name  # type: ignore[return-value]
