"""skdp's benchmark suite: ``python -m benchmarks run --profile quick`` (see README.md)."""
