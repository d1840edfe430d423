"""Script front end: parse TVMScript-style Python into IR (``ir_module``, ``T.prim_func``,
``from_source``) and print IR back as script (``tilewright.ir.printer``).

Example::

    import tilewright as tw
    from tilewright.script import tir as T

    @tw.script.ir_module
    class Module:
        @T.prim_func
        def main(A: T.Buffer((8,), "float32")):
            for i in range(8):
                A[i] = A[i] + 1.0
"""

from tilewright.script import ir, relax, tir
from tilewright.script.parser import ParseError, from_source, ir_module, parse, prim_func

__all__ = ["ParseError", "from_source", "ir", "ir_module", "parse", "prim_func", "relax", "tir"]
