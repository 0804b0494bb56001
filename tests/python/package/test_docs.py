"""Every code snippet in README.md and docs/ is checked, so that none can drift from the code.

- A ```python block is executed (each in a fresh namespace, from the repository root).
- A block whose fence is directly preceded by an HTML comment takes its markers from it:
    <!-- gpu -->                    runs only on a machine with a CUDA device (skipped elsewhere);
    <!-- gpus: N -->                runs only on a machine with N CUDA devices or more;
    <!-- needs: examples/STYLE -->  runs after examples/STYLE was built (as bridge/test_examples.py
                                    builds it) into PROJECT/build, from PROJECT, with build/ and
                                    examples/STYLE on sys.path;
    <!-- file: PATH -->             the block is PATH, or a contiguous run of PATH's lines, verbatim.
- Every C, C++, CMake, Cython and SWIG block in docs/ carries a `file:` marker: it is a piece of a
  file that the tests build (the README's C++ example is compiled, at the end of this file).
- docs/errors.md's table is walked: each row's code raises the exception it names, with the
  message fragment it quotes.
"""

from __future__ import annotations

import builtins
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import arrayport
from conftest import HAS_GPU, REPO, cmake_build, needs_gpu


PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
COMPILED_LANGUAGES = {"c", "cpp", "c++", "cuda", "cmake", "cython", "pyx", "swig"}

_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    re.M | re.S)
_MARKER = re.compile(r"<!--(?P<text>.*?)-->\s*$")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    code: str
    gpu: bool = False
    gpus: int = 0
    needs: str | None = None
    file: str | None = None
    markers: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        indent = m.group("indent")
        code = "".join(l[len(indent):] if l.startswith(indent) else l
                       for l in m.group("body").splitlines(keepends=True))
        b = Block(page, line, m.group("lang").lower(), code)
        marker = _MARKER.search(before)
        if marker:
            t = marker.group("text")
            b.gpu = re.search(r"\bgpu\b", t) is not None
            if g := re.search(r"gpus:\s*(\d+)", t):
                b.gpus = int(g.group(1))
                b.gpu = True
            if n := re.search(r"needs:\s*(\S+)", t):
                b.needs = n.group(1)
            if f := re.search(r"file:\s*(\S+)", t):
                b.file = f.group(1)
        found.append(b)
    return found


ALL_BLOCKS = [b for page in PAGES for b in blocks_of(page)]
PYTHON_BLOCKS = [b for b in ALL_BLOCKS if b.lang in ("python", "py")]
FILE_BLOCKS = [b for b in ALL_BLOCKS if b.file]


def test_the_docs_have_snippets():
    assert (REPO / "docs" / "README.md").is_file()
    assert len(PYTHON_BLOCKS) >= 10 and len(FILE_BLOCKS) >= 6


def _example_style(needs: str) -> str:
    assert needs.startswith("examples/"), f"needs: expects examples/STYLE, got {needs}"
    return needs.split("/", 1)[1].strip("/")


def run_block(b: Block, namespace: dict, example_build, monkeypatch) -> None:
    """Executes a python block into `namespace`, with the working directory and sys.path its
    markers ask for."""
    if b.gpu and not HAS_GPU:
        pytest.skip(f"{b.where} is marked <!-- gpu -->: {arrayport.runtime_info()['reason']}")
    if b.gpus and arrayport.cuda.device_count() < b.gpus:
        pytest.skip(f"{b.where} needs {b.gpus} CUDA devices, this machine has "
                    f"{arrayport.cuda.device_count()}")
    cwd = REPO
    if b.needs:
        build = example_build(_example_style(b.needs))
        cwd = build.parent
        monkeypatch.syspath_prepend(str(REPO / b.needs))  # the example's own Python modules (ctypes)
        monkeypatch.syspath_prepend(str(build))
    if b.file:
        namespace.setdefault("__file__", str(REPO / b.file))
        monkeypatch.syspath_prepend(str((REPO / b.file).parent))
    monkeypatch.chdir(cwd)
    saved_path = list(sys.path)
    try:
        exec(compile(b.code, b.where, "exec"), namespace)
    finally:
        sys.path[:] = saved_path


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.where)
def test_python_snippet_runs(block, example_build, monkeypatch):
    run_block(block, {"__name__": "__docs__"}, example_build, monkeypatch)


@pytest.mark.parametrize("block", FILE_BLOCKS, ids=lambda b: b.where)
def test_file_snippet_is_the_file(block):
    path = REPO / block.file
    assert path.is_file(), f"{block.where}: {block.file} does not exist"
    lines = path.read_text().splitlines()
    snippet = block.code.rstrip("\n").splitlines()
    n = len(snippet)
    assert any(lines[i:i + n] == snippet for i in range(len(lines) - n + 1)), (
        f"{block.where}: the snippet is not a contiguous run of {block.file}'s lines any more; "
        "copy it again from the file")


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.page != REPO / "README.md"
                                   and b.lang in COMPILED_LANGUAGES], ids=lambda b: b.where)
