"""Workloads and helpers for testing and benchmarking the auto-scheduler."""
