"""Code generation: lowered IR → source text for C (and, through one shared printer, GPUs)."""

from tilewright.codegen.c import CPrinter, CSource, c_symbol, codegen_c, generate_c
from tilewright.codegen.c_like import CLikePrinter, CodegenError
from tilewright.codegen.signature import FuncSignature, ParamSpec, SignatureError, func_signature

__all__ = [
    "CLikePrinter",
    "CPrinter",
    "CSource",
    "CodegenError",
    "FuncSignature",
    "ParamSpec",
    "SignatureError",
    "c_symbol",
    "codegen_c",
    "func_signature",
    "generate_c",
]
