"""The errors a generated kernel reports, by code, raised by its wrapper as eager raises them.

A kernel that can fail (an integer division, an index read from memory) sets an error code instead of
reading or dividing out of range; the wrapper raises after the launch. Out-of-range indices raise
what the eager op raises: IndexError for indexing, embedding and index_select, RuntimeError for gather.
"""

ZERO_DIVISION = 1
INDEX_ERROR = 2
INDEX_RUNTIME_ERROR = 3


def index_error_code(runtime_error: bool) -> int:
    return INDEX_RUNTIME_ERROR if runtime_error else INDEX_ERROR


def raise_kernel_error(code: int):
    if code == ZERO_DIVISION:
        raise RuntimeError("ZeroDivisionError")
    if code == INDEX_RUNTIME_ERROR:
        raise RuntimeError("index out of bounds in a generated kernel")
    raise IndexError("index out of range in a generated kernel")
