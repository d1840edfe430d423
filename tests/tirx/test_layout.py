"""Unit tests of tile layouts: S[...] spellings, apply, slicing, grouping, canonical forms."""

import pytest

from tilewright.ir import (
    Add,
    FloorDiv,
    FloorMod,
    Var,
    assert_structural_equal,
    decl_buffer,
    dtype,
    structural_equal,
    structural_hash,
)
from tilewright.ir.expr import Range
from tilewright.layout import (
    Iter,
    LayoutError,
    S,
    TileLayout,
    align,
    contiguous_tail,
    laneid,
    partition,
    warpid,
)
from tilewright.tirx import layout as tirx_layout

i32 = dtype("int32")


def var(name):
    return Var(name, i32)


def strides(layout):
    return tuple(s.stride for s in layout.shard)


# -- spellings --------------------------------------------------------------------------------


def test_row_major_spellings_agree():
    expected = TileLayout((Iter(32, 32), Iter(32, 1)))
    for layout in (S[32, 32], S[(32, 32)], S[[32, 32]], S[(32, 32) : (32, 1)]):
        assert_structural_equal(layout, expected)
    assert TileLayout(S[(32, 32)]).shape == (32, 32)


def test_explicit_strides_and_one_dimension():
    col = S[(32, 32) : (1, 32)]
    assert col.shape == (32, 32) and strides(col) == (1, 32) == col.strides
    assert_structural_equal(S[32], S[32:1])
    assert strides(S[(2, 3, 4)]) == (12, 4, 1)


def test_hardware_axes():
    layout = S[(2, 8, 4) : (1 @ warpid, 4 @ laneid, 1)]
    assert [s.axis for s in layout.shard] == ["warpid", "laneid", "m"]
    assert layout.axes() == ("m", "warpid", "laneid")
    assert layout.apply(1, 3, 2) == {"m": 2, "warpid": 1, "laneid": 12}


def test_public_import_path():
    from tilewright.tirx import TileLayout as TL2

    assert tirx_layout.S is S and TL2 is TileLayout
    assert {"S", "TileLayout", "SwizzleLayout", "ComposeLayout"} <= set(tirx_layout.__all__)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: S[(32, 32) : (1,)], "2 extents but 1 strides"),
        (lambda: S[0], "every extent must be a positive int"),
        (lambda: S[(4,) : (-1,)], "every stride must be a non-negative int"),
        (lambda: S[4:1:2], "no third part"),
        (lambda: S[(4, 4) : (1, "x")], "every stride must be a non-negative int"),
        (lambda: S[()], "the shape is empty"),
    ],
)
def test_bad_spellings(build, message):
    with pytest.raises(LayoutError, match=message):
        build()


def test_bad_shards():
    with pytest.raises(TypeError, match="TileLayout takes S"):
        TileLayout("32x32")
    with pytest.raises(LayoutError, match="extent must be a positive int"):
        Iter(0, 1)
    with pytest.raises(LayoutError, match="axis must be a name"):
        Iter(4, 1, "lane id")


# -- values, equality, printing ----------------------------------------------------------------


def test_structural_equality_and_hash():
    a, b = S[32, 32], TileLayout(S[(32, 32) : (32, 1)])
    assert a is not b
    assert structural_equal(a, b) and structural_hash(a) == structural_hash(b)
    assert not structural_equal(a, S[(32, 32) : (1, 32)])
    assert structural_hash(a) != structural_hash(S[(32, 32) : (1, 32)])
    with pytest.raises(AttributeError):
        a.shard = ()


def test_layout_sits_in_a_buffer():
    buf = decl_buffer((32, 32), "float32", "A_smem", "shared")
    one, two = buf.replace(layout=S[32, 32]), buf.replace(layout=S[32, 32])
    assert structural_equal(one, two)
    assert not structural_equal(one, buf.replace(layout=S[(32, 32) : (1, 32)]))


