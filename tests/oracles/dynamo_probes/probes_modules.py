"""nn.Module behaviours: attribute reads, submodules, containers of modules, the training flag, parameters and
buffers, super() and forward overrides, modules changed inside the compiled code and between calls."""
import collections
import types

import torch
import torch.nn.functional as F
from torch import nn

from . import probe
from ._modstate import Box


def _x():
    return torch.randn(2, 4)


def with_mod(make):
    """make_args: a Box holding the module `make()` builds (fresh per run) as `m`, and an input."""
    return lambda: (Box(m=make()), _x())


class Basic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = torch.randn(1, 4)

    def forward(self, x):
        return F.relu(self.lin(x)) * self.scale


class TwoBasic(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Basic()
        self.b = Basic()
        self.scale = torch.randn(1, 4)

    def forward(self, x):
        return self.b(self.a(x)) * self.scale


@probe(with_mod(Basic))
def basic_module(b, x):
    return b.m(x)


@probe(with_mod(TwoBasic))
def nested_submodules(b, x):
    return b.m(x)


class HelperTakesModule(TwoBasic):
    def apply_scaled(self, mod, x):
        return mod(x) * self.scale

    def forward(self, x):
        return self.apply_scaled(self.a, x) + self.apply_scaled(self.b, x)


@probe(with_mod(HelperTakesModule))
def method_given_submodule(b, x):
    return b.m(x)


class StaticFwd(nn.Module):
    @staticmethod
    def forward(x):
        return x * torch.sigmoid(x)


class HoldsStaticFwd(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = StaticFwd()

    def forward(self, x):
        return self.inner(x)


@probe(with_mod(HoldsStaticFwd))
def static_forward_submodule(b, x):
    return b.m(x)


class StaticHelper(TwoBasic):
    @staticmethod
    def helper(scale, mod, x):
        return mod(x) * scale

    @classmethod
    def chelper(cls, scale, mod, x):
        return mod(x) * scale + len(cls.__name__)

    def forward(self, x):
        return self.helper(self.scale, self.a, x) + self.chelper(self.scale, self.b, x)


@probe(with_mod(StaticHelper))
def static_and_class_helpers(b, x):
    return b.m(x)


class FnAttr(nn.Module):
    def __init__(self, act=F.relu):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = act

    def forward(self, x):
        x = self.lin(x)
        if self.act:
            x = self.act(x)
        if self.act is None:
            x = torch.sigmoid(x)
        return x


@probe(with_mod(FnAttr))
def function_attribute(b, x):
    return b.m(x)


@probe(with_mod(lambda: FnAttr(None)))
def function_attribute_none(b, x):
    return b.m(x)


def _swap_act(b, x):
    b.m.act = torch.tanh


@probe(with_mod(FnAttr), between=_swap_act)
def function_attribute_swapped_between_calls(b, x):
    return b.m(x)


def _act_to_none(b, x):
    b.m.act = None


@probe(with_mod(FnAttr), between=_act_to_none)
def function_attribute_set_none_between_calls(b, x):
    return b.m(x)


class CountLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.count = 3

    def forward(self, x):
        for _ in range(self.count):
            x = torch.sigmoid(self.lin(x))
        return x


@probe(with_mod(CountLoop))
def int_attribute_loop(b, x):
    return b.m(x)


def _count_down(b, x):
    b.m.count -= 1


@probe(with_mod(CountLoop), between=_count_down, calls=3)
def int_attribute_changed_between_calls(b, x):
    return b.m(x)


class TrainBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 4)
        self.l2 = nn.Linear(4, 4)

    def forward(self, x):
        mod = self.l1 if self.training else self.l2
        return F.relu(mod(x))


@probe(with_mod(TrainBranch))
def training_flag_branch(b, x):
    return b.m(x)


@probe(with_mod(lambda: TrainBranch().eval()))
def eval_flag_branch(b, x):
    return b.m(x)


def _toggle_train(b, x):
    b.m.train(not b.m.training)


@probe(with_mod(TrainBranch), between=_toggle_train, calls=3)
def training_toggled_between_calls(b, x):
    return b.m(x)


def _flag_only_parent(b, x):
    b.m.training = False     # the children keep theirs


@probe(with_mod(TrainBranch), between=_flag_only_parent)
def training_attribute_set_directly_between_calls(b, x):
    return b.m(x), b.m.l1.training


@probe(lambda: (Box(m=nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))), _x()))
def eval_called_inside_compiled(b, x):
    b.m.eval()
    out = b.m(x)
    return out, b.m.training, b.m[1].training


@probe(lambda: (Box(m=nn.Sequential(nn.Linear(4, 4))), _x()))
def child_training_set_inside_compiled(b, x):
    b.m[0].training = False
    return b.m(x), b.m[0].training, b.m.training


@probe(lambda: (Box(m=TrainBranch()), _x()))
def train_returns_self(b, x):
    r = b.m.train(False)
    return r is b.m, r(x), r.training


class PyListLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4)]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


@probe(with_mod(PyListLayers))
def plain_list_of_layers(b, x):
    return b.m(x)


def _pylist_append(b, x):
    b.m.layers.append(nn.Tanh())


@probe(with_mod(PyListLayers), between=_pylist_append)
def plain_list_of_layers_appended_between_calls(b, x):
    return b.m(x)


class MList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU()])

    def forward(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x)
        for layer in self.layers:
            x = layer(x)
        for layer, v in zip(self.layers, (x, x, x, x)):
            x = layer(x) + v
        for layer, v in zip(self.layers, (1, 2, 3, 4)):
            x = layer(x) + v
        for i, layer in enumerate(self.layers):
            x = layer(x) * i
        for i, layer in enumerate(self.layers[::-1]):
            x = layer(x) * (i + 1)
        return x


@probe(with_mod(MList))
def module_list_all_iterations(b, x):
    return b.m(x)


@probe(with_mod(MList))
def module_list_negative_index_and_slice(b, x):
    layers = b.m.layers
    x = layers[-1](layers[-2](x))
    sub = layers[1:3]
    return x, type(sub).__name__, len(sub), sub[0] is layers[1]


@probe(with_mod(MList))
def module_list_contains_and_bool(b, x):
    layers = b.m.layers
    return layers[0] in layers, nn.Linear(4, 4) in layers, bool(layers), len(layers), x + 1


@probe(with_mod(MList))
def module_list_index_out_of_range(b, x):
    return b.m.layers[7](x)


@probe(with_mod(MList))
def module_list_reversed(b, x):
    for layer in reversed(b.m.layers):
        x = layer(x) + 1
    return x


