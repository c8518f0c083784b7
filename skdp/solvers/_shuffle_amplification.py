"""Amplification by shuffling (Feldman, McMillan & Talwar 2021), design note B10.

The central guarantee of ``n`` shuffled pure ``epsilon0``-DP local reports (adaptive
randomizers allowed) and its inverse, used by
:class:`~skdp.solvers.truncated_mirror_descent.ShuffledTruncatedMirrorDescent`.
"""

from __future__ import annotations

import math

from skdp.exceptions import BudgetError

__all__ = [
    "shuffle_amplified_epsilon",
    "shuffle_local_epsilon",
    "shuffle_local_epsilon_limit",
]


def shuffle_local_epsilon_limit(n: int, delta: float) -> float:
    """Largest local ``epsilon_0`` covered by B10: ``ln(n / (16 ln(4 / delta)))``."""
    return math.log(n / (16.0 * math.log(4.0 / delta)))


def shuffle_amplified_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """Central epsilon of ``n`` shuffled ``epsilon0``-DP (adaptive) local reports (B10).

    Feldman, McMillan & Talwar (2021, Thm. 3.1 and its adaptive version Thm. 3.8), in the
    closed form of the authors' reference implementation: for
    ``epsilon0 <= ln(n / (16 ln(4/delta)))``, with ``a = 8 sqrt(e^eps0 ln(4/delta) / n)``,
    ``c = 8 e^eps0 / n``,
    ``eps = ln(1 + (1 - e^-eps0) / (1 + e^(-eps0 - ln(1 + a + c))) (a + c))``.
    The result is ``(eps, delta)``-DP under replace-one. Increasing in ``epsilon0``.

    Raises
    ------
    ValueError
        If ``epsilon0`` is outside ``(0, ln(n / (16 ln(4/delta)))]``.
    """
    limit = shuffle_local_epsilon_limit(n, delta)
    if not (0.0 < epsilon0 <= limit):
        raise ValueError(
            f"epsilon0={epsilon0} is outside the range (0, ln(n / (16 ln(4/delta)))] = "
            f"(0, {limit}] where the shuffling bound holds (n={n}, delta={delta})."
        )
    e0 = math.exp(epsilon0)
    log_term = math.log(4.0 / delta)
    a = 8.0 * math.sqrt(e0 * log_term / n)
    c = 8.0 * e0 / n
    b = -math.expm1(-epsilon0)
    denom = 1.0 + math.exp(-epsilon0 - math.log1p(a + c))
    return math.log1p(b / denom * (a + c))


def shuffle_local_epsilon(epsilon: float, n: int, delta: float) -> float:
    """Largest local ``epsilon0`` whose shuffled guarantee (B10) is at most ``epsilon``.

    Bisection on the increasing map ``epsilon0 -> shuffle_amplified_epsilon``; the
    returned value is on the private side (its amplified epsilon is ``<= epsilon``). When
    even the largest admissible ``epsilon0`` amplifies to less than ``epsilon``, that
    largest value is returned (the guarantee is then stronger than asked).

    Raises
    ------
    BudgetError
        When ``n <= 16 ln(4 / delta)``: no ``epsilon0 > 0`` is covered by the bound.
    """
    if not (n > 16.0 * math.log(4.0 / delta)):
        raise BudgetError(
            f"amplification by shuffling needs n > 16 ln(4/delta) = "
            f"{16.0 * math.log(4.0 / delta):.1f} records (n={n}, delta={delta}); raise delta, "
            "use more data, or use solver='truncated_mirror_descent' (central noise)."
        )
    hi = shuffle_local_epsilon_limit(n, delta)
    if shuffle_amplified_epsilon(hi, n, delta) <= epsilon:
        return hi
    lo = 0.0  # amplified epsilon -> 0 as epsilon0 -> 0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if shuffle_amplified_epsilon(mid, n, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    if lo <= 0.0:
        raise BudgetError(f"no local epsilon0 > 0 meets epsilon={epsilon} (n={n}).")
    return lo
