"""Schedule primitives as pure functions: a located statement in, a new function out."""
