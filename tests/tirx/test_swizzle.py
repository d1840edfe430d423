"""Unit tests of shared-memory swizzles and their composition with tile layouts."""

import pytest

from tilewright.ir import Call, Var, assert_structural_equal, dtype, structural_equal
from tilewright.layout import ComposeLayout, LayoutError, S, SwizzleLayout, TileLayout

# 128-byte swizzle, 16-bit elements: 8 rows of 64 elements (128 bytes), 8 chunks of 8 elements
# (16 bytes) per row. Entry [row][chunk] is the chunk where that logical chunk lands.
SW128_F16_CHUNKS = [
    [0, 1, 2, 3, 4, 5, 6, 7],
    [1, 0, 3, 2, 5, 4, 7, 6],
    [2, 3, 0, 1, 6, 7, 4, 5],
    [3, 2, 1, 0, 7, 6, 5, 4],
    [4, 5, 6, 7, 0, 1, 2, 3],
    [5, 4, 7, 6, 1, 0, 3, 2],
    [6, 7, 4, 5, 2, 3, 0, 1],
    [7, 6, 5, 4, 3, 2, 1, 0],
]
# 64-byte swizzle, 16-bit elements: rows of 32 elements (4 chunks); row pairs share a pattern.
SW64_F16_CHUNKS = [
    [0, 1, 2, 3],
    [0, 1, 2, 3],
    [1, 0, 3, 2],
    [1, 0, 3, 2],
    [2, 3, 0, 1],
    [2, 3, 0, 1],
    [3, 2, 1, 0],
    [3, 2, 1, 0],
]
# 32-byte swizzle, 16-bit elements: rows of 16 elements (2 chunks); groups of four rows.
SW32_F16_CHUNKS = [[0, 1]] * 4 + [[1, 0]] * 4


@pytest.mark.parametrize(
    ("mode", "bits", "expected"),
    [
        (128, 16, (3, 3, 3)),
        (128, 32, (2, 3, 3)),
        (128, 8, (4, 3, 3)),
        (64, 16, (3, 2, 3)),
        (32, 16, (3, 1, 3)),
        (128, 64, (1, 3, 3)),
    ],
)
def test_from_bytes_parameters(mode, bits, expected):
    sw = SwizzleLayout.from_bytes(mode, bits)
    assert (sw.per_element, sw.swizzle_len, sw.atom_len) == expected
    assert (sw.base, sw.bits, sw.shift) == (expected[0], expected[1], expected[2])
    assert sw.chunk_elems() * bits == 128
    assert sw.swizzle_bytes(bits) == mode
    assert_structural_equal(sw, SwizzleLayout.from_bits_base_shift(sw.bits, sw.base, sw.shift))


@pytest.mark.parametrize(
    ("mode", "row_elems", "table"),
    [(128, 64, SW128_F16_CHUNKS), (64, 32, SW64_F16_CHUNKS), (32, 16, SW32_F16_CHUNKS)],
)
def test_float16_tables(mode, row_elems, table):
    sw = SwizzleLayout.from_bytes(mode, 16)
    for row, chunks in enumerate(table):
        for chunk, landed in enumerate(chunks):
            for elem in (0, 3, 7):
                offset = row * row_elems + chunk * 8 + elem
                assert sw.apply(offset) == row * row_elems + landed * 8 + elem


def test_float32_and_uint8_chunks():
    f32 = SwizzleLayout.from_bytes(128, 32)  # rows of 32 elements, chunks of 4
    assert f32.chunk_elems() == 4
    assert f32.apply(1 * 32 + 0 * 4 + 2) == 1 * 32 + 1 * 4 + 2
    assert f32.apply(5 * 32 + 6 * 4 + 3) == 5 * 32 + 3 * 4 + 3
    u8 = SwizzleLayout.from_bytes(128, 8)  # rows of 128 elements, chunks of 16
    assert u8.chunk_elems() == 16
    assert u8.apply(3 * 128 + 1 * 16 + 9) == 3 * 128 + 2 * 16 + 9


def test_pattern_repeats_every_atom():
    sw = SwizzleLayout.from_bytes(128, 16)
    assert sw.atom_size() == 512
    assert all(sw.apply(x + 512 * 3) == sw.apply(x) + 512 * 3 for x in range(512))


def test_symbolic_offset(evaluate_expr):
    sw = SwizzleLayout.from_bytes(128, 16)
    x = Var("x", dtype("int32"))
    got = sw.apply(x)
    assert isinstance(got, Call) and got.op == "bitwise_xor"
    assert_structural_equal(got, Call(dtype("int32"), "bitwise_xor", (x, x // 64 % 8 * 8)))
    assert all(evaluate_expr(got, {x: n}) == sw.apply(n) for n in range(0, 1024, 7))
    assert sw(5) == sw.apply(5)


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: SwizzleLayout.from_bytes(48, 16), LayoutError, "must be 32, 64 or 128 bytes"),
        (lambda: SwizzleLayout.from_bytes(128, 12), LayoutError, "must be 8, 16, 32 or 64 bits"),
        (lambda: SwizzleLayout(3, 4, 3), LayoutError, "must be at least swizzle_len"),
        (lambda: SwizzleLayout(-1, 3, 3), LayoutError, "per_element must be a non-negative"),
        (lambda: ComposeLayout(S[8], S[8]), TypeError, "first part must be a SwizzleLayout"),
        (
            lambda: ComposeLayout(SwizzleLayout(3, 3, 3), "S[8]"),
            TypeError,
            "second part must be a TileLayout",
        ),
    ],
)
def test_errors(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_compose_applies_tile_then_swizzle():
    sw = SwizzleLayout.from_bytes(128, 16)
    layout = ComposeLayout(sw, TileLayout(S[64, 64]))
    assert layout.apply(1, 0) == {"m": 72}
    assert layout.apply(0, 9) == {"m": 9}
    assert layout.shape == (64, 64) and layout.size() == 4096
    assert layout.cosize() == 4096 and layout.storage_shape == (4096,)
    assert layout.chunk_elems() == 8 and layout.is_bijective()
    col = ComposeLayout(sw, S[(64, 64) : (1, 64)])
    assert col.apply(0, 1)["m"] == sw.apply(64)


def test_compose_reshaping_and_span():
    sw = SwizzleLayout.from_bytes(128, 32)
    layout = ComposeLayout(sw, S[8, 32])  # exactly one atom
    regrouped = layout.regroup([2, 4, 32])
    assert regrouped.shape == (2, 4, 32)
    assert all(
        regrouped.apply(a, b, c)["m"] == layout.apply(a * 4 + b, c)["m"]
        for a in range(2)
        for b in range(4)
        for c in range(32)
    )
    assert_structural_equal(layout.canonicalize().tile, S[256])
    assert structural_equal(layout.with_shape([256]), layout.regroup([256]))
    small = ComposeLayout(sw, S[4, 32])  # half an atom: the swizzle leaves the span
    assert small.cosize() == 256 and not small.is_bijective()
    with pytest.raises(LayoutError, match=r"slice its \.tile"):
        layout.slice((slice(0, 4), slice(0, 32)))


def test_printing():
    sw = SwizzleLayout.from_bytes(128, 16)
    assert repr(sw) == "SwizzleLayout(3, 3, 3)"
    layout = ComposeLayout(sw, S[64, 64])
    assert repr(layout) == "ComposeLayout(SwizzleLayout(3, 3, 3), S[(64, 64) : (64, 1)])"
    assert layout.script() == (
        "T.ComposeLayout(T.SwizzleLayout(3, 3, 3), T.TileLayout(S[(64, 64) : (64, 1)]))"
    )
