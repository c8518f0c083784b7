"""Private bounds on a public grid: AboveThreshold over a geometric grid (Durfee 2023).

Used to choose the bounds a fit needs (``data_norm="auto"``, ``y_bound="auto"``, the DP
scaler's ranges) from the data, privately. The output is always a point of a public grid
that does not depend on the data, so no floating-point bit of it carries information about
a record (Mironov 2012). The argument is in docs/privacy.md, "Private bounds".
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event as dpe

from skdp._docstrings import fill_docstrings
from skdp.privacy.accounting import PureDpEvent

__all__ = ["GRID_STEP", "MEAN_RESOLUTION", "SLACK", "bound_event", "discrete_gaussian",
           "discrete_laplace", "grid_ceil", "grid_points", "mean_event", "on_grid",
           "private_bound", "private_mean", "private_range_mean", "target_count"]

#: Exponent step of the public geometric grid: its points are ``2^(k GRID_STEP)``.
#:
#: A factor ``2^(1/4)``, 19%, between neighbours, for ``k`` in ``[-80, 240]``, i.e.
#: ``[9.5e-7, 1.2e18]``. Constants, independent of every data set.
GRID_STEP = 0.25
_K_LO, _K_HI = -80, 240
# The parameters of the mechanisms, described once (a line ``<<name>>`` in their
# docstrings is replaced by the text, :mod:`skdp._docstrings`).
_DOCS = {
    "values": """\
values : array-like
    The private values, one per record (flattened).
""",
    "epsilon": """\
epsilon : float
    The privacy budget of the release, in ``(0, inf]``.
""",
    "rng": """\
rng : numpy.random.Generator
    Source of the noise.
""",
    "value": """\
value : float
    A number.
