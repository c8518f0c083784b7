"""Objective perturbation for GLMs (Su, Zhao & Wang, Algorithm 5), exactly calibrated.

This module holds the one implementation of the objective-perturbation core that both
``"objective_perturbation"`` (this file) and ``"approx_objective_perturbation"``
(:mod:`skdp.solvers.approx_objective_perturbation`) run:

* the closed-form privacy profile ``delta(epsilon; sigma)`` of GLM objective perturbation
  (privacy-calibration.md, B7 / section 2.1), for replace-one and add/remove, and its
  calibration (``sigma`` by brentq);
* the choice of the regulariser ``Lambda`` (a public, epsilon-monotone rule);
* the pure epsilon-DP variant (``delta = 0``): K-norm noise over the product of balls
  that holds every neighbouring gradient difference (features and intercept apart), and
  ``epsilon = epsilon_B + epsilon_J`` (:func:`calibrate_pure_objective_perturbation`);
* the certified solve of the perturbed objective: a point ``theta_2`` with
  ``||theta_2 - theta_1|| <= r_max`` for the exact minimiser ``theta_1`` (B8), which the
  Gaussian step of approximate objective perturbation (section 2.2) turns into a release.

Notation (sum form, ``W`` of shape ``(p, K)``)::

    J(W) = sum_i phi(x_i^T W, y_i) + (1/2) sum_j Lambda_j ||W_j||^2 + <B, W>,
    B ~ N(0, sigma^2 I),   theta_1 = argmin J.

``|phi'|_2 <= c1``, ``0 <= phi'' <= c2`` (operator norm of the ``K x K`` Hessian in the
score), rows ``||x||_2 <= X``: ``L = c1 X``, ``beta = c2 X^2``, ``ell = L / sigma``,
``Lambda = min_j Lambda_j``, ``epsilon_J = K ln(1 + beta / Lambda)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from scipy import integrate
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import brentq, minimize
from scipy.special import expit, gammaincc, log_ndtr, ndtr, softmax

from skdp.exceptions import BudgetError, IncompatibleSolverError
from skdp.geometry import Unconstrained
from skdp.losses import LogisticLoss, MultinomialLogisticLoss, SmoothedHingeLoss
from skdp.privacy.accounting import (
    ApproxDpEvent,
    PureDpEvent,
    SingleRelease,
    analytic_gaussian_multiplier,
    single_release,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import (
    UNIT_ROUNDOFF,
    BaseDPSolver,
    Plan,
    Problem,
    ProblemSpec,
    _legacy_plan,
    james_stein_factor,
)
from skdp.solvers._capabilities import Capabilities
from skdp.solvers.output_perturbation import CertificateError

__all__ = [
    "ObjectivePerturbation",
    "ObjPertCalibration",
    "PureObjPertCalibration",
    "calibrate_objective_perturbation",
    "calibrate_pure_objective_perturbation",
    "certified_argmin",
    "objective_perturbation_delta",
    "objective_perturbation_delta_add_remove_closed_form",
    "gradient_difference_body",
    "privacy_loss_delta",
]

#: Losses whose second derivative the certified solver knows (Hessian-vector products);
#: a ``HuberLoss`` (bounded ``phi'``, ``phi'' <= 1``) is recognised too, see
#: :func:`supports_loss`.
SUPPORTED_LOSSES = (LogisticLoss, MultinomialLogisticLoss, SmoothedHingeLoss)
#: Default share of epsilon given to the Jacobian term ``epsilon_J`` ...
DEFAULT_JACOBIAN_SHARE = 0.1
#: ... capped at this value (beyond it a larger Lambda only adds bias; see ``plan``).
JACOBIAN_CAP = 1.0
#: Default cap on the noise displacement ``sigma sqrt(p K) / Lambda`` of the minimiser
#: (coefficient units; rows have norm <= data_norm).
DEFAULT_NOISE_RADIUS = 1.0
#: A certificate is accepted only below this fraction of ``r_max`` (float64 rounding of
#: the gradient can then never push the true distance above ``r_max``), as in
#: :mod:`skdp.solvers.output_perturbation`.
CERTIFICATE_MARGIN = 0.5
#: Newton uses the dense Hessian (one BLAS-3 pass, Cholesky) up to this many parameters
#: ``p K``, and Newton-CG with Hessian-vector products above.
DENSE_HESSIAN_MAX = 512
#: Relative quantisation of the calibrated ``sigma`` (rounded UP):
#: it makes the calibration exactly monotone in epsilon despite brentq's tolerance.
_SIGMA_GRID = 1e-9


# ---------------------------------------------------------------------------------------
# The privacy profile (B7)
# ---------------------------------------------------------------------------------------
def _log_tail(m: float, rank: int) -> float:
    """``ln P(chi_rank > m)`` (``rank = 1``: ``ln 2 Phi(-m)``)."""
    if rank == 1:
        return math.log(2.0) + float(log_ndtr(-m))
    tail = float(gammaincc(0.5 * rank, 0.5 * m * m))
    return math.log(tail) if tail > 0 else -math.inf


@lru_cache(maxsize=64)
def _unit_quantile(log_c: float, rank: int) -> float:
    """``m1`` with ``c P(chi_rank > m1) = 1`` (0 when ``c = 1``)."""
    if log_c == 0.0:
        return 0.0
    return brentq(lambda m: log_c + _log_tail(m, rank), 0.0, 50.0, xtol=1e-15)


def privacy_loss_delta(
    eps_tilde: float, ell: float, *, rank: int = 1, relation: str = "replace_one"
) -> float:
    """``delta`` of a privacy loss bounded by ``q ell^2 + s ell M`` at level ``eps_tilde``.

    The objective-perturbation privacy loss (the Jacobian part ``epsilon_J`` removed,
    ``eps_tilde = epsilon - epsilon_J``) is at most ``g(M) = q ell^2 + s ell M`` where

    * replace-one: ``q = 2``, ``s = 2``, ``M = max(Z_1, Z_2)`` with ``Z_j ~ chi_rank``
      (arbitrarily dependent), so ``P(M > m) <= min(1, 2 P(chi_rank > m))``;
    * add/remove: ``q = 1/2``, ``s = 1``, ``M ~ chi_rank``.

    ``delta(eps) <= E[(1 - exp(eps_tilde - g(M)))_+] = h(0) + int_0^inf h'(m) P(M > m) dm``
    with ``h(m) = (1 - exp(a - s ell m))_+``, ``a = eps_tilde - q ell^2`` (the function is
    non-decreasing, so a tail upper bound gives an upper bound). This is ONE quad call.
    The value is the expectation under the distribution with survival
    ``min(1, c P(chi > m))``, hence non-decreasing in ``ell`` and non-increasing in
    ``eps_tilde`` (what brentq needs).
    """
    if relation == "replace_one":
        q, s, c = 2.0, 2.0, 2.0
    elif relation == "add_remove":
        q, s, c = 0.5, 1.0, 1.0
    else:
        raise ValueError(f"relation must be 'replace_one' or 'add_remove', got {relation!r}.")
    if ell <= 0.0:
        return 0.0
    if not math.isfinite(ell):
        return 1.0
    a = eps_tilde - q * ell * ell
    slope = s * ell
    m0 = max(0.0, a / slope)  # h(m) = 0 for m < m0
    head = -math.expm1(a) if a < 0 else 0.0  # h(0)
    # min(1, c S(m)) = 1 below m1 (c S(m1) = 1), the tail above.
    log_c = math.log(c)
    m1 = _unit_quantile(log_c, rank)
    lo = max(m0, m1)
    # int_{m0}^{lo} slope e^{a - slope m} dm, closed form.
    flat = math.exp(a - slope * m0) - math.exp(a - slope * lo) if lo > m0 else 0.0

    def integrand(m: float) -> float:
        return slope * math.exp(a - slope * m + log_c + _log_tail(m, rank))

    # The integrand decays at least like exp(-m^2/2): integrating to lo + 40 loses
    # nothing representable; the peak sits at lo, so split there.
    upper = lo + 40.0
    tail, _ = integrate.quad(integrand, lo, upper, epsabs=0.0, epsrel=1e-11, limit=200,
                             points=[lo + 1.0, lo + 4.0])
    return float(min(1.0, head + flat + tail))


def objective_perturbation_delta(
    epsilon: float,
    sigma: float,
    *,
    lipschitz: float,
    smoothness: float,
    regularization: float,
    rank: int = 1,
    relation: str = "replace_one",
) -> float:
    """``delta(epsilon)`` of GLM objective perturbation (sum form), B7.

    Parameters
    ----------
    epsilon : float
    sigma : float
        Standard deviation of each entry of the linear noise ``B``.
    lipschitz : float
        ``L = c1 X``.
    smoothness : float
        ``beta = c2 X^2``.
    regularization : float
        ``Lambda``: the smallest eigenvalue of the regulariser (sum form).
    rank : int
        ``K``, the number of scores (the per-example Hessian has rank at most ``K``).
    relation : {"replace_one", "add_remove"}
    """
    eps_j = rank * math.log1p(smoothness / regularization)
    if sigma <= 0:
        return 1.0
    return privacy_loss_delta(epsilon - eps_j, lipschitz / sigma, rank=rank, relation=relation)


def objective_perturbation_delta_add_remove_closed_form(
    epsilon: float, sigma: float, *, lipschitz: float, smoothness: float, regularization: float
) -> float:
    """The recipe's closed form for add/remove and ``K = 1`` (tests only).

    ``a = eps_tilde - ell^2/2``: ``2 [Phi(-a/ell) - e^eps_tilde Phi(-a/ell - ell)]`` if
    ``a >= 0``, else ``1 - 2 e^eps_tilde Phi(-ell)``.
    """
    ell = lipschitz / sigma
    et = epsilon - math.log1p(smoothness / regularization)
    a = et - ell * ell / 2.0
    if a < 0:
        return 1.0 - 2.0 * math.exp(et) * float(ndtr(-ell))
    return 2.0 * (float(ndtr(-a / ell)) - math.exp(et) * float(ndtr(-a / ell - ell)))


def _calibrate_sigma(delta_of: Callable[[float], float], delta: float) -> float:
    """Smallest ``sigma`` (on a relative grid, rounded UP) with ``delta_of(sigma) <= delta``.

    ``delta_of`` must be non-increasing in ``sigma``. The root of ``ln delta_of(sigma) =
    ln delta`` is found by brentq in ``ln sigma`` and rounded up to the grid
    ``exp(k * _SIGMA_GRID)``: roots move monotonically with epsilon, and rounding on a
    fixed grid keeps them monotone despite brentq's tolerance. Verified, then stepped up
    until ``delta_of(sigma) <= delta``.
    """
    def gap(log_sigma: float) -> float:
        return math.log(max(delta_of(math.exp(log_sigma)), 1e-300)) - math.log(delta)

    lo, hi = -1.0, 0.0
    while gap(hi) > 0:
        lo, hi = hi, hi + 1.0
        if hi > 60:
            raise BudgetError(f"no noise level meets delta={delta} at this epsilon.")
    while gap(lo) <= 0:
        lo, hi = lo - 1.0, lo
        if lo < -60:
            return math.exp(lo)  # a negligible noise meets the (huge) budget
    root = brentq(gap, lo, hi, xtol=1e-13)
    log_sigma = math.ceil(root / _SIGMA_GRID) * _SIGMA_GRID
    while delta_of(math.exp(log_sigma)) > delta:
        log_sigma += _SIGMA_GRID
    return math.exp(log_sigma)


@dataclass(frozen=True)
class _RegularizedCalibration:
    """What both objective-perturbation calibrations fix: the regulariser and constants.

    Attributes
    ----------
    regularization : float
        ``Lambda`` applied to the penalised rows.
    intercept_regularization : float
        ``Lambda`` applied to the unpenalised rows (the intercept).
    jacobian_epsilon : float
        ``epsilon_J = K ln(1 + beta / min Lambda)``.
    lipschitz, smoothness : float
        ``L = c1 X`` and ``beta = c2 X^2``.
    rank : int
        ``K``.
    epsilon : float
        The epsilon of the exact minimiser's guarantee (replace-one).
    """

    regularization: float
    intercept_regularization: float
    jacobian_epsilon: float
    lipschitz: float
    smoothness: float
    rank: int
    epsilon: float


@dataclass(frozen=True)
class ObjPertCalibration(_RegularizedCalibration):
    """Public constants of one objective-perturbation release (sum form).

    The regulariser and constants: see :class:`_RegularizedCalibration`.

    Attributes
    ----------
    sigma : float
        Std of each entry of ``B``.
    delta : float
        The delta of the exact minimiser's guarantee.
    """

    sigma: float
    delta: float


def glm_constants(spec: ProblemSpec) -> tuple[float, float, int]:
    """``(L, beta, K)`` of ``spec``'s GLM on l2-bounded rows (unconstrained scores)."""
    x = spec.row_bound(2.0)
    c1 = spec.loss.derivative_bound_at(math.inf)
    return c1 * x, spec.loss.curvature_bound * x * x, spec.n_outputs