def test_compiled_language_snippets_in_docs_come_from_built_files(block):
    assert block.file, (f"{block.where}: a {block.lang} block needs a <!-- file: PATH --> marker "
                        "naming the file (built by the tests) it is taken from")


# ---- docs/errors.md: the bad-input table ---------------------------------------------------------

ERRORS = REPO / "docs" / "errors.md"


@dataclass
class ErrorRow:
    line: int
    what: str
    code: str
    raises: str
    where: str
    message: str


def _cell_code(cell: str) -> str:
    m = re.fullmatch(r"\s*`(.*)`\s*", cell)
    assert m, f"expected one `code` span, got {cell!r}"
    return m.group(1).replace("\\|", "|")


def error_rows() -> list[ErrorRow]:
    rows = []
    lines = ERRORS.read_text().splitlines()
    header = None
    for i, line in enumerate(lines, 1):
        if not line.startswith("|"):
            header = None if not line.strip() else header
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if set(line) <= set("|-: "):
            continue
        if header[:5] != ["bad input", "example", "raises", "where", "message contains"]:
            continue
        rows.append(ErrorRow(i, cells[0], _cell_code(cells[1]), cells[2].strip("`"), cells[3],
                             _cell_code(cells[4]) if cells[4] not in ("", "—") else ""))
    return rows


ERROR_ROWS = error_rows() if ERRORS.exists() else []


@pytest.fixture(scope="module")
def errors_namespace(example_build, request):
    """docs/errors.md's set-up blocks, run in order into one namespace."""
    namespace = {"__name__": "__docs__"}
    with pytest.MonkeyPatch.context() as mp:
        for b in blocks_of(ERRORS):
            if b.lang in ("python", "py") and not b.gpu:
                run_block(b, namespace, example_build, mp)
    return namespace


def _exception_type(name: str, namespace: dict) -> type:
    if name.startswith("arrayport."):
        return getattr(arrayport, name.split(".", 1)[1])
    t = getattr(builtins, name, None)
    assert isinstance(t, type) and issubclass(t, BaseException), f"unknown exception {name}"
    return t


def test_the_errors_table_has_a_row_per_class_of_bad_input():
    assert len(ERROR_ROWS) >= 30
    assert {r.where for r in ERROR_ROWS} <= {"any", "GPU", "no GPU"}


@pytest.mark.parametrize("row", ERROR_ROWS, ids=lambda r: f"errors.md:{r.line}")
def test_errors_table_row_raises_what_it_says(row, errors_namespace, monkeypatch):
    if row.where == "GPU" and not HAS_GPU:
        pytest.skip(f"a GPU-only row: {arrayport.runtime_info()['reason']}")
    if row.where == "no GPU" and HAS_GPU:
        pytest.skip("this row describes a machine without a usable GPU")
    monkeypatch.chdir(REPO)
    expected = _exception_type(row.raises, errors_namespace)
    with pytest.raises(BaseException) as info:
        exec(compile(row.code, f"docs/errors.md:{row.line}", "exec"), dict(errors_namespace))
    assert type(info.value) is expected, (
        f"{row.code}: expected {row.raises}, got {type(info.value).__name__}: {info.value}")
    assert row.message in str(info.value), f"{row.code}: {row.message!r} not in {str(info.value)!r}"


# ---- the README's C++ example: built against the installed package (CUDA), run on a GPU --------

needs_nvcc = pytest.mark.skipif(
    not arrayport.build_info()["cuda"] or not shutil.which("nvcc"),
    reason="the example is CUDA code: needs arrayport built with CUDA and nvcc on PATH")


def readme_cpp_example() -> str:
    blocks = re.findall(r"```cpp\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    assert blocks, "the README has a C++ example"
    return blocks[0]


@pytest.fixture(scope="module")
def example_exe(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("readme")
    source = tmp / "example.cu"
    source.write_text(readme_cpp_example())
    cmake_build(REPO / "tests" / "downstream" / "readme", tmp / "build", f"-DREADME_EXAMPLE={source}")
    return tmp / "build" / "readme_example"


@needs_nvcc
def test_readme_cpp_example_compiles_against_the_installed_package(example_exe):
    assert example_exe.is_file()


@needs_nvcc
@needs_gpu
def test_readme_cpp_example_runs_and_scales_every_element(example_exe):
    result = subprocess.run([str(example_exe)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
