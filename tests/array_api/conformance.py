"""Run the Array API standard's conformance suite (data-apis/array-api-tests) against
arrayport.array_api and tabulate, function by function, what passed.

    python tests/array_api/conformance.py PATH/TO/array-api-tests [--max-examples N] [--json F]

PATH is a clone of https://github.com/data-apis/array-api-tests with its array-api submodule
(the spec) checked out; the suite needs pytest, hypothesis, ndindex and pytest-json-report. A
function the namespace lacks fails its tests with "is not defined": those count as not
attempted, so the table shows what arrayport implements and how much of it conforms.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument("suite", type=Path)
ARGS.add_argument("--max-examples", type=int, default=100)
ARGS.add_argument("--json", type=Path, help="write the per-function counts here")
ARGS.add_argument("--raw", type=Path, help="keep pytest-json-report's report here")
ARGS.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")

# The parametrised ids name the function or Array method first: "add(x1, x2)", "__iadd__(x1, x2)",
# "abs(x_i is NaN) -> NaN", "elementwise-add", "__abs__"; an operator maps to its function.
_DUNDER = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
           "floordiv": "floor_divide", "mod": "remainder", "pow": "pow", "and": "bitwise_and",
           "or": "bitwise_or", "xor": "bitwise_xor", "eq": "equal", "ne": "not_equal",
           "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
           "matmul": "matmul", "neg": "negative", "pos": "positive", "abs": "abs",
           "invert": "bitwise_invert", "lshift": "bitwise_left_shift",
           "rshift": "bitwise_right_shift"}


def function_of(nodeid: str) -> str:
    """The standard's function (or Array method) a test id is about."""
    test, _, param = nodeid.split("::")[-1].partition("[")
    word = re.match(r"(?:([a-z_]+)-)?(__\w+?__|[a-z_0-9]+)(?:\(|\]|$)", param)
    if not word or re.fullmatch(r"dtype\d+|\d+", word.group(2)):
        # The test's own name, or the function it starts with (where_with_scalars: where).
        name = test.removeprefix("test_")
        known = [f for f in _spec_names() if name.startswith(f + "_")]
        return max(known, key=len) if known else name
    category, name = word.groups()
    if category in ("linalg", "fft"):  # the extensions' functions, which arrayport lacks
        return f"{category}.{name}"
    if name.startswith("__"):
        inner = name.strip("_")
        base = inner[1:] if inner[:1] in "ir" and inner[1:] in _DUNDER else inner
        return _DUNDER.get(base, name)
    return name


def kind(name: str) -> str:
    """"function": one of the standard's that arrayport.array_api has (or an Array method);
    "absent": one it lacks; "suite": a test of the suite's own (signatures, dtypes, ...)."""
    import arrayport.array_api as xp
    from arrayport import Array

    if name.startswith("__"):
        return "function" if hasattr(Array, name) or hasattr(xp, name) else "absent"
    if hasattr(xp.__array_namespace_info__(), name):  # devices, dtypes, ...
        return "function"
    if "." in name or name.startswith(("linalg_", "fft_")):  # the extensions
        return "absent"
    if name in set(_spec_names()):
        return "function" if hasattr(xp, name) or hasattr(Array, name) else "absent"
    return "suite"


@functools.lru_cache(maxsize=1)
def _spec_names() -> list[str]:
    from array_api_tests import stubs  # the suite's own list, parsed from the spec

    return list(stubs.name_to_func) + list(_DUNDER.values())


def main() -> int:
    args = ARGS.parse_args()
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="arrayport.array_api")
    with tempfile.TemporaryDirectory() as tmp:
        report = args.raw or Path(tmp) / "report.json"
        subprocess.run([sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p",
                        "no:cacheprovider", "--max-examples", str(args.max_examples),
                        "--json-report", f"--json-report-file={report}", "--tb=no",
                        *args.pytest_args], cwd=args.suite, env=env, check=False)
        tests = json.loads(report.read_text())["tests"]
    sys.path.insert(0, str(args.suite))
    os.environ["ARRAY_API_TESTS_MODULE"] = "arrayport.array_api"
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for t in tests:
        counts[function_of(t["nodeid"])][t["outcome"]] += 1
    rows = {f: dict(c) for f, c in sorted(counts.items())}
    kinds = {f: kind(f) for f in rows}
    print("\n| function | tests | passed | failed | skipped |\n|---|---:|---:|---:|---:|")
    for f, c in rows.items():
        if kinds[f] == "function":
            print(f"| `{f}` | {sum(c.values())} | {c.get('passed', 0)} | {c.get('failed', 0)} | "
                  f"{c.get('skipped', 0)} |")
    for k in ("function", "suite"):
        picked = [c for f, c in rows.items() if kinds[f] == k]
        total = {o: sum(c.get(o, 0) for c in picked) for o in ("passed", "failed", "skipped")}
        failing = [f for f, c in rows.items() if kinds[f] == k and c.get("failed")]
        print(f"\n{k} tests ({len(picked)} {'functions' if k == 'function' else 'names'}): "
              f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped; "
              f"failing: {', '.join(failing) or 'none'}")
    # One name per missing function: has_names' "linalg-cholesky", the linalg tests' own
    # "linalg_cholesky" and the top-level "cholesky" are one.
    absent = sorted({re.sub(r"^(linalg|fft)[._]", "", f) for f in rows if kinds[f] == "absent"})
    print(f"\nnot in arrayport.array_api ({len(absent)}): {', '.join(absent)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