def _regularizer_rule(
    spec: ProblemSpec,
    epsilon: float,
    jacobian_share: float,
    noise_radius: float | None,
    jacobian_cap: float,
) -> Callable[[float], tuple[float, float, float]]:
    """The public rule ``noise_rms -> (Lambda_pen, Lambda_int, Lambda_min)``.

    ``noise_rms = sqrt(E||B||^2)`` of the linear noise. ``Lambda_int = max(Lambda_req,
    noise_rms / noise_radius)`` with ``Lambda_req = beta / (exp(e_J / K) - 1)``, ``e_J =
    min(jacobian_share * epsilon, jacobian_cap)``; ``Lambda_pen = max(n alpha,
    Lambda_int)``; ``Lambda_min`` is the smallest regulariser of any row. Every value is
    non-increasing in ``epsilon`` and non-decreasing in ``noise_rms``.
    """
    _, beta, k = glm_constants(spec)
    e_j = min(jacobian_share * epsilon, jacobian_cap)
    lam_req = beta / math.expm1(e_j / k)
    lam_user = spec.n_samples * spec.alpha
    all_penalized = spec.n_penalized == spec.n_params

    def regularizers(noise_rms: float) -> tuple[float, float, float]:
        lam_noise = 0.0 if noise_radius is None else noise_rms / noise_radius
        lam_int = max(lam_req, lam_noise)
        lam_pen = max(lam_user, lam_int)
        return lam_pen, lam_int, (lam_pen if all_penalized else lam_int)

    return regularizers


