"""Build generated C++ kernels into a shared library and load it (compile time only).

The system `g++` compiles a kernel module with `-O3 -march=native -fopenmp -shared -fPIC`. The `.so`
is cached on disk under the inductor cache directory, keyed by a hash of the source, the flags and
the compiler's version, so a second process (or a second graph with the same kernels) pays nothing.
It is loaded with ctypes: each kernel is an `extern "C"` function taking raw pointers and int64 sizes,
so a launch from the Python wrapper is one foreign call.

OpenMP: torch ships `libgomp.so.1`; once torch is imported the kernels bind to that same runtime
(same soname), so `torch.set_num_threads` also sets the kernels' thread count.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

# -ffp-contract=off: `a * b + c` rounds twice, as eager's separate ops do (g++ otherwise fuses it into
# one multiply-add, one rounding: results an ulp away from eager's)
FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-fno-math-errno", "-ffp-contract=off", "-std=c++17"]
# glibc's vector math library on x86-64: libm functions called in vectorized loops
if os.path.exists("/usr/lib/x86_64-linux-gnu/libmvec.so") or os.path.exists("/usr/lib64/libmvec.so"):
    FLAGS += ["-DBG_LIBMVEC"]
    LIBS = ["-lmvec"]
else:
    LIBS = []
_LOADED: dict[str, ctypes.CDLL] = {}


def cache_dir():
    """Where generated code is kept on disk (C++ libraries here, Triton modules by the backend)."""
    d = os.path.join(tempfile.gettempdir(), f"bytegraph_inductor_{os.getuid() if hasattr(os, 'getuid') else 0}")
    os.makedirs(d, exist_ok=True)
    return d


class CppCompileError(RuntimeError):
    pass


@functools.lru_cache(None)
def compiler() -> str | None:
    return shutil.which(os.environ.get("CXX", "g++"))


@functools.lru_cache(None)
def _compiler_version() -> str:
    try:
        return subprocess.run([compiler(), "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""


def available() -> bool:
    return compiler() is not None


def build(source: str, extra_flags=()) -> str:
    """Path of the shared library built from `source` (built now unless cached on disk)."""
    flags = FLAGS + list(extra_flags)
    key = hashlib.sha256("\0".join([source, " ".join(flags), _compiler_version()]).encode()).hexdigest()[:24]
    d = os.path.join(cache_dir(), "cpp")
    os.makedirs(d, exist_ok=True)
    so = os.path.join(d, f"k_{key}.so")
    if os.path.exists(so):
        return so
    cpp = os.path.join(d, f"k_{key}.cpp")
    with open(cpp, "w") as f:
        f.write(source)
    tmp = f"{so}.{os.getpid()}.tmp"
    proc = subprocess.run([compiler(), *flags, cpp, "-o", tmp, *LIBS], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CppCompileError(f"g++ failed on {cpp}:\n{proc.stderr[-4000:]}")
    os.replace(tmp, so)  # atomic: concurrent builders of the same source agree
    return so


def load(source: str) -> ctypes.CDLL:
    """The loaded library of `source` (one CDLL per source per process)."""
    import torch  # noqa: F401  (its libgomp must be loaded first, see module docstring)
    lib = _LOADED.get(source)
    if lib is None:
        lib = _LOADED[source] = ctypes.CDLL(build(source))
    return lib


def kernel(lib: ctypes.CDLL, name: str, nptrs: int, nints: int):
    """The ctypes function `name(ptr * nptrs, int64 * nints) -> int` (non-zero: an error flag)."""
    fn = getattr(lib, name)
    fn.argtypes = [ctypes.c_void_p] * nptrs + [ctypes.c_int64] * nints
    fn.restype = ctypes.c_int
    return fn
