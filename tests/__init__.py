"""skdp test suite.

A package, so that ``tests.conftest`` never resolves to another distribution's
top-level ``tests`` (diffprivlib, used by the benchmarks, installs one).
"""
