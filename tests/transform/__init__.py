"""Tests of the lowering passes (a package so that names like test_simplify stay unique)."""