def calibrate_objective_perturbation(
    spec: ProblemSpec,
    epsilon: float,
    delta: float,
    jacobian_share: float = DEFAULT_JACOBIAN_SHARE,
    noise_radius: float | None = DEFAULT_NOISE_RADIUS,
    jacobian_cap: float = JACOBIAN_CAP,
) -> ObjPertCalibration:
    """Regulariser and noise of exact GLM objective perturbation at ``(epsilon, delta)``.

    Regulariser (public, :func:`_regularizer_rule`): the largest of

    * ``Lambda_req = beta / (exp(e_J / K) - 1)``, ``e_J = min(jacobian_share * epsilon,
      jacobian_cap)``: the Jacobian term uses at most a fixed share of epsilon;
    * ``n alpha`` on the penalised rows: the user's ``alpha`` counts toward ``Lambda``
      (the strongly convex Algorithm 2, with the l2 modulus of the user's regulariser);
    * ``sigma sqrt(p K) / noise_radius``: the noise displaces the minimiser by about
      ``||B|| / Lambda ~ sigma sqrt(p K) / Lambda`` when the data curvature is small
      (small n), so this caps that displacement at ``noise_radius`` and lets the excess
      risk fall monotonically with epsilon (without it, ``Lambda_req`` falls faster
      than ``sigma`` and small data sets get NOISIER outputs as epsilon grows).

    The unpenalised rows (intercept) get the largest of the first and third. ``epsilon_J
    = K ln(1 + beta / min Lambda)``. ``sigma`` is the smallest value with
    ``delta_replace(epsilon - epsilon_J(sigma), c1 X / sigma) <= delta``: the left side
    is non-increasing in ``sigma`` (``ell`` falls, ``Lambda`` grows) and in epsilon
    (``epsilon - epsilon_J`` is non-decreasing: every term of ``epsilon_J`` grows with
    slope ``< 1`` or is constant), so brentq applies and ``sigma`` and every ``Lambda``
    are non-increasing in epsilon.
    """
    L, beta, k = glm_constants(spec)
    width = math.sqrt(spec.n_params * k)  # E||B||^2 = p K sigma^2
    rule = _regularizer_rule(spec, epsilon, jacobian_share, noise_radius, jacobian_cap)

    def regularizers(sigma: float) -> tuple[float, float, float]:
        return rule(sigma * width)

    def delta_of(sigma: float) -> float:
        lam_min = regularizers(sigma)[2]
        return objective_perturbation_delta(epsilon, sigma, lipschitz=L, smoothness=beta,
                                            regularization=lam_min, rank=k)

    if epsilon - k * math.log1p(beta / regularizers(math.inf if noise_radius is None
                                                    else 1e300)[2]) <= 0:
        raise BudgetError("the Jacobian term takes the whole epsilon.")
    sigma = _calibrate_sigma(delta_of, delta)
    lam_pen, lam_int, lam_min = regularizers(sigma)
    # Re-verify with the public function (what tests and reviewers call).
    achieved = objective_perturbation_delta(epsilon, sigma, lipschitz=L, smoothness=beta,
                                            regularization=lam_min, rank=k)
    if not achieved <= delta:  # pragma: no cover - guarded by _calibrate_sigma
        raise BudgetError(f"objective perturbation calibration failed: delta={achieved}.")
    return ObjPertCalibration(sigma=sigma, regularization=lam_pen,
                              intercept_regularization=lam_int,
                              jacobian_epsilon=k * math.log1p(beta / lam_min), lipschitz=L,
                              smoothness=beta, rank=k, epsilon=epsilon, delta=delta)


# ---------------------------------------------------------------------------------------
# Pure epsilon-DP objective perturbation (K-norm noise)
# ---------------------------------------------------------------------------------------
def gradient_difference_body(spec: ProblemSpec) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """A product of l2 balls holding every neighbouring difference of one gradient.

    The per-example gradient of the GLM term is ``x phi'^T`` (shape ``(p, K)``) with
    ``||phi'||_2 <= c1`` and ``||x||_2 <= X``. Without an intercept the differences
    ``x phi'^T - x' phi'^T`` lie in the ball of radius ``2 c1 X`` of ``R^(pK)``. With an
    intercept feature ``c`` (the last row of ``x``, the same for every record), the
    feature rows satisfy ``||x_f||_2^2 <= X^2 - c^2`` and the intercept row is ``c phi'``,
    so the differences lie in ``B(2 c1 sqrt(X^2 - c^2)) x B(2 c1 c)`` of ``R^((p-1)K) x
    R^K``: the noise in the feature directions then needs the feature bound only (for
    ``c = data_norm`` half the energy of the single ball of radius ``2 c1 X``).

    Returns ``(sizes, radii)`` for :meth:`~skdp.privacy.noise.NoiseSource.ball_product_k_norm`,
    blocks in the row-major order of ``W`` (intercept block last).
    """
    L, _, k = glm_constants(spec)
    c1 = spec.loss.derivative_bound_at(math.inf)
    p = spec.n_params
    c = float(spec.intercept_feature)
    if c > 0.0 and p >= 2:
        # ||x_f||^2 <= X^2 - c^2, with the build slack and rounding (ProblemSpec).
        x_features = spec.feature_bound()
        if x_features > 0.0:
            return ((p - 1) * k, k), (2.0 * c1 * x_features, 2.0 * c1 * c)
    return (p * k,), (2.0 * L,)


def body_rms_unit(sizes: tuple[int, ...], radii: tuple[float, ...]) -> float:
    """``sqrt(E||B||^2)`` of the ball-product K-norm noise at ``epsilon = 1``.

    ``E||B_j||^2 = m_j / (m_j + 2) rho_j^2 (m + 1)(m + 2)`` (uniform point of a ball of
    radius ``R rho_j``, ``R ~ Gamma(m + 1, 1)``); the rms at ``epsilon`` is this over
    ``epsilon``.
    """
    m = sum(sizes)
    energy = sum(s / (s + 2.0) * r * r for s, r in zip(sizes, radii, strict=True))
    return math.sqrt(energy * (m + 1.0) * (m + 2.0))