def _ml_replace(b, x):
    b.m.layers[1] = nn.Tanh()


@probe(with_mod(MList), between=_ml_replace)
def module_list_item_replaced_between_calls(b, x):
    return b.m(x)


def _ml_append(b, x):
    b.m.layers.append(nn.Sigmoid())


@probe(with_mod(MList), between=_ml_append)
def module_list_appended_between_calls(b, x):
    return b.m(x)


@probe(with_mod(MList))
def module_list_append_inside_compiled(b, x):
    b.m.layers.append(nn.Tanh())
    return b.m.layers[-1](x), len(b.m.layers)


@probe(with_mod(MList))
def module_list_extend_insert_inside_compiled(b, x):
    b.m.layers.extend([nn.Sigmoid(), nn.Tanh()])
    b.m.layers.insert(0, nn.Softsign())
    for layer in b.m.layers:
        x = layer(x)
    return x, [type(m).__name__ for m in b.m.layers]


class NestedML(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([nn.Linear(4, 4), nn.ReLU()]) for _ in range(3)])

    def forward(self, x):
        for lin, act in self.layers:
            x = act(lin(x))
        return x


@probe(with_mod(NestedML))
def nested_module_list_unpacked(b, x):
    return b.m(x)


class GetItemModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4)])

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self):
        return len(self.layers)

    def forward(self, x):
        for i in range(len(self)):
            x = self[i](x)
        return x


@probe(with_mod(GetItemModule))
def module_own_getitem_and_len(b, x):
    return b.m(x)


class MDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.acts = nn.ModuleDict([["lrelu", nn.LeakyReLU()], ["lin", nn.Linear(4, 4)], ["tanh", nn.Tanh()]])

    def forward(self, x):
        return self.acts["lin"](x)


@probe(with_mod(MDict))
def module_dict_index(b, x):
    return b.m(x)


@probe(with_mod(MDict))
def module_dict_iterate_names(b, x):
    names = []
    for name in b.m.acts:
        x = b.m.acts[name](x)
        names.append(name)
    return x, names


@probe(with_mod(MDict))
def module_dict_keys_values_items(b, x):
    ks = list(b.m.acts.keys())
    for m in b.m.acts.values():
        x = m(x)
    for k, m in b.m.acts.items():
        x = m(x) + len(k)
    return x, ks


@probe(with_mod(MDict))
def module_dict_contains_len(b, x):
    return "lin" in b.m.acts, "nope" in b.m.acts, len(b.m.acts), x * 2


@probe(with_mod(MDict))
def module_dict_missing_key(b, x):
    return b.m.acts["nope"](x)


def _md_del(b, x):
    del b.m.acts["tanh"]


@probe(with_mod(MDict), between=_md_del)
def module_dict_key_deleted_between_calls(b, x):
    for m in b.m.acts.values():
        x = m(x)
    return x


def _md_reorder(b, x):
    b.m.acts["lrelu"] = b.m.acts.pop("lrelu")


@probe(with_mod(MDict), between=_md_reorder)
def module_dict_reordered_between_calls(b, x):
    out = []
    for k, m in b.m.acts.items():
        x = m(x)
        out.append(k)
    return x, out


@probe(with_mod(MDict))
def module_dict_pop_update_inside_compiled(b, x):
    t = b.m.acts.pop("tanh")
    b.m.acts.update({"sig": nn.Sigmoid()})
    b.m.acts["relu"] = nn.ReLU()
    return t(x), list(b.m.acts.keys())


class DictBlock(nn.ModuleDict):
    def __init__(self):
        super().__init__()
        for i in range(3):
            self.add_module(f"layer{i + 1}", nn.Identity())

    def forward(self, x):
        feats = [x]
        for layer in self.values():
            feats.append(layer(torch.cat(feats, 1)) * 1.5)
        return torch.cat(feats, 1)


@probe(with_mod(DictBlock))
def module_dict_subclass_values(b, x):
    return b.m(x)


class DictKeysBlock(DictBlock):
    def forward(self, x):
        feats = [x]
        for idx, k in enumerate(self.keys()):
            feats.append(self[k](torch.cat(feats, 1)) + idx)
        return torch.cat(feats, 1)


@probe(with_mod(DictKeysBlock))
def module_dict_subclass_keys_and_self_index(b, x):
    return b.m(x)


class OddNames(nn.ModuleDict):
    def __init__(self):
        super().__init__()
        for i in range(2):
            self.add_module(f"l@yer-{i}", nn.Linear(4, 4))

    def forward(self, x):
        for layer in self.values():
            x = layer(x)
        return x


@probe(with_mod(OddNames))
def module_names_not_identifiers(b, x):
    return b.m(x)


class PDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.ps = nn.ParameterDict({"w": nn.Parameter(torch.randn(4, 4)), "v": nn.Parameter(torch.randn(4))})

    def forward(self, x):
        return x.mm(self.ps["w"]) + self.ps["v"]


@probe(with_mod(PDict))
def parameter_dict_index(b, x):
    return b.m(x)


@probe(with_mod(PDict))
def parameter_dict_iterate(b, x):
    names = []
    for k, p in b.m.ps.items():
        names.append(k)
        x = x + p.sum()
    return x, names, len(b.m.ps), "w" in b.m.ps


class PList(nn.Module):
    def __init__(self):
        super().__init__()
        self.ps = nn.ParameterList([nn.Parameter(torch.randn(4)) for _ in range(3)])

    def forward(self, x):
        for p in self.ps:
            x = x * p
        return x + self.ps[-1] + len(self.ps)


@probe(with_mod(PList))
def parameter_list_iterate(b, x):
    return b.m(x)


class TensorTuple(nn.Module):
    def __init__(self):
        super().__init__()
        self.ts = (torch.randn(1, 4), torch.randn(2, 1), torch.randn(1, 4))

    def forward(self, x):
        for t in self.ts:
            x = x * t
        return x


@probe(with_mod(TensorTuple))
def tuple_of_tensors_attribute(b, x):
    return b.m(x)


class Four(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 4)
        self.l2 = nn.ReLU()
        self.l3 = nn.Linear(4, 4)
        self.l4 = nn.ReLU()
        self.register_buffer("buf", torch.ones(4))
        self.register_buffer("tmp", torch.zeros(4), persistent=False)


@probe(with_mod(Four))
def children_iteration(b, x):
    for c in b.m.children():
        x = c(x)
    return x


@probe(with_mod(Four))
def named_children_iteration(b, x):
    names = []
    for n, c in b.m.named_children():
        names.append(n)
        x = c(x)
    return x, names


