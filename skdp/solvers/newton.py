"""DP Newton: damped Newton steps from a noisy gradient and a noisy symmetric Hessian.

Each of a fixed number of iterations releases the mean clipped gradient, and a few of
them (a public schedule) also the mean Hessian ``(1/n) sum_i h_i kron x'_i x'_i^T`` (the
other steps reuse the last one), of a smooth GLM loss with Gaussian noise
(Ganesh, Liu, Oh, Thakurta et al., "Faster differentially private convex optimization
via second-order methods", NeurIPS 2023; Avella-Medina, Bradshaw & Loh, "Differentially
private inference via noisy optimization", Annals of Statistics 2023). The step is
post-processing of the two releases: the noisy Hessian plus the L2 term, its eigenvalues
floored at a public level, and a step damped by a public trust rule on the scores.
Derivations: docs/algorithms/newton.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from numbers import Real

import numpy as np
from dp_accounting import dp_event as dpe

from skdp._array_api import to_numpy
from skdp._docstrings import fill_docstrings
from skdp._params import COUNT, OPTIONAL_COUNT, OPTIONAL_POSITIVE, store_params
from skdp._sklearn_compat import Interval, StrOptions
from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import Unconstrained
from skdp.losses import (
    HuberLoss,
    MultinomialLogisticLoss,
    SmoothedHingeLoss,
    SquaredLoss,
)
from skdp.privacy.accounting import check_sensitivity
from skdp.privacy.budget import Budget
from skdp.privacy.calibration import (
    analytic_gaussian_multiplier,
    calibrate_noise_multiplier,
)
from skdp.privacy.events import gaussian_event
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import (
    HOOK_DOCS,
    BaseDPSolver,
    Inference,
    Plan,
    Problem,
    ProblemSpec,
    Released,
)
from skdp.solvers._blocks import Block
from skdp.solvers._capabilities import Capabilities
from skdp.solvers._device import device_clip, device_pass
from skdp.solvers._hessian import curvature, curvature_grams, device_curvature, hessian_block
from skdp.solvers._problem import ROW_BOUND_TOLERANCE, clip_unless_lossless, exactly_bounded

__all__ = [
    "DPNewton",
    "NewtonPlan",
    "curvature",
    "first_weight_in_force",
    "gradient_and_hessian_sums",
    "gradient_multipliers",
    "hessian_frobenius_bound",
    "hessian_schedule",
    "hessian_sum",
    "newton_event",
    "newton_multiplier",
    "newton_sensitivities",
    "relative_hessian_noise",
    "svec_indices",
    "symmetric_noise",
]

#: Default number of Newton steps of a private fit (docs/algorithms/newton.md): 8 gave
#: the same excess risk on the covertype-shaped task, but the logistic intervals'
#: coverage at ``alpha = 1e-4`` fell to 0.932 on the largest slope (0.958 at 10).
DEFAULT_PRIVATE_ITER = 10
#: Default number of Hessian releases of a private fit with a loss whose curvature is
#: positive everywhere (logistic, multinomial, squared): at the first iteration and half
#: way (:func:`hessian_schedule`), the other steps reuse the last one; the second one is
#: near the output, for its standard errors (docs/algorithms/newton.md), so a fit that
#: reads none (``ProblemSpec.standard_errors`` false) releases the first only. The
#: piecewise-quadratic losses, whose curvature jumps (zero at ``w = 0`` for a smoothed
#: hinge), release one at every step.
DEFAULT_HESSIAN_STEPS = 2
#: Default number of steps at ``epsilon = inf`` (no noise to pay for: the damped phase and
#: the quadratic convergence to the optimum to rounding).
DEFAULT_NON_PRIVATE_ITER = 100
#: Largest ``n_params * n_outputs``: the released Hessian has ``D (D + 1) / 2`` entries and
#: every step takes its eigendecomposition (``O(D^3)``).
MAX_DIMENSION = 2048
#: Relative eigenvalue floor ``FLOOR_RELATIVE * beta`` (``beta`` the public smoothness):
#: keeps the step finite in directions of zero curvature when nothing else floors them.
FLOOR_RELATIVE = 1e-8
#: Default largest change of any score per step for the logistic losses (score units).
DEFAULT_SCORE_STEP = 4.0
#: The piecewise-quadratic losses' default: this many widths of their quadratic zone
#: (``huber_delta``, ``smoothing``).
ZONE_STEPS = 2.0
#: Share of the fit's ``mu^2`` (GDP) spent on the dispersion release of the losses whose
#: standard errors need one (squared, Huber): two means in ``[0, 1]`` at the output, read
#: by ``conf_int`` only (docs/inference.md). Its noise on ``mean_i psi_i^2 / B^2`` is
#: ``sqrt(2) z / (n sqrt(s T))``: 37 / n at epsilon 1 (z = 11.8, T = 10), against a
#: mean of order 0.1-0.5, while the gradients keep 98% of the budget. Only fits that
#: compute standard errors release it (``ProblemSpec.standard_errors``; not DPLasso's).
DISPERSION_SHARE = 0.02
#: Output rules: ``"auto"`` averages when private, else the last iterate.
ITERATES = ("auto", "last", "average")
#: Tolerance of the inner solve of the constrained Newton step (post-processing).
_INNER_TOL = 1e-13
#: ``intercept_scale="auto"``: the public grid of the intercept's effective feature value
#: ``c`` over the feature bound ``B``, ``2^(j/4)`` for ``j = -12..4`` (1/8 to 2; the
#: estimators' own value, 1/2, is on it up to the bound's ``1e-9`` slack).
#: docs/algorithms/newton.md, "The intercept's share of the gradient noise".
INTERCEPT_SCALES = tuple(2.0 ** (j / 4.0) for j in range(-12, 5))


def intercept_noise_bound(c: float, *, clip: float, feature_bound: float,
                          intercept: float, derivative_bound: float) -> float:
    """``U(c)``: the per-example gradient's largest norm in the metric that weighs the
    intercept row by ``c_0 / c``, so that the gradient noise ``N(0, s^2 diag(1, ...,
    (c_0 / c)^2))`` is a Gaussian mechanism of sensitivity ``2 U(c) / n`` over ``s``.

    A clipped per-example gradient is ``u = k x' rho^T`` with ``x' = (x, c_0)``, ``rho``
    the score derivative (``||rho|| <= G``) and ``k <= 1`` the clip's factor, ``k ||rho||
    ||x'|| <= C``. Dividing the intercept row by ``c_0 / c`` (the metric ``M_c``) gives
    ``||M_c u||_F = k ||rho|| sqrt(||x||^2 + c^2)``, at most ``G sqrt(B^2 + c^2)``, and
    at most ``C`` times ``sqrt(||x||^2 + c^2) / sqrt(||x||^2 + c_0^2)``, which is monotone
    in ``||x|| in [0, B]``: at most ``max(sqrt((B^2 + c^2) / (B^2 + c_0^2)), c / c_0)``.
    Replacing one row moves the mean by at most ``2 U(c) / n`` in that metric. ``U(c_0) =
    min(C, G R)``: ``C`` unless the clip exceeds the loss's own bound.
    docs/algorithms/newton.md.

    Parameters
    ----------
    c : float
        The effective intercept feature, positive.
    clip : float
        The per-example gradient clip ``C``.
    feature_bound : float
        ``B``, the public bound on ``||x||`` (with the rows' slack).
    intercept : float
        ``c_0``, the problem's constant feature.
    derivative_bound : float
        ``G``, a bound on ``||rho||`` that the computed derivative respects (``inf``:
        none, the clip alone bounds the gradient).

    Returns
    -------
    float
        ``U(c)``.
    """
    b2, c2, c02 = feature_bound**2, c * c, intercept * intercept
    ratio = max(math.sqrt((b2 + c2) / (b2 + c02)), c / intercept)
    return min(clip * ratio, derivative_bound * math.sqrt(b2 + c2))


def intercept_scale_choice(values: np.ndarray, vectors: np.ndarray, n_outputs: int,
                           candidates: tuple[float, ...], bound) -> float:
    """The candidate ``c`` that minimises the averaged output's predicted excess risk.

    Near the optimum the averaged output carries ``-A^{-1} xi`` with ``xi`` the gradient
    noise, so its excess risk is about ``tr(A^{-1} Cov xi) / 2``: with the noise of
    :func:`intercept_noise_bound`, proportional to ``U(c)^2 (t_w + (c_0 / c)^2 t_b)``,
    ``t_w`` and ``t_b`` the sums of the diagonal of ``A^{-1}`` over the feature rows and
    over the intercept row. ``A`` is a released Hessian (with the L2 term, floored):
    post-processing.

    Parameters
    ----------
    values, vectors : ndarray
        The floored eigendecomposition of ``A`` (:meth:`DPNewton.floored_eigh`).
    n_outputs : int
        ``K``: the last ``K`` coordinates are the intercept row.
    candidates : tuple of float
        The public candidates for ``c`` (:meth:`DPNewton.intercept_candidates`).
    bound : callable
        ``c -> (U(c), c_0 / c)``.

    Returns
    -------
    float
        The chosen ``c`` (the smallest on ties).
    """
    inverse_diagonal = (vectors * vectors) @ (1.0 / values)
    t_b = float(inverse_diagonal[-n_outputs:].sum())
    t_w = float(inverse_diagonal[:-n_outputs].sum())
    risks = []
    for c in candidates:
        u, weight = bound(c)
        risks.append(u * u * (t_w + weight * weight * t_b))
    return candidates[int(np.argmin(risks))]


def _gradient_and_hessian_pass(block, W, loss, clip_norm: float, skip: bool) -> np.ndarray:
    """Device twin of :func:`_gradient_and_hessian_block` (:mod:`skdp.solvers._device`)."""
    xp = block.xp
    p, k = W.shape
    Z = block.scores(W)
    H = curvature_grams(block, device_curvature(loss, Z, block.Y, xp), loss, (p, k))
    D = device_clip(loss.device_derivative(Z, block.Y, xp), block.norms, clip_norm, xp, skip)
    grad = to_numpy(block.gradient_sum(D), np.float64)
    return np.concatenate([grad.ravel(), H.ravel()])


@device_pass(_gradient_and_hessian_pass)
def _gradient_and_hessian_block(block: Block, W: np.ndarray, loss, clip_norm: float,
                                skip: bool) -> np.ndarray:
    """``[vec(sum_i x'_i clip_C(phi'_i)^T), vec(sum_i h_i kron x'_i x'_i^T)]`` of one block.

    One read of the block for both releases: the scores are computed once, the curvature
    is taken from them, then the clipped derivative (as the gradient pass's block,
    ``_clipped_gradient_block`` of :mod:`skdp.solvers._problem`) overwrites them.
    Floating-point warnings are silenced as there (an overflowing record is dropped by the
    clip; a warning would say, from the data, that one did)."""
    p, k = W.shape
    Z = block.scores(W)
    H = curvature_grams(block, curvature(loss, Z, block.Y), loss, (p, k))
    with np.errstate(over="ignore", invalid="ignore"):
        D = loss.derivative_inplace(Z, block.Y)  # the scores are scratch
        grad = block.gradient_sum(clip_unless_lossless(D, block.norms, clip_norm, skip))
    out = np.empty(p * k + H.size)
    out[:p * k] = grad.ravel()
    out[p * k:] = H.ravel()
    return out


def needs_dispersion(loss) -> bool:
    """Whether the standard errors of ``loss`` need a released dispersion: the squared
    and Huber losses (the per-example gradients' covariance is ``phi H`` with ``phi`` a
    property of the residuals); 1 for the logistic losses (the information identity)."""
    return isinstance(loss, SquaredLoss | HuberLoss)


def _dispersion_terms(D, C, bound: float, curvature_bound: float, xp):
    """Per row ``[min(phi'^2, B^2) / B^2, min(phi'', c) / c]``, both in ``[0, 1]`` (a
    non-finite derivative counts as ``B``)."""
    square = D[:, 0] * D[:, 0] / (bound * bound)
    square = xp.where(square == square, square, xp.ones_like(square))  # NaN -> 1
    first = xp.clip(square, 0.0, 1.0)
    second = xp.clip(C[:, 0] / curvature_bound, 0.0, 1.0)
    return xp.stack([xp.sum(first), xp.sum(second)])


def _dispersion_pass(block, W, loss, bound: float, curvature_bound: float):
    """Device twin of :func:`_dispersion_block` (:mod:`skdp.solvers._device`)."""
    xp = block.xp
    Z = block.scores(W)
    C = device_curvature(loss, Z, block.Y, xp)
    D = loss.device_derivative(Z, block.Y, xp)
    return to_numpy(_dispersion_terms(D, C, bound, curvature_bound, xp), np.float64)


@device_pass(_dispersion_pass)
def _dispersion_block(block: Block, W: np.ndarray, loss, bound: float,
                      curvature_bound: float) -> np.ndarray:
    """``sum_i [min(phi'_i^2, B^2) / B^2, min(phi''_i, c) / c]`` over one block, at ``W``:
    each row adds a vector of ``[0, 1]^2``."""
    Z = block.scores(W)
    C = curvature(loss, Z, block.Y)
    with np.errstate(over="ignore", invalid="ignore"):
        D = loss.derivative_inplace(Z, block.Y)  # the scores are scratch
        return np.asarray(_dispersion_terms(D, C, bound, curvature_bound, np))


@partial(fill_docstrings, texts=HOOK_DOCS)
def gradient_and_hessian_sums(problem: Problem, W: np.ndarray, clip_norm: float
                              ) -> tuple[np.ndarray, np.ndarray]:
    """``(sum_i clip_C(grad f(W; z_i)), sum_i h_i kron x'_i x'_i^T)`` in one blocked pass.

    The first is the sum of :meth:`Problem.clipped_gradient` (its mean times ``n``; the
    same clip, skipped only when :meth:`Problem.clip_cannot_bind` proves it lossless), the
    second :func:`hessian_sum`: each block of rows is read once for both.

    Parameters
    ----------
    <<problem_at>>
    clip_norm : float
        The per-example gradient clip ``C``.

    Returns
    -------
    gradient : ndarray of shape (n_params, n_outputs)
        The summed clipped gradient (no regulariser).
    hessian : ndarray of shape (n_params * n_outputs, n_params * n_outputs)
        The summed loss Hessian (no regulariser), symmetrised.
    """
    p, k = W.shape
    skip = problem.clip_cannot_bind(clip_norm)
    packed = problem.block_sum(_gradient_and_hessian_block, (p * k + (p * k) ** 2,), W,
                               problem.spec.loss, float(clip_norm), skip)
    H = packed[p * k:].reshape(p * k, p * k)
    return packed[:p * k].reshape(p, k), 0.5 * (H + H.T)


def hessian_schedule(n_iter: int, n_hessian: int) -> tuple[bool, ...]:
    """Which of the ``n_iter`` iterations release a Hessian: ``floor(j T / k)`` for ``j =
    0..k-1`` (evenly spaced, the first one included; all of them at ``k = T``).

    Public (a function of the plan only); the other iterations reuse the last released
    Hessian (post-processing).

    Parameters
    ----------
    n_iter : int
        ``T``.
    n_hessian : int
        ``k``, between 1 and ``T``.

    Returns
    -------
    tuple of bool
        ``T`` flags.
    """
    fresh = {(j * n_iter) // n_hessian for j in range(n_hessian)}
    return tuple(t in fresh for t in range(n_iter))


def first_weight_in_force(n_iter: int, first_weight: float) -> float:
    """``first_weight``, or 1 at ``T = 1`` (no later release to take the rest).

    Parameters
    ----------
    n_iter : int
        ``T``.
    first_weight : float
        ``beta`` in ``(0, 1]``.

    Returns
    -------
    float
        The weight the split uses.
    """
    return float(first_weight) if n_iter > 1 else 1.0


def gradient_multipliers(zs: float, n_iter: int, rho: float, first_weight: float
                         ) -> tuple[float, float]:
    """The multipliers (over ``Delta_g``) of the first gradient release and of each later one.

    The gradients' share ``rho T / zs^2`` of ``mu^2`` (GDP) is split ``beta / T`` to the
    first release and ``(T - beta) / (T (T - 1))`` to each of the ``T - 1`` others
    (``beta = first_weight``; an even split at ``beta = 1`` or ``T = 1``): the
    multipliers ``zs / sqrt(rho beta)`` and ``zs sqrt((T - 1) / (T - beta)) / sqrt(rho)``,
    whose ``mu^2`` add up to ``rho beta / zs^2 + (T - 1) rho (T - beta) / ((T - 1) zs^2) =
    rho T / zs^2`` for every ``beta`` (docs/algorithms/newton.md).

    Parameters
    ----------
    zs : float
        The iterations' multiplier ``z / sqrt(1 - s)``.
    n_iter : int
        ``T``.
    rho : float
        The gradients' share of ``mu^2``.
    first_weight : float
        ``beta`` in ``(0, 1]`` (ignored at ``T = 1``).

    Returns
    -------
    first : float
        The first release's multiplier.
    later : float
        Each later release's multiplier (``first`` again at ``T = 1``).
    """
    beta = first_weight_in_force(n_iter, first_weight)
    first = zs / math.sqrt(rho * beta)
    if n_iter == 1 or beta == 1.0:
        return first, first
    return first, zs * math.sqrt((n_iter - 1) / (n_iter - beta)) / math.sqrt(rho)


def newton_event(z: float, n_iter: int, n_hessian: int, rho: float, accounting: str,
                 relation: str, dispersion_share: float = 0.0, first_weight: float = 1.0
                 ) -> dpe.DpEvent:
    """The ledger of ``T`` gradient and ``k`` Hessian releases (and, with ``s =
    dispersion_share > 0``, one dispersion release), as a function of ``z``.

    With ``s > 0`` every multiplier below is divided by ``sqrt(1 - s)`` and a Gaussian
    release of multiplier ``z / sqrt(s T)`` is composed in: ``mu^2 = (1 - s) T / z^2 + s T
    / z^2 = T / z^2`` still.

    ``k = T`` and an even split of the gradients' share (``first_weight = 1``): ``T``
    releases of the joint sensitivity-1 vector ``[g / a_g, svec(H) / a_H]`` with noise
    ``z`` (``a_g = Delta_g / sqrt(rho)``, ``a_H = Delta_H / sqrt(1 - rho)``). Otherwise:
    the composition of the ``T`` Gaussian releases of the gradient over its sensitivity
    (multiplier ``z / sqrt(rho)`` each at an even split; the first one's and the others'
    of :func:`gradient_multipliers` otherwise) and ``k`` of ``svec(H)`` over its
    sensitivity with multiplier ``z sqrt(k / T) / sqrt(1 - rho)``; in GDP terms ``mu^2 =
    T rho / z^2 + k (1 - rho) T / (k z^2) = T / z^2`` in every case (docs/algorithms/
    newton.md). ``z = 0``: non-private.
    """
    s = float(dispersion_share)
    zs = z / math.sqrt(1.0 - s)  # the iterations' share (1 - s) of mu^2
    z_first, z_later = gradient_multipliers(zs, n_iter, rho, first_weight)

    def gaussians(multiplier, count):
        return dpe.SelfComposedDpEvent(gaussian_event(multiplier, 1.0, accounting=accounting,
                                                      relation=relation), count)

    even = z_first == z_later
    if n_hessian == n_iter and even:
        steps = [gaussians(zs, n_iter)]
    else:
        z_h = zs * math.sqrt(n_hessian / n_iter) / math.sqrt(1.0 - rho)
        gradients = (gaussians(z_later, n_iter) if even else dpe.ComposedDpEvent(
            [gaussians(z_first, 1), gaussians(z_later, n_iter - 1)]))
        steps = [gradients, gaussians(z_h, n_hessian)]
    if s > 0:
        steps.append(gaussian_event(z / math.sqrt(s * n_iter), 1.0, accounting=accounting,
                                    relation=relation))
    return steps[0] if len(steps) == 1 else dpe.ComposedDpEvent(steps)


def newton_multiplier(n_iter: int, n_hessian: int, rho: float, budget: Budget,
                      accounting: str, relation: str, dispersion_share: float = 0.0,
                      first_weight: float = 1.0) -> float:
    """``z`` of :func:`newton_event` within ``budget``: exact (``sqrt(T)`` times the
    analytic Gaussian multiplier, Balle & Wang 2018) with ``"gaussian"``, the
    ``dp_accounting`` calibration otherwise (the exact one is its lower bound); 0 at
    ``epsilon = inf``."""
    if not budget.is_private:
        return 0.0
    exact = analytic_gaussian_multiplier(budget, n_iter)
    if accounting == "gaussian":
        return exact
    return calibrate_noise_multiplier(
        newton_event,
        (n_iter, n_hessian, rho, accounting, relation, dispersion_share, first_weight),
        budget,
        accounting=accounting, relation=relation, lower_bound=exact)


def relative_hessian_noise(n_samples: int, dim: int, budget: Budget) -> float:
    """The edge ``nu`` of the Hessian noise's spectrum of a default private DP Newton fit,
    over the per-example curvature bound ``c_F R^2``: how much of the Hessian the noise
    hides, whatever the rows' bound (it cancels).

    Derivation (the plan's constants at their defaults ``T = 10``, ``k = 2``, ``rho =
    0.95``, ``"gaussian"`` accounting): ``sigma_H = z Delta_H sqrt(k / T) / sqrt(1 - rho)``
    with ``Delta_H = sqrt(2) c_F R^2 / n`` and ``z = sqrt(T) sigma_1(epsilon, delta)``
    (the analytic Gaussian), and ``nu = sqrt(2 D) sigma_H`` (``T`` cancels). Public:
    ``n``, ``D`` and the budget. ``solver="auto"`` of
    :class:`~skdp.DPLogisticRegression` runs DP Newton where this is small
    (docs/algorithms/newton.md).

    Parameters
    ----------
    n_samples : int
        ``n``.
    dim : int
        ``D = n_params * n_outputs``, the released Hessian's side.
    budget : Budget
        The fit's ``(epsilon, delta)``; ``delta > 0``.

    Returns
    -------
    float
        ``nu / (c_F R^2)`` (0 at ``epsilon = inf``).
    """
    z = analytic_gaussian_multiplier(budget, DEFAULT_PRIVATE_ITER)
    share = math.sqrt(DEFAULT_HESSIAN_STEPS / DEFAULT_PRIVATE_ITER) / math.sqrt(
        1.0 - DPNewton().gradient_share)
    return math.sqrt(2.0 * dim) * z * math.sqrt(2.0) / n_samples * share


@partial(fill_docstrings, texts=HOOK_DOCS)
def hessian_sum(problem: Problem, W: np.ndarray) -> np.ndarray:
    """``sum_i h_i kron x'_i x'_i^T`` at ``W``, a ``(p K) x (p K)`` symmetric matrix.

    Row-major order of ``W`` (entry ``(j, k)`` at index ``j K + k``); one blocked pass over
    the rows (:meth:`Problem.block_sum`, chunk by chunk for a dask ``X``).

    Parameters
    ----------
    <<problem_at>>

    Returns
    -------
    ndarray of shape (n_params * n_outputs, n_params * n_outputs)
        The summed loss Hessian (no regulariser), symmetrised.
    """
    p, k = W.shape
    H = problem.block_sum(hessian_block, (p, k, p, k), W, problem.spec.loss)
    H = H.reshape(p * k, p * k)
    return 0.5 * (H + H.T)


def svec_indices(dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, cols, weights)`` of the released vector ``svec(H)`` of a symmetric matrix.

    ``svec(H)`` lists the upper triangle row by row (``np.triu_indices``, diagonal
    included), the off-diagonal entries multiplied by ``sqrt(2)``, so that
    ``||svec(H)||_2 = ||H||_F``.

    Parameters
    ----------
    dim : int
        Size of the matrix.

    Returns
    -------
    rows, cols : ndarray of int
        The upper-triangle positions.
    weights : ndarray
        1 on the diagonal, ``sqrt(2)`` off it.
    """
    rows, cols = np.triu_indices(dim)
    return rows, cols, np.where(rows == cols, 1.0, math.sqrt(2.0))


def symmetric_noise(unit: np.ndarray, dim: int) -> np.ndarray:
    """The symmetric matrix ``E`` with ``svec(E) = unit``.

    Diagonal entries ``unit``, off-diagonal ones ``unit / sqrt(2)`` (mirrored).

    Parameters
    ----------
    unit : ndarray of shape (dim (dim + 1) / 2,)
        The noise of the released vector, in :func:`svec_indices` order.
    dim : int
        Size of the matrix.

    Returns
    -------
    ndarray of shape (dim, dim)
        The symmetric noise matrix.
    """
    rows, cols, weights = svec_indices(dim)
    E = np.zeros((dim, dim))
    values = unit / weights
    E[rows, cols] = values
    E[cols, rows] = values
    return E


def hessian_frobenius_bound(loss, n_outputs: int) -> float:
    """Public bound on ``||h(z, y)||_F`` of the loss's Hessian in the score.

    Losses acting on each output separately (one output, or the one-vs-rest smoothed
    hinge): ``h = diag(phi''_k)`` with every ``phi''_k`` clipped to ``c =
    curvature_bound``, so ``||h||_F <= sqrt(K) c``. Multinomial: ``h = diag(p) - p p^T``
    has ``||h||_F^2 = S_2 - 2 S_3 + S_2^2`` with ``S_k = sum_i p_i^k``; Cauchy-Schwarz
    gives ``S_2^2 <= S_1 S_3 = S_3``, so ``||h||_F^2 <= S_2 - S_3 = sum_i p_i^2 (1 - p_i)
    <= max_i p_i (1 - p_i) <= 1/4``: ``c_F = 1/2`` for every ``K``, attained at ``p =
    (1/2, 1/2, 0, ...)`` (found by the independent review; the earlier bound
    ``sqrt((1 - 1/K)/2)`` was valid but up to 34% larger).

    Parameters
    ----------
    loss : GLMLoss
        The loss.
    n_outputs : int
        ``K``.

    Returns
    -------
    float
        The bound ``c_F``.
    """
    c = float(loss.curvature_bound)
    if isinstance(loss, MultinomialLogisticLoss):
        return 0.5
    return math.sqrt(n_outputs) * c


def newton_sensitivities(spec: ProblemSpec, clip: float) -> tuple[float, float]:
    """Replace-one l2 sensitivities ``(Delta_g, Delta_H)`` of one iteration's releases.

    ``Delta_g = 2 C / n`` for the mean clipped gradient (as DP-GD). ``Delta_H`` for
    ``svec`` of the mean Hessian ``(1/n) sum_i h_i kron x'_i x'_i^T``: one record changes
    the sum by ``D = A - B`` with ``A = h kron x x^T`` and ``B = h2 kron x2 x2^T`` both PSD,
    so ``||D||_F^2 = ||A||_F^2 + ||B||_F^2 - 2 tr(A B) <= ||A||_F^2 + ||B||_F^2`` (``tr(AB)
    >= 0`` for PSD ``A, B``) and ``||A||_F = ||h||_F ||x||^2 <= c_F R^2``: ``Delta_H =
    sqrt(2) c_F R^2 / n``, ``R`` the augmented row bound with the slack
    :meth:`Problem.build` accepts. Attained (scalar loss): two orthogonal rows of norm
    ``R`` at curvature ``c``.

    Parameters
    ----------
    spec : ProblemSpec
        The public problem (``n``, the row bound, the loss and its outputs).
    clip : float
        The per-example gradient clip ``C``.

    Returns
    -------
    delta_g : float
        ``2 C / n``.
    delta_h : float
        ``sqrt(2) c_F R^2 / n``.
    """
    n = spec.n_samples
    R = spec.row_bound(2.0) * (1.0 + ROW_BOUND_TOLERANCE)
    c_f = hessian_frobenius_bound(spec.loss, spec.n_outputs)
    delta_g = check_sensitivity(2.0 * clip / n, "gradient sensitivity 2C/n")
    delta_h = check_sensitivity(math.sqrt(2.0) * c_f * R * R / n,
                                "Hessian sensitivity sqrt(2) c R^2 / n")
    return delta_g, delta_h


@dataclass(frozen=True, kw_only=True)
class NewtonPlan(Plan):
    """Constants of a DP Newton run, fixed from public quantities before any data is read.

    Each of the ``T`` iterations releases the gradient with noise ``z Delta_g /
    sqrt(rho)`` per coordinate at an even split (the first one ``z Delta_g / sqrt(rho
    beta)`` and the others ``z Delta_g sqrt((T - 1) / (T - beta)) / sqrt(rho)`` at weight
    ``beta``: :func:`gradient_multipliers`), ``k`` of them also ``svec(H_t)`` with
    noise ``sigma_hessian = z Delta_H sqrt(k / T) / sqrt(1 - rho)`` per entry: in GDP
    terms ``mu^2 = T rho / z^2 + (1 - rho) T / z^2 = T / z^2`` (:func:`newton_event`; at
    ``k = T``, ``T`` releases of the sensitivity-1 vector ``[g_t / a_g, svec(H_t) / a_H]
    + N(0, z^2 I)``, ``a_g = Delta_g / sqrt(rho)``, ``a_H = Delta_H / sqrt(1 - rho)``).
    With a dispersion release (squared and Huber losses, ``dispersion_share = s``) both
    noise scales are divided by ``sqrt(1 - s)`` and the release takes the rest of
    ``mu^2``.

    Attributes
    ----------
    sigma_gradient : float
        Per-coordinate noise std of the mean gradient (gradient units) at every iteration
        but the first.
    sigma_first_gradient : float
        The same at the first iteration (``sigma_gradient`` at an even split, or ``T =
        1``).
    sigma_hessian : float
        Noise std of each entry of ``svec`` of the mean Hessian: the diagonal of the
        symmetric noise matrix has this std, its off-diagonal entries ``1/sqrt(2)`` of it.
    noise_multiplier : float
        ``z``, the noise std of the sensitivity-1 vector released per iteration (0 when
        ``epsilon = inf``).
    gradient_sensitivity : float
        ``Delta_g = 2 C / n``.
    hessian_sensitivity : float
        ``Delta_H = sqrt(2) c_F R^2 / n`` (Frobenius, that is of ``svec``).
    gradient_share : float
        ``rho``: the share of the fit's ``mu^2`` (GDP) spent on the gradients.
    first_step_weight : float
        ``beta``: the first gradient release's weight in the gradients' split
        (:func:`gradient_multipliers`; 1: an even split).
    clip_norm : float
        Per-example gradient clip ``C``.
    hessian_floor : float
        Public floor of the eigenvalues of the regularised noisy Hessian.
    max_score_step : float
        Largest change of any score ``|x'^T (w_{t+1} - w_t)|`` per step (``inf``: none).
    row_bound : float
        The public l2 bound ``R`` on the augmented rows that the step rule uses.
    n_hessian : int
        ``k``: the Hessian is released at ``k`` iterations only (:func:`hessian_schedule`:
        ``floor(j T / k)``, ``j = 0..k-1``); the others reuse the last release.
    dispersion_share : float
        ``s``: the share of ``mu^2`` of the dispersion release (0: none; the iterations'
        multipliers are divided by ``sqrt(1 - s)``).
    sigma_dispersion : float
        Per-coordinate noise std of the released mean ``[psi^2 / B^2, phi'' / c]``
        (sensitivity ``sqrt(2) / n``, multiplier ``z / sqrt(s T)``).
    dispersion_bound : float
        ``B = C / R``: the derivative bound of the first term.
    inference : bool
        Whether the run returns the standard errors' inputs (an
        :class:`~skdp.solvers._base.Inference`): ``spec.standard_errors`` when planned.
    intercept_candidates : tuple of float
        The effective intercept features ``c`` the steps after the first may weigh the
        gradient noise by (:func:`intercept_noise_bound`): the grid of ``"auto"``, one
        value, or none (the noise stays isotropic: no intercept, ``epsilon = inf`` or
        ``intercept_scale=None``).
    intercept_feature : float
        ``c_0``, the problem's constant feature (0 without an intercept).
    feature_bound : float
        ``B``, the public l2 bound on the rows' feature part (with the slack).
    derivative_bound : float
        ``G``, the bound on the score derivative's l2 norm that the computed derivative
        provably respects (the built-in losses with a global bound), else ``inf``.
    """

    sigma_gradient: float
    sigma_first_gradient: float
    sigma_hessian: float
    noise_multiplier: float
    gradient_sensitivity: float
    hessian_sensitivity: float
    gradient_share: float
    first_step_weight: float
    clip_norm: float
    hessian_floor: float
    max_score_step: float
    row_bound: float
    n_hessian: int
    dispersion_share: float
    sigma_dispersion: float
    dispersion_bound: float
    inference: bool = True
    intercept_candidates: tuple[float, ...] = ()
    intercept_feature: float = 0.0
    feature_bound: float = 0.0
    derivative_bound: float = math.inf

    def gradient_noise(self, step: int) -> float:
        """The gradient's noise std at iteration ``step`` (0-based).

        Parameters
        ----------
        step : int
            The iteration, ``0 <= step < T``.

        Returns
        -------
        float
            ``sigma_first_gradient`` at the first iteration, else ``sigma_gradient``.
        """
        return self.sigma_first_gradient if step == 0 else self.sigma_gradient

    def intercept_bound(self, c: float) -> tuple[float, float]:
        """``(U(c), c_0 / c)`` of :func:`intercept_noise_bound` for this plan.

        Parameters
        ----------
        c : float
            The effective intercept feature.

        Returns
        -------
        bound : float
            ``U(c)``.
        weight : float
            The intercept row's noise over the features' noise, ``c_0 / c``.
        """
        bound = intercept_noise_bound(
            c, clip=self.clip_norm, feature_bound=self.feature_bound,
            intercept=self.intercept_feature, derivative_bound=self.derivative_bound)
        return bound, self.intercept_feature / c

    def gradient_scales(self, step: int, c: float | None) -> tuple[float, float]:
        """The gradient noise's std on the feature rows and on the intercept row.

        ``(s, s)`` with ``s = gradient_noise(step)`` when the noise is isotropic (``c``
        None or ``c_0``); else ``s U(c) / C`` and ``c_0 / c`` times it: the release's
        multiplier over its sensitivity ``2 U(c) / n`` in the weighted metric is the
        plan's ``s / (2 C / n)`` (:func:`intercept_noise_bound`), so the ledger holds.

        Parameters
        ----------
        step : int
            The iteration, ``0 <= step < T``.
        c : float or None
            The effective intercept feature in force.

        Returns
        -------
        features : float
            The std on every row but the intercept's.
        intercept : float
            The std on the intercept row.
        """
        sigma = self.gradient_noise(step)
        if c is None or c == self.intercept_feature:
            return sigma, sigma
        bound, weight = self.intercept_bound(c)
        features = sigma * bound / self.clip_norm
        return features, features * weight


class DPNewton(BaseDPSolver):
    """DP Newton: damped Newton steps from noisy gradients and noisy symmetric Hessians.

    Each of the ``T`` iterations releases, at the current point ``w_t``, the mean clipped
    gradient ``g~_t = mean_i clip_C(grad f(w_t; z_i)) + N(0, sigma_g^2 I)``; ``k`` of them
    (``hessian_steps``, at the public steps ``floor(j T / k)``) also the mean Hessian ``H~_t
    = mean_i h_i kron x'_i x'_i^T + E_t``, ``E_t`` a symmetric Gaussian matrix, in the same
    pass over the rows; the others reuse the last released one. Post-processing only: ``A_t
    = H~_t + alpha I_pen`` (the last released ``H~``) has its eigenvalues floored at the
    public ``lambda_0``; the Newton point ``u_t`` minimises ``<g, u - w_t> + (u - w_t)^T A_t
    (u - w_t) / 2`` (``g = g~_t + alpha w_t`` on the penalised rows) over the constraint
    (``u_t = w_t - A_t^{-1} g`` without one), and ``w_{t+1} = w_t + eta_t (u_t - w_t)`` with
    ``eta_t = min(1, r / (R ||u_t - w_t||_F))`` (no score moves by more than ``r``). The
    output is ``w_T``, or (private fits, by default) the average of the iterates of the full
    (undamped) steps since the last damped one, without the first of them when there are
    several (it still lags): near the optimum each full step lands at about
    ``w* - H^{-1} xi_t`` with fresh gradient noise ``xi_t``, so the average divides the
    noise's variance by their number.

    Parameters
    ----------
    n_iter : int, optional
        Number of Newton steps ``T``. Default: 10 for a private fit, 100 at
        ``epsilon = inf`` (see docs/algorithms/newton.md).
    gradient_share : float, default=0.95
        Share ``rho`` in ``(0, 1)`` of the privacy budget (of the fit's ``mu^2`` in GDP
        terms) spent on the ``T`` gradients; the ``k`` Hessians get ``1 - rho``.
    first_step_weight : float, default=0.25
        Weight ``beta`` in ``(0, 1]`` of the first gradient release in the gradients'
        split: it gets ``beta / T`` of their share, each later release ``(T - beta) / (T
        (T - 1))`` (1: an even split). The first step only brings the iterate near the
        optimum and its iterate is left out of the average, so its budget goes to the
        averaged releases (docs/algorithms/newton.md).
    clip_norm : float, optional
        Per-example gradient clip ``C``. Default: the loss bound ``sup|phi'| * data_norm``,
        which makes clipping lossless (needed for the squared loss unless the constraint
        bounds the scores).
    floor_margin : float, default=1.0
        The eigenvalue floor is ``lambda_0 = alpha' + floor_margin * nu`` with ``nu =
        sqrt(2 D) sigma_hessian`` the typical operator norm of the ``D x D`` Hessian noise
        (``alpha' = alpha`` when every coefficient is penalised, else 0), and at least
        ``1e-8 beta``.
    max_score_step : "auto", float or None, default="auto"
        Trust radius ``r`` of the step in score units. ``"auto"``: 4 for the logistic
        losses, twice the quadratic zone's width for the Huber loss (``2 huber_delta``)
        and the smoothed hinge (``2 smoothing``), none for the squared loss (its quadratic
        model is exact); ``None``: no limit.
    iterate : {"auto", "last", "average"}, default="auto"
        ``"last"``: ``w_T``. ``"average"``: the mean of the iterates of the undamped steps
        since the last damped step but the first of them (kept when it is the only one;
        ``w_T`` when the last step was damped). ``"auto"``:
        ``"average"`` for a private fit, ``"last"`` at ``epsilon = inf`` (where the
        iterates converge quadratically and an average would lag behind the last one).
    max_inner : int, default=2000
        Iteration cap of the projected solve of the constrained Newton step (only with a
        constraint; it reads only the releases: post-processing).
    hessian_steps : int, optional
        Number ``k`` of Hessian releases (at most ``T``), at the iterations ``floor(j T /
        k)``, ``j = 0..k-1``; the other steps reuse the last released Hessian. Default: 2
        for a private fit of the logistic, multinomial and squared losses (see
        docs/algorithms/newton.md), 1 where the fit computes no standard errors
        (``ProblemSpec.standard_errors`` false: an estimator without intervals, several outputs,
        a private threshold), ``T`` for the Huber loss and the smoothed hinge (whose
        curvature jumps) and at ``epsilon = inf``.
    intercept_scale : "auto", float or None, default="auto"
        How the gradient noise of the steps after the first is shared between the
        intercept row and the others: as for an intercept feature of value ``c =
        intercept_scale * B`` (``B`` the bound on the rows' features, ``data_norm``)
        instead of the problem's ``c_0``
        (the intercept row's noise ``c_0 / c`` times the others', the sensitivity in that
        metric :func:`intercept_noise_bound`; the ledger is unchanged). ``"auto"``: the
        ``c`` of a public grid (``B / 8`` to ``2 B``) that minimises the averaged output's
        predicted excess risk under the first released Hessian (post-processing); ``None``:
        ``c_0``, isotropic noise. No effect without an intercept or at ``epsilon = inf``.

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation (``n`` public). Rows are
    clipped to the public ``data_norm`` (augmented l2 bound ``R``) and per-example gradients
    to ``C``: the mean gradient has l2 sensitivity ``Delta_g = 2C/n``. The released Hessian
    vector is ``svec(H)`` (upper triangle, off-diagonals times ``sqrt(2)``, so its l2 norm
    is the Frobenius norm); per-example Hessians are PSD with Frobenius norm at most ``c_F
    R^2`` (``c_F = sqrt(K) c`` with ``c`` the declared ``phi''`` bound, to which ``phi''`` is
    clipped, and ``K`` the outputs acted on separately; multinomial ``1/2``), so
    ``Delta_H = sqrt(2) c_F R^2 / n``. The ``T`` gradient releases have noise
    ``sigma_g = z Delta_g / sqrt(rho)``, the ``k`` Hessian releases (at the iterations
    ``floor(j T / k)``, a public schedule) ``sigma_H = z Delta_H sqrt(k / T) / sqrt(1 - rho)``
    (with ``first_step_weight = beta < 1`` the first gradient's ``sigma_g`` is divided by
    ``sqrt(beta)`` and the others' multiplied by ``sqrt((T - 1) / (T - beta))``, which
    keeps the gradients' ``mu^2`` at ``T rho / z^2``):
    Gaussian mechanisms whose composition is ``mu``-GDP with ``mu^2 = T rho / z^2 + k (1 -
    rho) T / (k z^2) = T / z^2``, calibrated exactly by the analytic Gaussian
    (``"gaussian"``, default) or by ``dp_accounting`` (``"rdp"``, ``"pld"``) on the
    composed ledger (:func:`newton_event`; at ``k = T`` DP-GD's ledger with sensitivity 1:
    one joint sensitivity-1 release per iteration). The squared and Huber losses also
    release, after the iterations and where the fit computes standard errors
    (``ProblemSpec.standard_errors``), the mean of ``[min(psi_i^2, B^2) / B^2, min(phi''_i,
    c) / c]`` at the output (``psi = phi'``, ``B = C / R``; sensitivity ``sqrt(2) / n``)
    with the share ``s = 0.02`` of ``mu^2`` (multiplier ``z / sqrt(s T)``; the other
    multipliers divided by ``sqrt(1 - s)``, so ``mu^2 = T / z^2`` still): the dispersion
    of their standard errors. After the first step the gradient noise of a fit with an
    intercept is shaped (``intercept_scale``): the intercept row's std is ``c_0 / c``
    times the others', which are ``U(c) / C`` times the planned ``sigma_g``; in the metric
    that divides the intercept row by ``c_0 / c`` the mean gradient has sensitivity ``2
    U(c) / n`` (:func:`intercept_noise_bound`), so each release keeps its planned
    multiplier and the ledger is unchanged; ``c`` is read from the first released
    Hessian. The eigenvalue floor, the regulariser,
    the reuse of the last released Hessian, the Newton point, the constrained solve, the
    damping, the averaging and the dispersion's formula are post-processing: each reads
    only the noisy releases and public constants.

    Assumptions: a smooth loss with a known second derivative (logistic, multinomial,
    squared, Huber, smoothed hinge); at most 2048 noisy Hessian dimensions ``n_params *
    n_outputs``; ``delta > 0``.

    Reference: Ganesh, Liu, Oh, Thakurta et al., "Faster differentially private convex
    optimization via second-order methods", NeurIPS 2023; Avella-Medina, Bradshaw & Loh,
    "Differentially private inference via noisy optimization", Ann. Statist. 2023.
    Derivations and measurements: docs/algorithms/newton.md.
    """

    name = "newton"
    releases_inference = True
    capabilities = Capabilities(
        algorithm="DP Newton (Ganesh et al. 2023; Avella-Medina, Bradshaw & Loh 2023)",
        accounting_methods=("gaussian", "rdp", "pld"), default_accounting="gaussian",
        losses=("logistic", "multinomial", "smoothed_hinge", "squared", "huber"),
        constraints=("none", "l2", "l1", "lp", "simplex"), max_params=MAX_DIMENSION,
        out_of_core=True,
    )
    _parameter_constraints = {
        "n_iter": OPTIONAL_COUNT,
        "gradient_share": [Interval(Real, 0, 1, closed="neither")],
        "first_step_weight": [Interval(Real, 0, 1, closed="right")],
        "clip_norm": OPTIONAL_POSITIVE,
        "floor_margin": [Interval(Real, 0, None, closed="left")],
        "max_score_step": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither"),
                           None],
        "max_inner": COUNT,
        "iterate": [StrOptions(set(ITERATES))],
        "hessian_steps": OPTIONAL_COUNT,
        "intercept_scale": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither"),
                            None],
    }

    def __init__(self, n_iter=None, gradient_share=0.95, first_step_weight=0.25,
                 clip_norm=None, floor_margin=1.0, max_score_step="auto", iterate="auto",
                 max_inner=2000, hessian_steps=None, intercept_scale="auto"):
        store_params(self, locals())

    def _check_params(self) -> None:
        # Interval(Real, 0, None, "left") admits inf; the floor must be finite.
        if not math.isfinite(float(self.floor_margin)):
            raise ValueError(f"DPNewton.floor_margin must be finite, got {self.floor_margin}.")
        if isinstance(self.intercept_scale, Real) and not math.isfinite(
                float(self.intercept_scale)):
            raise ValueError("DPNewton.intercept_scale must be finite, got "
                             f"{self.intercept_scale}.")

    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """The generic check, then: the noisy Hessian's size is capped.

        <<check_sections>>
            If a generic check fails, or ``n_params * n_outputs`` exceeds 2048.
        """
        super().check_compatible(spec, accounting, relation)
        if spec.dimension > MAX_DIMENSION:
            raise IncompatibleSolverError(
                f"solver {self.name!r} releases a dense Hessian of n_params * n_outputs = "
                f"{spec.dimension} > {MAX_DIMENSION} dimensions; reduce the features (or "
                "classes), or use solver='gd'."
            )

    def auto_n_iter(self, spec: ProblemSpec, budget: Budget) -> int:
        """Number of Newton steps: ``n_iter``, else 10 (private) or 100 (``epsilon = inf``).

        <<epochs_parameters>>

        Returns
        -------
        int
            The public step count.
        """
        if self.n_iter is not None:
            return int(self.n_iter)
        return DEFAULT_PRIVATE_ITER if budget.is_private else DEFAULT_NON_PRIVATE_ITER

    def auto_n_hessian(self, spec: ProblemSpec, n_iter: int, budget: Budget) -> int:
        """Number of Hessian releases ``k`` (public: the parameters, loss and budget).

        ``hessian_steps`` (at most ``T``), else ``DEFAULT_HESSIAN_STEPS`` for a private fit
        of the logistic, multinomial and squared losses (1 where the run gives no standard
        errors, ``spec.standard_errors`` false: the second release is there for them, and
        one was measured as accurate; docs/algorithms/newton.md), ``T`` for the
        piecewise-quadratic losses (Huber, smoothed hinge) and at ``epsilon = inf``.

        Parameters
        ----------
        spec : ProblemSpec
            The public problem (its loss).
        n_iter : int
            The number ``T`` of Newton steps.
        budget : Budget
            The budget (``epsilon = inf`` releases a Hessian at every step).

        Returns
        -------
        int
            The number of Hessian releases, ``1 <= k <= T``.
        """
        if self.hessian_steps is not None:
            return min(int(self.hessian_steps), n_iter)
        if not budget.is_private or isinstance(spec.loss, HuberLoss | SmoothedHingeLoss):
            return n_iter
        return min(DEFAULT_HESSIAN_STEPS if spec.standard_errors else 1, n_iter)

    def _score_step(self, spec: ProblemSpec) -> float:
        if self.max_score_step is None:
            return math.inf
        if self.max_score_step == "auto":
            loss = spec.loss
            if isinstance(loss, SquaredLoss):
                return math.inf
            if isinstance(loss, HuberLoss):
                return ZONE_STEPS * float(loss.huber_delta)
            if isinstance(loss, SmoothedHingeLoss):
                return ZONE_STEPS * float(loss.smoothing)
            return DEFAULT_SCORE_STEP
        return float(self.max_score_step)

    def intercept_candidates(self, spec: ProblemSpec, budget: Budget) -> tuple[float, ...]:
        """The effective intercept features the run may weigh the gradient noise by.

        Public: ``intercept_scale`` times the feature bound ``B`` (the grid
        :data:`INTERCEPT_SCALES` for ``"auto"``); none without an intercept or a feature,
        at ``epsilon = inf``, or with ``intercept_scale=None``.

        Parameters
        ----------
        spec : ProblemSpec
            The public problem (its intercept feature and rows' bound).
        budget : Budget
            The budget (no noise to shape at ``epsilon = inf``).

        Returns
        -------
        tuple of float
            The candidates ``c``, in increasing order.
        """
        if (self.intercept_scale is None or not budget.is_private
                or not spec.intercept_feature or spec.n_params < 2):
            return ()
        bound = spec.feature_bound()
        scales = (INTERCEPT_SCALES if self.intercept_scale == "auto"
                  else (float(self.intercept_scale),))
        return tuple(scale * bound for scale in scales)

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> NewtonPlan:
        """Fix ``T``, the split, the noise of both releases and the eigenvalue floor.

        <<plan_parameters>>

        Returns
        -------
        NewtonPlan
            ``T`` gradient and ``k`` Hessian Gaussian releases (:func:`newton_event`),
            their noise calibrated to ``budget`` (exactly, with ``"gaussian"``).
        """
        clip = self.gradient_clip(spec)
        delta_g, delta_h = newton_sensitivities(spec, clip)
        n_iter = self.auto_n_iter(spec, budget)
        rho = float(self.gradient_share)
        n_hessian = self.auto_n_hessian(spec, n_iter, budget)
        # The dispersion is read by the standard errors only.
        share = (DISPERSION_SHARE if spec.standard_errors and needs_dispersion(spec.loss)
                 else 0.0)
        # T gradient and k Hessian releases (and one dispersion release), mu^2 = T / z^2
        # in GDP terms (k = T, no dispersion: DP-GD's ledger with Delta = 1, one joint
        # sensitivity-1 release per iteration).
        beta = float(self.first_step_weight)
        z = newton_multiplier(n_iter, n_hessian, rho, budget, accounting, relation, share,
                              beta)
        event = newton_event(z, n_iter, n_hessian, rho, accounting, relation, share, beta)
        zs = z / math.sqrt(1.0 - share)  # the iterations' (1 - s) of mu^2
        # The gradients' rho T / zs^2 of mu^2, beta / T of it to the first release (its
        # iterate is left out of the average) and the rest evenly to the others.
        z_first, z_later = gradient_multipliers(zs, n_iter, rho, beta)
        sigma_g = z_later * delta_g
        sigma_h = zs * delta_h * math.sqrt(n_hessian / n_iter) / math.sqrt(1.0 - rho)
        # The dispersion release: the mean of [psi_i^2 / B^2, phi''_i / c] in [0, 1]^2, so
        # replacing one row moves it by at most sqrt(2) / n (l2); multiplier z / sqrt(s T)
        # is its s T / z^2 of mu^2.
        sigma_d = (z / math.sqrt(share * n_iter) * math.sqrt(2.0) / spec.n_samples
                   if share else 0.0)
        dim = spec.dimension
        # Symmetric noise with diagonal std s and off-diagonal std s / sqrt(2): its
        # spectrum has edge 2 (s / sqrt(2)) sqrt(D) = sqrt(2 D) s (a utility rule).
        nu = math.sqrt(2.0 * dim) * sigma_h
        alpha_all = spec.alpha if spec.n_penalized == spec.n_params else 0.0
        floor = max(alpha_all + float(self.floor_margin) * nu,
                    FLOOR_RELATIVE * spec.smoothness)
        return NewtonPlan(
            n_iter=n_iter, event=event, accounting=accounting, relation=relation,
            sigma_gradient=sigma_g, sigma_first_gradient=z_first * delta_g,
            sigma_hessian=sigma_h, noise_multiplier=z,
            gradient_sensitivity=delta_g, hessian_sensitivity=delta_h,
            gradient_share=rho, first_step_weight=first_weight_in_force(n_iter, beta),
            clip_norm=clip, hessian_floor=floor,
            max_score_step=self._score_step(spec),
            row_bound=spec.row_bound(2.0) * (1.0 + ROW_BOUND_TOLERANCE),
            n_hessian=n_hessian, dispersion_share=share, sigma_dispersion=sigma_d,
            # B = C / R: psi^2 <= B^2 where the clip C binds at the rows' bound R.
            dispersion_bound=clip / spec.row_bound(2.0) if share else 0.0,
            inference=spec.standard_errors,
            intercept_candidates=self.intercept_candidates(spec, budget),
            intercept_feature=abs(float(spec.intercept_feature)),
            feature_bound=spec.feature_bound(),
            # G enters U(c) only where the computed derivative provably stays within it
            # (the built-in losses with a global bound, as for skipping the clip); a
            # subclass or an unbounded loss relies on the clip alone (U(c) = C ratio).
            derivative_bound=(float(spec.loss.derivative_bound)
                              if exactly_bounded(spec.loss) else math.inf),
        )

    # -- run -------------------------------------------------------------------------------
    def _averages(self, plan: NewtonPlan) -> bool:
        """Whether the output averages iterates (public: the rule and the noise level)."""
        if self.iterate == "auto":
            return plan.noise_multiplier > 0
        return self.iterate == "average"

    def _run(self, problem: Problem, plan: NewtonPlan, noise: NoiseSource) -> np.ndarray:
        return self._run_released(problem, plan, noise).coef

    def _run_released(self, problem: Problem, plan: NewtonPlan, noise: NoiseSource
                      ) -> Released:
        spec = problem.spec
        W = np.zeros((spec.n_params, spec.n_outputs))
        average = self._averages(plan)
        # The averaged iterates' sum, count and summed gradient noise variances (per
        # coordinate: the intercept row's may differ).
        total, count, variance = np.zeros_like(W), 0, np.zeros(W.size)
        hessians, n_hessians = np.zeros((W.size, W.size)), 0
        # The first full step's iterate since the last damped step (the Hessian it stepped
        # with, when released there, and its noise variance): left out of the average
        # unless it is alone.
        first = None
        hess = None
        c = None  # the effective intercept feature, chosen after the first release
        for step, fresh in enumerate(hessian_schedule(plan.n_iter, plan.n_hessian)):
            if fresh:
                grad, hess = self.noisy_releases(problem, plan, W, noise, step, c)
                eig = self.floored_eigh(hess, plan, spec)
            else:  # the last released Hessian again (post-processing)
                grad = self.noisy_gradient(problem, plan, W, noise, step, c)
            step_variance = self._coordinate_variance(plan, step, c, W.shape)
            if step == 0 and plan.intercept_candidates:
                # The intercept's share of the later steps' noise, from the first released
                # Hessian (post-processing; docs/algorithms/newton.md).
                c = intercept_scale_choice(*eig, spec.n_outputs,
                                           plan.intercept_candidates, plan.intercept_bound)
            W, damped = self.newton_step(W, grad, hess, plan, spec, eig=eig)
            # The average restarts after every damped step: it holds the iterates of the
            # full Newton steps since the last damped one but the first, which still lags
            # on the way to the optimum (measured: it biased the largest coefficient by a
            # fifth of its standard error; docs/algorithms/newton.md). A function of the
            # releases only.
            if damped:
                total, count, variance = np.zeros_like(W), 0, np.zeros(W.size)
                hessians, n_hessians = np.zeros_like(hessians), 0
                first = None
            elif first is None:
                first = (W, hess if fresh else None, step_variance)
            else:
                total += W
                count += 1
                variance += step_variance
                if fresh:
                    hessians += hess
                    n_hessians += 1
            problem.advance()
        if count == 0 and first is not None:  # one full step: its iterate is the average
            total, count, variance = first[0], 1, first[2]
            if first[1] is not None:
                hessians, n_hessians = first[1], 1
        averaged = average and count > 0
        coef = total / count if averaged else W
        if not plan.inference:  # nothing reads standard errors (ProblemSpec.standard_errors)
            return Released(coef, None)
        # For standard errors (post-processing): the mean of the Hessians released at the
        # points the averaged iterates stepped from (the last release when none was, or
        # without averaging), with the L2 term and the same eigenvalue floor as the steps.
        m = count if averaged else 1
        H = hessians / n_hessians if averaged and n_hessians else hess
        penalty = np.zeros(W.size)
        penalty[:spec.n_penalized * W.shape[1]] = spec.alpha
        A = 0.5 * (H + H.T) + np.diag(penalty)
        values, vectors = np.linalg.eigh(A)
        A = (vectors * np.maximum(values, plan.hessian_floor)) @ vectors.T
        # The m averaged iterates each carry -A^-1 xi_t, xi_t ~ N(0, S_t) independent
        # across steps (S_t diagonal): their mean carries noise of covariance sum_t S_t /
        # m^2 in the gradient (the last step's S without averaging).
        step_noise = variance / (m * m) if averaged else step_variance
        noise_cov = np.diag(step_noise)
        dispersion = (self.noisy_dispersion(problem, plan, coef, noise)
                      if plan.dispersion_share else 1.0)
        return Released(coef, Inference(hessian=A, penalty=penalty,
                                        noise_covariance=noise_cov,
                                        n_samples=spec.n_samples, dispersion=dispersion))

    def noisy_dispersion(self, problem: Problem, plan: NewtonPlan, W: np.ndarray,
                         noise: NoiseSource) -> float:
        """The released dispersion ``phi = mean psi^2 / mean phi''`` at the output ``W``.

        One pass over the rows: the mean of ``[min(psi_i^2, B^2) / B^2, min(phi''_i, c) /
        c]`` (``psi = phi'``, the score derivative; ``c`` the loss's curvature bound), each
        row in ``[0, 1]^2``, plus ``N(0, sigma_dispersion^2)`` per coordinate (the only
        access to the data; drawn after the iterations'). Then post-processing: both means
        clipped to ``[max(sigma_dispersion, 1 / n), 1]``, and ``phi = B^2 m_1 / (c m_2)``:
        for a model whose residuals do not depend on
        the rows, the per-example gradients' covariance ``mean psi^2 x x^T`` is ``phi``
        times the Hessian ``mean phi'' x x^T`` (Huber 1981; the squared loss: ``phi`` is
        the residual variance). docs/inference.md.

        <<release_at_parameters>>

        Returns
        -------
        float
            ``phi``, positive.
        """
        spec = problem.spec
        c = float(spec.loss.curvature_bound)
        bound = float(plan.dispersion_bound)
        sums = problem.block_sum(_dispersion_block, (2,), W, spec.loss, bound, c)
        means = sums / spec.n_samples + noise.gaussian((2,), plan.sigma_dispersion)
        # Both floored at the noise level (a noisy mean at or below 0 would give phi = 0,
        # intervals without their sampling part, or divide by 0).
        floor = max(plan.sigma_dispersion, 1.0 / spec.n_samples)
        first = min(max(float(means[0]), floor), 1.0)
        second = min(max(float(means[1]), floor), 1.0)
        return bound * bound * first / (c * second)

    @staticmethod
    def _coordinate_variance(plan: NewtonPlan, step: int, c: float | None,
                             shape: tuple[int, int]) -> np.ndarray:
        """The gradient noise's variance per coordinate (row-major), at ``step``."""
        features, intercept = plan.gradient_scales(step, c)
        out = np.full(shape, features * features)
        out[-1] = intercept * intercept
        return out.ravel()

    @staticmethod
    def draw_gradient_noise(plan: NewtonPlan, noise: NoiseSource, step: int,
                            c: float | None, shape: tuple[int, int]) -> np.ndarray:
        """The gradient release's noise at ``step``.

        ``N(0, s^2)`` of shape ``shape`` (``s = plan.gradient_noise(step)``) while the noise
        is isotropic (``c`` None); else ``N(0, s_f^2)`` on the rows but the last, then
        ``N(0, s_b^2)`` on the intercept row (:meth:`NewtonPlan.gradient_scales`): two
        draws, in the row-major order of one.

        Parameters
        ----------
        plan : NewtonPlan
            The plan.
        noise : NoiseSource
            The noise source.
        step : int
            The iteration (0-based).
        c : float or None
            The effective intercept feature in force.
        shape : tuple of int
            ``(n_params, n_outputs)``.

        Returns
        -------
        ndarray of shape ``shape``
            The noise.
        """
        if c is None:
            return noise.gaussian(shape, plan.gradient_noise(step))
        features, intercept = plan.gradient_scales(step, c)
        return np.concatenate([noise.gaussian((shape[0] - 1, shape[1]), features),
                               noise.gaussian((1, shape[1]), intercept)])

    def noisy_releases(self, problem: Problem, plan: NewtonPlan, W: np.ndarray,
                       noise: NoiseSource, step: int, c: float | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """One iteration's release: the noisy mean gradient and noisy mean Hessian at ``W``.

        The only access to the data. Draws the gradient's noise (:meth:`draw_gradient_noise`),
        then ``N(0, sigma_hessian^2)`` of shape ``(D (D + 1) / 2,)`` (``svec`` order).

        <<release_at_parameters>>
        step : int
            The iteration (0-based; the first one's gradient noise differs).
        c : float or None, default=None
            The effective intercept feature in force (None: isotropic noise).

        Returns
        -------
        gradient : ndarray of shape (n_params, n_outputs)
            ``mean_i clip_C(grad f(W; z_i))`` plus its noise (no regulariser).
        hessian : ndarray of shape (D, D)
            ``mean_i h_i kron x'_i x'_i^T`` plus the symmetric noise (no regulariser).
        """
        n = problem.spec.n_samples
        dim = W.size
        grad, hess = gradient_and_hessian_sums(problem, W, plan.clip_norm)
        grad = grad / n + self.draw_gradient_noise(plan, noise, step, c, W.shape)
        unit = noise.gaussian((dim * (dim + 1) // 2,), plan.sigma_hessian)
        hess = hess / n + symmetric_noise(unit, dim)
        return grad, hess

    def noisy_gradient(self, problem: Problem, plan: NewtonPlan, W: np.ndarray,
                       noise: NoiseSource, step: int, c: float | None = None) -> np.ndarray:
        """The release of an iteration without a Hessian: the noisy mean gradient at ``W``.

        Draws the gradient's noise (:meth:`draw_gradient_noise`).

        <<release_at_parameters>>
        step : int
            The iteration (0-based).
        c : float or None, default=None
            The effective intercept feature in force (None: isotropic noise).

        Returns
        -------
        ndarray of shape (n_params, n_outputs)
            ``mean_i clip_C(grad f(W; z_i))`` plus its noise (no regulariser).
        """
        passes = plan.n_iter - plan.n_hessian
        return (problem.clipped_gradient(W, plan.clip_norm, passes=passes)
                + self.draw_gradient_noise(plan, noise, step, c, W.shape))

    def floored_eigh(self, hess: np.ndarray, plan: NewtonPlan, spec: ProblemSpec
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Eigendecomposition of ``A = hess + alpha I_pen`` with floored eigenvalues.

        ``A`` is symmetrised and its eigenvalues floored at ``plan.hessian_floor``
        (post-processing of a released Hessian).

        Parameters
        ----------
        hess : ndarray of shape (D, D)
            The noisy mean Hessian (without the regulariser).
        plan : NewtonPlan
            The plan (the floor).
        spec : ProblemSpec
            The public problem (``alpha``, penalised rows).

        Returns
        -------
        values : ndarray of shape (D,)
            The floored eigenvalues, ascending.
        vectors : ndarray of shape (D, D)
            The eigenvectors (columns).
        """
        A = 0.5 * (hess + hess.T)
        pen = np.arange(spec.n_penalized * spec.n_outputs)  # the penalised rows come first
        A[pen, pen] += spec.alpha
        values, vectors = np.linalg.eigh(A)
        return np.maximum(values, plan.hessian_floor), vectors

    def newton_step(self, W: np.ndarray, grad: np.ndarray, hess: np.ndarray,
                    plan: NewtonPlan, spec: ProblemSpec,
                    eig: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> tuple[np.ndarray, bool]:
        """The damped Newton step from the releases (post-processing only).

        Parameters
        ----------
        W : ndarray of shape (n_params, n_outputs)
            The current point.
        grad : ndarray of shape (n_params, n_outputs)
            The noisy mean gradient (without the regulariser).
        hess : ndarray of shape (D, D)
            The noisy mean Hessian (without the regulariser).
        plan : NewtonPlan
            The plan (floor, trust radius, row bound).
        spec : ProblemSpec
            The public problem (``alpha``, penalised rows, constraint).
        eig : tuple of ndarray or None, default=None
            :meth:`floored_eigh` of ``hess`` when already computed (a reused Hessian).

        Returns
        -------
        W_next : ndarray of shape (n_params, n_outputs)
            ``w + eta (u - w)``, ``u`` the Newton point over the constraint.
        damped : bool
            Whether ``eta < 1`` (the trust radius cut the step).
        """
        p = spec.n_penalized
        g = grad.copy()
        g[:p] += spec.alpha * W[:p]
        values, vectors = self.floored_eigh(hess, plan, spec) if eig is None else eig
        if isinstance(spec.constraint, Unconstrained):
            step = (vectors @ ((vectors.T @ g.ravel()) / values)).reshape(W.shape)
        else:
            A_floor = (vectors * values) @ vectors.T
            step = W - self._constrained_point(W, g, A_floor, float(values[-1]), spec)
        size = plan.row_bound * float(np.linalg.norm(step))
        damped = size > plan.max_score_step
        eta = plan.max_score_step / size if damped else 1.0
        W_next = W - eta * step
        if not isinstance(spec.constraint, Unconstrained):
            # A convex combination of feasible points; projected against rounding only.
            W_next[:p] = spec.constraint.project(W_next[:p])
        return W_next, bool(damped)

    def _constrained_point(self, W: np.ndarray, g: np.ndarray, A: np.ndarray,
                           lipschitz: float, spec: ProblemSpec) -> np.ndarray:
        """FISTA with adaptive restart on ``<g, u - W> + (u - W)^T A (u - W) / 2`` over
        the constraint (the penalised rows), from ``W``."""
        p, shape = spec.n_penalized, W.shape
        project = spec.constraint.project

        def proj(u: np.ndarray) -> np.ndarray:
            out = u.copy()
            out[:p] = project(u[:p])
            return out

        def model_gradient(u: np.ndarray) -> np.ndarray:
            return g + (A @ (u - W).ravel()).reshape(shape)

        step = 1.0 / lipschitz
        u = proj(W)
        y, t = u.copy(), 1.0
        scale = max(float(np.linalg.norm(g)), 1e-300)
        for _ in range(int(self.max_inner)):
            u_next = proj(y - step * model_gradient(y))
            mapping = float(np.linalg.norm(u_next - y)) / step
            t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            if float(np.sum((u_next - u) * (y - u_next))) > 0:  # restart on overshoot
                y, t = u_next.copy(), 1.0
            else:
                y, t = u_next + ((t - 1.0) / t_next) * (u_next - u), t_next
            u = u_next
            if mapping <= _INNER_TOL * scale:
                break
        return u
