"""The ``I`` namespace of scripts (``from tilewright.script import ir as I``): ``I.ir_module``."""

from tilewright.ir.module import IRModule
from tilewright.script.parser.entry import ir_module

__all__ = ["IRModule", "ir_module"]
