"""A dict read from the program: its key set is guarded only when the trace depends on it all
(iteration, keys(), ==, copies, merges, changes); a lookup of a literal key guards only that key's
presence, and len() only the length. Every case compares with eager and counts compiles."""
import collections

import torch

import bytegraph
from bytegraph.testing import CompileCounter
from helpers import assert_same


def compiles(fn, calls):
    """Runs each call's arguments eagerly and compiled (same results, same arguments after); the
    compile count after each call."""
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    counts = []
    for make in calls:
        want_args, got_args = make(), make()
        assert_same(opt(*got_args), fn(*want_args))
        assert_same(got_args, want_args)
        counts.append(cnt.frame_count)
    return counts


def t():
    return torch.ones(2)


def test_lookups_guard_only_the_keys_looked_up():
    def f(d):
        if "b" in d:
            return d["b"] * 3
        return d["a"] + 1
    calls = [lambda: ({"a": t()},), lambda: ({"a": t(), "b": t()},), lambda: ({"b": t()},),
             lambda: ({"a": t()},), lambda: ({"a": t(), "z": 0},), lambda: ({"b": t(), "a": t(), "y": 1},)]
    assert compiles(f, calls) == [1, 2, 2, 2, 2, 2]


def test_get_with_default_guards_the_key_absent():
    def f(x, d):
        return x * d.get("scale", 2)
    calls = [lambda: (t(), {"bias": 1}), lambda: (t(), {"other": 1, "more": 2}), lambda: (t(), {"scale": 5}),
             lambda: (t(), {}), lambda: (t(), {"scale": 5, "bias": 0})]
    assert compiles(f, calls) == [1, 1, 2, 2, 2]


def test_len_guards_the_length_only():
    def f(x, d):
        return x * len(d) + d["a"]
    calls = [lambda: (t(), {"a": 1, "b": 2}), lambda: (t(), {"a": 1, "c": 2}), lambda: (t(), {"a": 1}),
             lambda: (t(), {"c": 2, "a": 1})]
    assert compiles(f, calls) == [1, 1, 2, 2]


def test_truth_guards_the_length():
    def f(x, d):
        return x + 1 if d else x - 1
    calls = [lambda: (t(), {"a": 1}), lambda: (t(), {"b": 1}), lambda: (t(), {}), lambda: (t(), {"a": 1, "b": 2})]
    assert compiles(f, calls) == [1, 1, 2, 3]


def test_iteration_guards_the_key_set():
    def f(x, d):
        y = d["a"] * x
        for k in d:
            y = y + len(k)
        return y
    calls = [lambda: (t(), {"a": 1, "bb": 2}), lambda: (t(), {"a": 1, "cc": 2}), lambda: (t(), {"a": 1, "cc": 2}),
             lambda: (t(), {"cc": 2, "a": 1})]
    assert compiles(f, calls) == [1, 2, 2, 3]


def test_keys_values_items_guard_the_key_set():
    def keys(x, d):
        return x + d.get("a", 0), list(d.keys())

    def values(x, d):
        return x + d.get("a", 0), len(list(d.values()))

    def items(x, d):
        return x + d.get("a", 0), [k for k, _ in d.items()]
    calls = [lambda: (t(), {"a": 1, "b": 2}), lambda: (t(), {"a": 1, "c": 2})]
    for fn in (keys, values, items):
        assert compiles(fn, calls) == [1, 2]


def test_equality_copy_and_merge_guard_the_key_set():
    def equal(x, d):
        return x + d["a"], d == {"a": 1, "b": 2}

    def copied(x, d):
        return x + d["a"], d.copy()

    def merged(x, d):
        return x + d["a"], {**d, "z": 0}
    calls = [lambda: (t(), {"a": 1, "b": 2}), lambda: (t(), {"a": 1, "c": 2})]
    for fn in (equal, copied, merged):
        assert compiles(fn, calls) == [1, 2]


def test_a_change_guards_the_key_set_and_is_written_back():
    def f(x, d):
        d["c"] = x + d["a"]
        return list(d)
    calls = [lambda: (t(), {"a": 1, "b": 2}), lambda: (t(), {"a": 1, "q": 2}), lambda: (t(), {"a": 1, "b": 2})]
    assert compiles(f, calls) == [1, 2, 2]


