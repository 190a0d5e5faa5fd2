"""Compile work that buys no graph is not spent: pure-Python frames are given up early and run as
written, loops over long sequences trace in time linear in what they do, a loop that breaks in each
iteration hands its iterator on in constant code size. Each test compares compiled with eager and
asserts what was captured (and what was given up)."""
import collections
import contextlib
import dis
import gc
import itertools

import pytest
import torch

import bytegraph
from bytegraph import _C
from bytegraph.frontend import resume
from bytegraph.probe import may_hold_tensors
from bytegraph.testing import CompileCounter

try:
    from _testcapi import type_get_version
except ImportError:
    type_get_version = None


def _break_kinds():
    return [r.kind for r in bytegraph.stats.break_records]


# -- a trace with no tensor gives up after config.max_instructions_without_tensors ----------------
def _pure_loop(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def test_pure_python_frame_is_given_up_and_runs_as_written():
    cnt = CompileCounter()
    opt = bytegraph.compile(_pure_loop, backend=cnt)
    with bytegraph.config.patch(max_instructions_without_tensors=2_000):
        assert opt(5_000) == _pure_loop(5_000)
        assert opt(6_000) == _pure_loop(6_000)
    assert cnt.frame_count == 0 and bytegraph.stats.frames_compiled == 0
    assert _break_kinds() == ["no_tensor_work"]          # traced once, then the code is skipped
    assert _C.is_skipped(_pure_loop.__code__)


def test_instructions_of_inlined_calls_count_toward_the_frame():
    """The work is in a helper the frame inlines: the frame's trace still gives up."""
    def outer(n):
        return [_pure_loop(n) for _ in range(3)]

    cnt = CompileCounter()
    with bytegraph.config.patch(max_instructions_without_tensors=2_000):
        assert bytegraph.compile(outer, backend=cnt)(1_000) == outer(1_000)
    assert cnt.frame_count == 0 and "no_tensor_work" in _break_kinds()


def test_a_tensor_early_keeps_a_long_python_loop_captured():
    def f(x, n):
        y = x + 1
        for i in range(n):
            y = y + i % 2
        return y

    cnt = CompileCounter()
    x = torch.ones(3)
    with bytegraph.config.patch(max_instructions_without_tensors=500):
        torch.testing.assert_close(bytegraph.compile(f, backend=cnt)(x, 300), f(x, 300))
    assert cnt.frame_count == 1 and cnt.op_count == 301 and not _break_kinds()


def test_tensor_work_after_a_short_python_prefix_is_captured():
    def f(x):
        k = _pure_loop(50)
        return x * k

    cnt = CompileCounter()
    x = torch.ones(3)
    with bytegraph.config.patch(max_instructions_without_tensors=2_000):
        torch.testing.assert_close(bytegraph.compile(f, backend=cnt)(x), f(x))
    assert cnt.frame_count == 1 and cnt.op_count == 1


def test_fullgraph_does_not_give_up_a_pure_python_frame():
    cnt = CompileCounter()
    with bytegraph.config.patch(max_instructions_without_tensors=500):
        assert bytegraph.compile(_pure_loop, backend=cnt, fullgraph=True)(400) == _pure_loop(400)
    assert bytegraph.stats.frames_compiled == 1 and not _break_kinds() and cnt.frame_count == 0


# -- a frame that compiled to no graph is not recompiled for calls without tensors ---------------
def _scale(n):
    return n * 3 + 1


def test_no_graph_frame_missing_without_tensors_runs_as_written():
    cnt = CompileCounter()
    opt = bytegraph.compile(_scale, backend=cnt)
    for n in (1, 2, 3, 2.5, 10**30):
        assert opt(n) == _scale(n)
    assert bytegraph.stats.frames_compiled == 1 and bytegraph.stats.recompiles == 0
    assert _C.is_skipped(_scale.__code__)


def test_no_graph_frame_called_with_a_tensor_compiles_a_graph():
    cnt = CompileCounter()
    opt = bytegraph.compile(_scale, backend=cnt)
    assert opt(2) == _scale(2)
    x = torch.arange(3.0)
    torch.testing.assert_close(opt(x), _scale(x))
    torch.testing.assert_close(opt(x + 1), _scale(x + 1))   # the graph's entry serves it
    assert cnt.frame_count == 1 and cnt.op_count == 2 and not _C.is_skipped(_scale.__code__)
    assert opt(5) == _scale(5)      # an entry holds a graph: the code keeps compiling
    assert bytegraph.stats.frames_compiled == 3


def test_no_graph_frame_called_with_an_object_holding_a_module_compiles_a_graph():
    class Holder:
        pass

    def run(h, n):
        if h.model is None:
            return n
        return h.model(torch.ones(1, 2)) * n

    cnt = CompileCounter()
    opt = bytegraph.compile(run, backend=cnt)
    h = Holder()
    h.model = None
    assert opt(h, 3) == run(h, 3)
    h.model = torch.nn.Linear(2, 2)
    torch.testing.assert_close(opt(h, 3), run(h, 3))
    assert cnt.frame_count == 1 and bytegraph.stats.frames_compiled == 2


def test_may_hold_tensors_looks_into_containers_and_plain_objects():
    class Plain:
        pass

    p = Plain()
    p.items = [1, (2, "x")]
    q = Plain()
    q.inner = {"m": torch.nn.Linear(1, 1)}
    assert not may_hold_tensors(p) and not may_hold_tensors(iter([1, 2])) and not may_hold_tensors(range(3))
    assert may_hold_tensors(q) and may_hold_tensors(iter([torch.ones(1)])) and may_hold_tensors(object())
    assert may_hold_tensors([(torch.ones(1),)]) and may_hold_tensors(q.inner["m"].forward)


def test_may_hold_tensors_does_not_traverse_extension_objects():
    # an extension type's traversal may visit what it does not own: get_referents on a TreeBuilder met
    # in CPython's test_xml_etree_c crashed the process. Its objects answer "may hold" unread;
    # __slots__ classes and the standard C containers are still looked into
    import functools
    import xml.etree.ElementTree as ET

    class Slotted:
        __slots__ = ("a",)

    s = Slotted()
    s.a = 1
    assert may_hold_tensors(ET.TreeBuilder()) and may_hold_tensors(ET.XMLParser())
    assert not may_hold_tensors(s) and not may_hold_tensors(functools.partial(len, "ab"))
    assert not may_hold_tensors(collections.deque([1])) and may_hold_tensors(collections.deque([torch.ones(1)]))


# -- loops over long sequences; a loop that breaks each iteration ------------------------------
def test_long_range_loop_is_traced_in_linear_time():
    """Taking an item of a range iterator is O(1): a loop of 10k iterations traces within the
    budget (it took minutes when each step copied the rest of the range)."""
    def f(x):
        total = 0
        for i in range(10_000):
            total += i
        return x + total

    cnt = CompileCounter()
    x = torch.ones(2)
    torch.testing.assert_close(bytegraph.compile(f, backend=cnt)(x), f(x))
    assert cnt.frame_count == 1 and cnt.op_count == 1


def _note(v):
    return v


note = bytegraph.disable(_note)


def test_loop_breaking_each_iteration_passes_its_range_as_a_range_iterator():
    """The rest of the range travels as `iter(range(1, n))`, never as its numbers: the resume
    function is handed a range iterator, whose range and index it guards (each compile costs the same
    for a range of 3,000 or of 10**12: CPython's test_xml_etree_c test_trashcan loops 200,000 times)."""
    def f(x, n):
        for i in range(n):
            x = x + i
            note(i)
            if i == 3:
                break
        return x

    for n in (3_000, 10 ** 12):
        bytegraph.reset()
        cnt = CompileCounter()
        x = torch.zeros(2)
        opt = bytegraph.compile(f, backend=cnt)
        torch.testing.assert_close(opt(x, n), f(x, n))
        torch.testing.assert_close(opt(x + 1, n), f(x + 1, n))
        assert cnt.frame_count == 4 and cnt.op_count == 4     # each iteration's add
        entry = _C.peek_cache(f.__code__)[0]
        assert len(entry.code.co_code) < 600
        assert range(1, n) in entry.code.co_consts
        assert not any(type(c) is tuple and len(c) > 100 for c in entry.code.co_consts)


def test_loop_over_a_tuple_argument_breaking_each_iteration_rereads_its_items():
    """In the resume function the remaining items are `base[k], base[k+1]...` of the tuple it was
    given, values not guarded: they travel as a slice read at run time, so another tuple of the same
    length gives its own values."""
    def f(x, items):
        for v in items:
            x = x + v
            note(v)
        return x

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.zeros(2)
    a = tuple(range(40))
    b = tuple(range(100, 140))
    torch.testing.assert_close(opt(x, a), f(x, a))
    torch.testing.assert_close(opt(x, b), f(x, b))
    assert cnt.frame_count >= 2


# -- guards over the items of a long list -----------------------------------------------------
def test_recompile_over_many_item_guards_names_the_changed_item():
    """Each source is compiled once per check function and read once per explanation (a miss of a
    frame guarded on thousands of items explained them by compiling each expression anew, for each
    entry, at every miss)."""
    def f(x, seq):
        return x + sum(seq)

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.ones(2)
    seq = list(range(2_000))
    torch.testing.assert_close(opt(x, seq), f(x, seq))
    seq2 = list(seq)
    seq2[1234] = -1
    torch.testing.assert_close(opt(x, seq2), f(x, seq2))
    torch.testing.assert_close(opt(x, seq), f(x, seq))      # the first entry still serves it
    assert cnt.frame_count == 2 and bytegraph.stats.recompiles == 1
    (_, reason), = bytegraph.stats.recompile_reasons
    assert "L['seq'][1234]" in reason and "-1" in reason


def test_sources_and_guards_keep_their_hash_and_equality():
    from bytegraph.guards.guard import Guard
    from bytegraph.guards.source import AttrSource, ItemSource, LocalSource
    a = ItemSource(AttrSource(LocalSource("x"), "items"), 3)
    b = ItemSource(AttrSource(LocalSource("x"), "items"), 3)
    assert a == b and hash(a) == hash(b) and hash(a) == hash(b)     # (the second from the kept value)
    assert a != ItemSource(AttrSource(LocalSource("x"), "items"), 4)
    assert len({Guard.constant(a, 5), Guard.constant(b, 5), Guard.constant(a, 6)}) == 2


def test_import_and_an_eager_compile_leave_networkx_unloaded():
    """Every full collection walks every object the process holds: bytegraph loads what only the
    inductor backend needs (networkx: ~16k objects) when that backend runs."""
    import subprocess
    import sys
    code = ("import sys, torch, bytegraph\n"
            "from bytegraph.testing import CompileCounter\n"
            "cnt = CompileCounter()\n"
            "assert bytegraph.compile(lambda x: x.relu() + 1, backend=cnt)(torch.ones(2)).tolist() == [2.0, 2.0]\n"
            "assert cnt.frame_count == 1 and cnt.op_count == 2\n"
            "print('networkx' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_remaining_constants_keep_their_types_and_signs():
    """The remaining items travel as one constant tuple: 1, 1.0, True, 0.0 and -0.0 stay apart."""
    seen = []
    record = bytegraph.disable(lambda v: seen.append((type(v), repr(v))))

    def f(x):
        for v in (1, 1.0, True, 0.0, -0.0, "s", None, 2):
            x = x + 1
            record(v)
        return x

    cnt = CompileCounter()
    x = torch.zeros(2)
    opt = bytegraph.compile(f, backend=cnt)
    torch.testing.assert_close(opt(x), f(x))
    compiled, eager = seen[:8], seen[8:]
    assert compiled == eager and cnt.frame_count >= 2
    consts = _C.peek_cache(f.__code__)[0].code.co_consts
    assert (1.0, True, 0.0, -0.0, "s", None, 2) in [c for c in consts if type(c) is tuple]


W = torch.ones(2)
LONG = False


def _weighted(a):
    if not LONG:
        return W * a
    total = 0.0
    for i in range(300):
        total = total + a * i
    return total


def test_symbolic_numbers_alone_do_not_keep_a_long_trace():
    """A recompile whose trace has only symbolic numbers (a float made dynamic) and no tensor after
    the budget is given up; the entries with graphs keep serving their calls."""
    global LONG
    cnt = CompileCounter()
    opt = bytegraph.compile(_weighted, backend=cnt)
    try:
        with bytegraph.config.patch(max_instructions_without_tensors=1_000):
            for a in (1.5, 2.5):
                torch.testing.assert_close(opt(a), _weighted(a))
            graphs = cnt.frame_count
            LONG = True
            for a in (3.5, 4.5):
                assert opt(a) == _weighted(a)
            LONG = False
            torch.testing.assert_close(opt(5.5), _weighted(5.5))    # served by the symbolic entry
    finally:
        LONG = False
    assert graphs == 2 and cnt.frame_count == 2 and "no_tensor_work" in _break_kinds()
    assert not _C.is_skipped(_weighted.__code__)


def test_may_hold_tensors_reads_slots():
    class Slotted:
        __slots__ = ("a", "b")

    s, t = Slotted(), Slotted()
    s.a = 1
    t.b = torch.ones(1)
    assert not may_hold_tensors(s) and may_hold_tensors(t)


def test_looking_for_tensors_changes_nothing():
    """The probe reads references the way the collector does: a `functools.partial` gets no
    `__dict__` (one with a dict is no longer flattened into the partial that wraps it, which
    CPython's test_functools checks), an instance's attributes are seen without making its dict."""
    import functools

    def work(p, n):
        return p(n) + 1

    inner = functools.partial(max, 0)
    cnt = CompileCounter()
    opt = bytegraph.compile(work, backend=cnt)
    for n in (1, 2, 3):
        assert opt(inner, n) == work(inner, n)
    assert bytegraph.stats.frames_compiled == 1 and _C.is_skipped(work.__code__)   # no tensor: as written
    assert functools.partial(inner, 5).func is max             # still flattened: inner has no dict
    assert may_hold_tensors(functools.partial(max, torch.ones(1)))


def test_generator_returns_walk_only_until_the_paused_generators_are_found():
    """Each inlined generator returning while a started generator is paused in a `with` (a
    contextmanager's) asks whether that one is still held: the walk went through every tracker the
    trace had made, at every return -- quadratic (CPython's test_compile walking a 10k-node AST in a
    subTest took 40 s). It stops at the paused generator, found near the frames holding it."""
    import contextlib

    from bytegraph.frontend import lifetimes

    @contextlib.contextmanager
    def section():
        try:
            yield
        finally:
            pass

    def children(node):
        yield from node

    def f(x, tree):
        seen = []
        with section():
            for node in tree:
                for child in children(node):
                    seen.append(child)
        return x + len(seen), seen

    walked = []
    real = lifetimes._reachable

    def counting(tx, roots, targets, **how):
        found = real(tx, roots, targets, **how)
        walked.append(len(found))
        return found
    tree = [[{"v": i, "w": [i, str(i)]} for i in range(3)] for _ in range(60)]
    cnt = CompileCounter()
    lifetimes._reachable = counting
    try:
        torch.testing.assert_close(bytegraph.compile(f, backend=cnt)(torch.ones(1), tree)[0], f(torch.ones(1), tree)[0])
    finally:
        lifetimes._reachable = real
    assert cnt.frame_count == 1 and len(walked) >= 60
    assert max(walked) < 40           # (a walk of everything grew with each node: over 1,000 by the end)


def test_guards_on_a_deeply_nested_value_list_each_source_once():
    """A resume function given a nested tuple guards each level (`L['t'][0][0]...`); listing the
    sources each guard reads compared every link with every one listed before (source equality is
    itself as deep as the chain): CPython's test_marshal with a 100-deep tuple compiled for 200 s."""
    import marshal

    from bytegraph.guards.source import ItemSource

    def f(x, data):
        t = marshal.loads(data)          # a builtin not traced: the frame breaks, t travels on
        return x + 1, t

    data = b")\x01" * 100 + b"N"
    compared = [0]
    real_eq = ItemSource.__eq__

    def counting_eq(self, other):
        compared[0] += 1
        return real_eq(self, other)
    cnt = CompileCounter()
    ItemSource.__eq__ = counting_eq
    try:
        got = bytegraph.compile(f, backend=cnt)(torch.ones(2), data)
    finally:
        ItemSource.__eq__ = real_eq
    want = f(torch.ones(2), data)
    assert torch.equal(got[0], want[0]) and got[1] == want[1]
    assert cnt.frame_count == 1 and bytegraph.stats.frames_compiled == 2   # the graph, after the break
    assert compared[0] < 10_000          # (26 million before)


# -- a frame that breaks N times copies the rest of its body at each break, not all of it ---------
@bytegraph.disable
def _opaque(t):
    return t * 1


def test_resume_functions_hold_only_the_code_after_their_break():
    """Each break of a frame makes a resume function; one holding the whole body made the compile
    time of a frame breaking N times grow as N x its length (CPython's test_future_stmt
    test_annotations, 160 breaks, ~10 s). The code no path from the break reaches is left out."""
    src = ["def f(x):"]
    for i in range(6):
        src += ["    x = _opaque(x)", f"    x = x + {i}"]
    src.append("    return x")
    ns = {"_opaque": _opaque}
    exec("\n".join(src), ns)
    f = ns["f"]
    cnt = CompileCounter()
    x = torch.ones(3)
    torch.testing.assert_close(bytegraph.compile(f, backend=cnt)(x), f(x))
    assert cnt.frame_count == 6 and cnt.op_count == 6 and len(_break_kinds()) == 6
    sizes = sorted(len(list(dis.get_instructions(c))) for c in resume.resume_codes_of(f.__code__))
    whole = len(list(dis.get_instructions(f.__code__)))
    assert len(sizes) == 6 and sizes == sorted(set(sizes))       # each shorter than the one before
    assert sizes[0] < whole // 4                                    # the last: its own tail and a prologue


def _loop_with_handler(x, log):
    n = 0
    for i in range(4):
        try:
            x = x + 1
            _opaque(x)                       # a break inside a loop, inside a try block
            if i % 2:
                raise ValueError(i)
        except ValueError as e:
            log.append(str(e))
            x = x * 2
        finally:
            n += 1
    return x, n


def test_resume_code_keeps_loops_and_handlers_reached_from_the_break():
    """What the resumed frame may still run -- the loop's backward jump, the `except` and `finally`
    bodies, on both paths -- stays in its code."""
    cnt = CompileCounter()
    opt = bytegraph.compile(_loop_with_handler, backend=cnt)
    got_log, want_log = [], []
    got, want = opt(torch.ones(2), got_log), _loop_with_handler(torch.ones(2), want_log)
    torch.testing.assert_close(got[0], want[0])
    assert got[1] == want[1] and got_log == want_log == ["1", "3"]
    assert cnt.frame_count >= 2 and cnt.op_count >= 2 and _break_kinds()
    whole = len(list(dis.get_instructions(_loop_with_handler.__code__)))
    codes = resume.resume_codes_of(_loop_with_handler.__code__)
    assert codes and all(len(list(dis.get_instructions(c))) < whole + 30 for c in codes)




class _Scaled:
    def scale(self, x):
        return x * 2


class _ScaledTwice(_Scaled):
    def scale(self, x):
        y = super().scale(x)
        y = _opaque(y)                       # a break between two zero-argument super() calls
        return super().scale(y) + 1


def _deep_stacks(x, log):
    total = x

    def read():                              # `total` is a cell: the resume bodies check it is bound
        return total
    with torch.no_grad():
        for i in range(3):
            try:
                total = _opaque(total + i)   # a break in a loop, a try block and a with block
                with contextlib.suppress(KeyError):
                    log.append(len(log) + _opaque(i))   # a break with values on the stack
            finally:
                log.append(i)
    if (total > 0).all():                    # a break on a tensor's value
        total = total + 1
    return _ScaledTwice().scale(total) + read()


def test_break_code_stack_sizes_come_from_the_template_not_an_analysis_of_the_code(monkeypatch):
    """Resume code is the original's instructions entered with the original's stack, and transformed
    code copies its template's: their stack sizes are the template's (plus what the break adds), and the
    assembled code, as long as the rest of the frame, is not analysed again at each break. Every size
    still covers the deepest path (checked by the full analysis afterwards)."""
    analysed = []
    full = resume.stack_size
    monkeypatch.setattr(resume, "stack_size", lambda code: analysed.append(code) or full(code))
    cnt = CompileCounter()
    opt = bytegraph.compile(_deep_stacks, backend=cnt)
    got_log, want_log = [], []
    got, want = opt(torch.ones(2), got_log), _deep_stacks(torch.ones(2), want_log)
    torch.testing.assert_close(got, want)
    assert got_log == want_log
    assert cnt.frame_count >= 4 and len(_break_kinds()) >= 8
    assert analysed == []
    codes = [_deep_stacks.__code__, _ScaledTwice.scale.__code__]
    codes += [c for code in list(codes) for c in resume.resume_codes_of(code)]
    made = [entry.code for code in codes for entry in _C.get_cache(code) or ()] + codes[2:]
    assert len(made) >= 8
    for code in made:
        assert code.co_stacksize >= full(code), code

# -- per-compile work a pure-Python frame does not need ---------------------------------------------
def _pure_with_break(items, n):
    items.append(n)
    print(len(items), file=_SINK)          # a graph break (print is not traced)
    items.append(n + 1)
    return sum(items)


_SINK = open(__import__("os").devnull, "w")


def test_a_frame_meeting_no_tensor_makes_no_fake_tensor_mode(monkeypatch):
    """The fake-tensor mode and its ShapeEnv are made when a tensor or symbol first needs them: the
    frames of pure-Python code (here one that breaks, and its resume function) make none."""
    from bytegraph.frontend import output_graph
    made = []
    real = output_graph.ShapeEnv
    monkeypatch.setattr(output_graph, "ShapeEnv", lambda *a, **k: made.append(1) or real(*a, **k))
    cnt = CompileCounter()
    got, want = [], []
    assert bytegraph.compile(_pure_with_break, backend=cnt)(got, 3) == _pure_with_break(want, 3)
    assert got == want == [3, 4]
    assert bytegraph.stats.frames_compiled == 2 and _break_kinds() and cnt.frame_count == 0
    assert made == []
    x = torch.ones(2)
    torch.testing.assert_close(bytegraph.compile(lambda t: t + 1, backend=cnt)(x), x + 1)
    assert cnt.frame_count == 1 and len(made) == 1


class _Finder:
    def __init__(self):
        self.mtime = 0


def _touch_all(x, finders, others):
    for f in finders:
        f.mtime = -1
    return x + others[0].mtime + others[1].mtime


def test_objects_written_are_kept_apart_by_guards_linear_in_their_number():
    """Each object the graph writes to must stay apart from the other objects of its class the trace
    reached (and its attribute dict from theirs): one check per group, not a guard per pair. A guard
    per pair made 45,000 guards for the 212 path finders `importlib.invalidate_caches()` resets
    (CPython's test_import: 7 s of compile per call of a three-line helper)."""
    from helpers import cache_entries
    bytegraph.reset()
    cnt = CompileCounter()
    opt = bytegraph.compile(_touch_all, backend=cnt)
    x = torch.ones(2)

    def args(alias=False, same_others=False):
        finders = [_Finder() for _ in range(200)]
        others = [finders[5] if alias else _Finder(), _Finder()]
        if same_others:
            others[1] = others[0]
        return x, finders, others

    for alias, same_others, frames in ((False, False, 1), (True, False, 2), (False, True, 2)):
        got, want = args(alias, same_others), args(alias, same_others)
        torch.testing.assert_close(opt(*got), _touch_all(*want))
        assert [f.mtime for f in got[1] + got[2]] == [f.mtime for f in want[1] + want[2]]
        # an aliased call (a written object also read as another) needs an entry of its own; read-only
        # objects may be one another (the first entry serves the third call)
        assert cnt.frame_count == frames, (alias, same_others, cnt.frame_count)
    guards = cache_entries(_touch_all)[-1].info.check.guards
    assert len(guards) < 1500, len(guards)      # (40,000 with a guard per pair)


# -- a frame reached from running code that can meet no tensor is skipped untraced -------------------
class _NeverEqual:
    def __eq__(self, other):
        return False


def _count_objects_around_compares(g):
    before = len(gc.get_objects())
    for _ in range(10):
        g == g                              # run natively: `__eq__` is a frame of its own
    return len(gc.get_objects()) - before


def _compare_in_a_call(x, g):
    # the call breaks (the collector is not traced) and so runs as Python
    return x * 2, _count_objects_around_compares(g)


def test_a_frame_reached_from_running_code_without_tensors_leaves_no_object_behind():
    """`g == g` run as Python calls `_NeverEqual.__eq__`, a frame that can meet no tensor (arguments,
    closure and the globals it names hold none): it is skipped at its first call without a trace, and
    nothing is stored for it that the collector sees (CPython's test_descr counts its objects around
    such calls)."""
    cnt = CompileCounter()
    x, g = torch.ones(3), _NeverEqual()
    y, new_objects = bytegraph.compile(_compare_in_a_call, backend=cnt)(x, g)
    want_y, want_new = _compare_in_a_call(x, g)
    torch.testing.assert_close(y, want_y)
    assert new_objects == want_new == 0
    assert cnt.frame_count == 1 and cnt.op_count == 1
    assert _C.is_skipped(_NeverEqual.__eq__.__code__)
    bytegraph.reset()                       # forgets the mark, as it does every other
    assert not _C.is_skipped(_NeverEqual.__eq__.__code__)


def _set_then_read_class_attribute(cls, t):
    cls.x = 1
    cls.x                                   # eager's lookup gives the class a new version tag
    return t + 1, type_get_version(cls)


@pytest.mark.skipif(type_get_version is None, reason="needs CPython's _testcapi")
def test_a_class_written_then_read_in_a_graph_gets_its_version_tag_as_in_eager():
    """Setting a class attribute resets the class's version tag and the next lookup assigns a new one;
    the trace models the lookup, so the write-back makes it again (the C API shows the tag)."""
    cnt = CompileCounter()
    opt = bytegraph.compile(_set_then_read_class_attribute, backend=cnt)
    t = torch.ones(2)
    got_cls, want_cls = type("Y", (), {"x": 1}), type("Y", (), {"x": 1})   # (the same value: no recompile)
    for _ in range(2):
        got, got_tag = opt(got_cls, t)
        want, want_tag = _set_then_read_class_attribute(want_cls, t)
        torch.testing.assert_close(got, want)
        assert want_tag != 0 and got_tag != 0 and got_cls.x == want_cls.x == 1
    assert cnt.frame_count == 1 and cnt.op_count == 1


def _double(v):
    return v * 2


def _apply(fn, ns):
    print("", file=_SINK)                   # not traced: a call of `_apply` from compiled code runs as Python
    return [fn(n) for n in ns]


def _doubles_natively(x, ns):
    return x + 1, _apply(_double, ns)


@pytest.mark.parametrize("compiled_first", [True, False])
def test_a_function_compiled_on_its_own_is_traced_even_when_first_reached_without_tensors(compiled_first):
    """`_double`, reached natively with an int from another compiled function, can meet no tensor
    there; compiled on its own (before or after that), it still gets its graph when called with a
    tensor."""
    cnt = CompileCounter()
    if compiled_first:
        opt_double = bytegraph.compile(_double, backend=cnt)
    x = torch.ones(2)
    torch.testing.assert_close(bytegraph.compile(_doubles_natively, backend=cnt)(x, [3]),
                               _doubles_natively(x, [3]))
    # traced as a compiled function's own code; or skipped untraced, until it is compiled on its own
    assert _C.is_skipped(_double.__code__) is not compiled_first
    if not compiled_first:
        opt_double = bytegraph.compile(_double, backend=cnt)
    torch.testing.assert_close(opt_double(x), _double(x))
    assert cnt.frame_count == 2 and cnt.op_count == 2


def _exhaust_a_tee(n):
    forward, backward = itertools.tee(itertools.repeat(None, n))
    found = any(forward)                    # n items taken within one instruction
    del backward
    return found


def test_items_taken_inside_a_builtin_count_toward_giving_up_a_pure_python_frame():
    """`any(it)` over a long iterator traced item by item used to count as one instruction: a pure-Python
    frame never gave up (CPython's test_itertools test_tee_del_backward, 20 million items, timed out)."""
    cnt = CompileCounter()
    opt = bytegraph.compile(_exhaust_a_tee, backend=cnt)
    with bytegraph.config.patch(max_instructions_without_tensors=2_000):
        assert opt(5_000) is _exhaust_a_tee(5_000) is False
    assert _break_kinds() == ["no_tensor_work"] and cnt.frame_count == 0
    assert _C.is_skipped(_exhaust_a_tee.__code__)