""",
}
#: How far below ``n`` the private bound's target count lies, in units of ``1 / epsilon``.
#:
#: At a finite epsilon the search stops at ``n - SLACK / epsilon`` records (floored at the
#: median): the max is out of reach of a noisy count, and a target that many noise
#: scales below ``n`` makes the grid points above the data stop the search with high
#: probability. The threshold's noise is shared by every query, so the estimate passes
#: ``m`` grid steps above the data with probability about ``e^(-SLACK/2) / m`` (a large
#: threshold draw, then ``m`` queries that miss it): 2.5e-3 / m here, against 0.14 / m
#: for a slack of 4, which let one fit in a few hundred reach ``y_bound_ = 1e10``
#: (docs/privacy.md, "Private bounds").
SLACK = 12.0
#: Relative tolerance of the counts (floating-point rounding of norms, not privacy).
ROUNDING = 1e-9


# Computed once and read-only: every bound search and check reads the same points.
_POINTS = 2.0 ** (np.arange(_K_LO, _K_HI + 1) * GRID_STEP)
_POINTS.flags.writeable = False


def grid_points() -> np.ndarray:
    """The public grid, ascending (float64 powers of ``2^(1/4)``; read-only).

    Returns
    -------
    ndarray of shape (321,)
        The grid points ``2^(k/4)``, ``k`` in ``[-80, 240]`` (a read-only array).
    """
    return _POINTS


def on_grid(value: float) -> bool:
    """Whether ``value`` is a point of the public grid (bit for bit).

    Parameters
    ----------
    <<value>>

    Returns
    -------
    bool
        True if ``value`` equals a grid point exactly.
    """
    return bool(np.any(_POINTS == value))


def grid_ceil(value: float) -> float:
    """The smallest grid point at or above ``value`` (the top of the grid above it).

    Parameters
    ----------
    <<value>>

    Returns
    -------
    float
        The grid point.
    """
    return float(_POINTS[min(np.searchsorted(_POINTS, value), _POINTS.size - 1)])


def target_count(n: int, epsilon: float, quantile: float = 1.0,
                 slack: float = SLACK) -> float:
    """The count of records the private bound's search looks for.

    A public function of the public ``n``, ``epsilon``, ``quantile`` and ``slack``.

    Parameters
    ----------
    n : int
        The number of records.
    <<epsilon>>
    quantile : float, default=1.0
        The quantile sought (1: the maximum).
    slack : float, default=SLACK
        How far below ``n`` the target lies, in units of ``1 / epsilon``.

    Returns
    -------
    float
        ``n`` (the maximum) at ``epsilon = inf``; else
        ``min(quantile n, n - slack / epsilon)``, at least ``n / 2``.
    """
    if math.isinf(epsilon):
        return float(n)
    return max(0.5 * n, min(float(quantile) * n, n - float(slack) / float(epsilon)))


def private_bound(values, epsilon: float, rng: np.random.Generator, *, quantile: float = 1.0,
                  slack: float = SLACK, lowest: float | None = None) -> float:
    """An ``epsilon``-DP (replace-one) upper bound of ``values`` on a public grid.

    AboveThreshold (Dwork & Roth 2014, Alg. 1) over the public grid ``g_1 < g_2 < ...``
    with the counting queries ``c_i = #{v <= g_i}`` and the public target
    ``T = target_count(n, epsilon, quantile)``: with ``rho ~ Lap(2 / epsilon)`` and
    ``nu_i ~ Lap(2 / epsilon)``, the output is the first ``g_i`` with
    ``c_i + nu_i >= T + rho`` (the top of the grid if none). Replacing one record moves
    every count by at most 1 and all in the same direction, so the monotone analysis
    (Lyu, Su & Li 2017, the monotonic case with one output) gives
    ``epsilon/2 + epsilon/2``: docs/privacy.md, 1.6, has the argument.

    ``epsilon = inf``: the smallest grid point at or above the maximum (no record clipped
    beyond a relative 1e-9). ``slack``: see :data:`SLACK` (a larger one trades the tail
    above the data for the one below it). Every draw is made for every grid point, so
    the work does not depend on where the search stops. NaN counts as the lowest value;
    values above the grid's top are never counted (the top is output).

    Parameters
    ----------
    <<values>>
    <<epsilon>>
    <<rng>>
    quantile : float, default=1.0
        The quantile sought (1: the maximum), see :func:`target_count`.
    slack : float, default=SLACK
        See :data:`SLACK`.
    lowest : float or None, default=None
        Search only the grid points at or above it (a finite epsilon; ``None``: the
        whole grid). It must be public or a function of released values (the search is
        then chosen after them: adaptive composition). Fewer points below the data are
        fewer chances to stop there; values below it are bounded by the first point.

    Returns
    -------
    float
        A point of the public grid.
    """
    points = _POINTS
    if lowest is not None and not math.isinf(epsilon):
        points = points[min(np.searchsorted(points, float(lowest)), points.size - 1):]
    v = np.asarray(values, dtype=float).ravel()
    v = np.sort(np.where(np.isnan(v), -math.inf, v))
    n = v.shape[0]
    # A value within a relative 1e-9 of a grid point counts as at most it: rows scaled to
    # norm 1 have norms 1 +- a few ulps, and the bound is then 1, not 2^(1/4) (clipping
    # by 1e-9 changes nothing). Each count still moves by at most 1, all in one direction.
    counts = np.searchsorted(v, points + ROUNDING * np.abs(points), side="right"
                             ).astype(float)
    target = target_count(n, epsilon, quantile, slack)
    if math.isinf(epsilon):
        hits = np.flatnonzero(counts >= target)
    else:
        scale = 2.0 / float(epsilon)
        rho = rng.laplace(0.0, scale)
        nu = rng.laplace(0.0, scale, size=points.shape[0])
        hits = np.flatnonzero(counts + nu >= target + rho)
    return float(points[hits[0]] if hits.size else points[-1])


#: The centre's public grid: multiples of ``bound / (MEAN_RESOLUTION n)``.
MEAN_RESOLUTION = 64


def private_mean(values, bound: float, epsilon: float, rng: np.random.Generator) -> float:
    """An ``epsilon``-DP (replace-one) mean of ``values`` clipped to ``[-bound, bound]``.

    The release lies on the public grid of multiples of ``h / n``,
    ``h = bound / MEAN_RESOLUTION``.

    Each value is clipped and rounded to an integer ``z_i`` in ``[-R, R]``
    (``R = MEAN_RESOLUTION``; ``round(clip(v) / h)``), so their sum ``Z`` is an integer
    whose replace-one sensitivity is ``2 R``. The release is ``Z + K`` with ``K`` drawn
    from the discrete Laplace law ``P(k) ~ exp(-epsilon |k| / (2 R))`` (the geometric
    mechanism, Ghosh, Roughgarden & Sundararajan 2009: ``epsilon``-DP up to numpy's
    bounded samplers, docs/privacy.md 1.6), sampled as the difference of two geometric
    variables; the mean is ``(Z + K) h / n``, a
    public function of an integer: no floating-point bit of it depends on a record
    beyond that integer. ``bound`` and ``n`` must be public (declared, or released).
    ``epsilon = inf``: ``Z h / n``, the mean of the rounded values.

    Parameters
    ----------
    <<values>>
    bound : float
        The public clipping bound, ``> 0``.
    <<epsilon>>
    <<rng>>

    Returns
    -------
    float
        The private mean.
    """
    v = np.nan_to_num(np.asarray(values, dtype=float).ravel(), nan=0.0)
    n = v.shape[0]
    h = float(bound) / MEAN_RESOLUTION
    total = int(np.sum(np.rint(np.clip(v, -bound, bound) / h).astype(np.int64)))
    if not math.isinf(epsilon):
        total += discrete_laplace(2 * MEAN_RESOLUTION, epsilon, rng)
    return total * h / n


def discrete_laplace(sensitivity: int, epsilon: float, rng: np.random.Generator) -> int:
    """One draw ``K`` of the discrete Laplace law ``P(k) ~ exp(-epsilon |k| / sensitivity)``.

    Added to an integer statistic whose replace-one sensitivity is ``sensitivity``, it
    gives an ``epsilon``-DP integer (the geometric mechanism, Ghosh, Roughgarden &
    Sundararajan 2009; docs/privacy.md 1.6). Sampled as the difference of two geometric
    variables: ``Geometric(p)`` counts trials ``>= 1``, and the difference of two
    independent ones has ``P(k) ~ (1 - p)^|k|``, here ``exp(-epsilon |k| / sensitivity)``.

    Parameters
    ----------
    sensitivity : int
        The replace-one sensitivity of the integer statistic, ``>= 1``.
    epsilon : float
        The privacy budget, positive and finite.
    <<rng>>

    Returns
    -------
    int
        The draw ``K``.
    """
    p = -math.expm1(-float(epsilon) / float(sensitivity))
    return int(rng.geometric(p)) - int(rng.geometric(p))


def discrete_gaussian(sigma: float, rng: np.random.Generator) -> int:
    """One draw ``K`` of the discrete Gaussian law ``P(k) ~ exp(-k^2 / (2 sigma^2))``.

    Added to an integer statistic of replace-one sensitivity ``Delta``, it is
    ``(Delta / sigma)^2 / 2``-zCDP (Canonne, Kamath & Steinke 2020), which the ledger
    records as :class:`~skdp.privacy.DiscreteGaussianDpEvent` ``(sigma / Delta)``
    (docs/privacy.md, "Discrete Gaussian scores"). Sampled by their rejection method: a
    proposal ``Y`` of the discrete Laplace law ``P(y) ~ exp(-|y| / t)``, ``t = floor(sigma)
    + 1`` (:func:`discrete_laplace`), accepted with probability ``exp(-(|Y| - sigma^2 /
    t)^2 / (2 sigma^2))``. That is the target over the proposal up to a constant, ``-y^2 /
    (2 sigma^2) + |y| / t = -(|y| - sigma^2 / t)^2 / (2 sigma^2) + sigma^2 / (2 t^2)``,
    and at most 1. The number of proposals depends on ``sigma`` only (public), never on
    the statistic.

    Parameters
    ----------
    sigma : float
        The scale, positive and finite.
    <<rng>>

    Returns
    -------
    int
        The draw ``K``.
    """
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be positive and finite, got {sigma}.")
    t = int(math.floor(sigma)) + 1
    while True:
        y = discrete_laplace(t, 1.0, rng)
        if rng.random() < math.exp(-((abs(y) - sigma * sigma / t) ** 2) / (2.0 * sigma * sigma)):
            return y


def _grid_total(values, low: float, high: float, resolution: int) -> tuple[int, float, int]:
    """``(Z, h, n)``: the sum ``Z`` of the values clipped to ``[low, high]`` and rounded to
    integers ``round((v - low) / h)`` in ``[0, resolution]``, ``h = (high - low) /
    resolution``; its replace-one sensitivity is ``resolution``. A NaN counts as ``low``."""
    v = np.nan_to_num(np.asarray(values, dtype=float).ravel(), nan=low, posinf=high,
                      neginf=low)
    h = (float(high) - float(low)) / resolution
    total = int(np.sum(np.rint((np.clip(v, low, high) - low) / h).astype(np.int64)))
    return total, h, v.shape[0]


def private_range_mean(values, low: float, high: float, epsilon: float,
                       rng: np.random.Generator, *, resolution: int = MEAN_RESOLUTION,
                       noise_multiplier: float | None = None) -> float:
    """A private (replace-one) mean of ``values`` clipped to ``[low, high]``.

    The release lies on the public grid ``low + k h / n``, ``h = (high - low) /
    resolution``.

    Each value is clipped and rounded to an integer ``z_i = round((v - low) / h)`` in
    ``[0, resolution]``, so their sum ``Z`` is an integer whose replace-one sensitivity is
    ``resolution`` (one ``z_i`` moves from 0 to ``resolution`` at most; ``n``, ``low`` and
    ``high`` are public). The release is ``low + (Z + K) h / n`` with ``K`` from
    :func:`discrete_laplace` (``epsilon``-DP), or, when ``noise_multiplier`` is given,
    from :func:`discrete_gaussian` with ``sigma = noise_multiplier * resolution`` (the
    ledger's ``DiscreteGaussianDpEvent(noise_multiplier)``; ``epsilon`` is then not read).
    Either way a public function of an integer, so no floating-point bit depends on a
    record beyond that integer. Values in ``{low, high}`` (a 0/1 statistic such as
    accuracy) lose nothing to the rounding with ``resolution=1``.
    ``epsilon = inf``: the mean of the rounded values. A NaN counts as ``low``.

    Parameters
    ----------
    <<values>>
    low, high : float
        The public range, ``low < high``.
    <<epsilon>>
    <<rng>>
    resolution : int, default=MEAN_RESOLUTION
        Number of steps of the rounding grid over ``[low, high]``.
    noise_multiplier : float or None, default=None
        Discrete Gaussian noise of scale ``noise_multiplier`` times the sensitivity
        instead of the discrete Laplace noise of ``epsilon``.

    Returns
    -------
    float
        The private mean.
    """
    total, h, n = _grid_total(values, low, high, resolution)
    if noise_multiplier is not None:
        # Sensitivity of the integer sum: resolution grid steps (one value moves from 0
        # to resolution), so sigma = z * resolution in those steps.
        total += discrete_gaussian(float(noise_multiplier) * resolution, rng)
    elif not math.isinf(epsilon):
        total += discrete_laplace(resolution, epsilon, rng)
    return float(low) + total * h / n


def mean_event(epsilon: float) -> dpe.DpEvent:
    """The ledger event of one :func:`private_mean`: a pure ``epsilon``-DP release.

    Parameters
    ----------
    epsilon : float
        The budget the mean was released with.

    Returns
    -------
    PureDpEvent
        ``PureDpEvent(epsilon)``.
    """
    return PureDpEvent(float(epsilon))


def bound_event(epsilon: float) -> dpe.DpEvent:
    """The ledger event of one private bound: a pure ``epsilon``-DP release.

    What :func:`private_bound` spends, and so every ``"auto"`` bound of an estimator.

    Parameters
    ----------
    epsilon : float
        The budget the bound was released with.

    Returns
    -------
    PureDpEvent
        ``PureDpEvent(epsilon)``, the ledger of :func:`private_bound`.
    """
    return PureDpEvent(float(epsilon))


for _function in (on_grid, grid_ceil, target_count, private_bound, private_mean,
                  discrete_laplace, discrete_gaussian, private_range_mean):
    fill_docstrings(_function, _DOCS)
