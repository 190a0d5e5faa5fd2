"""Nothing of the user's runs at compile time unless eager would run it there; debug tooling and
internal errors never change what the program does. Each test compares compiled with eager and
asserts what was captured."""
import collections
import functools
import logging
import os
import sys
import types
import typing

import pytest
import torch

import bytegraph
from bytegraph.convert_frame import InternalError
from bytegraph.probe import safe_in, static_getattr, static_hasattr
from bytegraph.testing import CompileCounter
from helpers import same


def _run(fn, *args):
    """(compiled result, eager result, CompileCounter)."""
    cnt = CompileCounter()
    got = bytegraph.compile(fn, backend=cnt)(*args)
    return got, fn(*args), cnt


# -- dict subclasses whose own methods call each other (HuggingFace ModelOutput) ------------------
def test_ordereddict_subclass_getitem():
    class Out(collections.OrderedDict):
        def __getitem__(self, k):
            return dict(self.items())[k]

    def f(o):
        return o["a"] + 1

    o = Out(a=torch.ones(2))
    got, want, cnt = _run(f, o)
    assert torch.equal(got, want)
    assert cnt.frame_count == 1 and cnt.op_count == 1
    # the guards read the items with OrderedDict's own methods: a new value is seen
    o2 = Out(a=torch.full((2,), 3.0))
    assert torch.equal(bytegraph.compile(f, backend=cnt)(o2), f(o2))


def test_dict_subclass_overriding_keys_and_getitem_is_not_called_by_guards():
    calls = []

    class Out(dict):
        def keys(self):
            calls.append("keys")
            return super().keys()

        def __getitem__(self, k):
            calls.append("getitem")
            return super().__getitem__(k)

    def f(o):
        return o.get("a") * 2

    o = Out(a=torch.ones(2))
    want = f(o)
    eager_calls = list(calls)
    calls.clear()
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    assert torch.equal(opt(o), want)
    assert torch.equal(opt(o), want)          # the guard check runs too
    assert calls == eager_calls == []
    assert cnt.frame_count == 1 and cnt.op_count == 1


# -- super().same_name() rebuilt after a graph break -----------------------------------------------
def test_super_method_of_same_name_across_graph_break():
    class Base:
        def m(self):
            print("", end="")        # a graph break inside the inlined parent: the call is rebuilt
            return 1

    class Sub(Base):
        def m(self):
            y = torch.ones(2) * 2
            r = super().m()              # rebuilt as `self.m` this would call Sub.m again
            return r, y + 1

    s = Sub()
    ex = bytegraph.explain(s.m)()
    assert ex.graph_count >= 1 and ex.graph_break_count >= 1
    bytegraph.reset()
    cnt = CompileCounter()
    got, want = bytegraph.compile(s.m, backend=cnt)(), s.m()
    assert got[0] == want[0] and torch.equal(got[1], want[1])
    assert cnt.frame_count >= 1


def test_super_test_len_harness_pattern():
    list_tests = pytest.importorskip("test.list_tests")
    import unittest

    class ListTest(list_tests.CommonTest):
        type2test = list

        def test_len(self):
            super().test_len()
            self.assertEqual(len([]), 0)

    case = ListTest("test_len")
    eager = unittest.TestResult()
    case.run(eager)
    case.test_len = bytegraph.compile(case.test_len)
    compiled = unittest.TestResult()
    case.run(compiled)
    assert eager.wasSuccessful() and compiled.wasSuccessful(), compiled.errors


# -- bytegraph's own probes never run a user hook ---------------------------------------------------
def test_getattr_probes_run_no_user_getattr():
    log = []

    class T:
        def __getattr__(self, name):
            log.append(name)
            return 42

    def g(t, x):
        return x + t.spam

    t, x = T(), torch.ones(2)
    g(t, x)
    eager = list(log)
    log.clear()
    cnt = CompileCounter()
    got = bytegraph.compile(g, backend=cnt)(t, x)
    assert torch.equal(got, x + 42)
    assert log == eager == ["spam"]
    assert cnt.frame_count == 1 and cnt.op_count == 1


