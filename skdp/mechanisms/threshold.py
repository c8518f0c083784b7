"""A private decision threshold: report-noisy-max of training accuracy over a public grid.

A binary linear classifier's released direction ``w`` fixes the scores ``z_i = w . x_i``
of the clipped rows; its intercept ``b`` only shifts them. The intercept that a noisy fit
returns is where its tail goes wrong (every row on one side: the majority class), while
the direction still ranks the rows. This mechanism chooses ``b`` among public candidates,
a function of the released ``w`` and ``data_norm`` only, by the number of training rows
that ``sign(z_i + b)`` classifies correctly. Derivation and measurements:
docs/algorithms/threshold.md.
"""

from __future__ import annotations

import math

import numpy as np

from skdp._docstrings import fill_docstrings

__all__ = ["THRESHOLD_OCTAVES", "THRESHOLD_STEPS_PER_OCTAVE", "choose_threshold",
           "correct_counts", "private_threshold", "threshold_grid"]

#: The candidates' magnitudes fall from the public score bound ``R`` by factors of
#: ``2^(1/16)`` (4.4% apart) over 20 octaves (down to ``R / 1e6``).
THRESHOLD_STEPS_PER_OCTAVE = 16
THRESHOLD_OCTAVES = 20


# The report-noisy-max's parameters, described once (``<<noisy_max>>``).
_DOCS = {
    "noisy_max": """\
epsilon : float
    The budget, in ``(0, inf]`` (``inf``: the exact argmax, the lowest on ties).
rng : numpy.random.Generator
    Source of the noise.
""",
}


def threshold_grid(radius: float) -> np.ndarray:
    """The public candidates: ``0`` and ``+- radius 2^(-k/16)``, ``k = 0, ..., 320``.

    Dense near 0 and geometric in magnitude, so that a threshold at any scale below the
    bound is within 4.4% of a candidate (a uniform grid wastes its points where the scores
    are not: the noise of a released ``w`` spreads its norm over every feature, and
    ``|w . x|`` is typically far below ``||w|| data_norm``).

    Parameters
    ----------
    radius : float
        The public bound on ``|z_i|`` (``||w||_* data_norm``).

    Returns
    -------
    ndarray of shape (643,)
        The candidates, increasing.
    """
    steps = THRESHOLD_STEPS_PER_OCTAVE * THRESHOLD_OCTAVES
    magnitudes = float(radius) * 2.0 ** (-np.arange(steps + 1) / THRESHOLD_STEPS_PER_OCTAVE)
    return np.concatenate([-magnitudes, [0.0], magnitudes[::-1]])


def correct_counts(scores: np.ndarray, signs: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """For each candidate ``b``: the number of rows with ``sign(z_i + b) = y_i``.

    A row is predicted ``+1`` where ``z_i + b > 0`` (the classifiers' ``predict``).

    Parameters
    ----------
    scores : ndarray of shape (n,)
        The scores ``z_i`` without the intercept.
    signs : ndarray of shape (n,)
        The labels, ``+1`` or ``-1``.
    grid : ndarray of shape (m,)
        The candidates.

    Returns
    -------
    ndarray of shape (m,)
        The counts (integers as floats).
    """
    # Sorted once per call: the estimators call it per block of rows, so its copies are
    # of a block's size (2.9 ms for 200,000 scores at once, against 9.8 ms for a binary
    # search of each score among the candidates).
    positive = np.sort(scores[signs > 0])
    negative = np.sort(scores[signs <= 0])
    # +1 rows right when z > -b; -1 rows right when z <= -b.
    above = positive.size - np.searchsorted(positive, -grid, side="right")
    below = np.searchsorted(negative, -grid, side="right")
    return (above + below).astype(float)


def private_threshold(scores, signs, radius: float, epsilon: float,
                      rng: np.random.Generator) -> float:
    """An ``epsilon``-DP intercept: report-noisy-max of the correct counts.

    Replacing one record changes its own correctness only, so every candidate's count
    moves by at most 1, in either direction: Laplace noise of scale ``2 / epsilon`` on
    every count and the argmax is ``epsilon``-DP (Dwork & Roth 2014, Claim 3.9, with the
    factor 2 of counts that move in different directions). The candidates are public
    (:func:`threshold_grid` of the released bound), so the output is a grid point: no
    floating-point bit of the data leaves. Every candidate gets its draw, so the work does
    not depend on the data. Its ledger event is ``PureDpEvent(epsilon)``.

    Parameters
    ----------
    scores : array-like of shape (n,)
        ``z_i = w . x_i`` on the clipped rows (``w`` released).
    signs : array-like of shape (n,)
        The labels, ``+1`` or ``-1``.
    radius : float
        The public bound on ``|z_i|``.
    <<noisy_max>>

    Returns
    -------
    float
        The chosen candidate (a point of :func:`threshold_grid`).
    """
    grid = threshold_grid(radius)
    counts = correct_counts(np.asarray(scores, dtype=float).ravel(),
                            np.asarray(signs, dtype=float).ravel(), grid)
    return choose_threshold(counts, grid, epsilon, rng)


def choose_threshold(counts, grid, epsilon: float, rng: np.random.Generator) -> float:
    """The report-noisy-max of :func:`private_threshold` from the exact counts.

    For callers that sum :func:`correct_counts` over blocks of rows (the estimators do,
    so that no temporary of the rows' size is formed). Laplace noise of scale ``2 /
    epsilon`` on every count, one draw per candidate, then the argmax.

    Parameters
    ----------
    counts : ndarray of shape (m,)
        :func:`correct_counts` of every row, for the candidates ``grid``.
    grid : ndarray of shape (m,)
        The public candidates (:func:`threshold_grid`).
    <<noisy_max>>

    Returns
    -------
    float
        The chosen candidate.
    """
    counts = np.asarray(counts, dtype=float)
    if not math.isinf(epsilon):
        counts = counts + rng.laplace(0.0, 2.0 / float(epsilon), size=counts.shape)
    return float(grid[int(np.argmax(counts))])


for _function in (private_threshold, choose_threshold):
    fill_docstrings(_function, _DOCS)