@probe(with_mod(Four))
def modules_and_named_modules(b, x):
    kinds = [type(m).__name__ for m in b.m.modules()]
    names = [n for n, _ in b.m.named_modules()]
    pre = [n for n, _ in b.m.named_modules(prefix="root")]
    return x + len(kinds), kinds, names, pre


@probe(with_mod(Four))
def parameters_and_named_parameters(b, x):
    for p in b.m.parameters():
        x = x + p.sum()
    names = [n for n, _ in b.m.named_parameters()]
    return x, names, len(list(b.m.parameters(recurse=False)))


@probe(with_mod(Four))
def buffers_and_named_buffers(b, x):
    for t in b.m.buffers():
        x = x + t
    return x, [n for n, _ in b.m.named_buffers()]


@probe(with_mod(Four))
def next_parameter_dtype(b, x):
    ones = torch.ones(4, dtype=next(b.m.parameters()).dtype)
    return b.m.l1(x) + ones


@probe(with_mod(Four))
def next_parameter_no_recurse_raises(b, x):
    return next(b.m.parameters(recurse=False))


@probe(with_mod(Four))
def parameter_and_buffer_chain(b, x):
    import itertools
    items = list(itertools.chain(b.m.parameters(), b.m.buffers()))
    return len(items), items[-1] + x


