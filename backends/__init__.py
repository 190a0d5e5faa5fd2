"""Backends: compile a captured fx GraphModule into a callable."""
from . import aot_eager, eager, inductor  # noqa: F401  (registers "aot_eager", "eager", "inductor")
from .registry import list_backends, lookup_backend, register_backend  # noqa: F401
