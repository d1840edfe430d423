"""The script parser: Python source in TVMScript syntax to tilewright IR."""

from tilewright.script.parser.entry import from_source, ir_module, parse, prim_func
from tilewright.script.parser.errors import ParseError
