"""Real HuggingFace models (tiny configs, random weights, nothing downloaded) compile into exactly
one graph with no graph break, and give the same output as eager."""
import os
import sys

import bytegraph
import pytest
import torch
from bytegraph.testing import CompileCounter

transformers = pytest.importorskip("transformers")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
from models import build_model, output_tensors  # noqa: E402  (benchmarks/ is not a package)


def _assert_one_graph_equal_to_eager(name, seq_len=16):
    model, make_inputs = build_model(name)
    inputs = make_inputs(seq_len)
    cnt = CompileCounter()
    opt = bytegraph.compile(model, backend=cnt)
    with torch.no_grad():
        expected = model(**inputs)
        got = opt(**inputs)
    assert [str(b) for b in bytegraph.stats.break_records] == []
    assert cnt.frame_count == 1
    assert cnt.op_count > 20
    assert type(got) is type(expected)
    assert list(got.keys()) == list(expected.keys())
    for a, b in zip(output_tensors(got), output_tensors(expected), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # the compiled graph is reused on the next call with the same shapes
    with torch.no_grad():
        torch.testing.assert_close(output_tensors(opt(**inputs))[0], output_tensors(expected)[0], rtol=0, atol=0)
    assert cnt.frame_count == 1
    return model, make_inputs, opt, cnt


def test_tiny_gpt2_is_one_graph_equal_to_eager():
    _assert_one_graph_equal_to_eager("gpt2")


def test_tiny_bert_is_one_graph_equal_to_eager():
    _assert_one_graph_equal_to_eager("bert")


def test_model_output_dataclass_dict_built_in_traced_code():
    from transformers.modeling_outputs import BaseModelOutputWithPast

    def f(x):
        out = BaseModelOutputWithPast(last_hidden_state=x * 2)
        return out, out[0] + 1, out["last_hidden_state"], len(out), list(out.keys()), out.to_tuple()

    cnt = CompileCounter()
    x = torch.randn(3)
    got, expected = bytegraph.compile(f, backend=cnt)(x), f(x)
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records
    assert type(got[0]) is BaseModelOutputWithPast and next(iter(got[0].items()))[0] == "last_hidden_state"
    torch.testing.assert_close(got[0].last_hidden_state, expected[0].last_hidden_state)
    torch.testing.assert_close(got[1:4], expected[1:4])
    assert got[4] == expected[4] and len(got[5]) == 1


def test_sequence_length_change_recompiles_at_most_once():
    model, make_inputs = build_model("gpt2")
    cnt = CompileCounter()
    opt = bytegraph.compile(model, backend=cnt)   # dynamic=None: static first, then automatic dynamic
    with torch.no_grad():
        for seq_len in (16, 24, 32):
            inputs = make_inputs(seq_len)
            torch.testing.assert_close(output_tensors(opt(**inputs))[0], output_tensors(model(**inputs))[0])
    assert not bytegraph.stats.break_records
    assert cnt.frame_count <= 2
