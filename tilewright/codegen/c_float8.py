"""The 8-bit float formats (``float8_e4m3fn``, ``float8_e5m2`` and their ``fnuz`` forms) in C:
stored as ``uint8_t``, computed in ``float``, converted by helpers generated per format.

The conversion from float rounds to nearest, ties to even, as ml_dtypes (numpy's ``astype``)
does: a value past the largest finite one becomes infinity where the format has it
(``e5m2``) and NaN where it does not; the ``fnuz`` formats have a single zero and one NaN.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Float8Format:
    """One format: its field widths, exponent bias, largest finite code and special codes
    (C expressions of the 0x80 ``sign`` of the value being converted)."""

    suffix: str
    exponent: int
    mantissa: int
    bias: int
    max_code: int
    overflow: str  # what a value past the largest finite one (or an infinity) becomes
    nan: str
    zero: str
    special: str  # the decoder's test for NaN and infinities

    def decoder(self) -> str:
        m, bias = self.mantissa, self.bias
        return f"""\
QUAL float tw_{self.suffix}_to_f32(uint8_t v) {{
  uint32_t e = (v >> {m}) & {(1 << self.exponent) - 1}u, m = v & {(1 << m) - 1}u;
  {self.special}
  float r = e ? ldexpf((float)(m | {1 << m}u), (int)e - {bias + m})
              : ldexpf((float)m, {1 - bias - m});
  return (v & 0x80u) ? -r : r;
}}
"""

    def encoder(self) -> str:
        m, bias = self.mantissa, self.bias
        return f"""\
QUAL uint8_t tw_f32_to_{self.suffix}(float f) {{
  uint32_t sign = signbit(f) ? 0x80u : 0u;
  if (isnan(f)) return (uint8_t)({self.nan});
  float a = fabsf(f);
  if (isinf(a)) return (uint8_t)({self.overflow});
  int e;
  frexpf(a, &e);
  int q = (e - 1 < {1 - bias} ? {1 - bias} : e - 1) - {m};  /* the step at a's magnitude */
  uint32_t n = a == 0.0f ? 0u : (uint32_t)nearbyintf(ldexpf(a, -q));  /* ties to even */
  if (n == 0u) return (uint8_t)({self.zero});
  if (n >= {1 << (m + 1)}u) {{ n >>= 1; q += 1; }}
  long code = n < {1 << m}u ? (long)n : ((long)(q + {m + bias}) << {m}) | (long)(n - {1 << m}u);
  if (code > {self.max_code}) return (uint8_t)({self.overflow});
  return (uint8_t)(sign | (uint32_t)code);
}}
"""


FORMATS = {
    "float8_e4m3fn": Float8Format(
        "e4m3fn", 4, 3, 7, 0x7E, "sign | 0x7fu", "sign | 0x7fu", "sign",
        "if ((v & 0x7fu) == 0x7fu) return NAN;",
    ),
    "float8_e5m2": Float8Format(
        "e5m2", 5, 2, 15, 0x7B, "sign | 0x7cu", "sign | 0x7eu", "sign",
        "if (e == 31u) return m ? NAN : ((v & 0x80u) ? -INFINITY : INFINITY);",
    ),
    "float8_e4m3fnuz": Float8Format(
        "e4m3fnuz", 4, 3, 8, 0x7F, "0x80u", "0x80u", "0u", "if (v == 0x80u) return NAN;"
    ),
    "float8_e5m2fnuz": Float8Format(
        "e5m2fnuz", 5, 2, 16, 0x7F, "0x80u", "0x80u", "0u", "if (v == 0x80u) return NAN;"
    ),
}  # fmt: skip


def helpers(dtype_name: str) -> dict[str, str]:
    """The helper definitions of a format by name: ``tw_<f>_to_f32``, ``tw_f32_to_<f>``
    and ``tw_round_<f>`` (a float rounded to the nearest value of the format)."""
    fmt = FORMATS[dtype_name]
    s = fmt.suffix
    rounded = f"return tw_{s}_to_f32(tw_f32_to_{s}(f));"
    return {
        f"tw_{s}_to_f32": fmt.decoder(),
        f"tw_f32_to_{s}": fmt.encoder(),
        f"tw_round_{s}": f"QUAL float tw_round_{s}(float f) {{ {rounded} }}\n",
    }
