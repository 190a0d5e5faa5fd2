"""Builds the C extension bytegraph._C (the PEP 523 frame hook); everything else is in pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("bytegraph._C", sources=["compiler/_eval_frame.c"],
                             extra_compile_args=["-O2", "-Wall"])])