def test_probes_run_no_property_hash_eq_or_metaclass_getattr():
    log = []

    class Meta(type):
        def __getattr__(cls, name):
            log.append(("meta", name))
            raise AttributeError(name)

    class Obj(metaclass=Meta):
        @property
        def never(self):
            log.append("property")
            return 1

        def __hash__(self):
            log.append("hash")
            return 0

        def __eq__(self, other):
            log.append("eq")
            return False

        def __call__(self, x):
            return x * 3

    def f(obj, x):
        return obj(x) + 1

    obj, x = Obj(), torch.ones(2)
    want = f(obj, x)
    eager = list(log)
    log.clear()
    cnt = CompileCounter()
    got = bytegraph.compile(f, backend=cnt)(obj, x)
    assert torch.equal(got, want)
    assert log == eager == []
    assert cnt.frame_count == 1 and cnt.op_count == 2


def test_probe_helper_answers_without_user_code():
    log = []

    class P:
        x = 1

        def __getattr__(self, name):
            log.append(name)
            return True

        @property
        def prop(self):
            log.append("prop")
            return 2

        def __hash__(self):
            log.append("hash")
            return 1

    p = P()
    assert static_getattr(p, "_bytegraph_disabled") is None
    assert static_getattr(p, "prop", "absent") == "absent"
    assert static_getattr(p, "x") == 1 and static_hasattr(p, "x")
    assert not safe_in(p, {1: None})
    assert static_getattr(torch.add, "__name__") == "add"
    assert log == []


def test_module_getattr_raising_other_than_attributeerror():
    mod = types.ModuleType("bytegraph_test_weird_mod")

    def __getattr__(name):
        raise RuntimeError(f"no {name}")
    mod.__getattr__ = __getattr__
    sys.modules[mod.__name__] = mod
    try:
        def f(x):
            m = sys.modules["bytegraph_test_weird_mod"]
            return x + 1, m is mod

        got, want, cnt = _run(f, torch.ones(1))
        assert got[1] is want[1] is True and torch.equal(got[0], want[0])
        assert cnt.frame_count == 1 and cnt.op_count == 1
    finally:
        del sys.modules[mod.__name__]


def test_user_getattr_raising_inside_the_frame_propagates():
    class B:
        def __getattr__(self, name):
            raise ValueError("from __getattr__")

    def h(x):
        try:
            return x + 1, hasattr(B(), "b")
        except ValueError as e:
            return x + 2, str(e)

    class C:
        def __getattr__(self, name):
            raise SyntaxError

    def h2(x):
        try:
            C().x
        except SyntaxError:
            return x * 2, "SyntaxError"

    for fn in (h, h2):
        bytegraph.reset()
        got, want, cnt = _run(fn, torch.ones(1))
        assert got[1] == want[1] and torch.equal(got[0], want[0])
        assert cnt.frame_count >= 1


# -- functions made inside the frame ----------------------------------------------------------------
SRC = """
Y = 'Y of the exec namespace'
def f(x):
    def inner():
        return Y
    return x + 1, inner
"""


@pytest.mark.parametrize("ns", [{"__name__": "__main__"}, {}, {"__name__": "not_a_module"}],
                         ids=["named_main", "no_name", "missing_module"])
def test_nested_function_keeps_exec_globals(ns):
    exec(SRC, ns)
    f = ns["f"]
    got, want, cnt = _run(f, torch.ones(1))
    assert got[1]() == want[1]() == "Y of the exec namespace"
    assert got[1].__globals__ is ns
    assert torch.equal(got[0], want[0]) and cnt.frame_count == 1 and cnt.op_count == 1


def test_nested_function_keeps_annotations():
    def f(x):
        def inner_has_pos_only():
            def g(y: int, /) -> str: ...
            return g
        return x + 1, inner_has_pos_only()

    got, want, cnt = _run(f, torch.ones(1))
    assert got[1].__annotations__ == want[1].__annotations__ == {"y": int, "return": str}
    assert cnt.frame_count == 1 and cnt.op_count == 1

    def g(x):
        def inner(a: int, b: "str") -> float: ...
        return x * 2, inner.__annotations__

    got, want, cnt = _run(g, torch.ones(1))
    assert got[1] == want[1] and torch.equal(got[0], want[0]) and cnt.frame_count >= 1


def test_singledispatch_register_by_annotation():
    def h(x):
        @functools.singledispatch
        def fun(arg):
            return "default"

        @fun.register
        def _(arg: int):
            return "int"
        return x + 1, fun(1), fun("s")

    got, want, cnt = _run(h, torch.ones(1))
    assert got[1:] == want[1:] == ("int", "default") and torch.equal(got[0], want[0])
    assert cnt.frame_count >= 1


