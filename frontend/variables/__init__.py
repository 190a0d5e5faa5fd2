"""The VariableTracker families, one module each. Imports point one way, in the order listed here: a
module imports only modules listed before it. What it needs from a later one (a constant's tuple
method builds a TupleVariable) it looks up at call time in `base.families`, which each module fills
when imported; importing the package loads every family, so the table is complete before any
tracker runs."""
from . import base, constant, lists, iterators, tensor, function_mode, vmap, numpy, misc, dicts, functions  # noqa: F401
from . import user_defined, builtins, torch, torch_function, ctx, distributed, nn_module, autograd_function  # noqa: F401
