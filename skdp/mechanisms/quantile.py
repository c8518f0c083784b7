"""Private quantiles: the exponential mechanism over a public range, on a public scale.

Used to choose the bounds a fit needs (``data_norm="auto"``, ``y_bound="auto"``) from the
data, privately. The argument is in docs/privacy.md, "Private bounds".
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event as dpe

from skdp.privacy.accounting import PureDpEvent

__all__ = ["SCALES", "private_quantile", "quantile_event", "rank_utilities"]

#: Public scales: a monotone map and the public range of the mapped values. Norms and
#: spreads live on the log scale over [1e-6, 1e18]; signed values (a centre of y) on the
#: asinh scale over [-1e18, 1e18] (log-like for |v| > 1, linear near 0). Constants,
#: independent of every data set; values outside a range are clipped into it.
SCALES: dict[str, tuple] = {
    "log": (lambda v: np.log(np.maximum(v, 1e-300)), np.exp,
            (math.log(1e-6), math.log(1e18))),
    "asinh": (np.arcsinh, np.sinh, (-math.asinh(1e18), math.asinh(1e18))),
}


def rank_utilities(n: int, q: float) -> np.ndarray:
    """Utility of each of the ``n + 1`` intervals between the sorted values.

    A point ``t`` in interval ``k`` has ``k`` values at or below it: ``u = -|k - q n|``.
    Replacing one value moves every point's count by at most 1: sensitivity 1.
    """
    return -np.abs(np.arange(n + 1) - q * n)


def private_quantile(values: np.ndarray, q: float, epsilon: float, rng: np.random.Generator,
                     scale: str = "log") -> float:
    """An ``epsilon``-DP estimate of the ``q``-quantile of ``values`` (replace-one).

    The exponential mechanism (McSherry & Talwar 2007) over the public range of ``scale``
    with the rank utility of :func:`rank_utilities` (Smith 2011): the output has density
    proportional to ``exp(epsilon u(t) / 2)`` on the mapped scale. The mapped values cut
    the range into ``n + 1`` intervals of constant utility; one interval is drawn with
    probability proportional to ``length * exp(epsilon u / 2)`` (Gumbel-max trick on the
    logarithms) and the output is uniform in it, mapped back. ``O(n log n)``: one sort.
    ``epsilon = inf``: the exact quantile (non-private mode).
    """
    forward, backward, (lo, hi) = SCALES[scale]
    mapped = np.sort(np.clip(forward(np.asarray(values, dtype=float)), lo, hi))
    n = mapped.shape[0]
    if math.isinf(epsilon):
        return float(backward(np.quantile(mapped, q)))
    edges = np.concatenate([[lo], mapped, [hi]])
    lengths = np.diff(edges)
    with np.errstate(divide="ignore"):
        log_weights = np.log(lengths) + 0.5 * epsilon * rank_utilities(n, q)
    k = int(np.argmax(log_weights + rng.gumbel(size=n + 1)))
    return float(backward(edges[k] + lengths[k] * rng.random()))


def quantile_event(epsilon: float) -> dpe.DpEvent:
    """The ledger event of one private quantile: a pure ``epsilon``-DP release."""
    return PureDpEvent(float(epsilon))