def test_a_lookup_then_a_break_then_iteration():
    def f(x, d):
        y = x + d["a"]
        torch._dynamo.graph_break()
        return y * len(sorted(d)[-1])
    calls = [lambda: (t(), {"a": 1, "b": 2}), lambda: (t(), {"a": 1, "cc": 2}), lambda: (t(), {"a": 1, "b": 2})]
    assert compiles(f, calls) == [2, 3, 3]    # (only the frame after the break iterates the keys)


def test_defaultdict_lacking_a_looked_up_key_is_not_changed_by_the_guards():
    def f(x, d):
        return x * d["n"]
    calls = [lambda: (t(), collections.defaultdict(int, {"n": 3, "m": 1})),
             lambda: (t(), collections.defaultdict(int, {"n": 3, "k": 1})),
             lambda: (t(), collections.defaultdict(int, {"m": 1}))]   # (eager adds "n": 0 here)
    assert compiles(f, calls) == [1, 1, 2]


def test_ordered_dict_order_is_guarded_when_iterated():
    def f(x, d):
        return x + d["a"], list(d)
    calls = [lambda: (t(), collections.OrderedDict(a=1, b=2)), lambda: (t(), collections.OrderedDict(b=2, a=1))]
    assert compiles(f, calls) == [1, 2]


def test_equal_keys_of_other_types():
    def f(x, d):
        return x * d[1]
    calls = [lambda: (t(), {1: 2.0, "s": 0}), lambda: (t(), {True: 2.0}), lambda: (t(), {1.0: 2.0, 2: 1})]
    assert compiles(f, calls) == [1, 1, 1]


def test_a_key_no_literal_names_guards_the_key_set():
    class Key:
        pass
    k = Key()

    def f(x, d):
        return x * d[k]
    calls = [lambda: (t(), {k: 2, "s": 0}), lambda: (t(), {k: 2, "r": 0})]
    assert compiles(f, calls) == [1, 2]


def test_nested_dicts():
    def f(x, cfg):
        return x * cfg["opt"]["lr"] + ("wd" in cfg["opt"])
    calls = [lambda: (t(), {"opt": {"lr": 2.0}, "name": "a"}), lambda: (t(), {"opt": {"lr": 2.0, "m": 1}, "seed": 1}),
             lambda: (t(), {"opt": {"lr": 2.0, "wd": 0}}), lambda: (t(), {"data": 1, "opt": {"lr": 2.0, "wd": 1}})]
    assert compiles(f, calls) == [1, 1, 2, 2]


def test_a_missing_key_raises_as_in_eager():
    def f(x, d):
        return x * d["a"]
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    assert_same(opt(t(), {"a": 2}), f(t(), {"a": 2}))
    for fn in (f, opt):
        try:
            fn(t(), {"b": 2})
            raise AssertionError("no KeyError")
        except KeyError as e:
            assert e.args == ("a",)


def test_a_keys_view_looked_up_or_measured_guards_like_the_dict():
    def member(x, d):
        return x + ("a" in d.keys())

    def length(x, d):
        return x * len(d.items())
    calls = [lambda: (t(), {"a": 1, "b": 2}), lambda: (t(), {"a": 1, "c": 2}), lambda: (t(), {"c": 2})]
    assert compiles(member, calls) == [1, 1, 2]
    assert compiles(length, calls) == [1, 1, 2]


def test_defaultdict_whose_key_set_is_guarded_is_not_changed_by_guards_or_their_explanation():
    # the key set's guard comes after the item guards: a read item's presence is checked before them,
    # and explaining the miss reads no item of a key found missing
    def f(x, d):
        n = len(list(d))
        return x * d["n"] + n
    calls = [lambda: (t(), collections.defaultdict(int, {"n": 3})),
             lambda: (t(), collections.defaultdict(int, {"m": 1}))]    # (eager: 1, then adds "n": 0)
    assert compiles(f, calls) == [1, 2]
