"""Coverage of confidence intervals over repeated data sets (the interval tests)."""

from __future__ import annotations

import math

import numpy as np

#: The well-specified linear models of the interval tests: ``x`` uniform on ``[-1, 1]^3``
#: (so ``data_norm = sqrt(3)`` clips no row), these slopes and intercept.
THETA, BIAS = np.array([1.0, -0.5, 0.25]), 0.2
TRUTH = np.r_[THETA, BIAS]
DATA_NORM = math.sqrt(3.0)


def linear_model(rng, n: int, errors):
    """``(X, y)``: ``n`` rows uniform on ``[-1, 1]^3``, then ``y = X theta + b +
    errors(rng, n)`` (drawn in that order)."""
    X = rng.uniform(-1, 1, size=(n, 3))
    return X, X @ THETA + BIAS + errors(rng, n)


def coverage_counts(sample, interval, truth, runs: int, seed: int) -> np.ndarray:
    """How many of ``runs`` data sets ``sample(rng)`` give an ``interval(X, y, k)`` (the
    run's index ``k`` seeds its noise) that covers each entry of ``truth``."""
    rng = np.random.default_rng(seed)
    covers = np.zeros(len(truth), dtype=int)
    for k in range(runs):
        ci = interval(*sample(rng), k)
        covers += (ci[:, 0] <= truth) & (truth <= ci[:, 1])
    return covers


def assert_nominal_coverage(sample, interval, truth) -> None:
    """200 data sets, fixed seeds: each entry's 95% interval covers the truth in
    Bin(200, p) of them; at the nominal p = 0.95 fewer than 178 or all 200 covers have
    probability below 1e-4 each."""
    covers = coverage_counts(sample, interval, truth, 200, 2026)
    assert np.all(covers >= 178) and np.all(covers < 200), covers
