"""Private quantiles: the exponential mechanism over a public range, on a public scale.

Used to choose the bounds a fit needs (``data_norm="auto"``, ``y_bound="auto"``) from the
data, privately. The argument is in docs/privacy.md, "Private bounds".
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event as dpe

from skdp.privacy.accounting import PureDpEvent

__all__ = ["SCALES", "TOLERANCE", "private_quantile", "quantile_event", "quantile_utility",
           "utility_pieces"]

#: Public scales: a monotone map and the public range of the mapped values. Norms and
#: spreads live on the log scale over [1e-6, 1e18]; signed values (a centre of y) on the
#: asinh scale over [-1e18, 1e18] (log-like for |v| > 1, linear near 0). Constants,
#: independent of every data set; values outside a range are clipped into it.
SCALES: dict[str, tuple] = {
    "log": (lambda v: np.log(np.maximum(v, 1e-300)), np.exp,
            (math.log(1e-6), math.log(1e18))),
    "asinh": (np.arcsinh, np.sinh, (-math.asinh(1e18), math.asinh(1e18))),
}
#: A point within this public distance (on the mapped scale: a factor 2^(1/4), 19%) of
#: a q-quantile counts as exact. Ties (every row of norm 1 after normalisation) then
#: leave a region of positive length with the best utility instead of a single point.
TOLERANCE = math.log(2.0) / 4.0


def quantile_utility(mapped_sorted: np.ndarray, q: float, t: np.ndarray) -> np.ndarray:
    """Utility of the points ``t`` (mapped scale) as the ``q``-quantile.

    ``u(t) = -max(0, #{v < t - h} - q n, q n - #{v <= t + h})``, ``h`` = :data:`TOLERANCE`:
    0 when some q-quantile lies within ``h`` of ``t``. Replacing one value moves each
    count by at most 1 and the max is 1-Lipschitz in them: sensitivity 1 (replace-one).
    """
    n = mapped_sorted.shape[0]
    below = np.searchsorted(mapped_sorted, t - TOLERANCE, side="left")
    at_most = np.searchsorted(mapped_sorted, t + TOLERANCE, side="right")
    return -np.maximum(0.0, np.maximum(below - q * n, q * n - at_most))


def utility_pieces(mapped_sorted: np.ndarray, q: float, lo: float, hi: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The intervals on which the utility is constant (``edges``, length ``m + 1``) and
    its value on each (evaluated at the midpoints)."""
    cuts = np.clip(np.concatenate([mapped_sorted - TOLERANCE, mapped_sorted + TOLERANCE]),
                   lo, hi)
    edges = np.unique(np.concatenate([[lo, hi], cuts]))
    return edges, quantile_utility(mapped_sorted, q, 0.5 * (edges[:-1] + edges[1:]))


def private_quantile(values: np.ndarray, q: float, epsilon: float, rng: np.random.Generator,
                     scale: str = "log") -> float:
    """An ``epsilon``-DP estimate of the ``q``-quantile of ``values`` (replace-one).

    The exponential mechanism (McSherry & Talwar 2007) over the public range of ``scale``
    with the utility :func:`quantile_utility` (sensitivity 1): the output has density
    proportional to ``exp(epsilon u(t) / 2)`` on the mapped scale. The utility is constant
    on the intervals of :func:`utility_pieces`; one is drawn with probability proportional
    to ``length * exp(epsilon u / 2)`` (Gumbel-max trick on the logarithms) and the output
    is uniform in it, mapped back. ``O(n log n)``. ``epsilon = inf``: the exact quantile
    (non-private mode).
    """
    forward, backward, (lo, hi) = SCALES[scale]
    # NaN goes to the public lower end (one record, one count: the sensitivity holds).
    mapped = np.sort(np.clip(np.nan_to_num(forward(np.asarray(values, dtype=float)),
                                           nan=lo), lo, hi))
    if math.isinf(epsilon):
        return float(backward(np.quantile(mapped, q)))
    edges, utility = utility_pieces(mapped, q, lo, hi)
    lengths = np.diff(edges)
    with np.errstate(divide="ignore"):
        log_weights = np.log(lengths) + 0.5 * epsilon * utility
    k = int(np.argmax(log_weights + rng.gumbel(size=lengths.shape[0])))
    return float(backward(edges[k] + lengths[k] * rng.random()))


def quantile_event(epsilon: float) -> dpe.DpEvent:
    """The ledger event of one private quantile: a pure ``epsilon``-DP release."""
    return PureDpEvent(float(epsilon))