# -- debug tooling never changes what the program does ---------------------------------------------
def _kw_call(x):
    y = x.sin() * 2
    print("", end="")
    return y.cos() + 1


def test_debug_dir_with_keyword_call(tmp_path):
    cnt = CompileCounter()
    x = torch.randn(4)
    with bytegraph.config.patch(compile_debug=True, debug_dir=str(tmp_path)):
        got = bytegraph.compile(_kw_call, backend=cnt)(x)
    assert torch.allclose(got, _kw_call(x))
    assert cnt.frame_count == 2
    rendered = [open(os.path.join(d, "transformed_code.py")).read() for d, _, files in os.walk(tmp_path)
                if "transformed_code.py" in files]
    assert any("end=" in text for text in rendered)


def test_debug_dir_failure_is_logged_once_and_ignored(tmp_path, monkeypatch, caplog):
    from bytegraph import bytecode_source

    def broken(code):
        raise RuntimeError("renderer broke")
    monkeypatch.setattr(bytecode_source, "transformed_source", broken)
    cnt = CompileCounter()
    x = torch.randn(4)
    with caplog.at_level(logging.WARNING, logger="bytegraph"), \
            bytegraph.config.patch(compile_debug=True, debug_dir=str(tmp_path)):
        got = bytegraph.compile(_kw_call, backend=cnt)(x)
    assert torch.allclose(got, _kw_call(x))
    assert cnt.frame_count == 2
    warnings = [r for r in caplog.records if "transformed_code.py" in r.getMessage()]
    assert len(warnings) == 1 and "renderer broke" in warnings[0].getMessage()


# -- internal errors: one warning and eager, or InternalError under strict behaviour ---------------
def _explode(self):
    raise KeyError("internal")


def test_internal_error_falls_back_with_one_warning(monkeypatch, caplog):
    from bytegraph.frontend.frame_translator import InstructionTranslator
    monkeypatch.setattr(InstructionTranslator, "trace", _explode)
    calls = []

    def target(x):
        calls.append(1)
        return x + 1

    x = torch.ones(2)
    cnt = CompileCounter()
    with caplog.at_level(logging.WARNING, logger="bytegraph"), bytegraph.config.patch(strict=False):
        opt = bytegraph.compile(target, backend=cnt)
        assert torch.equal(opt(x), target(x))
        assert torch.equal(opt(x), x + 1)
    assert len(calls) == 3 and cnt.frame_count == 0
    warnings = [r.getMessage() for r in caplog.records if "internal error" in r.getMessage()]
    assert len(warnings) == 1 and "target" in warnings[0] and "report" in warnings[0]

    bytegraph.reset()
    with bytegraph.config.patch(strict=True), pytest.raises(InternalError, match="target"):
        bytegraph.compile(target, backend=cnt)(x)


def test_tuple_subclass_overriding_len_is_not_probed():
    log = []

    class T(tuple):
        def __len__(self):
            log.append("len")
            return tuple.__len__(self)

        def __getitem__(self, i):
            log.append("getitem")
            return tuple.__getitem__(self, i)

    def f(t, x):
        return x + 1, type(t).__name__

    t, x = T((1, 2)), torch.ones(2)
    want = f(t, x)
    log.clear()
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    got = opt(t, x)
    got = opt(t, x)
    assert got[1] == want[1] and torch.equal(got[0], want[0])
    assert log == []
    assert cnt.frame_count == 1 and cnt.op_count == 1


# -- operators on classes and enum members: their Python methods run on every call ----------------
_CALLS = []


class _Listed:
    def __class_getitem__(cls, item):
        _CALLS.append(("class_getitem", item))
        return [item]                       # a new list on every call


class _Meta(type):
    def __getitem__(cls, item):
        _CALLS.append(("getitem", item))
        if item == 0:
            raise ValueError("zero")
        return item

    def __or__(cls, other):
        _CALLS.append("or")
        return (cls, other)

    def __bool__(cls):
        _CALLS.append("bool")
        return False


class _WithMeta(metaclass=_Meta):
    pass


def _operators_on_classes(x):
    listed = _Listed[1]
    listed.append(len(_CALLS))
    try:
        _WithMeta[0]
        caught = None
    except ValueError as e:
        caught = str(e)
    return x + 1, listed, caught, _WithMeta[2], _WithMeta | int, list[int], dict[str, int]


