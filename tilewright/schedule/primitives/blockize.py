"""Blockize: wrap the subtree of a loop into a new outer block."""