@dataclass(frozen=True)
class PureObjPertCalibration(_RegularizedCalibration):
    """Public constants of one pure epsilon-DP objective-perturbation release (sum form).

    ``epsilon_B + jacobian_epsilon <= epsilon`` (``delta = 0``); the regulariser and
    constants: see :class:`_RegularizedCalibration`.

    Attributes
    ----------
    noise_epsilon : float
        ``epsilon_B``: the K-norm noise has density proportional to
        ``exp(-epsilon_B ||B||_K)``, ``K`` the product of balls ``sizes``/``radii``.
    sizes, radii : tuple
        The body of :func:`gradient_difference_body`.
    noise_rms : float
        ``sqrt(E||B||^2)``.
    """

    noise_epsilon: float
    sizes: tuple[int, ...]
    radii: tuple[float, ...]
    noise_rms: float


def calibrate_pure_objective_perturbation(
    spec: ProblemSpec,
    epsilon: float,
    jacobian_share: float = DEFAULT_JACOBIAN_SHARE,
    noise_radius: float | None = DEFAULT_NOISE_RADIUS,
    jacobian_cap: float = JACOBIAN_CAP,
) -> PureObjPertCalibration:
    """Regulariser and K-norm noise of pure epsilon-DP GLM objective perturbation.

    Chaudhuri, Monteleoni & Sarwate (2011, Algorithm 2) with the exact Jacobian term of
    the rank-``K`` Hessian change and the K-norm body of
    :func:`gradient_difference_body`: ``epsilon = epsilon_B + epsilon_J`` with
    ``epsilon_J = K ln(1 + beta / Lambda_min)``. ``Lambda`` follows the same public rule
    as the Gaussian calibration (:func:`_regularizer_rule`, with ``noise_rms = sqrt(E
    ||B||^2) = rms_1 / epsilon_B``), so ``epsilon_B`` solves ``epsilon_B +
    epsilon_J(epsilon_B) = epsilon``; the left side is increasing in ``epsilon_B``
    (``Lambda_min`` falls as the noise shrinks), hence one root, found by brentq and
    rounded DOWN on a relative grid until the sum is at most ``epsilon`` in floating
    point. ``epsilon_B`` is non-decreasing in ``epsilon``.
    """
    L, beta, k = glm_constants(spec)
    sizes, radii = gradient_difference_body(spec)
    rms_unit = body_rms_unit(sizes, radii)
    rule = _regularizer_rule(spec, epsilon, jacobian_share, noise_radius, jacobian_cap)

    def jacobian(eps_b: float) -> float:
        return k * math.log1p(beta / rule(rms_unit / eps_b)[2])

    def excess(eps_b: float) -> float:
        return eps_b + jacobian(eps_b) - epsilon

    if noise_radius is None:
        eps_b = epsilon - jacobian(epsilon)  # Lambda does not depend on the noise
    else:
        eps_b = brentq(excess, epsilon * 1e-12, epsilon, xtol=1e-300, rtol=8.0 * UNIT_ROUNDOFF,
                       maxiter=500)
    # Round down on the grid (exact monotonicity in epsilon), then until it fits.
    eps_b = math.exp(math.floor(math.log(eps_b) / _SIGMA_GRID) * _SIGMA_GRID)
    while not excess(eps_b) <= 0.0:
        eps_b *= 1.0 - _SIGMA_GRID
    if not eps_b > 0.0:  # pragma: no cover - Lambda_req keeps epsilon_J < epsilon
        raise BudgetError("the Jacobian term takes the whole epsilon.")
    lam_pen, lam_int, lam_min = rule(rms_unit / eps_b)
    return PureObjPertCalibration(
        noise_epsilon=eps_b, regularization=lam_pen, intercept_regularization=lam_int,
        jacobian_epsilon=k * math.log1p(beta / lam_min), lipschitz=L, smoothness=beta,
        rank=k, sizes=sizes, radii=radii, noise_rms=rms_unit / eps_b, epsilon=epsilon)


# ---------------------------------------------------------------------------------------
# The perturbed objective and its certified minimiser (B8)
# ---------------------------------------------------------------------------------------
def _is_huber(loss) -> bool:
    return type(loss).__name__ == "HuberLoss" and hasattr(loss, "huber_delta")


def supports_loss(loss) -> bool:
    """Whether objective perturbation covers ``loss``: a convex GLM loss with bounded
    ``||phi'||`` and ``phi''`` whose Hessian-vector product the solver implements."""
    return isinstance(loss, SUPPORTED_LOSSES) or _is_huber(loss)