def test_operators_a_class_defines_in_python_run_on_every_call():
    # `cls[item]` and `cls | other` were folded at compile time: the class's `__class_getitem__` and
    # the metaclass's methods ran once, while compiling (and once more for a raise), their result (a
    # new list) was one constant shared by every call, and their exceptions were bytegraph's
    x = torch.ones(2)
    cnt = CompileCounter()
    opt = bytegraph.compile(_operators_on_classes, backend=cnt)
    for _ in range(2):
        _CALLS.clear()
        got, got_calls = opt(x), list(_CALLS)
        _CALLS.clear()
        want, want_calls = _operators_on_classes(x), list(_CALLS)
        assert same(got, want) and got_calls == want_calls
    assert cnt.frame_count == 1 and cnt.op_count == 1
    assert bytegraph.explain(_operators_on_classes)(x).graph_break_count == 0


def _truth_of_a_class(x):
    return x + 1 if _WithMeta else x - 1


def test_truth_of_a_class_whose_metaclass_defines_bool_runs_it():
    # `bool(cls)` was folded: the metaclass's __bool__ ran once, while compiling
    x = torch.ones(2)
    _CALLS.clear()
    want = _truth_of_a_class(x)
    assert _CALLS == ["bool"]
    cnt = CompileCounter()
    opt = bytegraph.compile(_truth_of_a_class, backend=cnt)
    for _ in range(2):
        _CALLS.clear()
        assert torch.equal(opt(x), want) and _CALLS == ["bool"]
    assert cnt.frame_count == 1        # the metaclass's __bool__ traced: the branch taken is guarded


def _forward_reference(x, text):
    y = x * 2
    try:
        typing.Generic[text]            # typing compiles the string: SyntaxError, raised while handling one
    except SyntaxError as e:
        return y + 1, str(e), type(e.__context__).__name__
    return y - 1, None, None


def _optional_of(text):
    try:
        return typing.Optional[text]
    except SyntaxError as e:
        return str(e), type(e.__context__).__name__


def test_an_exception_a_folded_call_raises_with_a_context_runs_as_python():
    # typing's subscripts are folded (annotations are constants); the SyntaxError typing raises for '/T'
    # came out of compiling as an internal error, and a folded exception is rebuilt from its arguments
    # alone, without this one's context (CPython's test_typing.ForwardRefTests.test_syntax_error)
    x = torch.ones(2)
    want = _forward_reference(x, "/T")
    assert want[2] == "SyntaxError"
    got, _, cnt = _run(_forward_reference, x, "/T")
    assert same(got, want)
    assert cnt.frame_count == 1                        # `x * 2`; the subscript runs as Python
    reasons = [b.reason for b in bytegraph.explain(_forward_reference)(x, "/T").break_reasons]
    assert reasons == ["SyntaxError raised with more than its arguments (a context, attributes) by a folded "
                       "call is not supported"]
    # an annotation object's subscript (no checkpoint before an operator on constants: the frame runs as is)
    assert bytegraph.compile(_optional_of, backend="eager")("/T") == _optional_of("/T")
    assert bytegraph.compile(_optional_of, backend="eager")("T") == _optional_of("T")


# -- process-wide state the compiler touches -------------------------------------------------------
def test_compile_reads_no_source_lines_into_linecache():
    # torch's FakeTensorMode records the stack it is made on, reading every frame's source line into
    # the process-wide linecache; a program that cleared it and reads it lazily saw the compiler's
    # reads (CPython's test_traceback.test_lookup_lines)
    import linecache

    def f(x):
        linecache.clearcache()
        y = x + 1
        bytegraph.graph_break()         # the resume function is compiled here, after the clear
        return y * 2, sorted(linecache.cache)

    got, want, cnt = _run(f, torch.ones(1))
    assert want[1] == [] and got[1] == []
    assert torch.equal(got[0], want[0])
    assert cnt.frame_count == 2


def test_compile_reads_no_source_while_the_program_patches_open():
    # torch's FakeTensorMode reads the source line of every frame on the stack when made, through
    # tokenize's `open`: a program that patched it (CPython's test_tokenize mocks it) made the
    # compile fail (an internal error in strict mode, one the program could catch otherwise)
    import io
    import linecache
    import tokenize
    from unittest import mock

    closed = io.BytesIO(b"")
    closed.close()                        # (reading it raises ValueError, which linecache lets through)

    def f(x):
        linecache.clearcache()            # (lines already read would not be read again)
        with mock.patch("tokenize._builtin_open", return_value=closed):
            y = x + 1
            bytegraph.graph_break()      # the resume function compiles while open is patched
            return y * 2

    got, want, cnt = _run(f, torch.ones(1))
    assert torch.equal(got, want) and tokenize._builtin_open is open
    assert cnt.frame_count == 2