def test_printing():
    assert repr(S[32, 32]) == "S[(32, 32) : (32, 1)]"
    assert str(S[(32, 32) : (1, 32)]) == "S[(32, 32) : (1, 32)]"
    assert repr(S[16]) == "S[16 : 1]"
    assert repr(S[(8, 4) : (4 @ laneid, 1)]) == "S[(8, 4) : (4@laneid, 1)]"
    assert S[32, 32].script() == "T.TileLayout(S[(32, 32) : (32, 1)])"
    namespace = {"S": S, "laneid": laneid}
    for layout in (S[(3, 5) : (1, 3)], S[(8, 4) : (4 @ laneid, 1)], S[7]):
        assert_structural_equal(eval(repr(layout), namespace), layout)


# -- size and span ----------------------------------------------------------------------------


def test_size_cosize_bijective():
    assert S[32, 32].size() == 1024 and S[32, 32].cosize() == 1024
    padded = S[(32, 32) : (40, 1)]
    assert padded.cosize() == 31 * 40 + 32 and not padded.is_bijective()
    assert padded.storage_shape == (padded.cosize(),)
    assert S[(4, 8) : (1, 4)].is_bijective()
    assert not S[(4, 8) : (0, 1)].is_bijective()
    assert S[(8, 4) : (4 @ laneid, 1)].cosize() == 4


# -- apply --------------------------------------------------------------------------------------


def test_apply_ints():
    assert S[32, 32].apply(3, 4) == {"m": 100}
    assert S[(32, 32) : (1, 32)].apply(3, 4) == {"m": 131}
    assert S[32, 32].apply((3, 4)) == {"m": 100}
    assert S[32, 32].offset_of(1, 0) == 32


def test_apply_seed_partition_is_exact():
    f, tid = var("f"), var("tid")
    got = S[32, 32].apply(f, tid, 0, shape=[8, 32, 4])["m"]
    assert_structural_equal(got, f * 128 + tid * 4)
    v = var("v")
    assert_structural_equal(
        S[32, 32].apply(f, tid, v, shape=[8, 32, 4])["m"], f * 128 + tid * 4 + v
    )


def test_apply_symbolic_has_no_trivial_terms():
    i, j = var("i"), var("j")
    got = S[32, 32].apply(i, j)["m"]
    assert_structural_equal(got, i * 32 + j)
    assert isinstance(got, Add) and got.b is j
    assert S[32, 32].apply(i, 0)["m"].b.value == 32
    assert S[32, 32].apply(0, j)["m"] is j


