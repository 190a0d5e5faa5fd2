"""The `eager` backend: run the captured fx graph as is."""
from .registry import register_backend


@register_backend("eager")
def eager(gm, example_inputs):
    return gm.forward


eager.eager_autograd = True   # the graph's ops run as recorded