# -- metaclass properties ---------------------------------------------------------------------------
class _Ticking(type):
    ticks_read = 0

    @property
    def ticks(cls):
        _Ticking.ticks_read += 1
        return _Ticking.ticks_read


class _Ticked(metaclass=_Ticking):
    ticks = "shadowed: the metaclass's property answers first"


def test_metaclass_property_runs_when_the_program_reads_it():
    # it ran at compile time and in every guard check (a call saw 6, 7 where eager saw 3, 4)
    def f(x):
        return x + 1, _Ticked.ticks, _Ticked.ticks

    _Ticking.ticks_read = 0
    want = [f(torch.ones(1)) for _ in range(2)]
    _Ticking.ticks_read = 0
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    got = [opt(torch.ones(1)) for _ in range(2)]
    assert [g[1:] for g in got] == [w[1:] for w in want] == [(1, 2), (3, 4)]
    assert cnt.frame_count == 1      # x + 1, compiled once; the reads run as Python
    # (the property is traced when read; its write to an attribute of its metaclass breaks)
    assert "attribute_write" in {r.kind for r in bytegraph.stats.break_records}


def test_metaclass_dict_property_is_never_run_by_the_compiler():
    # the compiler read classes' namespaces with `vars(klass)`: a metaclass's `__dict__` property ran
    # (and returned None: an internal error; CPython's test_inspect.test_metaclass_dict_as_property)
    import inspect

    class Meta(type):
        @property
        def __dict__(self):
            self.executed = True

    class Thing(metaclass=Meta):
        executed = False

        def __init__(self):
            self.spam = 42

    def f(x):
        instance = Thing()
        return x + 1, inspect.getattr_static(instance, "spam"), Thing.executed

    got, want, cnt = _run(f, torch.ones(1))
    assert torch.equal(got[0], want[0]) and got[1:] == want[1:] == (42, False)
    assert cnt.frame_count == 1


def test_missing_annotations_are_made_when_the_program_reads_them():
    # reading a module's (or a class's) missing __annotations__ stores a new dict in its namespace:
    # it was done at compile time, before the program looked (CPython's test_module)
    import types

    class Base:
        x: int

    class Derived(Base):
        pass

    def f(x, mod, cls):
        seen = ["__annotations__" in mod.__dict__, "__annotations__" in cls.__dict__]
        ann = mod.__annotations__, cls.__annotations__
        seen += ["__annotations__" in mod.__dict__, "__annotations__" in cls.__dict__]
        return x + 1, seen, ann

    want = f(torch.ones(1), types.ModuleType("m"), type("D", (Base,), {}))
    got, _, cnt = _run(f, torch.ones(1), types.ModuleType("m"), Derived)
    assert torch.equal(got[0], want[0]) and got[1:] == want[1:] == ([False, False, True, True], ({}, {}))
    assert cnt.frame_count == 1


# -- the program's warning registries -------------------------------------------------------------------
def _warn_once():
    import warnings
    warnings.warn("shown once at this line", UserWarning)


def _lazy_call(x):
    return torch.nn.LazyLinear(2)(x)


def _mixed_dtypes(x):
    return x + x.double()     # (checked on stand-ins: eager_check.py)


def _numpy_call(x):
    import numpy as np
    return torch.from_numpy(np.sin(x.numpy()))   # (probed on stand-ins: variables/numpy.py)


@pytest.mark.parametrize("fn", [_lazy_call, _mixed_dtypes, _numpy_call])
def test_compiling_leaves_the_warning_registries_alone(fn):
    # `warnings.catch_warnings()` at compile time bumps the filters' version, which resets every module's
    # registry: a warning eager shows once would show again after a compile
    import warnings
    shown = []
    cnt = CompileCounter()
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = lambda message, *args, **kwargs: shown.append(str(message))
        _warn_once()
        bytegraph.compile(fn, backend=cnt)(torch.randn(2, 3))
        _warn_once()
    assert shown == ["shown once at this line"]
    assert cnt.frame_count >= 1
