"""Builds the native parts: bytegraph._C (the PEP 523 frame hook, plain C) and
bytegraph._tensor_guards (the C++ tensor-guard fast path, against torch's headers).
Everything else is in pyproject.toml. torch must be installed first (`make install` does that and
builds without build isolation)."""
from setuptools import Extension, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    ext_modules=[
        Extension("bytegraph._C", sources=["compiler/_eval_frame.c"], extra_compile_args=["-O2", "-Wall"]),
        CppExtension("bytegraph._tensor_guards", sources=["compiler/_tensor_guards.cpp"],
                     extra_compile_args=["-O2"]),
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)},
)
