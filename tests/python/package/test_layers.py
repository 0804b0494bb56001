"""src/'s folders are layers: a file includes only its own folder, the folders below it (LAYERS,
top to bottom) and the public headers (include/arrayport/, <...> includes)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src"

# Top to bottom: a folder may include itself and anything after it, never anything before it.
LAYERS = ["module", "bind", "array", "bridge", "cuda", "common", "ops"]

# Files CMake generates into the build tree, and the layer whose folder holds their template.
GENERATED = {"build_config.hpp": "module"}

# Arrows up that are allowed for now. Strict: an entry that no longer matches a violation fails
# too, so that the list only shrinks.
KNOWN: set[tuple[str, str]] = set()  # every arrow runs down; an exception would be listed here

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCES = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".in")


def layer_of(rel: Path) -> str | None:
    """The layer of a path relative to src/: its first folder; None for a file at src/ itself
    (the build's lists, which no source includes)."""
    return rel.parts[0] if len(rel.parts) > 1 else None


def resolve(including: Path, spelled: str, src: Path) -> Path | None:
    """The file an #include "..." names: beside the including file first, then from src/."""
    for base in (including.parent, src):
        candidate = (base / spelled).resolve()
        if candidate.is_file():
            return candidate
    return None


def violations(src: Path) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(arrows up as (file, include, why), problems such as unknown folders or includes)."""
    up: list[tuple[str, str, str]] = []
    problems: list[str] = []
    for path in sorted(p for p in src.rglob("*") if p.is_file() and p.suffix in SOURCES):
        rel = path.relative_to(src)
        here = layer_of(rel)
        if here is not None and here not in LAYERS:
            problems.append(f"{rel}: folder {here!r} is not a layer ({', '.join(LAYERS)})")
            continue
        for spelled in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
            target = resolve(path, spelled, src)
            if target is None:
                if spelled in GENERATED:
                    there = GENERATED[spelled]
                else:
                    problems.append(f"{rel}: #include \"{spelled}\" names no file under src/")
                    continue
            else:
                try:
                    there = layer_of(target.relative_to(src.resolve()))
                except ValueError:  # outside src/ (the public headers are <...> includes)
                    problems.append(f"{rel}: #include \"{spelled}\" leaves src/")
                    continue
            if here is None or there is None or there not in LAYERS:
                continue
            if LAYERS.index(there) < LAYERS.index(here):
                shown = str(target.relative_to(src.resolve())) if target else spelled
                up.append((str(rel), shown, f"{here}/ includes {there}/, a layer above it"))
    return up, problems


def test_no_include_runs_up_a_layer() -> None:
    up, problems = violations(SRC)
    assert not problems, "\n".join(problems)
    found = {(f, inc) for f, inc, _ in up}
    new = [f"{f}: #include \"{inc}\": {why}" for f, inc, why in up if (f, inc) not in KNOWN]
    assert not new, "includes that run up a layer:\n" + "\n".join(new)
    stale = sorted(KNOWN - found)
    assert not stale, f"no longer violations, take them off KNOWN: {stale}"


def test_every_folder_of_src_is_a_layer() -> None:
    folders = {p.name for p in SRC.iterdir() if p.is_dir()}
    assert folders <= set(LAYERS), sorted(folders - set(LAYERS))


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize(("rel", "text"), [
    ("common/errors.cpp", '#include "cuda/device.hpp"\n'),         # from the root
    ("cuda/device.cpp", '#include "../array/array.hpp"\n'),        # relative
    ("ops/dispatch.cpp", '  #  include "common/errors.hpp"  // x\n'),
])
def test_the_check_finds_an_include_that_runs_up(tmp_path: Path, rel: str, text: str) -> None:
    for f in ("cuda/device.hpp", "array/array.hpp", "common/errors.hpp"):
        write(tmp_path, f, "#pragma once\n")
    write(tmp_path, rel, text)
    up, problems = violations(tmp_path)
    assert problems == []
    assert len(up) == 1 and up[0][0] == rel, up


def test_the_check_allows_includes_down_and_within_a_folder(tmp_path: Path) -> None:
    write(tmp_path, "common/errors.hpp", "#pragma once\n")
    write(tmp_path, "cuda/device.hpp", '#include "common/errors.hpp"\n')
    write(tmp_path, "cuda/stream.cpp", '#include "device.hpp"\n#include <Python.h>\n')
    write(tmp_path, "module/module.cpp", '#include "cuda/device.hpp"\n#include "build_config.hpp"\n')
    assert violations(tmp_path) == ([], [])


def test_the_check_reports_an_unknown_include_or_folder(tmp_path: Path) -> None:
    write(tmp_path, "cuda/device.cpp", '#include "nowhere.hpp"\n')
    write(tmp_path, "misc/x.cpp", "\n")
    _, problems = violations(tmp_path)
    assert len(problems) == 2, problems


def test_the_architecture_page_names_every_folder() -> None:
    # docs/architecture.md draws the floors; a folder it does not name is a floor nobody drew.
    page = (SRC.parent / "docs" / "architecture.md").read_text()
    folders = [f"src/{p.name}/" for p in SRC.iterdir() if p.is_dir()]
    include = SRC.parent / "include" / "arrayport"
    folders += [f"include/arrayport/{p.name}/" for p in include.iterdir() if p.is_dir()]
    missing = [f for f in folders if f not in page and f.replace("include/arrayport/", "") + " "
               not in page]
    assert not missing, f"docs/architecture.md does not name: {missing}"