class SharedParam(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.w = nn.Parameter(torch.randn(4, 4))
        self.w2 = self.w

    def forward(self, x):
        n = 0
        for _ in self.parameters():
            n += 1
        return x.mm(self.w) * n, len(list(self.named_parameters(remove_duplicate=False)))


@probe(with_mod(SharedParam))
def shared_parameter_counted_once(b, x):
    return b.m(x)


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()
        self.seq = nn.Sequential(nn.Linear(4, 6), self.relu, nn.Linear(6, 6), self.relu, nn.Linear(6, 4), self.relu)

    def forward(self, x):
        return self.seq(x), len(list(self.modules())), len(list(self.seq.children()))


@probe(with_mod(Shared))
def sequential_with_repeated_module(b, x):
    return b.m(x)


@probe(lambda: (Box(m=nn.Sequential(collections.OrderedDict(
    [("a", nn.Linear(4, 4)), ("r", nn.ReLU()), ("b", nn.Linear(4, 4))]))), _x()))
def sequential_from_ordered_dict(b, x):
    s = b.m
    return s(x), s.a(x), s[-1](x), len(s), type(s[1:]).__name__, s[1:](x)


@probe(lambda: (Box(m=nn.Sequential(nn.Linear(4, 4), nn.ReLU())), _x()), between=lambda b, x: b.m.append(nn.Tanh()))
def sequential_appended_between_calls(b, x):
    return b.m(x)


def _grad_off(b, x):
    for p in b.m.parameters():
        p.requires_grad_(not p.requires_grad)


class ReqGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if not any(p.requires_grad for p in self.parameters()):
            return F.relu(self.lin(x))
        return x + 1


@probe(with_mod(ReqGrad), between=_grad_off, calls=3)
def requires_grad_any_toggled_between_calls(b, x):
    return b.m(x)


@probe(with_mod(lambda: nn.Linear(4, 4)), between=_grad_off)
def output_requires_grad_follows_params(b, x):
    y = b.m(x)
    return y.requires_grad, y.detach()


class SuperFwd(Basic):
    def forward(self, x):
        return super().forward(x) + 10.0


class ExplicitBaseFwd(Basic):
    def forward(self, x):
        return Basic.forward(self, x) - 1.0


class ClsSuperParent(nn.Module):
    @classmethod
    def double(cls, x):
        return x + x


class ClsSuperChild(ClsSuperParent):
    @classmethod
    def child(cls, x):
        return super().double(x)

    def forward(self, x):
        return self.child(x)


@probe(with_mod(SuperFwd))
def super_forward(b, x):
    return b.m(x)


@probe(with_mod(ExplicitBaseFwd))
def base_class_forward_called(b, x):
    return b.m(x)


@probe(with_mod(ClsSuperChild))
def super_inside_classmethod(b, x):
    return b.m(x)


class HasAttr(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(1, 4))

    def forward(self, x):
        x = F.relu(x)
        if hasattr(self, "scale"):
            x = x * self.scale
        if hasattr(self, "scale2"):
            x = x * self.scale2
        return x


@probe(with_mod(HasAttr))
def hasattr_parameter(b, x):
    return b.m(x)


def _add_scale2(b, x):
    b.m.scale2 = nn.Parameter(torch.full((1, 4), 3.0))


@probe(with_mod(HasAttr), between=_add_scale2)
def hasattr_parameter_added_between_calls(b, x):
    return b.m(x)


def _del_scale(b, x):
    del b.m.scale


@probe(with_mod(HasAttr), between=_del_scale)
def parameter_deleted_between_calls(b, x):
    return b.m(x)


@probe(with_mod(HasAttr))
def getattr_with_default(b, x):
    return getattr(b.m, "scale", None) is not None, getattr(b.m, "zzz", 5), x + getattr(b.m, "scale")


@probe(with_mod(HasAttr))
def missing_attribute_error_message(b, x):
    return b.m.not_there


class CallsForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Basic()
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        return self.b.forward(self.a.forward(x))


@probe(with_mod(CallsForward))
def forward_called_directly(b, x):
    return b.m(x)


@probe(with_mod(lambda: nn.Conv2d(2, 3, 3, 1, 1, bias=False)))
def conv_forward_called_directly(b, x):
    return b.m.forward(x.reshape(1, 2, 2, 2))


class ConvSuper(nn.Conv1d):
    def __init__(self):
        super().__init__(in_channels=2, out_channels=2, kernel_size=2)

    def forward(self, x, mask=None):
        return super().forward(x)


@probe(with_mod(ConvSuper))
def conv_subclass_super_forward(b, x):
    return b.m(x.reshape(2, 4))


class ClassName(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if self.__class__.__name__ == "ABC":
            return 10
        if self.lin.__class__.__name__ == "Linear":
            return F.relu(self.lin(x) + 10)
        return 11


@probe(with_mod(ClassName))
def class_name_checks(b, x):
    return b.m(x)


class SelfCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.counter = 0

    def forward(self, x):
        r = self.lin(x) + self.counter
        self.counter += 1
        return F.relu(r)


@probe(with_mod(SelfCounter), calls=3)
def counter_incremented_in_forward(b, x):
    return b.m(x)


class PrecBase(nn.Module):
    def lin(self, x, flag=None):
        return x * 2.0 if flag else x * 3.0


class Prec(PrecBase):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
        self.lin = nn.Linear(4, 4)
        self.init = torch.ones(4)
        self.scale = 0.5

    def act(self, x):
        return x * 1.2

    def init(self):
        return torch.zeros(4)

    def scale(self):
        return 2.0

    def forward(self, x):
        return self.act(self.lin(self.init + x)) * self.scale


@probe(with_mod(Prec))
def instance_attributes_shadow_methods(b, x):
    return b.m(x)


class BreakMid(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Basic()
        self.seq = nn.Sequential(Basic(), Basic())
        self.ml = nn.ModuleList([nn.Linear(4, 4), nn.ReLU()])
        self.md = nn.ModuleDict({"0": nn.Linear(4, 4)})
        self.register_buffer("b0", torch.ones(4))

    def forward(self, x):
        x = self.a(x)
        params = dict(self.named_parameters())
        plist = list(self.parameters())
        bufs = dict(self.named_buffers())
        mods = dict(self.named_modules())
        print(end="")
        return x + params["seq.1.lin.weight"][0] + params["ml.0.weight"][1] + params["md.0.bias"] + \
            bufs["b0"] + len(plist) + len(mods)


@probe(with_mod(BreakMid))
def named_parameters_live_across_break(b, x):
    return b.m(x)


class Compare(nn.Module):
    def __init__(self):
        super().__init__()
        self.l0 = nn.Linear(4, 4)
        self.l1 = nn.Linear(4, 4)

    @property
    def layers(self):
        return [self.l0, self.l1]

    def forward(self, x):
        out = x
        for layer in self.layers:
            out = layer(x)
            out = F.relu6(out) if layer is None or layer == self.l0 else F.relu(out)
        return out


@probe(with_mod(Compare))
def module_equality_in_loop_over_property(b, x):
    return b.m(x)


class Plain(nn.Module):
    def forward(self, x):
        return torch.cos(x)


class Other(nn.Module):
    def forward(self, x):
        return torch.sin(x)


def _patch_forward(b, x):
    b.m.forward = types.MethodType(Other.forward, b.m)


@probe(with_mod(Plain), between=_patch_forward)
def instance_forward_patched_between_calls(b, x):
    return b.m(x)


@probe(with_mod(Plain))
def instance_forward_patched_inside_compiled(b, x):
    b.m.forward = types.MethodType(Other.forward, b.m)
    return b.m(x)


class ClsLevel(nn.Module):
    flag = False

    def forward(self, x):
        return x + 1 if type(self).flag else x - 1


def _mk_cls_level():
    ClsLevel.flag = False
    return ClsLevel()


def _flip_cls(b, x):
    ClsLevel.flag = True


@probe(with_mod(_mk_cls_level), between=_flip_cls)
def class_attribute_changed_between_calls(b, x):
    return b.m(x)


class Swappable(nn.Module):
    def forward(self, x):
        return x * 2


_SWAP_FWD = Swappable.forward


def _mk_swappable():
    Swappable.forward = _SWAP_FWD
    return Swappable()


def _swap_cls_forward(b, x):
    Swappable.forward = lambda self, x: x * 5


@probe(with_mod(_mk_swappable), between=_swap_cls_forward)
def class_forward_replaced_between_calls(b, x):
    return b.m(x)


class Becomes(nn.Module):
    def forward(self, x):
        return x + 100


def _swap_class(b, x):
    b.m.__class__ = Becomes


@probe(with_mod(Plain), between=_swap_class)
def instance_class_swapped_between_calls(b, x):
    return b.m(x), isinstance(b.m, Becomes)


def _fwd_hook(mod, inp, out):
    return 2 * out + 1


class TwoXPlusOne(nn.Module):
    def forward(self, x):
        return 2 * x + 1


def _hooked():
    m = TwoXPlusOne()
    m.register_forward_hook(_fwd_hook)
    return m


@probe(with_mod(_hooked))
def forward_hook_changes_output(b, x):
    return b.m(x * 2 + 1)


def _remove_hooks(b, x):
    b.m._forward_hooks.clear()


@probe(with_mod(_hooked), between=_remove_hooks)
def forward_hook_removed_between_calls(b, x):
    return b.m(x)


def _replace_hook(b, x):
    k = next(iter(b.m._forward_hooks))
    b.m._forward_hooks[k] = lambda mod, inp, out: 2 * out + 2


@probe(with_mod(_hooked), between=_replace_hook)
def forward_hook_replaced_between_calls(b, x):
    return b.m(x)


def _add_hook(b, x):
    b.m.register_forward_hook(lambda mod, inp, out: out * 10)


@probe(with_mod(TwoXPlusOne), between=_add_hook, calls=3)
def forward_hook_added_between_calls(b, x):
    return b.m(x)


def _add_pre_hook(b, x):
    b.m.register_forward_pre_hook(lambda mod, args: (args[0] - 100,))


@probe(with_mod(TwoXPlusOne), between=_add_pre_hook)
def forward_pre_hook_added_between_calls(b, x):
    return b.m(x)


@probe(with_mod(lambda: nn.Sequential(TwoXPlusOne(), TwoXPlusOne())), between=_add_hook)
def hook_added_on_container_between_calls(b, x):
    return b.m(x)


def _add_child_hook(b, x):
    b.m[1].register_forward_hook(lambda mod, inp, out: out - 7)


@probe(with_mod(lambda: nn.Sequential(TwoXPlusOne(), TwoXPlusOne())), between=_add_child_hook)
def hook_added_on_child_between_calls(b, x):
    return b.m(x)


_SEEN = []


def _recording():
    _SEEN.clear()
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    for name, sub in m.named_modules():
        sub.register_forward_hook(lambda mod, inp, out, name=name: _SEEN.append((name, tuple(out.shape))))
    return m


@probe(with_mod(_recording))
def hooks_record_into_global_list(b, x):
    del _SEEN[:]
    y = b.m(x)
    return y, list(_SEEN)


def _mk_pre_kwargs():
    m = TwoXPlusOne()

    def pre(mod, args, kwargs):
        return (args[0] + 1,), kwargs
    m.register_forward_pre_hook(pre, prepend=True, with_kwargs=True)
    return m


@probe(with_mod(_mk_pre_kwargs))
def pre_hook_with_kwargs(b, x):
    return b.m(x)


def _mk_hook_order():
    m = TwoXPlusOne()
    m.register_forward_hook(lambda mod, inp, out: out * 3)
    m.register_forward_hook(lambda mod, inp, out: out + 1, prepend=True)
    m.register_forward_hook(lambda mod, inp, kw, out: out - kw.get("k", 0), with_kwargs=True)
    return m


@probe(with_mod(_mk_hook_order))
def hook_order_prepend_and_kwargs(b, x):
    return b.m(x)


@probe(with_mod(TwoXPlusOne))
def hook_registered_and_removed_inside_compiled(b, x):
    h = b.m.register_forward_hook(lambda mod, inp, out: out * 0)
    y1 = b.m(x)
    h.remove()
    y2 = b.m(x)
    return y1, y2, len(b.m._forward_hooks)


@probe(with_mod(TwoXPlusOne))
def hook_returning_none_keeps_output(b, x):
    seen = []
    h = b.m.register_forward_hook(lambda mod, inp, out: seen.append(inp[0].shape))
    y = b.m(x)
    h.remove()
    return y, seen


class DunderCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin.__call__(x)


def _dunder_call_hooked():
    m = DunderCall()
    m.lin.register_forward_hook(lambda mod, inp, out: out + 5)
    return m


@probe(with_mod(_dunder_call_hooked))
def explicit_dunder_call_runs_hooks(b, x):
    return b.m(x)


class OwnCall(nn.Module):
    def __call__(self, x):
        return 5 * self.forward(x)

    def forward(self, x):
        return x * 3


@probe(with_mod(OwnCall))
def module_overrides_dunder_call(b, x):
    return b.m(x)


def _hooked_own_call():
    m = OwnCall()
    m.register_forward_hook(lambda mod, inp, out: out * 1000)
    return m


@probe(with_mod(_hooked_own_call))
def overridden_call_skips_hooks(b, x):
    return b.m(x)


class HoldsObj:
    def __init__(self, module):
        self.module = module
        self.handle = module.register_forward_pre_hook(self.pre, prepend=True, with_kwargs=True)

    def pre(self, module, args, kwargs):
        return (args[0] + 1,), kwargs

    def __call__(self, x):
        return self.module(x)


class Square(nn.Module):
    def forward(self, x):
        return x * x


@probe(lambda: (Box(o=HoldsObj(Square())), _x()))
def bound_method_of_object_as_hook(b, x):
    return b.o(x)


@probe(lambda: (Box(m=nn.Sequential(nn.Linear(4, 4))), _x()))
def attribute_set_on_child_inside_compiled(b, x):
    b.m[0].abc = True
    return b.m(x), b.m[0].abc


class AssignNew(nn.Module):
    def forward(self, x):
        self.enc = x + 1
        return self.enc


@probe(with_mod(AssignNew))
def new_tensor_attribute_assigned_in_forward(b, x):
    y = b.m(x)
    return y is b.m.enc, y


class KeepsLast(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.last = torch.full((2, 4), 100.0)

    def forward(self, x):
        r = self.lin(x)
        prev = self.last
        self.last = r
        return r + prev


@probe(with_mod(KeepsLast), calls=3)
def tensor_state_replaced_in_forward(b, x):
    return b.m(x)


class VarMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.var = 0


def _var_to_one(b, x):
    b.m.var = 1


@probe(with_mod(VarMod), between=_var_to_one)
def module_int_attribute_set_between_calls(b, x):
    return x + b.m.var


def _scale_change(b, x):
    b.m.scale = 0.25


@probe(with_mod(Prec), between=_scale_change)
def module_float_attribute_set_between_calls(b, x):
    return b.m(x)


class StrMode(nn.Module):
    def __init__(self):
        super().__init__()
        self.mode = "relu"

    def forward(self, x):
        if self.mode == "relu":
            return F.relu(x)
        return torch.tanh(x)


@probe(with_mod(StrMode), between=lambda b, x: setattr(b.m, "mode", "tanh"))
def string_attribute_set_between_calls(b, x):
    return b.m(x)


class Cfg:
    def __init__(self):
        self.val = 0.5
        self.count = 2


class CfgMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = Cfg()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        for _ in range(self.cfg.count):
            x = self.lin(x + self.cfg.val)
        return x


@probe(with_mod(CfgMod))
def config_object_attribute(b, x):
    return b.m(x)


def _cfg_change(b, x):
    b.m.cfg.count = 3
    b.m.cfg.val = -1.0


@probe(with_mod(CfgMod), between=_cfg_change)
def config_object_changed_between_calls(b, x):
    return b.m(x)


class BufMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.ones(4))

    def forward(self, x):
        return self.buf * x


def _new_buf(b, x):
    b.m.buf = torch.full((4,), 3.0)


@probe(with_mod(BufMod), between=_new_buf)
def buffer_replaced_between_calls(b, x):
    return b.m(x)


def _buf_inplace(b, x):
    b.m.buf.add_(1)


@probe(with_mod(BufMod), between=_buf_inplace)
def buffer_changed_in_place_between_calls(b, x):
    return b.m(x)


def _buf_to_double(b, x):
    b.m.buf = b.m.buf.double()


@probe(with_mod(BufMod), between=_buf_to_double)
def buffer_dtype_changed_between_calls(b, x):
    return b.m(x)


class BufToX(nn.Module):
    def __init__(self):
        super().__init__()
        self.buffer = torch.rand(4)

    def forward(self, x):
        x = x + 1
        self.buffer = self.buffer.to(x)
        return self.buffer + x


@probe(lambda: (Box(m=BufToX()), torch.randn(4, dtype=torch.float64)))
def tensor_attribute_converted_in_forward(b, x):
    return b.m(x)


class ParamOrder(nn.Module):
    def __init__(self):
        super().__init__()
        self.p1 = nn.Parameter(torch.ones(1))
        self.p2 = nn.Parameter(torch.ones(2))
        self.register_buffer("b1", torch.ones(1))
        self.register_buffer("b2", torch.ones(2))
        self.l1 = nn.Linear(2, 2)
        self.l2 = nn.Linear(3, 3)


def _reorder_all(b, x):
    m = b.m
    m._parameters["p1"] = m._parameters.pop("p1")
    m._buffers["b1"] = m._buffers.pop("b1")
    m._modules["l1"] = m._modules.pop("l1")


@probe(lambda: (Box(m=ParamOrder()), torch.ones(1)), between=_reorder_all)
def parameter_buffer_module_order_changed_between_calls(b, x):
    coeffs = [2, 3, 5, 7, 11, 13]
    x = x.clone()
    for i, p in enumerate(b.m.parameters()):
        x += p.sum() * coeffs[i]
    for i, (n, t) in enumerate(b.m.named_buffers()):
        x += t.sum() * coeffs[i]
    sizes = [m.in_features for m in b.m.children()]
    return x, sizes, [n for n, _ in b.m.named_parameters()]


@probe(lambda: (Box(m=ParamOrder()), torch.ones(1)))
def module_as_dict_key(b, x):
    m = b.m
    weights = {m: 10, m.l1: 20, m.l2: 30}
    x = x.clone()
    for i, sub in enumerate(m.modules()):
        x += weights[sub] * (i + 1)
    for i, (n, sub) in enumerate(m.named_children()):
        x += weights[sub] * (i + 7)
    return x


def _param_inplace(b, x):
    with torch.no_grad():
        b.m.weight.mul_(2)


@probe(with_mod(lambda: nn.Linear(4, 4)), between=_param_inplace)
def parameter_updated_in_place_between_calls(b, x):
    return b.m(x)


def _param_new_shape(b, x):
    b.m.weight = nn.Parameter(torch.randn(2, 4))


@probe(with_mod(lambda: nn.Linear(4, 4, bias=False)), between=_param_new_shape)
def parameter_replaced_with_other_shape_between_calls(b, x):
    return b.m(x)


def _param_double(b):
    b.m.double()
    b.x = b.x.double()


@probe(lambda: (Box(m=nn.Linear(4, 4), x=_x()),), between=_param_double)
def module_to_double_between_calls(b):
    return b.m(b.x)


def _swap_child(b, x):
    b.m.a = Basic()


@probe(with_mod(TwoBasic), between=_swap_child)
def submodule_replaced_between_calls(b, x):
    return b.m(x)


class MaybeNone(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 4)
        self.l2 = nn.Linear(4, 4)

    def forward(self, x):
        if self.l1 is not None:
            x = self.l1(x)
        if self.l2 is not None:
            x = self.l2(x)
        return x


def _child_none(b, x):
    b.m.l2 = None


@probe(with_mod(MaybeNone), between=_child_none)
def submodule_set_none_between_calls(b, x):
    return b.m(x)


@probe(with_mod(MaybeNone))
def submodule_set_none_inside_compiled(b, x):
    b.m.l1 = None
    return b.m(x), b.m.l1, "l1" in b.m._modules


@probe(with_mod(MaybeNone))
def submodule_assigned_inside_compiled(b, x):
    b.m.l3 = nn.ReLU()
    return b.m.l3(x), [n for n, _ in b.m.named_children()]


@probe(with_mod(MaybeNone))
def delattr_submodule_inside_compiled(b, x):
    del b.m.l2
    return b.m(x), hasattr(b.m, "l2")


@probe(with_mod(BufMod))
def register_buffer_inside_compiled(b, x):
    b.m.register_buffer("extra", x.sum(0))
    return b.m.extra + b.m.buf, [n for n, _ in b.m.named_buffers()]


@probe(with_mod(BufMod))
def register_parameter_inside_compiled(b, x):
    b.m.register_parameter("w", nn.Parameter(torch.ones(4)))
    return b.m.w * x, [n for n, _ in b.m.named_parameters()]


@probe(with_mod(BufMod))
def buffer_assigned_in_place_inside_compiled(b, x):
    b.m.buf.mul_(2)
    return b.m(x)


@probe(with_mod(BufMod), calls=3)
def buffer_reassigned_inside_compiled(b, x):
    b.m.buf = b.m.buf + 1
    return b.m(x)


@probe(_x)
def module_without_parameters_built_in_compiled(x):
    m = nn.Sequential(nn.ReLU(), nn.Tanh())
    return m(x), len(m), type(m[0]).__name__


@probe(_x)
def linear_built_in_compiled(x):
    lin = nn.Linear(4, 3)
    return lin(x).shape, lin.weight.shape


@probe(_x)
def user_module_built_in_compiled(x):
    m = SelfCounter()
    m.lin = nn.Identity()
    return m(x), m(x), m.counter


class LazyInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.LazyLinear(4)
        self.fc2 = nn.LazyLinear(1)

    def forward(self, x):
        return F.relu(self.fc2(F.relu(self.fc1(x))))


@probe(lambda: (Box(m=LazyInit()), _x()))
def lazy_linear_initialized_by_first_call(b, x):
    return b.m(x).shape, type(b.m.fc1).__name__, b.m.fc1.weight.shape


class LazyOwn(nn.modules.lazy.LazyModuleMixin, nn.Module):
    def __init__(self):
        super().__init__()

    def initialize_parameters(self, xs):
        with torch.no_grad():
            self.w = nn.Parameter(torch.empty(xs[0].shape).fill_(0.5))

    def forward(self, xs):
        acc = 0
        for i in range(len(xs)):
            acc = acc + xs[i] * self.w
        return acc


@probe(lambda: (Box(m=LazyOwn()), [torch.randn(2, 2)] * 3))
def lazy_module_with_list_input(b, xs):
    return b.m(xs), b.m.w.shape


class LazyParent(nn.modules.lazy.LazyModuleMixin, nn.Module):
    def impl(self, x):
        return x.cos() + self.v


class LazyChild(LazyParent):
    def forward(self, x):
        return super().impl(x.sin())

    def initialize_parameters(self, x):
        self.v = nn.Parameter(torch.ones(2, 4))


@probe(with_mod(LazyChild))
def lazy_module_super_without_cls_to_become(b, x):
    return b.m(x), type(b.m).__name__


@probe(with_mod(lambda: nn.BatchNorm1d(4)), calls=3)
def batchnorm_training_updates_running_stats(b, x):
    return b.m(x), b.m.num_batches_tracked.clone()


@probe(with_mod(lambda: nn.BatchNorm1d(4).eval()))
def batchnorm_eval_uses_running_stats(b, x):
    return b.m(x)


def _bn_eval(b, x):
    b.m.eval()


@probe(with_mod(lambda: nn.BatchNorm1d(4, momentum=None)), between=_bn_eval, calls=3)
def batchnorm_cumulative_then_eval(b, x):
    return b.m(x)


@probe(with_mod(lambda: nn.Dropout(0.5).eval()))
def dropout_in_eval(b, x):
    return b.m(x)


class ListState(nn.Module):
    def __init__(self):
        super().__init__()
        self.log = []
        self.stats = {"calls": 0}

    def forward(self, x):
        self.log.append(len(self.log))
        self.stats["calls"] += 1
        return x * len(self.log) + self.stats["calls"]


@probe(with_mod(ListState), calls=3)
def list_and_dict_attributes_mutated_in_forward(b, x):
    return b.m(x), list(b.m.log)


class KwFwd(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, offset=1, *rest, scale=2.0, **extra):
        return (F.relu(self.lin(x)) + offset) * scale + len(rest) + len(extra)


@probe(with_mod(KwFwd))
def forward_with_defaults_and_kwargs(b, x):
    m = b.m
    return m(x), m(x, 3), m(x, 1, 2, 3, scale=0.5, z=1)


@probe(with_mod(KwFwd))
def forward_bad_keyword_raises(b, x):
    return b.m(x, offset=1, **{"x": 2})


Out = collections.namedtuple("Out", "a b")


class NTOut(nn.Module):
    def forward(self, x):
        return Out(x + 1, {"k": x * 2})


@probe(with_mod(NTOut))
def forward_returns_namedtuple_and_dict(b, x):
    r = b.m(x)
    return r, r.a, r.b["k"]


class GetAttrMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def __getattr__(self, name):
        if name.startswith("alias_"):
            return super().__getattr__(name[6:])
        return super().__getattr__(name)

    def forward(self, x):
        return self.alias_lin(x)


@probe(with_mod(GetAttrMod))
def module_getattr_override(b, x):
    return b.m(x), hasattr(b.m, "alias_nothing")


class SetAttrMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __setattr__(self, name, value):
        if name == "count":
            value = value * 10
        super().__setattr__(name, value)

    def forward(self, x):
        self.count = 1
        return x + self.count


@probe(with_mod(SetAttrMod))
def module_setattr_override(b, x):
    return b.m(x), b.m.count


class CallableObj:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k


class HoldsCallable(nn.Module):
    def __init__(self):
        super().__init__()
        import functools
        self.f = CallableObj(3)
        self.g = functools.partial(torch.add, alpha=2)
        k = 4
        self.h = lambda t: t - k

    def forward(self, x):
        return self.h(self.g(self.f(x), x))


@probe(with_mod(HoldsCallable))
def callable_attributes(b, x):
    return b.m(x)


def _callable_k(b, x):
    b.m.f.k = -1


@probe(with_mod(HoldsCallable), between=_callable_k)
def callable_attribute_state_changed_between_calls(b, x):
    return b.m(x)


class Deep(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.ReLU(), nn.Linear(4, 2)))


@probe(with_mod(Deep))
def get_submodule_and_parameter(b, x):
    sub = b.m.get_submodule("a.1.1")
    w = b.m.get_parameter("a.0.weight")
    return sub(x), w.shape, isinstance(sub, nn.Linear)


@probe(with_mod(Deep))
def get_submodule_missing_raises(b, x):
    return b.m.get_submodule("a.7")


@probe(with_mod(Deep))
def isinstance_checks_on_modules(b, x):
    m = b.m
    return (isinstance(m.a, nn.Sequential), isinstance(m.a[0], (nn.Conv1d, nn.Linear)),
            isinstance(m, nn.Linear), issubclass(type(m.a[1]), nn.Module), x.sum() * 0)


@probe(with_mod(Deep))
def state_dict_keys(b, x):
    return list(b.m.state_dict().keys()), x + 1


@probe(with_mod(Deep))
def str_and_repr_of_module(b, x):
    return repr(b.m.a[1][0]), str(b.m.a[0]), x * 1


@probe(with_mod(Deep))
def module_dunder_dict_reads(b, x):
    d = b.m.__dict__
    return "a" in d, "a" in d["_modules"], "training" in d, x + 2


@probe(with_mod(Deep))
def apply_function_to_modules(b, x):
    seen = []
    b.m.apply(lambda mod: seen.append(type(mod).__name__))
    return seen, x - 1


@probe(with_mod(Deep))
def zero_grad_and_requires_grad_inside_compiled(b, x):
    b.m.requires_grad_(False)
    return b.m.a(x).requires_grad, b.m.a[0].weight.requires_grad


def _freeze_first(b, x):
    b.m.a[0].weight.requires_grad_(False)


@probe(with_mod(Deep), between=_freeze_first)
def named_parameters_filtered_by_requires_grad(b, x):
    names = [n for n, p in b.m.named_parameters() if p.requires_grad]
    return names, b.m.a(x)


class Composed(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(torch.cos(x))


@probe(lambda: (Box(m=Composed(Composed(nn.ReLU()))), _x()))
def composed_modules(b, x):
    return b.m(x)


class GlobalsTouch(nn.Module):
    def forward(self, x):
        global _MOD_CALLS
        _MOD_CALLS += 1
        return x * _MOD_CALLS


_MOD_CALLS = 0


def _mk_globals_touch():
    global _MOD_CALLS
    _MOD_CALLS = 0
    return GlobalsTouch()


@probe(with_mod(_mk_globals_touch), calls=3)
def forward_updates_global(b, x):
    return b.m(x), _MOD_CALLS


class UsesProp(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.randn(1, 4)

    @property
    def alias(self):
        return self.scale

    def forward(self, x):
        return x * self.alias


@probe(with_mod(UsesProp))
def module_property(b, x):
    return b.m(x)


def _new_scale(b, x):
    b.m.scale = torch.zeros(1, 4)


@probe(with_mod(UsesProp), between=_new_scale)
def module_property_backing_changed_between_calls(b, x):
    return b.m(x)


@probe(with_mod(lambda: nn.Linear(4, 4)))
def no_grad_inside_forward_use(b, x):
    with torch.no_grad():
        y = b.m(x)
    return y.requires_grad, b.m(x).requires_grad


@probe(with_mod(lambda: nn.Identity()))
def identity_returns_same_object(b, x):
    return b.m(x) is x


@probe(lambda: (Box(m=nn.Flatten(), u=nn.Unflatten(1, (2, 2))), torch.randn(2, 2, 2)))
def flatten_unflatten(b, x):
    return b.u(b.m(x)), b.m(x).shape


class RevList(nn.ModuleList):
    def __getitem__(self, i):
        return list(self._modules.values())[-1 - i]

    def __iter__(self):
        return iter(list(self._modules.values())[::-1])

    def __len__(self):
        return 7


@probe(lambda: (Box(m=RevList([nn.Sigmoid(), nn.ReLU()])), _x()))
def module_list_subclass_own_protocol(b, x):
    return b.m[0](x), [type(layer).__name__ for layer in b.m], len(b.m)


class KeyDict(nn.ModuleDict):
    def keys(self):
        return ["b"]

    def __contains__(self, k):
        return True


@probe(lambda: (Box(m=KeyDict({"a": nn.ReLU(), "b": nn.Tanh()})), _x()))
def module_dict_subclass_own_keys_contains(b, x):
    return list(b.m.keys()), "zz" in b.m, x + 1


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ReLU()])
        self.other = nn.Tanh()
        self.register_buffer("buf", torch.ones(4))


@probe(with_mod(Holder))
def module_list_append_existing_then_read(b, x):
    b.m.layers.append(b.m.other)
    return len(b.m.layers), b.m.layers[-1](x)


@probe(with_mod(Holder))
def module_list_del_then_len(b, x):
    y = x + 1
    del b.m.layers[0]
    return len(b.m.layers), y


@probe(with_mod(Holder))
def buffer_assigned_then_buffers_listed(b, x):
    b.m.buf = x[0] * 2
    return list(b.m.buffers())[0] + 0, b.m._buffers["buf"] + 0


@probe(with_mod(Holder))
def buffer_deleted_then_hasattr(b, x):
    y = x + 1
    del b.m.buf
    return y, "buf" in b.m._buffers, hasattr(b.m, "buf")


@probe(with_mod(Holder))
def buffer_table_written_then_attribute_read(b, x):
    b.m._buffers["buf"] = x[1] * 3
    return b.m.buf + 0


def _self_removing():
    m = TwoXPlusOne()
    handle = []

    def hook(mod, inp, out):
        handle[0].remove()
        return out * 100
    handle.append(m.register_forward_hook(hook))
    return m


@probe(with_mod(_self_removing), calls=3)
def hook_removes_itself_while_running(b, x):
    return b.m(x), len(b.m._forward_hooks)


@probe(with_mod(TwoXPlusOne))
def pre_hook_returning_single_value(b, x):
    h = b.m.register_forward_pre_hook(lambda mod, args: args[0] * 0 + 5)
    y = b.m(x)
    h.remove()
    return y


class KwMod(nn.Module):
    def forward(self, x, scale=1.0):
        return x * scale


def _kw_hooked():
    m = KwMod()

    def pre(mod, args, kwargs):
        kwargs["scale"] = kwargs.get("scale", 1.0) + 1
        return None
    m.register_forward_pre_hook(pre, with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: out + kwargs["scale"], with_kwargs=True)
    return m


@probe(with_mod(_kw_hooked), calls=3)
def kwargs_dict_changed_in_place_by_pre_hook(b, x):
    return b.m(x, scale=2.0), b.m(x)


@probe(with_mod(lambda: nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.0))))
def hook_reads_training_flag(b, x):
    seen = []
    h = b.m.register_forward_hook(lambda mod, inp, out: seen.append(mod.training))
    b.m.eval()
    y = b.m(x)
    h.remove()
    return y, seen


