"""Benchmarks for vault-memory: datasets, metrics and runners (`python -m bench --help`)."""
