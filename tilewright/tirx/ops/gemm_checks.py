"""What every ``gemm`` variant asks of its operands' types and memories: A and B both
float16 or bfloat16 in shared memory (wgmma may take A from registers), C a float32
accumulator in registers."""

from __future__ import annotations

from tilewright.tirx.dispatch import Check
from tilewright.tirx.operand import Operand

INPUT_TYPES = ("float16", "bfloat16")


def types_and_memories(
    c: Operand, a: Operand, b: Operand, *, engine: str, reads: str, a_in_registers: bool = False
) -> Check:
    """(True, None), or False and the first condition ``engine``'s operands break (``reads``
    says how it reads A and B, for the message); ``a_in_registers`` lets A be ``local``.

    Example::

        >>> types_and_memories(c, a, b, engine="wgmma", reads="reads A and B from shared memory")
        (True, None)
    """
    if a.buffer.dtype != b.buffer.dtype or str(a.buffer.dtype) not in INPUT_TYPES:
        return False, (
            f"A {a.buffer.name} and B {b.buffer.name} must both be float16 or bfloat16, got "
            f"{a.buffer.dtype} and {b.buffer.dtype}"
        )
    if str(c.buffer.dtype) != "float32":
        return False, f"C {c.buffer.name} must be a float32 accumulator, got {c.buffer.dtype}"
    for name, side in (("A", a), ("B", b)):
        if side.memory != "shared" and not (side is a and a_in_registers and a.memory == "local"):
            return False, (
                f"{name} {side.buffer.name} is in {side.buffer.scope!r} memory; {engine} {reads}"
            )
    if c.memory != "local":
        return False, (
            f"C {c.buffer.name} is in {c.buffer.scope!r} memory; {engine} accumulates in "
            "registers (scope='local')"
        )
    return True, None
