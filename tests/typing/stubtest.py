"""mypy's stubtest for arrayport, taught to read nanobind's signatures.

stubtest compares each stub against ``inspect.signature`` of the runtime object, but nanobind's
functions (``nanobind.nb_func`` / ``nb_method``) carry no ``__text_signature__``: stubtest would
call them "not a function" and check nothing. nanobind records each signature, as its stubgen
prints it, in ``__nb_signature__`` with the default values themselves; this script turns that
into an ``inspect.Signature`` (names, kinds and defaults: what stubtest compares) and then runs
stubtest unchanged. Overloaded nanobind functions are left to stubtest's own handling.

    python tests/typing/stubtest.py arrayport arrayport._core arrayport.cuda arrayport.ops \
        --allowlist tests/typing/stubtest_allowlist.txt
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from typing import Any

import mypy.stubtest as stubtest

_NB_TYPES = ("nb_func", "nb_method", "nb_bound_method")
_DEFAULT = re.compile(r"\\(\d+)")  # nanobind writes the i-th default value as \i


def _is_nanobind_function(obj: Any) -> bool:
    t = type(obj)
    return t.__module__ == "nanobind" and t.__name__ in _NB_TYPES


def nanobind_signature(func: Any) -> inspect.Signature | None:
    """The signature nanobind recorded for `func`; None for overloads (several signatures)."""
    records = getattr(func, "__nb_signature__", None)
    if not records or len(records) != 1:
        return None
    text, _doc, defaults = records[0]
    source = _DEFAULT.sub(lambda m: f"__nb_default_{m.group(1)}", text) + ": ..."
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef), text
    a = fn.args

    def default(node: ast.expr | None) -> Any:
        if node is None:
            return inspect.Parameter.empty
        if isinstance(node, ast.Name) and node.id.startswith("__nb_default_"):
            return defaults[int(node.id[len("__nb_default_"):])]
        return ast.literal_eval(node)  # nb::sig(...) may spell defaults out

    P = inspect.Parameter
    positional = a.posonlyargs + a.args
    pos_defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = [
        P(arg.arg, P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD,
          default=default(d))
        for i, (arg, d) in enumerate(zip(positional, pos_defaults))
    ]
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    params += [P(arg.arg, P.KEYWORD_ONLY, default=default(d)) for arg, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


_safe_inspect_signature = stubtest.safe_inspect_signature
_is_probably_a_function = stubtest.is_probably_a_function
_verify_static_class_methods = stubtest._verify_static_class_methods
_verify_metaclass = stubtest._verify_metaclass


def safe_inspect_signature(runtime: Any) -> inspect.Signature | None:
    if _is_nanobind_function(runtime):
        return nanobind_signature(runtime)
    return _safe_inspect_signature(runtime)


def is_probably_a_function(runtime: Any) -> bool:
    return _is_nanobind_function(runtime) or _is_probably_a_function(runtime)


def verify_static_class_methods(stub: Any, runtime: Any, static_runtime: Any, object_path: list[str]) -> Any:
    # In a nanobind class's __dict__ a static method (def_static) is a plain nb_func, where
    # stubtest looks for a staticmethod object; instance methods are nb_method.
    if (type(static_runtime).__name__ == "nb_func" and _is_nanobind_function(static_runtime)
            and isinstance(stubtest._static_lookup_runtime(object_path[:-1]), type)):
        static_runtime = staticmethod(static_runtime)
    return _verify_static_class_methods(stub, runtime, static_runtime, object_path)


def verify_metaclass(stub: Any, runtime: type, object_path: list[str], **kwargs: Any) -> Any:
    # Every nanobind class has the metaclass nanobind.nb_type, an implementation detail that
    # stubs do not spell (as `type` for a plain class).
    meta = type(runtime)
    if meta.__module__ == "nanobind" and meta.__name__ == "nb_type":
        return iter(())
    return _verify_metaclass(stub, runtime, object_path, **kwargs)


stubtest.safe_inspect_signature = safe_inspect_signature
stubtest._verify_static_class_methods = verify_static_class_methods
stubtest._verify_metaclass = verify_metaclass
stubtest.is_probably_a_function = is_probably_a_function

if __name__ == "__main__":
    sys.exit(stubtest.main())