@probe(with_mod(Holder))
def add_and_register_module_inside_compiled(b, x):
    b.m.add_module("extra", b.m.other)
    b.m.register_module("extra2", b.m.layers[0])
    return b.m.extra(x), b.m.extra2(x)


@probe(with_mod(lambda: nn.Linear(4, 4)))
def zero_grad_inside_compiled(b, x):
    b.m(x).sum().backward()
    had = b.m.weight.grad is not None
    b.m.zero_grad()
    return had, b.m.weight.grad


@probe(with_mod(lambda: nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))))
def parameters_to_vector(b, x):
    v = torch.nn.utils.parameters_to_vector(b.m.parameters())
    return v.shape, v.sum() + x.sum()


class SharedChild(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.ReLU()
        self.b = self.a
        self.seq = nn.Sequential(self.a, nn.Tanh())


@probe(with_mod(SharedChild))
def named_modules_deduplicates_shared_children(b, x):
    return ([n for n, _ in b.m.named_modules()], [n for n, _ in b.m.named_modules(remove_duplicate=False)],
            len(list(b.m.children())), x + 1)


@probe(with_mod(SharedChild))
def modules_in_set_and_equality(b, x):
    s = {b.m.a, b.m.b, b.m.seq[0]}
    return len(s), b.m.a == b.m.b, b.m.a != b.m.seq[1], b.m.a in [b.m.seq[1], b.m.b], x * 2


def _requires_grad_off(b, x):
    b.m.requires_grad_(False)


@probe(with_mod(lambda: nn.Linear(4, 4)), between=_requires_grad_off)
def requires_grad_off_between_calls(b, x):
    y = b.m(x)
    return y.requires_grad, y.grad_fn is None, y.detach()


class DataAttr(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = {"a": 1.0, "b": 2.0}
        self.order = ["a", "b"]

    def forward(self, x):
        for k in self.order:
            x = x * self.table[k]
        return x


def _edit_data(b, x):
    b.m.table["b"] = -3.0
    b.m.order.append("a")


@probe(with_mod(DataAttr), between=_edit_data)
def dict_and_list_attributes_edited_between_calls(b, x):
    return b.m(x)


class ItemIter(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({"x": nn.Linear(4, 4), "y": nn.ReLU()})

    def forward(self, x):
        for name, block in self.blocks.items():
            x = block(x) + len(name)
        return x


def _dict_add(b, x):
    b.m.blocks["z"] = nn.Tanh()


@probe(with_mod(ItemIter), between=_dict_add)
def module_dict_item_added_between_calls(b, x):
    return b.m(x)


@probe(with_mod(ItemIter))
def module_dict_grown_while_iterated(b, x):
    for name in b.m.blocks:
        b.m.blocks[name + "2"] = b.m.blocks[name]
    return x


def _swap_instance(b, x):
    b.m = Basic()
    with torch.no_grad():
        b.m.lin.weight.mul_(-1)


@probe(with_mod(Basic), between=_swap_instance)
def other_instance_of_same_class_between_calls(b, x):
    return b.m(x)


def _swap_class_instance(b, x):
    b.m = SuperFwd()


@probe(with_mod(Basic), between=_swap_class_instance)
def instance_of_subclass_between_calls(b, x):
    return b.m(x)


_GLOBAL_MOD = None


def _mk_global_mod():
    global _GLOBAL_MOD
    _GLOBAL_MOD = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    return (_x(),)


def _edit_global_mod(x):
    _GLOBAL_MOD[0].weight = nn.Parameter(torch.ones(4, 4))
    _GLOBAL_MOD.register_forward_hook(lambda mod, inp, out: out - 1)


@probe(_mk_global_mod, between=_edit_global_mod)
def global_module_edited_between_calls(x):
    return _GLOBAL_MOD(x)


def _closure_probe():
    m = nn.Linear(4, 4)

    def run(x):
        return m(x) * 2
    return (Box(run=run, m=m), _x())


def _hook_closure(b, x):
    b.m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))


@probe(_closure_probe, between=_hook_closure)
def closure_module_hooked_between_calls(b, x):
    return b.run(x)


def _train_child_only(b, x):
    b.m.a.train(False)


class DropBoth(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Dropout(0.5)
        self.b = TrainBranch()

    def forward(self, x):
        return self.b(x), self.a.training, self.b.training


@probe(with_mod(DropBoth), between=lambda b, x: b.m.b.eval())
def child_training_flag_changed_between_calls(b, x):
    return b.m(x)
