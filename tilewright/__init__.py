"""tilewright: a tensor-program compiler.

Write loop-nest programs in Python syntax, transform them with schedule primitives and build
them into kernels for CUDA, OpenCL, Metal and the CPU. ``import tilewright as tvm`` is a
supported way to port code written for TVM.

Example::

    import tilewright as tw
    from tilewright.script import tir as T

    @tw.script.ir_module
    class Add:
        @T.prim_func
        def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
            for i in range(8):
                with T.block("B"):
                    vi = T.axis.spatial(8, i)
                    B[vi] = A[vi] + 1.0

    lib = tw.build(Add, target="c")
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Subpackages and names resolved on first use, so `import tilewright` stays cheap and the
# packages can refer to each other in pipeline order without import cycles.
_SUBMODULES = (
    "arith",
    "artifact",
    "backend",
    "codegen",
    "config",
    "ir",
    "nd",
    "relax",
    "runtime",
    "s_tir",
    "script",
    "target",
    "tir",
    "tirx",
    "transform",
)
_NAMES = {
    "IRModule": ("tilewright.ir", "IRModule"),
    "build": ("tilewright.driver", "build"),
    "compile": ("tilewright.driver", "build"),  # TVM's newer name for building a module
    "build_artifact": ("tilewright.driver", "build_artifact"),
    "build_lowered": ("tilewright.driver", "build_lowered"),
    "lower": ("tilewright.driver", "lower"),
    "cpu": ("tilewright.runtime", "cpu"),
    "cuda": ("tilewright.runtime", "cuda"),
    "opencl": ("tilewright.runtime", "opencl"),
    "metal": ("tilewright.runtime", "metal"),
    "device": ("tilewright.runtime", "device"),
}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"tilewright.{name}")
    if name in _NAMES:
        module, attr = _NAMES[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'tilewright' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULES, *_NAMES])
