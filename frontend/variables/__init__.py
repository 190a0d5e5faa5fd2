"""The VariableTracker families, one module each. Imports point one way, in this order (a module
imports only those above it): what a family needs from one below it is looked up at call time in
`base.families`, which each module fills when imported. Importing the package loads every family,
so the table is complete before any tracker runs."""
from . import base, constant, lists, iterators, tensor, numpy, misc, dicts, functions  # noqa: F401
from . import user_defined, builtins, torch, ctx, distributed, nn_module, autograd_function  # noqa: F401
