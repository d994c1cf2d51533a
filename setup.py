"""Build of the optional C extension ``gpmodels.baselines.crammer_singer._core`` (the Crammer–Singer inner loop).

Everything else about the package is in pyproject.toml.  The extension is ``optional``: without a
working C compiler (or without Python.h) setuptools reports the failure and installs the package
without it, and the solver falls back to its pure-numpy engine (``CSOptions(engine="auto")``).
It uses only the CPython buffer protocol, so building it needs no numpy headers.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# -ffp-contract=off: no fused multiply-adds, so the compiled loop rounds as the numpy engine does
UNIX_FLAGS = ["-O3", "-ffp-contract=off"]


class BuildExt(build_ext):
    def build_extensions(self):
        if self.compiler.compiler_type == "unix":
            for ext in self.extensions:
                ext.extra_compile_args = UNIX_FLAGS + list(ext.extra_compile_args)
        super().build_extensions()


setup(
    ext_modules=[
        Extension(
            "gpmodels.baselines.crammer_singer._core",
            sources=["gpmodels/baselines/crammer_singer/_core.c"],
            optional=True,
        )
    ],
    cmdclass={"build_ext": BuildExt},
)
