"""Calibration of GLM objective perturbation: privacy profile, regulariser, noise.

Private module of :mod:`skdp.solvers.objective_perturbation` (which re-exports every
public name): the closed-form privacy profile ``delta(epsilon; sigma)`` of GLM objective
perturbation (privacy-calibration.md, B7 / section 2.1) and its calibration, the public
regulariser rule, and the pure epsilon-DP K-norm variant. Notation and derivations:
docs/algorithms/objective_perturbation.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from scipy import integrate
from scipy.optimize import brentq
from scipy.special import gammaincc, log_ndtr, ndtr

from skdp.exceptions import BudgetError
from skdp.solvers._problem import UNIT_ROUNDOFF, ProblemSpec

__all__ = [
    "DEFAULT_JACOBIAN_SHARE",
    "DEFAULT_NOISE_RADIUS",
    "JACOBIAN_CAP",
    "ObjPertCalibration",
    "PureObjPertCalibration",
    "body_rms_unit",
    "calibrate_objective_perturbation",
    "calibrate_pure_objective_perturbation",
    "glm_constants",
    "gradient_difference_body",
    "objective_perturbation_delta",
    "objective_perturbation_delta_add_remove_closed_form",
    "privacy_loss_delta",
]

#: Default share of epsilon given to the Jacobian term ``epsilon_J`` ...
DEFAULT_JACOBIAN_SHARE = 0.1
#: ... capped at this value (beyond it a larger Lambda only adds bias; see ``plan``).
JACOBIAN_CAP = 1.0
#: Default cap on the noise displacement ``sigma sqrt(p K) / Lambda`` of the minimiser
#: (coefficient units; rows have norm <= data_norm).
DEFAULT_NOISE_RADIUS = 1.0
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
    the estimators' ``c = data_norm / 2``, 0.8 of the energy of the single ball of radius
    ``2 c1 X``).

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
