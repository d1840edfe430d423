"""Inlining: substitute an elementwise producer into its consumers (``compute_inline``) or an
elementwise consumer into its producer (``reverse_compute_inline``)."""
