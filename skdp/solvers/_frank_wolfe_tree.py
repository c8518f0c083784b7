"""The tree schedule and building blocks of private variance-reduced Frank-Wolfe.

Private module of :mod:`skdp.solvers.frank_wolfe` (which re-exports every public name):
the public schedule of Algorithm 3 of Asi, Feldman, Koren & Talwar (2021) (phases, tree
vertices, sample sizes), the vertex scores and report-noisy-min selection, one vertex's
clipped gradient contribution, and the calibration of the optimally composed selections.
Derivations: docs/algorithms/frank_wolfe.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event as dpe

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import Constraint
from skdp.losses import clip_coefficients
from skdp.privacy.accounting import calibrate_noise_multiplier, randomized_response_event
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import Problem

__all__ = [
    "TreeSchedule",
    "report_noisy_min",
    "selection_epsilon",
    "tree_schedule",
    "vertex_contribution",
    "vertex_scores",
]

# Relative margins of the approximate-DP calibration (see selection_epsilon).
_PLD_EPSILON_MARGIN = 1e-9
_PLD_DELTA_MARGIN = 1e-3


# --------------------------------------------------------------------------------------
# The schedule: phases, tree vertices, sample sizes (public)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TreeSchedule:
    """Sample sizes and step sizes of Algorithm 3, fixed from public quantities.

    Phase ``t = 1..T`` is a complete binary tree of depth ``t`` visited depth first. The
    root draws ``b`` fresh records, every right child at depth ``j >= 1`` draws
    ``b_j = floor(b / 2^j)`` fresh records, a left child reuses its parent's estimate,
    and each of the ``2^t`` leaves takes one Frank-Wolfe step. The global step ``k = 1,
    2, ...`` uses ``eta_k = 2 / (k + 1)``.

    Attributes
    ----------
    n_phases : int
        ``T``.
    batch_size : int
        ``b``, the root sample size.
    sizes : tuple of int
        ``sizes[j]`` = records of a sampling vertex at depth ``j`` (``sizes[0] = b``).
    n_used : int
        Records used in all (``<= n``); each is used in exactly one vertex.
    n_steps : int
        Frank-Wolfe steps ``2^(T+1) - 2``.
    """

    n_phases: int
    batch_size: int
    sizes: tuple[int, ...]
    n_used: int
    n_steps: int


def _records_used(batch_size: int, n_phases: int) -> int:
    """Records used by ``T`` phases with root size ``b``.

    Phase ``t`` uses ``b`` at the root plus ``2^(j-1)`` right children of size
    ``floor(b / 2^j)`` at each depth ``j = 1..t``.
    """
    total = 0
    for t in range(1, n_phases + 1):
        total += batch_size + sum((1 << (j - 1)) * (batch_size >> j) for j in range(1, t + 1))
    return total


def tree_schedule(n_samples: int, n_phases: int, batch_size: int | None = None) -> TreeSchedule:
    """The schedule of ``n_phases`` phases on ``n_samples`` records (public).

    Without ``batch_size`` the largest ``b`` whose schedule uses at most ``n`` records is
    taken (the paper's ``b = n / log^2 n`` bounds the count by ``T^2 b``; the exact count
    lets ``b`` be larger). Raises :class:`IncompatibleSolverError` when no schedule fits:
    the deepest vertices need ``b >= 2^T`` (Lemma 4.1's ``2^T <= b``).
    """
    T = int(n_phases)
    if batch_size is None:
        lo, hi = 0, n_samples
        while lo < hi:  # largest b with _records_used(b, T) <= n (monotone in b)
            mid = (lo + hi + 1) // 2
            if _records_used(mid, T) <= n_samples:
                lo = mid
            else:
                hi = mid - 1
        b = lo
    else:
        b = int(batch_size)
    if b < (1 << T) or _records_used(b, T) > n_samples:
        need = _records_used(1 << T, T)
        raise IncompatibleSolverError(
            f"Frank-Wolfe with n_phases={T} and batch_size={batch_size} needs "
            f"{_records_used(max(b, 1 << T), T)} records (each used once, the root batch "
            f"at least 2^T = {1 << T}); the dataset has n_samples = {n_samples}. Use fewer phases "
            f"(n_phases=None chooses them), a smaller batch_size, or at least {need} "
            "records."
        )
    sizes = tuple(b >> j for j in range(T + 1))
    return TreeSchedule(n_phases=T, batch_size=b, sizes=sizes, n_used=_records_used(b, T),
                        n_steps=(1 << (T + 1)) - 2)


def _movement_bounds(n_phases: int) -> list[list[float]]:
    """``M[t][j]``: largest ``sum eta_k`` between a right child at depth j and its parent.

    Between the visit of a parent at depth ``j - 1`` and of its right child the algorithm
    takes the ``2^(t-j)`` Frank-Wolfe steps of the left sibling's leaves; each moves the
    iterate by ``eta_k ||w_k - x_k||_1 <= eta_k D``. The steps are largest for the
    leftmost vertex (smallest ``k``): phase ``t`` starts at step ``k = 2^t - 1``.
    """
    out: list[list[float]] = []
    for t in range(n_phases + 1):
        row = [0.0]
        k0 = (1 << t) - 1 if t else 1
        for j in range(1, t + 1):
            k = np.arange(k0, k0 + (1 << (t - j)), dtype=float)
            row.append(float(np.sum(2.0 / (k + 1.0))))
        out.append(row)
    return out


# --------------------------------------------------------------------------------------
# Building blocks (also used by the tests)
# --------------------------------------------------------------------------------------
def vertex_scores(constraint: Constraint, G: np.ndarray) -> np.ndarray:
    """``<c_i, G>`` for every vertex ``c_i`` of the polytope, one vectorised op.

    L1 ball: vertices ``+radius e_j`` then ``-radius e_j`` (``2 m`` scores for ``m``
    entries of ``G``); simplex: ``radius e_j`` (``m`` scores).
    """
    g = constraint.radius * np.ravel(G)
    if constraint.kind == "simplex":
        return g
    return np.concatenate([g, -g])


def _vertex(constraint: Constraint, index: int, shape: tuple[int, ...]) -> np.ndarray:
    """The vertex number ``index`` of :func:`vertex_scores` as an array of ``shape``."""
    size = math.prod(shape)
    w = np.zeros(size)
    if constraint.kind == "simplex":
        w[index] = constraint.radius
    else:
        w[index % size] = constraint.radius if index < size else -constraint.radius
    return w.reshape(shape)


def report_noisy_min(scores: np.ndarray, scale: float, noise: NoiseSource) -> int:
    """Index of the smallest score after i.i.d. ``Laplace(scale)`` noise on every score.

    With scores of per-candidate sensitivity ``Delta`` that may move in different
    directions, ``scale = 2 Delta / eps0`` gives ``eps0``-DP (Dwork & Roth 2014, Claim
    3.9 with the non-monotone factor 2). ``scale = 0``: the exact argmin.
    """
    return int(np.argmin(scores + noise.laplace(scores.shape, scale)))


def vertex_contribution(
    problem: Problem,
    index: np.ndarray,
    W: np.ndarray,
    W_parent: np.ndarray | None,
    clip: float,
    size: int,
    norms_inf: np.ndarray,
) -> np.ndarray:
    """What the records ``index`` of one vertex add to the gradient estimate.

    Root (``W_parent is None``): ``(1/b) sum_i clip_L(grad f(W; z_i))``. Right child:
    ``(1/b_j) sum_i clip_C(grad f(W; z_i) - grad f(W_parent; z_i))``. Clipping is in the
    entrywise l-inf norm, vectorised on the GLM coefficients (``x_i d_i^T`` has l-inf
    norm ``||x_i||_inf ||d_i||_inf``), so one record moves the result by at most
    ``2 clip / size`` in l-inf (replace-one). ``size`` is the public vertex size.
    """
    loss = problem.spec.loss
    rows = problem.rows(index)
    Yb = problem.Y[index]
    D = loss.derivative(problem.scores(W, rows), Yb)
    if W_parent is not None:
        D = D - loss.derivative(problem.scores(W_parent, rows), Yb)
    D = clip_coefficients(D, norms_inf[index], clip, ord=math.inf)
    # Divided before the sum: size terms of l-inf norm up to clip could overflow a sum that
    # the mean (at most clip) never does.
    return problem.gradient_sum(D / size, rows)


def _selections_event(z: float, count: int) -> dpe.DpEvent:
    """``count`` adaptive ``(1/z)``-DP selections, each dominated by randomized response."""
    rr = randomized_response_event(1.0 / z)
    return rr if count == 1 else dpe.SelfComposedDpEvent(rr, count)


def selection_epsilon(count: int, budget: Budget, relation: str) -> float:
    """Largest ``e`` such that ``count`` adaptive ``e``-DP releases are ``budget``-DP.

    Every pure ``e``-DP mechanism is dominated by binary randomized response with the same
    ``e`` (Kairouz, Oh & Viswanath 2015), and dominating pairs compose adaptively, so the
    PLD of ``count`` randomized responses bounds the privacy profile of any ``count``
    adaptive ``e``-DP selections (the optimal composition theorem, computed numerically by
    dp_accounting's PLD; see :class:`~skdp.privacy.accounting.SelfComposingPldEngine`).
    Calibrated as the noise multiplier ``z = 1/e`` (cached; re-accounted: spends at most
    the budget); the PLD of ``count`` randomized responses is the exact binomial, so a
    calibration costs milliseconds (0.3 s at ``count = 2^16``).
    """
    # Calibrate to a budget a hair inside the target: (epsilon (1 - 1e-9), delta (1 -
    # 1e-3)). The PLD sums probabilities in floating point (absolute error ~1e-16, i.e.
    # relative 1e-4 at delta = 1e-12), so the margin keeps the true delta within the
    # budget and the re-accounted ledger (the scales carry another 1 + 1e-12) below it.
    inner = Budget(budget.epsilon * (1.0 - _PLD_EPSILON_MARGIN),
                   budget.delta * (1.0 - _PLD_DELTA_MARGIN))
    z = calibrate_noise_multiplier(_selections_event, (int(count),), inner,
                                   accounting="pld", relation=relation)
    # epsilon / count (basic composition) is always within the budget; the numerical
    # calibration stops up to 0.1% below the solution, which can fall below it for
    # count <= 2, so never return less.
    return max(1.0 / z, inner.epsilon / count)
