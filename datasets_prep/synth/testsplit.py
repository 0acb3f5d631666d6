"""Is this a test split? The glyph bank must never hold a symbol a test writer wrote.

gryphone reports on CROHME test2014/2016 (and 2019), so their writers' glyphs in a training set would
be leakage no scoring could see. Three independent signs, any one of which refuses (unless the user
says --allow-test): a path part naming a test split, a CROHME test file name, or a CROHME test
file's own annotations (the test files of 2014 and 2016 carry their package's UI and copyright,
whatever folder they were copied into).
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

# File names of the CROHME test packages: 2014 (RIT_2014_12), 2016 (UN_101_em_0), 2019 (UN19_1041_em_597,
# ISICal19_1201_em_750). (2014's ISICAL/IVC files are `18_em_0`, a pattern the 2013 training extension
# shares, so those are told apart by their annotations below.)
TEST_FILE = re.compile(r"^(RIT_2014_\d+|UN\d*_\d+_em_\d+|ISICal\d*_\d+_em_\d+)$", re.IGNORECASE)
TEST_COPYRIGHT = re.compile(r"^(ISICAL|IVC|RIT)_2014$", re.IGNORECASE)
TEST_UI = re.compile(r"^(ISICAL_2014_|IVC_2014_|2014_RIT_CROHME_|CROHME_2016_em_|CROHME_2019_)", re.IGNORECASE)
TEST_LISTS = ("listTestInkml.txt",)  # the list the CROHME 2014 test package ships beside its files


class TestSplitError(ValueError):
    """An input that looks like a test split, naming the file and the sign."""

    __test__ = False  # not a pytest test class


def input_sign(name: str) -> str | None:
    """Why an input (a folder, an archive, a file) looks like a test split by its name, or None."""
    return f"input name {name!r} contains 'test'" if "test" in name.lower() else None


def path_sign(path: str) -> str | None:
    """Why a file's path inside an input looks like test data (a folder part naming a test split, a
    CROHME test file name or file list), or None."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    for part in parts[:-1]:
        if "test" in part.lower():
            return f"folder name {part!r} contains 'test'"
    name = parts[-1] if parts else ""
    stem = name[:-6] if name.lower().endswith(".inkml") else name
    if TEST_FILE.match(stem):
        return f"file name {name!r} is a CROHME test file's"
    if name in TEST_LISTS:
        return f"{name} is the CROHME test package's file list"
    return None


def annotation_sign(annotations: dict[str, str]) -> str | None:
    """Why a file's annotations say it is a CROHME test file, or None."""
    ui = (annotations.get("UI") or "").strip().strip('"')
    if TEST_UI.match(ui):
        return f"UI annotation {ui!r} is a CROHME test file's"
    cr = (annotations.get("copyright") or "").strip()
    if TEST_COPYRIGHT.match(cr):
        return f"copyright annotation {cr!r} is the CROHME 2014 test set's"
    return None
