"""The dtype names of the ``T`` namespace (``T.float32``, ``T.int32``, ``T.handle``, ...)."""

from __future__ import annotations

from tilewright.script.parser.frames import DTypeConstructor

bool = DTypeConstructor("bool")
boolean = bool  # TVM's other spelling
int8 = DTypeConstructor("int8")
int16 = DTypeConstructor("int16")
int32 = DTypeConstructor("int32")
int64 = DTypeConstructor("int64")
uint8 = DTypeConstructor("uint8")
uint16 = DTypeConstructor("uint16")
uint32 = DTypeConstructor("uint32")
uint64 = DTypeConstructor("uint64")
float16 = DTypeConstructor("float16")
bfloat16 = DTypeConstructor("bfloat16")
float32 = DTypeConstructor("float32")
float64 = DTypeConstructor("float64")
float8_e4m3fn = DTypeConstructor("float8_e4m3fn")
float8_e5m2 = DTypeConstructor("float8_e5m2")
float8_e4m3fnuz = DTypeConstructor("float8_e4m3fnuz")
float8_e5m2fnuz = DTypeConstructor("float8_e5m2fnuz")
handle = DTypeConstructor("handle")
void = DTypeConstructor("void")