class PerturbedObjective:
    """``J(W) = sum_i phi(x_i^T W) + (1/2) sum_j Lam_j ||W_j||^2 + <B, W>`` on a problem.

    ``lam`` has one entry per row of ``W``. Hessian-vector products are exact for the
    supported losses; sparse ``X`` stays sparse (only ``X v`` and ``X^T u`` products).
    """

    def __init__(self, problem: Problem, lam: np.ndarray, B: np.ndarray) -> None:
        self.problem = problem
        self.loss = problem.spec.loss
        self.lam = np.asarray(lam, dtype=float)[:, None]
        self.B = B
        self.shape = B.shape

    def value_and_gradient(self, W: np.ndarray) -> tuple[float, np.ndarray]:
        value, g = self.problem.loss_and_gradient_sums(W, self.loss)
        g += self.lam * W + self.B
        value += 0.5 * float(np.sum(self.lam * W * W)) + float(np.sum(self.B * W))
        return value, g

    def gradient(self, W: np.ndarray) -> np.ndarray:
        return self.value_and_gradient(W)[1]

    def _curvature(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Per-row second derivative of ``phi`` at the scores: shape ``(m, K)`` (diagonal
        in the outputs), or the softmax probabilities ``P`` (multinomial, whose Hessian in
        the score is ``diag(P) - P P^T``)."""
        loss = self.loss
        if isinstance(loss, MultinomialLogisticLoss):
            return softmax(Z, axis=1)
        if isinstance(loss, SmoothedHingeLoss):
            gap = 1.0 - Y * Z
            return np.where((gap > 0) & (gap < loss.smoothing), 1.0 / loss.smoothing, 0.0)
        if isinstance(loss, LogisticLoss):
            s = expit(Z)
            return s * (1.0 - s)
        if _is_huber(loss):
            return np.where(np.abs(Z - Y) < loss.huber_delta, 1.0, 0.0)
        # pragma: no cover - rejected by check_compatible
        raise IncompatibleSolverError(f"no Hessian for {type(loss).__name__}")

    def hessian_operator(self, W: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``V -> nabla^2 J(W) V`` (exact), with the curvature at ``W`` computed once (a
        conjugate-gradient solve applies it many times at the same ``W``)."""
        C = self._curvature(self.problem.scores(W), self.problem.Y)
        multinomial = isinstance(self.loss, MultinomialLogisticLoss)

        def apply(V: np.ndarray) -> np.ndarray:
            U = self.problem.scores(V)
            D = C * U - C * np.sum(C * U, axis=1, keepdims=True) if multinomial else C * U
            return self.problem.gradient_sum(D) + self.lam * V

        return apply

    def hessian_vector(self, W: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``nabla^2 J(W) V`` (exact)."""
        return self.hessian_operator(W)(V)

    def hessian_matrix(self, W: np.ndarray) -> np.ndarray:
        """``nabla^2 J(W)`` as a dense ``(p K) x (p K)`` matrix (row-major ``W`` order),
        in one blocked pass over the rows: ``sum_i (x_i x_i^T) kron h_i + diag(Lam)``,
        ``h_i`` the ``K x K`` Hessian of ``phi`` in the score (BLAS-3 instead of the
        memory-bound products of Newton-CG; for small ``p K``)."""
        problem = self.problem
        p, k = self.shape
        multinomial = isinstance(self.loss, MultinomialLogisticLoss)
        pairs = [(a, b) for a in range(k) for b in range(k)] if multinomial \
            else [(a, a) for a in range(k)]
        H = np.zeros((p, k, p, k))
        for block, rows in problem.row_blocks():
            C = self._curvature(problem.scores(W, rows), problem.Y[block])
            for a, b in pairs:
                weight = C[:, a] * ((a == b) - C[:, b]) if multinomial else C[:, a]
                H[:, a, :, b] += _weighted_gram(rows, weight, problem.intercept, p)
        H = H.reshape(p * k, p * k)
        H[np.diag_indices_from(H)] += np.repeat(self.lam[:, 0], k)
        return H


def _weighted_gram(rows, weight: np.ndarray, intercept: float, p: int) -> np.ndarray:
    """``sum_i weight_i x'_i x'_i^T`` of a row block (augmented, clipped rows)."""
    X = rows.X
    d = X.shape[1]
    w = weight if rows.scale is None else weight * rows.scale
    w2 = weight if rows.scale is None else w * rows.scale
    G = np.empty((p, p))
    if sp.issparse(X):
        G[:d, :d] = (X.T @ X.multiply(w2[:, None])).toarray()
    elif np.all(w2 >= 0):
        R = X * np.sqrt(w2)[:, None]
        G[:d, :d] = R.T @ R  # numpy's A^T A: one symmetric rank-k update (half the flops)
    else:
        G[:d, :d] = X.T @ (X * w2[:, None])
    if intercept:
        cross = intercept * np.asarray(X.T @ w).ravel()
        G[:d, d] = cross
        G[d, :d] = cross
        G[d, d] = intercept * intercept * float(np.sum(weight))
    return G


def _flat(fun: Callable, shape, scale: float) -> Callable:
    def wrapped(w):
        value, g = fun(w.reshape(shape))
        return value / scale, g.ravel() / scale
    return wrapped


def _conjugate_gradient(hessp: Callable, rhs: np.ndarray, rtol: float, max_iter: int
                        ) -> np.ndarray:
    """Solve ``H p = rhs`` for symmetric positive definite ``H`` given by products."""
    x = np.zeros_like(rhs)
    r = rhs.copy()
    d = r.copy()
    rr = float(np.sum(r * r))
    stop = (rtol**2) * rr
    for _ in range(max_iter):
        if rr <= stop:
            break
        Hd = hessp(d)
        step = rr / float(np.sum(d * Hd))
        x += step * d
        r -= step * Hd
        rr_new = float(np.sum(r * r))
        d = r + (rr_new / rr) * d
        rr = rr_new
    return x


def _newton(objective: PerturbedObjective, W0: np.ndarray, gtol: float, max_iter: int
            ) -> np.ndarray:
    """Damped Newton-CG (exact Hessian-vector products) on the merit ``||grad J||``.

    Function values of ``J`` (sums of ``n`` terms) cannot resolve the last digits, so the
    line search backtracks on the gradient norm, which the inexact Newton direction
    ``p`` (``||H p + g|| <= eta ||g||``) decreases: ``d/dt ||g(W + t p)||^2 / 2 = g^T H p
    <= -(1 - eta) ||g||^2``.
    """
    W = W0.copy()
    g = objective.gradient(W)
    norm = float(np.linalg.norm(g))
    cg_iter = min(2 * W.size + 10, 2000)
    for _ in range(max_iter):
        if not norm > gtol:
            break
        p = None
        if W.size <= DENSE_HESSIAN_MAX:
            try:  # exact Newton direction (H is positive definite when Lambda > 0)
                p = -cho_solve(cho_factor(objective.hessian_matrix(W)), g.ravel()
                               ).reshape(W.shape)
            except (np.linalg.LinAlgError, ValueError):  # singular or non-finite H
                p = None
        if p is None or not np.all(np.isfinite(p)):
            p = _conjugate_gradient(objective.hessian_operator(W), -g, 1e-10, cg_iter)
        step = 1.0
        for _ in range(40):
            trial = W + step * p
            g_trial = objective.gradient(trial)
            norm_trial = float(np.linalg.norm(g_trial))
            if norm_trial < norm:
                break
            step *= 0.5
        else:
            break  # no decrease representable in floating point
        W, g, norm = trial, g_trial, norm_trial
    return W


def _accelerated_gradient(objective: PerturbedObjective, W0: np.ndarray, mu: float,
                          beta: float, steps: int) -> np.ndarray:
    """Nesterov's constant-momentum method for ``mu``-strongly convex, ``beta``-smooth J.

    ``J(W_k) - J* <= (1 - sqrt(mu/beta))^k (J(W_0) - J* + mu/2 ||W_0 - W*||^2)``
    (Nesterov 2004, Thm. 2.2.3 / scheme 2.2.19).
    """
    q = math.sqrt(mu / beta)
    momentum = (1.0 - q) / (1.0 + q)
    W = W0.copy()
    previous = W0.copy()
    for _ in range(steps):
        Y = W + momentum * (W - previous)
        previous = W
        W = Y - objective.gradient(Y) / beta
    return W


def certified_argmin(
    objective: PerturbedObjective,
    strong_convexity: float,
    smoothness: float,
    certified_radius: float | None,
    max_iter: int,
    start_bound: float | None = None,
) -> tuple[np.ndarray, float]:
    """A point ``W`` with ``||W - argmin J|| <= certified_radius``, and its certificate.

    ``J`` is ``mu``-strongly convex (``mu = strong_convexity = min Lambda``) and
    ``beta_J``-smooth (``beta_J = smoothness``), unconstrained: ``||W - W*|| <= ||grad
    J(W)||_2 / mu`` (B8). Stages: damped Newton-CG with exact Hessian-vector products from
    0, then from an L-BFGS solution, each certified against ``CERTIFICATE_MARGIN *
    r_max``; if none certifies,
    Nesterov's accelerated gradient from the best candidate for the count that provably
    reaches the target from its certified distance (then the certificate is that proven
    target, ``r_max / 2``). A count above ``max_iter`` raises :class:`CertificateError`,
    decided from public quantities when ``start_bound`` is given; the output is never
    released uncertified. ``certified_radius=None`` (epsilon = inf): solve to full
    precision, no certificate.

    ``start_bound`` is a bound on ``||0 - argmin J||`` computed WITHOUT the data (from the
    public gradient bound and the noise): with it, the sure method's step count and the
    ``max_iter`` check are fixed before any data is read, so whether the solve can fail
    never depends on a record (the solvers always pass it).
    """
    shape = objective.shape
    n = float(objective.problem.spec.n_samples)
    if certified_radius is None:
        W = _lbfgs(objective, np.zeros(shape), 1e-12 * n)
        # Newton only ever accepts steps that lower the gradient norm (also when an
        # unpenalised intercept leaves J merely convex).
        W = _newton(objective, W, 1e-14 * n, 50)
        return W, math.nan
    mu = strong_convexity
    target = CERTIFICATE_MARGIN * certified_radius
    gtol = 0.5 * mu * target  # optimisers stop at half the certified gradient norm
    rate = -math.log1p(-math.sqrt(mu / smoothness))
    factor = math.sqrt((smoothness + mu) / mu)

    def sure_steps(distance: float) -> int:
        # Accelerated gradient from W_0 with d_0 = ||W_0 - W*|| <= distance: J(W_0) - J*
        # <= beta/2 d_0^2, so ||W_k - W*||^2 <= (2/mu)(J(W_k) - J*) <= ((beta + mu)/mu)
        # (1 - sqrt(mu/beta))^k d_0^2, and k = 2 ln(sqrt((beta + mu)/mu) d_0 / target) /
        # -ln(1 - sqrt(mu/beta)) steps suffice.
        return max(0, math.ceil(2.0 * math.log(factor * distance / target) / rate))

    def check_steps(steps: int) -> None:
        if steps > max_iter:
            raise CertificateError(
                f"certifying the minimiser needs {steps} gradient steps > max_iter="
                f"{max_iter} (floating-point limits); raise max_iter or certified_radius."
            )

    if start_bound is not None:
        # Decided from public quantities and the noise only, before the data is read.
        public_steps = sure_steps(start_bound)
        check_steps(public_steps)

    def bound(W: np.ndarray) -> float:
        return float(np.linalg.norm(objective.gradient(W))) / mu

    best, best_bound = np.zeros(shape), math.inf
    for start in ("zero", "lbfgs"):
        W0 = np.zeros(shape) if start == "zero" else _lbfgs(objective, np.zeros(shape), gtol)
        W = _newton(objective, W0, gtol, 50)
        for candidate in (W0, W):
            b = bound(candidate)
            if b < best_bound:
                best, best_bound = candidate, b
        if best_bound <= target:
            return best, best_bound
    # The sure method: accelerated gradient from the best candidate W_0, whose certified
    # distance best_bound is at most the data-free start_bound (W = 0 is a candidate).
    if not math.isfinite(best_bound):
        raise CertificateError("the solver diverged (non-finite gradient).")
    if start_bound is not None:
        steps = public_steps
    else:
        steps = sure_steps(best_bound)
        check_steps(steps)
    # Its step count guarantees ||W - W*|| <= target = r_max / 2; that is the certificate.
    # No check of W follows: the gradient bound ||grad J(W)|| / mu can exceed the true
    # distance by up to beta_J / mu, so a check could fail on one data set and pass on its
    # neighbour, and an abort that depends on the data breaks the guarantee.
    return _accelerated_gradient(objective, best, mu, smoothness, steps), target


def _lbfgs(objective: PerturbedObjective, W0: np.ndarray, gtol: float) -> np.ndarray:
    shape = objective.shape
    scale = float(objective.problem.spec.n_samples)
    result = minimize(_flat(objective.value_and_gradient, shape, scale), W0.ravel(), jac=True,
                      method="L-BFGS-B",
                      options={"maxiter": 5000, "gtol": gtol / scale / math.sqrt(W0.size),
                               "ftol": 0.0, "maxcor": 30})
    return result.x.reshape(shape)


# ---------------------------------------------------------------------------------------
# The solver
# ---------------------------------------------------------------------------------------
class ObjectivePerturbation(BaseDPSolver):
    """Objective perturbation for smooth GLMs (Su, Zhao & Wang, Algorithm 5), certified.

    Draws ``B ~ N(0, sigma^2 I)``, minimises the perturbed sum-form objective ``J`` (see
    the module docstring) to a CERTIFIED accuracy ``||theta_2 - theta_1|| <= r_max``, and
    releases ``theta_2 + H``, ``H ~ N(0, sigma_2^2 I)``. With the defaults, ``r_max`` is
    ``1e-6`` of the noise scale and the Gaussian step gets 1% of the budget: the output
    is the exact objective-perturbation minimiser up to a negligible float-level
    perturbation, and the analysis covers the float solution (see below).

    Parameters
    ----------
    jacobian_share : float, default=0.1
        Share of epsilon (public) for the Jacobian term ``epsilon_J = K ln(1 +
        beta/Lambda)``, capped at ``JACOBIAN_CAP = 1``; it bounds ``Lambda`` below.
    noise_radius : float or None, default=1.0
        Public cap on the noise displacement ``sigma sqrt(p K) / Lambda`` of the
        minimiser: ``Lambda >= sigma sqrt(p K) / noise_radius`` (solved jointly with
        ``sigma``). It keeps small data sets from getting noisier outputs as epsilon
        grows; ``None`` disables it. See :func:`calibrate_objective_perturbation`.
    objective_share : float, default=0.99
        Share of ``(epsilon, delta)`` for the exact minimiser; the rest goes to the
        Gaussian step that covers the optimisation error.
    radius_fraction : float, default=1e-6
        ``r_max = radius_fraction * sigma / (n (beta + alpha) + beta)`` (``sigma /
        (n beta + Lambda)`` is below the smallest displacement the noise ``B`` causes in
        the minimiser), floored at a float64-safe value; ignored if
        ``certified_radius`` is given.
    certified_radius : float, optional
        Public ``r_max``.
    max_iter : int, default=100000
        Step budget of the sure gradient-descent fallback of the certified solve.
    shrinkage : {"threshold"} or None, default=None
        ``"threshold"`` releases ``0`` instead of the noisy minimiser ``theta`` when
        ``||theta||^2 <= P``, ``P = (sqrt(E||B||^2) / Lambda_min + r_max)^2 + E||H||^2``
        (public), an upper bound on the expected squared displacement the noise causes
        (``J`` is ``Lambda_min``-strongly convex, so ``B`` moves the minimiser by at most
        ``||B|| / Lambda_min``). That is the zero set of the positive-part James-Stein
        factor: the release is within the noise's reach of ``0``. It reads only the
        release and public constants, so it is post-processing. Opt-in: it returns ``0``
        where the raw release is worse than ``0`` (digits, ``n = 1347``, pure, epsilon
        <= 0.2), but also where the raw release is still better than ``0`` (digits at
        epsilon = 1: median excess 0.83 of ``F(0) - F*``, accuracy 0.65 instead of 0.50),
        because a distance criterion ignores that the signal lies along the gradient
        and much of the noise along flat directions
        (docs/algorithms/objective_perturbation.md). ``None`` releases ``theta``.

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation; rows clipped to the public
    ``data_norm`` (l2 bound ``X = spec.row_bound(2)``, intercept feature included);
    unconstrained; a convex GLM loss with ``||phi'||_2 <= c1`` and
    ``0 <= phi'' <= c2`` (logistic, multinomial logistic, smoothed hinge, Huber). With
    ``ell = c1 X / sigma`` and ``epsilon_J = K ln(1 + c2 X^2 / Lambda)``, the exact
    minimiser ``theta_1`` is ``(epsilon_1, delta_1)``-DP with ``delta_1 = h(0) +
    int_0^inf h'(m) min(1, 2 P(chi_K > m)) dm``, ``h(m) = (1 - exp(epsilon_1 -
    epsilon_J - 2 ell^2 - 2 ell m))_+`` (change of variables ``B = -grad(J - <B,.>)``,
    Sylvester's determinant identity for the rank-``K`` Hessian change, Cauchy-Schwarz
    for the noise term; docs/algorithms/objective_perturbation.md).
    The released ``theta_2 + H`` is post-processing of the pair ``(theta_1, theta_2 -
    theta_1 + H)``; ``||theta_2 - theta_1|| <= r_max`` for every data set (certificate
    ``||grad J(theta_2)|| / Lambda <= r_max / 2``), so the second component is the
    Gaussian mechanism with sensitivity ``2 r_max`` given ``theta_1``: ``sigma_2 =
    sigma_B1(epsilon_2, delta_2) 2 r_max`` (analytic Gaussian). Basic composition:
    ``(epsilon_1 + epsilon_2, delta_1 + delta_2)``, recorded as two ``ApproxDpEvent``
    read by the ``"basic"`` accountant. References: Su, Zhao & Wang, "DP-SCO in
    (non-)Euclidean space revisited", Algorithms 5/1/2; Iyengar et al. 2019 (Thm. 1);
    corrections in docs/algorithms/objective_perturbation.md (exact profile instead of
    ``sigma^2 = 32 L^2 ln(1/delta)/epsilon^2``; GLMs only; certified instead of exact
    minimiser; unconstrained argmin).

    **Pure epsilon-DP (delta = 0, or accountant="pure").** ``B`` has density proportional
    to ``exp(-epsilon_B ||B||_K)`` with ``K`` the product of l2 balls of
    :func:`gradient_difference_body` (features: radius ``2 c1 sqrt(X^2 - c^2)``;
    intercept row: ``2 c1 c``), which holds every replace-one difference of one
    per-example gradient. The change of variables then bounds the privacy loss of the
    exact minimiser by ``epsilon_B + epsilon_J`` everywhere (K-norm triangle inequality
    plus the Jacobian term), so ``theta_1`` is ``epsilon_1``-DP (Chaudhuri, Monteleoni &
    Sarwate 2011, Algorithm 2, with the exact rank-``K`` Jacobian term and the K-norm
    body of Hardt & Talwar 2010). The certified ``theta_2`` is released with l2-Laplace
    noise of scale ``2 r_max / epsilon_2``: for any ``e`` with ``||e|| <= r_max`` the
    output density moves by at most ``exp(r_max / scale)`` on each side, so the release
    is ``(epsilon_1 + epsilon_2)``-DP. Ledger: two ``PureDpEvent`` (accountant
    ``"pure"``, or ``"basic"``).
    """

    name = "objective_perturbation"
    capabilities = Capabilities(
        algorithm=("GLM objective perturbation, Su-Zhao-Wang Alg. 5 (pure K-norm variant "
                   "at delta = 0, Chaudhuri-Monteleoni-Sarwate 2011)"),
        needs_delta=False, accountants=("basic", "pure"), default_accountant="basic",
        losses=("logistic", "multinomial", "smoothed_hinge", "huber"), constraints=("none",),
        secure=True,
    )
    #: Whether a constraint is applied by projection after the noise (Algorithm 1).
    projects = False

    def __init__(
        self,
        jacobian_share: float = DEFAULT_JACOBIAN_SHARE,
        noise_radius: float | None = DEFAULT_NOISE_RADIUS,
        objective_share: float = 0.99,
        radius_fraction: float = 1e-6,
        certified_radius: float | None = None,
        max_iter: int = 100000,
        shrinkage: str | None = None,
    ) -> None:
        self.jacobian_share = jacobian_share
        self.noise_radius = noise_radius
        self.objective_share = objective_share
        self.radius_fraction = radius_fraction
        self.certified_radius = certified_radius
        self.max_iter = max_iter
        self.shrinkage = shrinkage

    def _validate_params(self) -> None:
        cls = type(self).__name__
        for name in ("jacobian_share", "objective_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, float | int) or not (
                    0.0 < value < 1.0):
                raise ValueError(f"{cls}.{name} must be in (0, 1), got {value!r}.")
        self._check_positive_real("radius_fraction")
        self._check_positive_real("noise_radius")
        self._check_positive_real("certified_radius")
        self._check_positive_int("max_iter")
        if self.shrinkage not in ("threshold", None):
            raise ValueError(
                f"{cls}.shrinkage must be 'threshold' or None, got {self.shrinkage!r}.")

    def check_compatible(self, spec: ProblemSpec, accountant: str, relation: str) -> None:
        super().check_compatible(spec, accountant, relation)
        loss = spec.loss
        if not supports_loss(loss):
            reason = ("its derivative is unbounded on R^d (no Lipschitz constant without a "
                      "bounded domain)" if not math.isfinite(loss.derivative_bound_at(math.inf))
                      else "it is not one of the supported GLM losses")
            raise IncompatibleSolverError(
                f"solver {self.name!r} needs a twice-differentiable GLM loss with bounded "
                f"phi' and phi'' (logistic, multinomial logistic, smoothed hinge, Huber); "
                f"{type(loss).__name__} is not supported: {reason}. Use "
                "solver='output_perturbation' (squared loss with alpha > 0) or a "
                "gradient-perturbation solver."
            )
        if not self.projects and not isinstance(spec.constraint, Unconstrained):
            raise IncompatibleSolverError(
                f"solver {self.name!r} is exact objective perturbation, whose privacy "
                "proof (a change of variables through the first-order condition) needs an "
                "UNCONSTRAINED minimiser; use solver='approx_objective_perturbation' (it "
                "projects onto the constraint after the noise) or constraint=None."
            )

    # -- plan ------------------------------------------------------------------------------
    def plan(self, spec: ProblemSpec, budget: Budget, accountant: str, relation: str) -> Plan:
        L, beta, k = glm_constants(spec)
        n, p = spec.n_samples, spec.n_params
        settings: dict = {"lipschitz": L, "curvature": beta, "rank": k,
                          "max_iter": self.max_iter}
        if not budget.is_private:
            lam = spec.n_samples * spec.alpha
            settings.update(sigma=0.0, sigma_output=0.0, regularization=lam,
                            intercept_regularization=0.0, jacobian_epsilon=0.0,
                            certified_radius=None,
                            strong_convexity=lam if spec.n_penalized == p else 0.0,
                            smoothness=n * beta + lam, noise_power=0.0)
            return _legacy_plan(n_iter=1, event=dpe.NonPrivateDpEvent(), accountant=accountant,
                        relation=relation, settings=settings)
        pure = accountant == "pure" or budget.delta == 0
        eps1 = self.objective_share * budget.epsilon
        delta1 = 0.0 if pure else self.objective_share * budget.delta
        # eps2 rounded down so that eps1 + eps2 <= epsilon in floating point.
        eps2 = (budget.epsilon - eps1) * (1.0 - 1e-12)
        delta2 = 0.0 if pure else budget.delta - delta1
        cal: _RegularizedCalibration
        if pure:
            cal = calibrate_pure_objective_perturbation(spec, eps1, self.jacobian_share,
                                                        self.noise_radius)
            # Per-coordinate rms of B: the scale r_max and the noise reports read.
            sigma = cal.noise_rms / math.sqrt(p * k)
        else:
            cal = calibrate_objective_perturbation(spec, eps1, delta1, self.jacobian_share,
                                                   self.noise_radius)
            sigma = cal.sigma
        lam_min = min(cal.regularization, cal.intercept_regularization) \
            if spec.n_penalized < p else cal.regularization
        lam_max = cal.regularization if spec.n_penalized > 0 else cal.intercept_regularization
        smooth_j = n * beta + max(lam_max, cal.intercept_regularization)
        # Float floor: gradients are sums of n terms of norm <= L (plus B), whose float64
        # error is far below 64 u (n L) sqrt(p K); divided by the smallest strong
        # convexity any epsilon can give (epsilon_J <= JACOBIAN_CAP), so the floor does
        # not depend on epsilon either. Below it a certificate could fail on float error,
        # which would make the run's success depend on the data.
        mu_floor = beta / math.expm1(JACOBIAN_CAP / k)
        r_floor = 64.0 * UNIT_ROUNDOFF * n * L * math.sqrt(p * k) / mu_floor / CERTIFICATE_MARGIN
        if self.certified_radius is not None:
            r_max = float(self.certified_radius)
            if r_max < r_floor:
                raise IncompatibleSolverError(
                    f"certified_radius={r_max:.3g} is below the floating-point floor "
                    f"{r_floor:.3g} of this problem, where a certificate could fail "
                    "depending on the data; use certified_radius=None or a larger value."
                )
        else:
            # sigma / (n (beta + alpha) + beta) is epsilon-monotone and below the scale
            # sigma / (n beta + Lambda) of the displacement B causes in the minimiser.
            r_max = self.radius_fraction * sigma / (n * (beta + spec.alpha) + beta)
            r_max = max(r_max, r_floor)
        # Output step: ||theta_2 - theta_1|| <= r_max on every data set, so theta_2 -
        # theta_1 has replace-one sensitivity 2 r_max. Gaussian: analytic Gaussian at
        # (eps2, delta2). Pure: l2 Laplace of scale 2 r_max / eps2 (the density ratio
        # of the output at theta_1 + e and theta_1 + e', ||e - e'|| <= 2 r_max, is at
        # most exp(eps2); docs/algorithms/objective_perturbation.md).
        if pure:
            release = single_release(Budget(eps2, 0.0), "pure", relation)
            first = PureDpEvent(eps1)
            settings.update(mechanism="k_norm", noise_epsilon=cal.noise_epsilon,
                            body_sizes=cal.sizes, body_radii=cal.radii,
                            output_mechanism=release.mechanism)
        else:
            release = SingleRelease("gaussian", ApproxDpEvent(
                eps2, delta2, "gaussian_certified_minimiser"),
                analytic_gaussian_multiplier(Budget(eps2, delta2), 1))
            first = ApproxDpEvent(eps1, delta1, "glm_objective_perturbation")
            settings.update(mechanism="gaussian", output_mechanism="gaussian")
        sigma2 = release.unit_scale * 2.0 * r_max
        # Public bound on E||theta - argmin J||^2 (the shrinkage threshold): B moves the
        # minimiser of the lam_min-strongly convex J by at most ||B|| / lam_min (E||B||^2 =
        # p K sigma^2, sigma the per-coordinate rms), the certified solve adds at most
        # r_max, and H is independent with mean 0: E||H||^2 = m (m + 1) b^2 for the l2
        # Laplace of scale b, m sigma_2^2 for the Gaussian (m = p K).
        m = p * k
        h_power = (m * (m + 1) if pure else m) * sigma2 ** 2
        settings["noise_power"] = (math.sqrt(m) * sigma / lam_min + r_max) ** 2 + h_power
        event = dpe.ComposedDpEvent([first, release.event])
        settings.update(sigma=sigma, sigma_output=sigma2, regularization=cal.regularization,
                        intercept_regularization=cal.intercept_regularization,
                        jacobian_epsilon=cal.jacobian_epsilon, certified_radius=r_max,
                        strong_convexity=lam_min, smoothness=smooth_j,
                        epsilon_objective=eps1, delta_objective=delta1,
                        epsilon_output=eps2, delta_output=delta2,
                        noise_multiplier_output=release.unit_scale)
        return _legacy_plan(n_iter=1, event=event, accountant=accountant, relation=relation,
                    settings=settings)

    # -- run -------------------------------------------------------------------------------
    def _regularization_vector(self, spec: ProblemSpec, settings: dict) -> np.ndarray:
        lam = np.full(spec.n_params, float(settings["intercept_regularization"]))
        lam[: spec.n_penalized] = settings["regularization"]
        return lam

    def release_noise_scale(self, plan: Plan) -> float:
        # The release is argmin(J + <b, w>) + H: b moves the argmin by about
        # sigma / Lambda per coordinate, H adds sigma_output.
        s = plan.settings
        return max(s["sigma"] / s["regularization"], s["sigma_output"])

    def _run(self, problem: Problem, plan: Plan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        s = plan.settings
        shape = (spec.n_params, spec.n_outputs)
        # Both noises are drawn first, independently of the data.
        if s.get("mechanism") == "k_norm":
            # Blocks in the row-major order of W: features, then the intercept row.
            B = noise.ball_product_k_norm(s["body_sizes"], s["body_radii"],
                                          s["noise_epsilon"]).reshape(shape)
        else:
            B = noise.gaussian(shape, s["sigma"])
        H = noise.release(s.get("output_mechanism", "gaussian"), shape, s["sigma_output"])
        objective = PerturbedObjective(problem, self._regularization_vector(spec, s), B)
        # A data-free bound on ||0 - argmin J||: grad J(0) = sum_i phi'(0, y_i) x_i + B has
        # norm <= n G + ||B|| (G the public per-example gradient bound), and J is
        # mu-strongly convex. It fixes the sure method's length before the data is read.
        start_bound = None
        if s["certified_radius"] is not None:
            start_bound = (spec.n_samples * spec.gradient_bound
                           + float(np.linalg.norm(B))) / s["strong_convexity"]
        W, _ = certified_argmin(objective, s["strong_convexity"], s["smoothness"],
                                s["certified_radius"], self.max_iter, start_bound)
        W = W + H
        if self.shrinkage == "threshold" and james_stein_factor(W, s["noise_power"]) == 0.0:
            W = np.zeros_like(W)  # post-processing of the release (class docstring)
        if self.projects and not isinstance(spec.constraint, Unconstrained):
            # Post-processing (Algorithm 1, step 4).
            W = W.copy()
            W[: spec.n_penalized] = spec.constraint.project(W[: spec.n_penalized])
        return W