def test_apply_symbolic_spread_over_shards(evaluate_expr):
    # The column index of a column-major layout viewed flat needs // and %.
    layout = S[(4, 8) : (1, 4)]
    k = var("k")
    got = layout.apply(k, shape=[32])["m"]
    assert_structural_equal(got, k // 8 + k % 8 * 4)
    assert isinstance(got.a, FloorDiv) and isinstance(got.b.a, FloorMod)
    assert [evaluate_expr(got, {k: n}) for n in range(32)] == [
        layout.apply(n // 8, n % 8)["m"] for n in range(32)
    ]


def test_apply_with_unaligned_shape_falls_back_to_flat_index(evaluate_expr):
    layout = S[(3, 4) : (10, 1)]
    i, j = var("i"), var("j")
    got = layout.apply(i, j, shape=[2, 6])["m"]
    for a in range(2):
        for b in range(6):
            flat = a * 6 + b
            assert evaluate_expr(got, {i: a, j: b}) == (flat // 4) * 10 + flat % 4
            assert layout.apply(a, b, shape=[2, 6])["m"] == (flat // 4) * 10 + flat % 4


def test_apply_errors():
    with pytest.raises(IndexError, match=r"coordinate 32 at dimension 1 is outside \[0, 32\)"):
        S[32, 32].apply(0, 32)
    with pytest.raises(LayoutError, match="apply got 3 coordinates for the 2-d shape"):
        S[32, 32].apply(0, 0, 0)
    with pytest.raises(LayoutError, match="1024 elements to shape \\[8, 8\\]"):
        S[32, 32].apply(0, 0, shape=[8, 8])
    with pytest.raises(TypeError, match="coordinate must be an integer"):
        S[32, 32].apply(0.5, 0)
    with pytest.raises(TypeError, match="scalar integer expression"):
        S[32, 32].apply(Var("x", dtype("float32")), 0)


# -- canonical forms ------------------------------------------------------------------------------


def test_canonicalize():
    assert_structural_equal(S[32, 32].canonicalize(), S[1024])
    assert_structural_equal(S[(4, 1, 8) : (8, 5, 1)].canonicalize(), S[32])
    assert_structural_equal(S[(4, 8) : (1, 4)].canonicalize(), S[(4, 8) : (1, 4)])
    assert_structural_equal(S[(2, 4, 8) : (64, 8, 1)].canonicalize(), S[(2, 32) : (64, 1)])
    assert_structural_equal(S[1].canonicalize(), S[1])
    # A memory shard never merges with a hardware shard.
    assert S[(8, 4) : (4 @ laneid, 1)].canonicalize().ndim == 2


def test_canonical_order_and_permute():
    layout = S[(4, 8, 2) : (1, 8, 4)]
    assert layout.canonical_order() == (1, 2, 0)
    assert_structural_equal(layout.permute((1, 2, 0)), S[(8, 2, 4) : (8, 4, 1)])
    with pytest.raises(LayoutError, match=r"\[0, 0, 1\] is not a permutation of 3 shards"):
        layout.permute([0, 0, 1])


# -- grouping --------------------------------------------------------------------------------------


def test_regroup_row_major_into_outer_threads_vec():
    assert_structural_equal(S[32, 32].regroup([8, 32, 4]), S[(8, 32, 4) : (128, 4, 1)])
    groups = S[32, 32].group([8, 32, 4])
    for got, want in zip(groups, (S[8:128], S[32:4], S[4:1])):
        assert_structural_equal(got, want)
    assert_structural_equal(S[32, 32].with_shape([1024]), S[1024])


def test_regroup_keeps_unmergeable_shards_in_one_dimension():
    layout = S[(4, 8) : (1, 4)]  # column-major 4x8
    (grouped,) = layout.group([32])
    assert_structural_equal(grouped, layout)
    assert_structural_equal(layout.regroup([2, 16]), S[(2, 2, 8) : (2, 1, 4)])
    assert_structural_equal(S[(4, 8)].regroup([4, 1, 8]), S[(4, 1, 8) : (8, 1, 1)])


def test_regroup_errors():
    with pytest.raises(LayoutError, match="do not divide each other"):
        S[3, 4].regroup([2, 6])
    with pytest.raises(LayoutError, match=r"12 elements as shape \[5, 2\]"):
        S[3, 4].group([5, 2])
    with pytest.raises(LayoutError, match="every extent must be a positive int"):
        S[3, 4].regroup([0, 12])


# -- slicing ---------------------------------------------------------------------------------------


def test_slice_rows_and_columns():
    sub, base = S[32, 32].slice((slice(8, 16), slice(0, 32)))
    assert_structural_equal(sub, S[(8, 32) : (32, 1)])
    assert base == 256
    sub, base = S[32, 32].slice(((0, 32), (8, 8)))
    assert_structural_equal(sub, S[(32, 8) : (32, 1)])
    assert base == 8
    sub, base = S[32, 32].slice((Range.from_min_extent(2, 1), 5))
    assert_structural_equal(sub, S[(1, 1) : (32, 1)])
    assert base == 69


def test_slice_against_another_shape():
    # A 32x32 buffer whose layout is written as 4 blocks of 8 rows.
    layout = S[(4, 8, 32) : (256, 32, 1)]
    sub, base = layout.slice((slice(8, 24), slice(0, 16)), shape=[32, 32])
    assert_structural_equal(sub, S[(16, 16) : (32, 1)])
    assert base == 256


def test_slice_multi_shard_dimension():
    layout = S[(4, 8) : (1, 4)]  # dimension 0 of the flat view spans two shards
    sub, base = layout.slice([(8, 16)], shape=[32])
    assert_structural_equal(sub, S[(2, 8) : (1, 4)])
    assert base == 1
    sub, base = layout.slice([(10, 4)], shape=[32])
    assert_structural_equal(sub, S[4:4])
    assert base == 1 + 2 * 4


def test_slice_symbolic_start(evaluate_expr):
    i = var("i")
    sub, base = S[32, 32].slice(((i * 8, 8), slice(0, 32)))
    assert_structural_equal(sub, S[(8, 32) : (32, 1)])
    assert [evaluate_expr(base, {i: n}) for n in range(4)] == [0, 256, 512, 768]
    sub, base = S[32, 32].slice((slice(i * 8, i * 8 + 8), slice(0, 32)))
    assert_structural_equal(sub, S[(8, 32) : (32, 1)])
    assert evaluate_expr(base, {i: 3}) == 768


def test_slice_errors():
    with pytest.raises(LayoutError, match=r"region entry 1 \[24, 40\) is out of range"):
        S[32, 32].slice((slice(0, 32), slice(24, 40)))
    with pytest.raises(LayoutError, match="region has 1 entries for the 2-d shape"):
        S[32, 32].slice((slice(0, 32),))
    with pytest.raises(LayoutError, match=r"\[4, 12\) is not a box of the layout"):
        S[(4, 8) : (1, 4)].slice([(4, 8)], shape=[32])
    with pytest.raises(LayoutError, match="only step 1 slices"):
        S[32, 32].slice((slice(0, 32, 2), slice(0, 32)))
    with pytest.raises(LayoutError, match="positive constant extent"):
        S[32, 32].slice(((0, var("n")), slice(0, 32)))
    with pytest.raises(LayoutError, match="slicing moves hardware axis 'laneid'"):
        S[(8, 4) : (4 @ laneid, 1)].slice((slice(2, 4), slice(0, 4)))


# -- partition primitives --------------------------------------------------------------------------


def test_contiguous_tail():
    assert contiguous_tail(S[32, 32]) == 1024
    assert contiguous_tail(S[(32, 32) : (40, 1)]) == 32
    assert contiguous_tail(S[(4, 8) : (1, 4)]) == 1
    assert contiguous_tail(S[(8, 4) : (1, 4 @ laneid)]) == 1


@pytest.mark.parametrize(("bits", "vec", "outer"), [(32, 4, 8), (16, 8, 4), (8, 16, 2)])
def test_seed_dtype_table_partitions(bits, vec, outer):
    # Global and shared 32x32 row-major; 32 threads; the widest 128-bit vector.
    g, s = align(*(layout.slice((slice(0, 32), slice(0, 32)))[0] for layout in (S[32, 32],) * 2))
    assert vec == 128 // bits and contiguous_tail(g) % vec == 0
    assert outer == 1024 // (32 * vec)
    parts = [outer, 32, vec]
    f, tid = var("f"), var("tid")
    for layout in (partition(g, parts), partition(s, parts)):
        assert_structural_equal(
            layout.apply(f, tid, 0, shape=parts)["m"], f * (32 * vec) + tid * vec
        )


def test_align_makes_the_driver_walk_memory():
    g, s = align(S[(4, 8) : (1, 4)], S[4, 8])
    assert_structural_equal(g, S[(8, 4) : (4, 1)])
    assert_structural_equal(s, S[(8, 4) : (1, 8)])
    with pytest.raises(LayoutError, match="cannot align layouts of 32 and 16 elements"):
        align(S[4, 8], S[4, 4])


def test_partition_errors():
    with pytest.raises(LayoutError, match="at dimension 1 a shard of extent 4"):
        partition(S[(6, 4) : (1, 6)], [4, 6])
    with pytest.raises(LayoutError, match=r"1024 elements as shape \[7, 32, 4\]"):
        partition(S[32, 32], [7, 32, 4])
