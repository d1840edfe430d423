"""Property tests of the layout algebra: apply against a numpy index model; slicing, grouping,
alignment and swizzling keep offsets a bijection onto the tile."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tilewright.ir import Var, dtype
from tilewright.layout import (
    ComposeLayout,
    S,
    SwizzleLayout,
    TileLayout,
    align,
    partition,
)

FAST = settings(max_examples=60, deadline=None)


def all_coords(shape):
    return list(itertools.product(*(range(e) for e in shape)))


def offsets(layout, shape=None):
    dims = layout.shape if shape is None else shape
    return [layout.apply(*c, shape=shape)["m"] for c in all_coords(dims)]


@st.composite
def strided_layouts(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    strides = tuple(draw(st.lists(st.integers(0, 40), min_size=ndim, max_size=ndim)))
    return shape, strides


@st.composite
def reshapes(draw, size):
    """A random shape with ``size`` elements."""
    dims, rest = [], size
    while rest > 1 and len(dims) < 3:
        divisors = [d for d in range(2, rest + 1) if rest % d == 0]
        dim = draw(st.sampled_from(divisors))
        dims.append(dim)
        rest //= dim
    if rest > 1:
        dims.append(rest)
    dims = draw(st.permutations(dims)) if dims else [1]
    if draw(st.booleans()):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    return tuple(dims)


@st.composite
def compact_pow2_layouts(draw, max_log=6):
    """A bijective layout with power-of-two extents and a random memory order of its dims."""
    ndim = draw(st.integers(1, 3))
    logs = draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim))
    assert sum(logs) <= 9
    shape = tuple(1 << a for a in logs)
    order = draw(st.permutations(range(ndim)))  # innermost first
    strides, running = [0] * ndim, 1
    for dim in order:
        strides[dim] = running
        running *= shape[dim]
    return S[shape : tuple(strides)]


@st.composite
def pow2_reshapes(draw, size):
    log = size.bit_length() - 1
    cuts = sorted(draw(st.lists(st.integers(0, log), max_size=3)))
    bounds = [0, *cuts, log]
    return tuple(1 << (b - a) for a, b in itertools.pairwise(bounds))


@FAST
@given(strided_layouts())
def test_apply_matches_numpy_strides(spec):
    shape, strides = spec
    layout = S[shape:strides]
    coords = np.indices(shape).reshape(len(shape), -1).T
    assert offsets(layout) == list(coords @ np.array(strides))
    assert layout.cosize() == 1 + int(coords.max(axis=0) @ np.array(strides))


@FAST
@given(strided_layouts(), st.data())
def test_apply_with_shape_matches_numpy_reshape(spec, data):
    shape, strides = spec
    layout = S[shape:strides]
    target = data.draw(reshapes(layout.size()))
    table = np.arange(layout.size()).reshape(shape)
    expected = []
    for coord in all_coords(target):
        flat = np.ravel_multi_index(coord, target) if target else 0
        original = np.unravel_index(flat, shape)
        assert table[original] == flat
        expected.append(int(np.dot(original, strides)))
    assert offsets(layout, target) == expected


@FAST
@given(spec=strided_layouts(), data=st.data())
def test_symbolic_apply_evaluates_like_ints(evaluate_expr, spec, data):
    shape, strides = spec
    layout = S[shape:strides]
    target = data.draw(reshapes(layout.size()))
    coord_vars = [Var(f"c{i}", dtype("int32")) for i in range(len(target))]
    symbolic = layout.apply(*coord_vars, shape=target)["m"]
    for coord in data.draw(st.lists(st.sampled_from(all_coords(target)), max_size=8)):
        env = dict(zip(coord_vars, coord))
        assert evaluate_expr(symbolic, env) == layout.apply(*coord, shape=target)["m"]


@FAST
@given(compact_pow2_layouts(), st.data())
def test_grouping_keeps_offsets_and_bijection(layout, data):
    target = data.draw(pow2_reshapes(layout.size()))
    regrouped = layout.regroup(target)
    assert offsets(regrouped, target) == offsets(layout, target)
    assert sorted(offsets(regrouped, target)) == list(range(layout.size()))
    groups = layout.group(target)
    assert [g.size() for g in groups] == list(target)
    assert regrouped.is_bijective() and layout.canonicalize().is_bijective()
    assert offsets(layout.canonicalize(), (layout.size(),)) == offsets(layout, (layout.size(),))


@st.composite
def aligned_regions(draw, shape):
    region = []
    for extent in shape:
        length = 1 << draw(st.integers(0, extent.bit_length() - 1))
        start = length * draw(st.integers(0, extent // length - 1))
        region.append(slice(start, start + length))
    return tuple(region)


@FAST
@given(compact_pow2_layouts(), st.data())
def test_slicing_is_a_bijection_onto_the_region(layout, data):
    target = data.draw(pow2_reshapes(layout.size()))
    region = data.draw(aligned_regions(target))
    sub, base = layout.slice(region, shape=target)
    sub_shape = tuple(r.stop - r.start for r in region)
    got = [base + off for off in offsets(sub, sub_shape)]
    want = [
        layout.apply(*(r.start + c for r, c in zip(region, coord)), shape=target)["m"]
        for coord in all_coords(sub_shape)
    ]
    assert got == want
    assert len(set(got)) == len(got)


@FAST
@given(compact_pow2_layouts(), st.data())
def test_align_and_partition_keep_element_pairs(driver, data):
    shape = driver.shape
    order = data.draw(st.permutations(range(len(shape))))
    strides, running = [0] * len(shape), 1
    for dim in order:
        strides[dim] = running
        running *= shape[dim]
    follower = S[shape : tuple(strides)]
    pairs = {(driver.apply(*c)["m"], follower.apply(*c)["m"]) for c in all_coords(shape)}
    d, f = align(driver, follower)
    assert d.shape == f.shape
    assert list(d.shape) and [s.stride for s in d.shard] == sorted(
        (s.stride for s in d.shard), reverse=True
    )
    assert {(d.apply(*c)["m"], f.apply(*c)["m"]) for c in all_coords(d.shape)} == pairs
    parts = data.draw(pow2_reshapes(driver.size()))
    dp, fp = partition(d, parts), partition(f, parts)
    got = {
        (dp.apply(*c, shape=parts)["m"], fp.apply(*c, shape=parts)["m"]) for c in all_coords(parts)
    }
    assert got == pairs


@FAST
@given(
    st.sampled_from([32, 64, 128]),
    st.sampled_from([8, 16, 32, 64]),
    st.integers(0, 2),
    st.data(),
)
def test_swizzle_is_a_bijection_onto_the_tile(mode, bits, extra_log, data):
    sw = SwizzleLayout.from_bytes(mode, bits)
    atom = sw.atom_size()
    cosize = atom << extra_log
    values = [sw.apply(x) for x in range(cosize)]
    assert sorted(values) == list(range(cosize))
    assert all(sw.apply(v) == x for x, v in enumerate(values))  # an involution
    chunk = sw.chunk_elems()
    assert all(values[x] % chunk == x % chunk for x in range(0, cosize, 5))
    row_elems = mode * 8 // bits
    tile = TileLayout(S[cosize // row_elems, row_elems])
    if data.draw(st.booleans()):
        tile = S[(row_elems, cosize // row_elems) : (1, row_elems)]
    composed = ComposeLayout(sw, tile)
    assert composed.is_bijective()
    assert sorted(offsets(composed)) == list(range(cosize))
