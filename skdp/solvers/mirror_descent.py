"""Noisy stochastic mirror descent (Asi, Feldman, Koren & Talwar 2021, Algorithms 1 and 5).

Also the shared pieces of the mirror-descent family: :func:`mirror_step` (a thin name for
the constraint's own :meth:`~skdp.geometry.Constraint.mirror_step`), the phase ledger and its
calibration (:func:`md_event`, :func:`calibrate_md_phase`) and the vectorised noisy loop
(:func:`run_noisy_md`), imported by :mod:`skdp.solvers.localized_mirror_descent`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from scipy.special import gammaln

from skdp._params import COUNT, OPTIONAL_COUNT, OPTIONAL_POSITIVE, POSITIVE, store_params
from skdp._sklearn_compat import StrOptions
from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import Constraint, MirrorGeometry, MirrorMap
from skdp.privacy.accounting import (
    add_remove_budget,
    calibrate_noise_multiplier,
    check_sensitivity,
    epsilon_spent,
    subsampled_gaussian_event,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec
from skdp.solvers._capabilities import LOSS_NAMES, Capabilities
from skdp.solvers._problem import clip_unless_lossless
from skdp.solvers._sampling import BatchSampling

__all__ = [
    "MirrorDescentPlan",
    "MDPhase",
    "NoisyMirrorDescent",
    "batch_gradient",
    "batch_gradient_fn",
    "calibrate_md_phase",
    "md_event",
    "md_gradient_clip",
    "mirror_step",
    "run_noisy_md",
]

SCHEDULES = ("auto", "convex", "strongly_convex")
ITERATES = ("average", "last")
#: Default cap on the number of noisy steps of one run of Algorithm 1: the paper's
#: ``T = n^2 / b^2`` is met by enlarging ``b`` (docs/algorithms/mirror_descent.md).
MAX_AUTO_STEPS = 1000


# ---------------------------------------------------------------------------------------
# The exact mirror step and the geometry constants (owned by the constraint sets)
# ---------------------------------------------------------------------------------------
def mirror_step(
    constraint: Constraint, mirror_map: MirrorMap, x: np.ndarray, g: np.ndarray, eta: float
) -> np.ndarray:
    """One exact constrained mirror step: ``constraint.mirror_step(mirror_map, x, g, eta)``.

    ``x_+ = argmin_{x' in C} <g, x'> + D_w(x', x) / eta``; see
    :meth:`skdp.geometry.Constraint.mirror_step` for the supported pairs and their
    derivations. Raises :class:`IncompatibleSolverError` for a pair of map and set
    without an exact step.
    """
    return constraint.mirror_step(mirror_map, x, g, eta)


def noise_dual_moment(sigma: float, dim: int, q: float) -> float:
    """Upper bound on ``E ||zeta||_q^2`` for ``zeta ~ N(0, sigma^2 I_dim)``.

    ``q = 2``: ``dim sigma^2`` exactly. ``q = inf``: ``2 sigma^2 ln(2 dim)`` (the maximum
    of ``2 dim`` centred Gaussians). Finite ``q``: Jensen,
    ``E ||zeta||_q^2 <= (dim E|N|^q)^(2/q) sigma^2`` with
    ``E|N|^q = 2^(q/2) Gamma((q+1)/2) / sqrt(pi)``.
    """
    if sigma == 0:
        return 0.0
    if q == 2.0:
        return dim * sigma**2
    if q == math.inf:
        return 2.0 * sigma**2 * math.log(2.0 * dim)
    log_moment = 0.5 * q * math.log(2.0) + gammaln(0.5 * (q + 1.0)) - 0.5 * math.log(math.pi)
    return sigma**2 * math.exp((2.0 / q) * (math.log(dim) + log_moment))


def dual_gradient_bound(spec: ProblemSpec, clip: float, geometry: MirrorGeometry) -> float:
    """Public bound on the dual norm of one clipped gradient plus the L2 term.

    For ``q >= 2``, ``||v||_q <= ||v||_2 <= C``; the loss bound ``gradient_bound_in(q)``
    may be tighter. The L2 term ``alpha w`` adds ``alpha sup ||w||_q <= alpha R``.
    """
    q = geometry.dual_ord
    bound = min(clip, spec.gradient_bound_in(q)) if q >= 2 else clip
    if spec.alpha > 0:
        bound += spec.alpha * geometry.radius
    return float(bound)


def md_gradient_clip(spec: ProblemSpec, clip_norm: float | None, name: str) -> float:
    """Per-example l2 clip ``C = min(clip_norm, sqrt(d) L_inf, L_2)``.

    The recipe (privacy-calibration.md 4.1) clips in l2 at ``L sqrt(d)``, ``L`` the
    l-inf gradient bound (``||v||_2 <= sqrt(d) ||v||_inf``); the public l2 bound
    ``L_2`` may be tighter. Either default never binds on a real gradient.
    """
    bound = min(math.sqrt(spec.dimension) * spec.gradient_bound_in(math.inf),
                spec.gradient_bound_in(2.0))
    if clip_norm is None and not math.isfinite(bound):
        raise IncompatibleSolverError(
            f"the gradients of {type(spec.loss).__name__} are unbounded on this problem, so "
            f"solver {name!r} needs a public clipping norm: set the solver's clip_norm, or "
            "a bounded constraint with fit_intercept=False."
        )
    return bound if clip_norm is None else min(float(clip_norm), bound)


# ---------------------------------------------------------------------------------------
# Ledger and calibration of one run of Algorithm 1
# ---------------------------------------------------------------------------------------
def md_event(
    z: float, n: int, b: int, n_iter: int, sampling: str, accounting: str, relation: str
) -> dpe.DpEvent:
    """``n_iter`` Gaussian releases on batches of ``b`` of ``n`` records, multiplier ``z``.

    ``z`` is relative to the batch query's sensitivity (see :func:`calibrate_md_phase`).
    """
    inner = subsampled_gaussian_event(z, 1.0, n_samples=n, batch_size=b, sampling=sampling,
                                      accounting=accounting, relation=relation)
    return dpe.SelfComposedDpEvent(inner, n_iter)


@dataclass(frozen=True)
class MDPhase:
    """One calibrated run of Algorithm 1 on ``n`` records (all public)."""

    n: int
    batch_size: int
    n_iter: int
    noise_multiplier: float
    sensitivity: float
    sigma: float
    event: dpe.DpEvent
    epsilon: float


def calibrate_md_phase(
    n: int,
    batch_size: int,
    n_iter: int,
    clip: float,
    budget: Budget,
    *,
    sampling: str,
    accounting: str,
    relation: str,
) -> MDPhase:
    """Calibrate the noise of ``n_iter`` noisy batch-mean gradients on ``n`` records.

    Sensitivity of the batch mean ``(1/b) sum_{i in B} clip_C(grad_i)`` (public
    denominator ``b``): replacing one record moves one summand, of norm ``<= C``, to
    another, so ``2C/b`` (replace-one; uniform batches of exactly ``b`` without
    replacement, ``SampledWithoutReplacementDpEvent``, RDP accounting). Poisson batches
    (rate ``b/n``) are accounted under add/remove, where adding or removing one record
    moves the sum by ``C``: sensitivity ``C/b``, at the add/remove budget whose group
    privacy image is ``budget`` (the ledger is marked ``via_add_remove``).
    """
    poisson = sampling == "poisson"
    if poisson:
        rel, target = "add_remove", add_remove_budget(budget) if budget.is_private else budget
        sensitivity = clip / batch_size
    else:
        rel, target = relation, budget
        sensitivity = 2.0 * clip / batch_size
    check_sensitivity(sensitivity, "batch-mean gradient sensitivity")
    args = (n, batch_size, n_iter, sampling, accounting, rel)
    z = calibrate_noise_multiplier(md_event, args, target, accounting=accounting, relation=rel)
    if budget.is_private:
        event = md_event(z, *args)
        spent = epsilon_spent(event, target.delta, accounting=accounting, relation=rel)
    else:
        event, spent = dpe.NonPrivateDpEvent(), math.inf
    return MDPhase(n, batch_size, n_iter, z, sensitivity, z * sensitivity, event, spent)


# ---------------------------------------------------------------------------------------
# The vectorised noisy loop (shared by both solvers)
# ---------------------------------------------------------------------------------------
#: Elements of one block of pre-drawn step noise (steps x parameters), about 2 MB.
NOISE_BLOCK_ELEMENTS = 1 << 18

#: Indices in one call of batches (about 512 kB); see :func:`batch_block`.
BATCH_BLOCK_ELEMENTS = 1 << 16


def noise_block(step_elements: int) -> int:
    """Steps whose noise is drawn in one call: :data:`NOISE_BLOCK_ELEMENTS` worth of
    ``step_elements``-sized draws (at least one). Public: a function of the shape only."""
    return max(1, NOISE_BLOCK_ELEMENTS // max(step_elements, 1))


def batch_block(batch_size: int, X_elements: int) -> int:
    """Steps whose batches are drawn in one call: at most :data:`BATCH_BLOCK_ELEMENTS`
    indices and ``X_elements / 32`` (the sampler holds a few arrays of that size, so the
    draw stays a small fraction of ``X``). Public: a function of the shapes only."""
    return max(1, min(BATCH_BLOCK_ELEMENTS, X_elements // 32) // max(batch_size, 1))



def batch_gradient(
    problem: Problem, W: np.ndarray, idx: np.ndarray, clip: float, batch_size: int,
    skip_clip: bool = False,
) -> np.ndarray:
    """``(1/b) sum_{i in idx} clip_C(grad f(W; z_i))``: the released query, before noise.

    Per-example GLM gradients ``x_i phi'_i^T`` are clipped in l2 through their
    coefficients (no ``b x d`` array; CSR rows stay sparse). The denominator is the public
    ``b`` (not ``len(idx)``, which is random under Poisson sampling): replacing one record
    moves one clipped summand, so the replace-one sensitivity is ``2C/b`` (add/remove:
    ``C/b``). Dense rows: the clipping factor ``s_i`` and intercept ``c`` of the augmented
    rows ``x'_i = [s_i x_i, c]`` are applied to the ``b x K`` scores and coefficients, as
    :meth:`Problem.scores` and :meth:`Problem.gradient_sum` do, without their per-call
    checks. ``skip_clip`` (:meth:`Problem.clip_cannot_bind`, decided once by the caller)
    skips a clip that public facts prove lossless; the result is the same.
    """
    loss = problem.spec.loss
    norms = problem.norms[idx]
    if sp.issparse(problem.X):
        rows = problem.rows(idx)
        with np.errstate(all="ignore"):
            D = clip_unless_lossless(
                loss.derivative(problem.scores(W, rows), problem.Y[idx]), norms, clip,
                skip_clip)
        G = problem.gradient_sum(D, rows)
        G *= 1.0 / batch_size
        return G
    d = problem.X.shape[1]
    rows = np.take(problem.X, idx, axis=0)  # a gather, faster than X[idx]
    scale = problem.row_scale[idx][:, None]
    scores = rows @ W[:d]
    scores *= scale
    if problem.intercept:
        scores += problem.intercept * W[d]
    with np.errstate(all="ignore"):
        D = clip_unless_lossless(loss.derivative(scores, problem.Y[idx]), norms, clip,
                                 skip_clip)
    D *= 1.0 / batch_size
    G = np.empty_like(W, dtype=float)
    G[:d] = rows.T @ (D * scale)
    if problem.intercept:
        G[d] = problem.intercept * D.sum(axis=0)
    return G


def batch_gradient_fn(
    problem: Problem, pool: np.ndarray | None, clip: float, batch_size: int
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``grad(W, local)``: :func:`batch_gradient` on the records ``pool[local]`` (``local``
    itself when ``pool`` is ``None``), with the per-run constants resolved once.

    Dense float64 rows: the per-record factors (row scale, augmented norm, labels) are
    packed into one ``(n_pool, 2 + K)`` array before the loop, so that a batch reads them
    in one gather of ``local`` (one cache line per record instead of three scattered
    ones); the arithmetic is :func:`batch_gradient`'s, so the result is the same array
    (the derivative overwrites the scratch scores, as ``derivative_inplace`` does bit for
    bit, and a pool none of whose rows was clipped skips its factors of 1.0). Otherwise
    (CSR, other label types): :func:`batch_gradient`. Public shapes only; the released
    query is unchanged. Floating-point warnings are the caller's (a solver's run has them
    off: :meth:`~skdp.solvers.BaseDPSolver.solve`).
    """
    X, Y = problem.X, problem.Y
    dense = (not sp.issparse(X) and isinstance(X, np.ndarray) and Y.ndim == 2
             and Y.dtype == np.float64 and problem.norms.dtype == np.float64
             and problem.row_scale.dtype == np.float64)
    # Public facts (Problem.clip_cannot_bind) may prove the clip lossless: then it is
    # skipped unless a derivative is not finite (the result is the same).
    skip = problem.clip_cannot_bind(clip)
    if not dense:
        if pool is None:
            return lambda W, local: batch_gradient(problem, W, local, clip, batch_size, skip)
        return lambda W, local: batch_gradient(problem, W, pool[local], clip, batch_size,
                                               skip)
    loss = problem.spec.loss
    d, k = X.shape[1], Y.shape[1]
    c = problem.intercept
    sel = slice(None) if pool is None else pool
    aux = np.empty((problem.norms.shape[0] if pool is None else pool.shape[0], 2 + k))
    aux[:, 0] = problem.row_scale[sel]
    aux[:, 1] = problem.norms[sel]
    aux[:, 2:] = Y[sel]
    inv_b = 1.0 / batch_size
    # No row of the pool clipped: the factors are all 1 and their products are skipped
    # (multiplying by 1.0 is exact: the same result).
    unit = bool(np.all(aux[:, 0] == 1.0))

    def grad(W: np.ndarray, local: np.ndarray) -> np.ndarray:
        idx = local if pool is None else pool[local]
        rows = np.take(X, idx, axis=0)
        a = np.take(aux, local, axis=0)
        scale = a[:, 0:1]
        scores = rows @ W[:d]
        if not unit:
            scores *= scale
        if c:
            scores += c * W[d]
        # The scores are scratch: the in-place derivative is derivative's, bit for bit.
        D = loss.derivative_inplace(scores, a[:, 2:] if k == 1
                                    else np.ascontiguousarray(a[:, 2:]))
        D = clip_unless_lossless(D, a[:, 1], clip, skip)
        D *= inv_b
        G = np.empty_like(W, dtype=float)
        G[:d] = rows.T @ (D if unit else D * scale)
        if c:
            G[d] = c * D.sum(axis=0)
        return G

    return grad


def run_noisy_md(
    problem: Problem,
    pool: np.ndarray | None,
    W0: np.ndarray,
    phase: MDPhase,
    clip: float,
    step_sizes: np.ndarray,
    weights: np.ndarray | None,
    step: Callable[[np.ndarray, np.ndarray, float], np.ndarray],
    extra_gradient: Callable[[np.ndarray], np.ndarray] | None,
    noise: NoiseSource,
    sampling: str,
) -> np.ndarray:
    """Algorithm 1's loop on the records ``pool`` (all records when ``None``).

    Each step draws a batch (uniform ``b``-subset of the pool without replacement, or
    Poisson at rate ``b/n``), releases ``g = (1/b) sum_{i in B} clip_C(grad f(W; z_i)) +
    N(0, sigma^2 I)`` and adds the data-independent ``extra_gradient(W)`` (L2 term,
    localisation regulariser: post-processing). The constrained rows take ``step(W_pen,
    G_pen, eta)``, the intercept row (if any) a Euclidean step. Returns the
    ``weights``-average of the iterates ``W_1..W_T`` (the last iterate if ``None``).

    The Gaussian noise of up to :data:`NOISE_BLOCK_ELEMENTS` worth of steps is drawn in
    one call before those steps' batches (i.i.d. ``N(0, sigma^2)``, independent of the
    data: the same release, drawn earlier), and the batches of up to
    :func:`batch_block` of those steps in one call
    (:meth:`NoiseSource.batches_without_replacement`, :meth:`NoiseSource.poisson_batches`:
    each batch with the law of one per-step draw). The batch query is
    :func:`batch_gradient_fn`'s (the same arithmetic as :func:`batch_gradient`).
    """
    p = problem.spec.n_penalized
    n, b, sigma = phase.n, phase.batch_size, phase.sigma
    W = np.array(W0, dtype=float, copy=True)
    total = np.zeros_like(W) if weights is not None else None
    term = np.empty_like(W)
    block = noise_block(W.size)
    batches = batch_block(b, problem.spec.n_samples * problem.spec.n_params)
    grad = batch_gradient_fn(problem, pool, clip, b)
    free = p < W.shape[0]
    poisson = sampling == "poisson"
    for first in range(0, phase.n_iter, block):
        steps = min(block, phase.n_iter - first)
        draws = noise.gaussian((steps, *W.shape), sigma)
        locals_: Sequence[np.ndarray] = ()
        for k in range(first, first + steps):
            j = (k - first) % batches
            if j == 0:
                # The batches of the next steps of the block, in one call before those
                # steps (each with the law of one per-step draw; data-independent).
                count = min(batches, first + steps - k)
                locals_ = (noise.poisson_batches(n, b / n, count) if poisson
                           else noise.batches_without_replacement(n, b, count))
            G = grad(W, locals_[j])
            G += draws[k - first]
            if extra_gradient is not None:
                G += extra_gradient(W)
            eta = float(step_sizes[k])
            W_new = np.empty_like(W)
            W_new[:p] = step(W[:p], G[:p], eta)
            if free:
                W_new[p:] = W[p:] - eta * G[p:]
            W = W_new
            if total is not None:
                np.multiply(weights[k], W, out=term)
                total += term
        problem.advance(steps)
    return W if total is None else total


# ---------------------------------------------------------------------------------------
# Algorithm 1 / 5 as a solver
# ---------------------------------------------------------------------------------------
def paper_batch_size(n: int, dim: int, epsilon: float) -> float:
    """``max(sqrt(n / ln d), sqrt(d / epsilon))`` (Algorithm 2, line 4; ``ln d >= 1``)."""
    first = math.sqrt(n / max(math.log(dim), 1.0))
    second = math.sqrt(dim / epsilon) if math.isfinite(epsilon) else 0.0
    return max(first, second, 1.0)


def capped_schedule(n: int, b_paper: float, max_iter: int) -> tuple[int, int]:
    """``(b, T)`` with ``T = ceil(n^2 / b^2) <= max_iter``: ``b`` enlarged where needed."""
    b = max(math.ceil(b_paper), math.ceil(n / math.sqrt(max_iter)))
    b = int(min(max(b, 1), n))
    t = int(min(max(math.ceil(n * n / (b * b)), 1), max_iter))
    return b, t


@dataclass(frozen=True, kw_only=True)
class MirrorDescentPlan(Plan):
    """The public constants of one run of :class:`NoisyMirrorDescent`.

    Attributes
    ----------
    batch_size : int
        ``b``: records per step (the expected batch size under Poisson sampling).
    noise_multiplier : float
        ``z``: noise standard deviation in units of the batch mean's sensitivity.
    sigma : float
        Standard deviation of the Gaussian noise added to each coordinate of the batch
        mean gradient, ``z * sensitivity``.
    sensitivity : float
        l2 sensitivity of the batch mean: ``2C/b`` (replace-one) or ``C/b`` (Poisson,
        add/remove).
    clip_norm : float
        ``C``: per-example l2 gradient clip.
    schedule : {"convex", "strongly_convex"}
        The resolved step schedule.
    step_size : float
        The first step ``eta_1`` (constant for the convex schedule).
    map_p : float
        Exponent of the p-norm mirror map (2 for the Euclidean map and entropy).
    """

    batch_size: int
    noise_multiplier: float
    sigma: float
    sensitivity: float
    clip_norm: float
    schedule: str
    step_size: float
    map_p: float


class NoisyMirrorDescent(BatchSampling, BaseDPSolver):
    """Noisy stochastic mirror descent (Asi, Feldman, Koren & Talwar 2021, Alg. 1 and 5).

    Each of ``T`` steps releases ``g_k = (1/b) sum_{i in B_k} clip_C(grad f(x_k; z_i)) +
    N(0, sigma^2 I_d)`` on a batch ``B_k`` and takes the exact constrained mirror step
    ``x_{k+1} = argmin_{x in X} <g_k + alpha x_k, x> + D_w(x, x_k) / eta_k``
    (:meth:`skdp.geometry.MirrorGeometry.mirror_step`) with the constraint's map: the
    p-norm map with ``p = 1 + 1/ln d`` for the l1 ball (Algorithm 1), with the ball's own
    ``p`` for an l_p ball, ``1 < p <= 2`` (Algorithm 5), the Euclidean map for the l2
    ball, negative entropy for the simplex. Output: the average of ``x_1..x_T``, or with
    the strongly convex schedule the weighted average ``2/(T(T+1)) sum_k k x_k``.

    Parameters
    ----------
    n_iter : int, optional
        Number of steps ``T``. Default: the paper's ``n^2 / b^2``, capped at ``max_iter``
        by enlarging ``b``.
    batch_size : int, optional
        Batch size ``b``. Default: the paper's ``max(sqrt(n / ln d), sqrt(d / eps))``,
        enlarged to ``ceil(n / sqrt(max_iter))`` when ``T`` would exceed ``max_iter``.
    max_iter : int, default=1000
        Cap of the automatic ``T``.
    step_size : float, optional
        A constant step ``eta``. Default: from the schedule.
    step_scale : float, default=1.0
        Multiplier of the automatic convex step (ignored with ``step_size`` and by the
        strongly convex schedule). The theorem's step uses worst-case constants; a public
        scale of 10-100 often helps (tune it on public data: choosing it on the private
        data leaks).
    schedule : {"auto", "convex", "strongly_convex"}, default="auto"
        ``"convex"``: constant ``eta`` of Theorem 3; ``"strongly_convex"``:
        ``eta_k = 2 / (alpha (k + 1))`` and the weighted average (Theorem 3, second part;
        needs ``alpha > 0`` and the Euclidean map, the only map relative to which the L2
        term is strongly convex). ``"auto"``: strongly convex when that holds and every
        coordinate is penalised, else convex.
    iterate : {"average", "last"}, default="average"
        Output the (weighted) average, or the last iterate.
    clip_norm : float, optional
        Per-example l2 clip ``C``. Default: ``min(sqrt(d) L_inf, L_2)`` from the public
        bounds (the recipe's ``L sqrt(d)``, or the l2 bound if tighter): lossless.
    sampling : {"without_replacement", "poisson"}, default="without_replacement"
        Uniform batches of exactly ``b`` records (RDP accounting), or Poisson sampling at
        rate ``b/n`` (add/remove, PLD by default).

    Notes
    -----
    **Privacy guarantee.** Replace-one, ``(epsilon, delta)``-DP. Per-example gradients are
    clipped in l2 to ``C`` (a per-record map), so the batch mean with the public
    denominator ``b`` has replace-one sensitivity ``2C/b``. Batches are uniform subsets of
    exactly ``b`` records drawn without replacement, so the ledger is
    ``SelfComposed(SampledWithoutReplacement(n, b, Gaussian(z)), T)`` with
    ``sigma = z 2C/b``, read by RDP accounting (Wang, Balle & Kasiviswanathan 2019,
    Thm. 27), and ``z`` is solved exactly by ``calibrate_noise_multiplier``. With
    ``sampling="poisson"`` the ledger ``SelfComposed(PoissonSampled(b/n, Gaussian), T)``
    with sensitivity ``C/b`` is accounted under add/remove at ``(e, delta/(1+e^e))``,
    ``e = min(eps/2, 5)``, which gives replace-one ``(eps, delta)`` by group privacy. The
    mirror step, the L2 term, the projection and the averaging are post-processing; ``T``,
    ``b`` and the step sizes come from public quantities only. The paper samples with
    replacement and calibrates with a loose constant; both are corrected (see the page).

    Assumptions: a GLM loss with public gradient bounds (or a public ``clip_norm``); the
    default convex step needs a bounded constraint. Reference: Asi, Feldman, Koren &
    Talwar, "Private stochastic convex optimization: optimal rates in l1 geometry", ICML
    2021, Algorithms 1 and 5, Theorems 3 and 12. Schedules, step sizes, corrections to the
    paper and tuning: ``docs/algorithms/mirror_descent.md``.
    """

    name = "mirror_descent"
    capabilities = Capabilities(
        algorithm="noisy stochastic mirror descent, Asi-Feldman-Koren-Talwar 2021 Algs. 1, 5",
        losses=LOSS_NAMES,
        constraints=("none", "l2", "l1", "lp", "simplex"),
        inexact_at_inf=("a public count of stochastic mirror steps (averaged), an "
                        "O(1/sqrt(T)) method even without noise (1.3e-2 excess risk on a "
                        "2000 x 5 logistic problem in an l1 ball of radius 1)"),
    )
    _parameter_constraints: ClassVar[dict] = {
        "n_iter": OPTIONAL_COUNT,
        "batch_size": OPTIONAL_COUNT,
        "max_iter": COUNT,
        "step_size": OPTIONAL_POSITIVE,
        "step_scale": POSITIVE,
        "schedule": [StrOptions(set(SCHEDULES))],
        "iterate": [StrOptions(set(ITERATES))],
        "clip_norm": OPTIONAL_POSITIVE,
        **BatchSampling._parameter_constraints,
    }

    def __init__(
        self,
        n_iter=None,
        batch_size=None,
        max_iter=MAX_AUTO_STEPS,
        step_size=None,
        step_scale=1.0,
        schedule="auto",
        iterate="average",
        clip_norm=None,
        sampling="without_replacement",
    ):
        store_params(self, locals())

    # -- checks ----------------------------------------------------------------------------
    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """The sampling and generic checks, then the step schedule's conditions.

        <<check_sections>>
            If a sampling or generic check fails, the strongly convex schedule meets
            ``alpha = 0`` or a non-Euclidean geometry, or the default step size meets an
            unbounded constraint.
        """
        super().check_compatible(spec, accounting, relation)  # sampling, then declarations
        geometry = spec.constraint.mirror_geometry(spec.n_penalized * spec.n_outputs)
        schedule = self._schedule(spec, geometry)
        if schedule == "strongly_convex":
            if spec.alpha <= 0:
                raise IncompatibleSolverError(
                    f"solver {self.name!r} with schedule='strongly_convex' needs alpha > 0.")
            if geometry.kind != "euclidean":
                raise IncompatibleSolverError(
                    f"solver {self.name!r}: the L2 term is not strongly convex relative to "
                    f"{type(geometry.mirror_map).__name__}; use schedule='convex' (or an "
                    "l2 constraint).")
        elif self.step_size is None and not math.isfinite(geometry.bregman_radius):
            raise IncompatibleSolverError(
                f"solver {self.name!r} needs a bounded constraint for its default step "
                "size; set constraint='l1'/'l2'/'lp' with a radius, alpha > 0, or the "
                "solver's step_size."
            )

    def gradient_clip(self, spec: ProblemSpec) -> float:
        """``min(clip_norm, sqrt(d) L_inf, L_2)``: the recipe's ``L sqrt(d)`` or tighter.

        <<spec_parameters>>

        Returns
        -------
        float
            The public l2 clip of every per-example gradient (see
            :func:`md_gradient_clip`).
        """
        return md_gradient_clip(spec, self.clip_norm, self.name)

    def _schedule(self, spec: ProblemSpec, geometry: MirrorGeometry) -> str:
        if self.schedule != "auto":
            return self.schedule
        euclid = geometry.kind == "euclidean"
        full = spec.n_penalized == spec.n_params
        return "strongly_convex" if (spec.alpha > 0 and euclid and full
                                     and self.step_size is None) else "convex"

    # -- plan ------------------------------------------------------------------------------
    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str,
             relation: str) -> MirrorDescentPlan:
        """Fix the batch size, the step count, the step schedule and the noise.

        <<plan_parameters>>

        Returns
        -------
        MirrorDescentPlan
            ``T`` noisy mini-batch steps (the paper's ``T = n^2 / b^2``, met by enlarging
            ``b`` under the cap), their Gaussian noise and the first step size.
        """
        n = spec.n_samples
        dim = spec.n_penalized * spec.n_outputs
        geometry = spec.constraint.mirror_geometry(dim)
        clip = self.gradient_clip(spec)
        if self.batch_size is not None:
            b = int(min(self.batch_size, n))
            t = (int(self.n_iter) if self.n_iter is not None
                 else int(min(max(math.ceil(n * n / (b * b)), 1), self.max_iter)))
        else:
            b, t = capped_schedule(n, paper_batch_size(n, max(dim, 1), budget.epsilon),
                                   self.max_iter if self.n_iter is None else 10**12)
            if self.n_iter is not None:
                t = int(self.n_iter)
        phase = calibrate_md_phase(n, b, t, clip, budget, sampling=self.sampling,
                                   accounting=accounting, relation=relation)
        schedule = self._schedule(spec, geometry)
        steps = self._step_sizes(spec, geometry, schedule, clip, phase)
        return MirrorDescentPlan(
            n_iter=t,
            event=phase.event,
            accounting=accounting,
            relation=relation,
            via_add_remove=self.sampling == "poisson",
            batch_size=b,
            noise_multiplier=phase.noise_multiplier,
            sigma=phase.sigma,
            sensitivity=phase.sensitivity,
            clip_norm=clip,
            schedule=schedule,
            step_size=float(steps[0]),
            map_p=geometry.map_p,
        )

    def _step_sizes(self, spec: ProblemSpec, geometry: MirrorGeometry, schedule: str,
                    clip: float, phase: MDPhase) -> np.ndarray:
        t = phase.n_iter
        if self.step_size is not None:
            return np.full(t, float(self.step_size))
        if schedule == "strongly_convex":
            # Lemma 3.2: eta_k = 2 / (lambda (k + 1)), k = 1..T, lambda = alpha (Euclidean).
            return 2.0 / (spec.alpha * (np.arange(1, t + 1) + 1.0))
        # Lemma 3.1: eta = sqrt(2 mu H / (T G^2)), G^2 = L_*^2 + E||zeta||_*^2.
        h = geometry.bregman_radius
        if spec.n_penalized < spec.n_params:
            r2 = spec.constraint.diameter(2.0, dim=max(spec.n_penalized * spec.n_outputs, 1))
            h += 0.125 * r2 * r2  # heuristic reach of the free intercept: (R_2)^2 / 2
        g2 = dual_gradient_bound(spec, clip, geometry) ** 2 + noise_dual_moment(
            phase.sigma, spec.dimension, geometry.dual_ord)
        return np.full(t, float(self.step_scale) * math.sqrt(2.0 * geometry.modulus * h
                                                             / (t * g2)))

    # -- run -------------------------------------------------------------------------------
    def _run(self, problem: Problem, plan: MirrorDescentPlan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        geometry = spec.constraint.mirror_geometry(spec.n_penalized * spec.n_outputs)
        phase = MDPhase(spec.n_samples, plan.batch_size, plan.n_iter, plan.noise_multiplier,
                        plan.sensitivity, plan.sigma, plan.event, math.nan)
        steps = self._step_sizes(spec, geometry, plan.schedule, plan.clip_norm, phase)
        t = plan.n_iter
        if self.iterate == "last":
            weights = None
        elif plan.schedule == "strongly_convex":
            weights = 2.0 * np.arange(1, t + 1) / (t * (t + 1.0))
        else:
            weights = np.full(t, 1.0 / t)
        W0 = np.zeros((spec.n_params, spec.n_outputs))
        W0[: spec.n_penalized] = spec.constraint.feasible_point(
            (spec.n_penalized, spec.n_outputs))
        p, alpha = spec.n_penalized, spec.alpha

        def l2_term(W: np.ndarray) -> np.ndarray:
            out = np.zeros_like(W)
            out[:p] = alpha * W[:p]
            return out

        return run_noisy_md(problem, None, W0, phase, plan.clip_norm, steps, weights,
                            geometry.stepper(), l2_term if alpha > 0 else None, noise,
                            self.sampling)
