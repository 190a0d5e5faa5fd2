"""Backends: compile a captured fx GraphModule into a callable."""
from . import eager  # noqa: F401  (registers "eager")
from .registry import list_backends, lookup_backend, register_backend  # noqa: F401
