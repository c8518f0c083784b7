"""Objective perturbation for GLMs (Su, Zhao & Wang, Algorithm 5), exactly calibrated.

The one implementation of the objective-perturbation core that both
``"objective_perturbation"`` (this module) and ``"approx_objective_perturbation"``
(:mod:`skdp.solvers.approx_objective_perturbation`) run, in three parts:

* :mod:`skdp.solvers._objective_perturbation_calibration`: the closed-form privacy
  profile ``delta(epsilon; sigma)`` (privacy-calibration.md, B7 / section 2.1) and its
  calibration, the public regulariser rule, and the pure epsilon-DP K-norm variant;
* :mod:`skdp.solvers._perturbed_objective`: the perturbed objective and its certified
  solve (B8);
* this module: the plan and the solver. Every public name of the two private modules is
  re-exported here.

Notation (sum form, ``W`` of shape ``(p, K)``)::

    J(W) = sum_i phi(x_i^T W, y_i) + (1/2) sum_j Lambda_j ||W_j||^2 + <B, W>,
    B ~ N(0, sigma^2 I),   theta_1 = argmin J.

``|phi'|_2 <= c1``, ``0 <= phi'' <= c2`` (operator norm of the ``K x K`` Hessian in the
score), rows ``||x||_2 <= X``: ``L = c1 X``, ``beta = c2 X^2``, ``ell = L / sigma``,
``Lambda = min_j Lambda_j``, ``epsilon_J = K ln(1 + beta / Lambda)``. Derivations:
docs/algorithms/objective_perturbation.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from types import MappingProxyType

import numpy as np
from dp_accounting import dp_event as dpe

from skdp._params import OPTIONAL_COUNT, OPTIONAL_POSITIVE, declared_init
from skdp._sklearn_compat import Interval, StrOptions
from skdp.exceptions import IncompatibleSolverError
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
    BaseDPSolver,
    Plan,
    Problem,
    ProblemSpec,
    james_stein_factor,
)
from skdp.solvers._capabilities import Capabilities
from skdp.solvers._objective_perturbation_calibration import (
    DEFAULT_JACOBIAN_SHARE,
    DEFAULT_NOISE_RADIUS,
    JACOBIAN_CAP,
    ObjPertCalibration,
    PureObjPertCalibration,
    _RegularizedCalibration,
    body_rms_unit,
    calibrate_objective_perturbation,
    calibrate_pure_objective_perturbation,
    glm_constants,
    gradient_difference_body,
    objective_perturbation_delta,
    objective_perturbation_delta_add_remove_closed_form,
    privacy_loss_delta,
)
from skdp.solvers._perturbed_objective import (
    CERTIFICATE_MARGIN,
    DENSE_HESSIAN_MAX,
    SUPPORTED_LOSSES,
    PerturbedObjective,
    certified_argmin,
    supports_loss,
)
from skdp.solvers._problem import UNIT_ROUNDOFF
from skdp.solvers.output_perturbation import CertificateError

__all__ = [
    "CERTIFICATE_MARGIN",
    "DEFAULT_JACOBIAN_SHARE",
    "DEFAULT_NOISE_RADIUS",
    "DENSE_HESSIAN_MAX",
    "JACOBIAN_CAP",
    "SUPPORTED_LOSSES",
    "CertificateError",
    "ObjPertCalibration",
    "ObjectivePerturbation",
    "ObjectivePerturbationPlan",
    "PerturbedObjective",
    "PureObjPertCalibration",
    "body_rms_unit",
    "calibrate_objective_perturbation",
    "calibrate_pure_objective_perturbation",
    "certified_argmin",
    "glm_constants",
    "gradient_difference_body",
    "objective_perturbation_delta",
    "objective_perturbation_delta_add_remove_closed_form",
    "privacy_loss_delta",
    "supports_loss",
]

@dataclass(frozen=True, kw_only=True)
class ObjectivePerturbationPlan(Plan):
    """The public constants of one objective-perturbation run (sum form).

    Attributes
    ----------
    lipschitz : float
        ``L = c1 X``: per-example gradient bound of the GLM term.
    curvature : float
        ``beta = c2 X^2``: per-example curvature bound.
    rank : int
        ``K``, the number of scores (outputs).
    max_iter : int
        Step budget of the sure fallback of the certified solve.
    sigma : float
        Per-coordinate rms of the linear noise ``B`` (the std of the Gaussian ``B``;
        ``noise_rms / sqrt(p K)`` of the K-norm ``B``); 0 without privacy.
    sigma_output : float
        Scale of the output noise ``H``: the Gaussian std, or the l2-Laplace scale
        ``2 r_max / epsilon_output``; 0 without privacy.
    regularization, intercept_regularization : float
        ``Lambda`` of the penalised rows and of the unpenalised ones (the intercept).
    jacobian_epsilon : float
        ``epsilon_J = K ln(1 + beta / Lambda_min)``.
    certified_radius : float or None
        ``r_max``: the certified distance of ``theta_2`` to ``argmin J`` (``None``
        without privacy: solved to full precision, no certificate).
    strong_convexity : float
        ``Lambda_min``, the strong convexity of ``J`` used by the certificate.
    smoothness : float
        ``n beta + Lambda_max``, the smoothness of ``J``.
    noise_power : float
        Public bound on ``E||release - argmin J_0||^2`` (the ``"threshold"`` shrinkage).
    mechanism : {"gaussian", "k_norm"}
        Law of ``B`` (``"gaussian"`` of std 0 without privacy).
    output_mechanism : {"gaussian", "l2_laplace"}
        Law of ``H``.
    noise_epsilon : float or None
        ``epsilon_B`` of the K-norm ``B`` (pure DP only).
    body_sizes, body_radii : tuple or None
        The product of l2 balls of the K-norm ``B`` (pure DP only; see
        :func:`gradient_difference_body`).
    epsilon_objective, delta_objective : float or None
        The budget of the exact minimiser ``theta_1`` (None without privacy).
    epsilon_output, delta_output : float or None
        The budget of the output step ``H`` (None without privacy).
    noise_multiplier_output : float or None
        ``sigma_output / (2 r_max)`` (None without privacy).
    """

    lipschitz: float
    curvature: float
    rank: int
    max_iter: int
    sigma: float
    sigma_output: float
    regularization: float
    intercept_regularization: float
    jacobian_epsilon: float
    certified_radius: float | None
    strong_convexity: float
    smoothness: float
    noise_power: float
    mechanism: str = "gaussian"
    output_mechanism: str = "gaussian"
    noise_epsilon: float | None = None
    body_sizes: tuple[int, ...] | None = None
    body_radii: tuple[float, ...] | None = None
    epsilon_objective: float | None = None
    delta_objective: float | None = None
    epsilon_output: float | None = None
    delta_output: float | None = None
    noise_multiplier_output: float | None = None


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
        (public, the plan's ``noise_power``), an upper bound on the expected squared
        displacement the noise causes: the zero set of the positive-part James-Stein
        factor. Post-processing. Opt-in: it helps only at tiny ``n epsilon`` and costs
        elsewhere (docs/algorithms/objective_perturbation.md, "Release threshold").
        ``None`` releases ``theta``.

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation; rows clipped to the public
    ``data_norm``; unconstrained; a convex GLM loss with ``||phi'||_2 <= c1`` and
    ``0 <= phi'' <= c2`` (logistic, multinomial logistic, smoothed hinge, Huber). The
    exact minimiser ``theta_1`` is ``(epsilon_1, delta_1)``-DP by the closed-form
    profile :func:`objective_perturbation_delta` (change of variables, Sylvester's
    identity for the rank-``K`` Jacobian, Cauchy-Schwarz for the noise term). The
    certified ``theta_2`` is within ``r_max`` of it on every data set, so ``theta_2 -
    theta_1 + H`` is the analytic Gaussian mechanism of sensitivity ``2 r_max`` at
    ``(epsilon_2, delta_2)``; basic composition, two ``ApproxDpEvent`` read by the
    ``"basic"`` accounting method. With ``delta = 0`` (or ``accounting="pure"``): K-norm noise
    ``B`` over the product of balls of :func:`gradient_difference_body` makes
    ``theta_1`` ``(epsilon_B + epsilon_J)``-DP, and l2-Laplace ``H`` of scale ``2 r_max /
    epsilon_2`` the release ``(epsilon_1 + epsilon_2)``-DP; two ``PureDpEvent``.

    References: Su, Zhao & Wang, "DP-SCO in (non-)Euclidean space revisited", Algorithms
    5/1/2; Iyengar et al. 2019 (Thm. 1); Chaudhuri, Monteleoni & Sarwate 2011 (Alg. 2) and
    Hardt & Talwar 2010 (K-norm) for the pure variant. Proofs and the corrections to the
    paper: docs/algorithms/objective_perturbation.md.
    """

    name = "objective_perturbation"
    capabilities = Capabilities(
        algorithm=("GLM objective perturbation, Su-Zhao-Wang Alg. 5 (pure K-norm variant "
                   "at delta = 0, Chaudhuri-Monteleoni-Sarwate 2011)"),
        needs_delta=False, accounting_methods=("basic", "pure"), default_accounting="basic",
        losses=("logistic", "multinomial", "smoothed_hinge", "huber"), constraints=("none",),
        secure=True, out_of_core=True,
    )
    _parameter_constraints = {
        "jacobian_share": [Interval(Real, 0.0, 1.0, closed="neither")],
        "noise_radius": OPTIONAL_POSITIVE,
        "objective_share": [Interval(Real, 0.0, 1.0, closed="neither")],
        "radius_fraction": OPTIONAL_POSITIVE,
        "certified_radius": OPTIONAL_POSITIVE,
        "max_iter": OPTIONAL_COUNT,
        "shrinkage": [StrOptions({"threshold"}), None],
    }
    #: Whether a constraint is applied by projection after the noise (Algorithm 1).
    projects = False

    #: The parameters and their defaults, in signature order (the approximate variant
    #: declares other defaults for two of them).
    _defaults = MappingProxyType({
        "jacobian_share": DEFAULT_JACOBIAN_SHARE, "noise_radius": DEFAULT_NOISE_RADIUS,
        "objective_share": 0.99, "radius_fraction": 1e-6, "certified_radius": None,
        "max_iter": 100000, "shrinkage": None})
    __init__ = declared_init(_defaults, {})

    # -- plan ------------------------------------------------------------------------------
    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> ObjectivePerturbationPlan:
        """Split the budget between the objective's noise and the output noise.

        Fixes the linear noise term, the regularisation that makes the Jacobian argument
        hold, the certified radius of the inner solve and the output noise that covers
        it.

        <<plan_parameters>>

        Returns
        -------
        ObjectivePerturbationPlan
            One release: the noise mechanisms and scales, the regularisation and the
            certified radius.
        """
        L, beta, k = glm_constants(spec)
        n, p = spec.n_samples, spec.n_params
        common = {"n_iter": 1, "accounting": accounting, "relation": relation,
                  "lipschitz": L, "curvature": beta, "rank": k, "max_iter": self.max_iter}
        if not budget.is_private:
            lam = spec.n_samples * spec.alpha
            return ObjectivePerturbationPlan(
                event=dpe.NonPrivateDpEvent(), sigma=0.0, sigma_output=0.0,
                regularization=lam, intercept_regularization=0.0, jacobian_epsilon=0.0,
                certified_radius=None, strong_convexity=lam if spec.n_penalized == p else 0.0,
                smoothness=n * beta + lam, noise_power=0.0, **common)
        pure = accounting == "pure" or budget.delta == 0
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
            mechanisms = {"mechanism": "k_norm", "noise_epsilon": cal.noise_epsilon,
                          "body_sizes": cal.sizes, "body_radii": cal.radii,
                          "output_mechanism": release.mechanism}
        else:
            release = SingleRelease("gaussian", ApproxDpEvent(
                eps2, delta2, "gaussian_certified_minimiser"),
                analytic_gaussian_multiplier(Budget(eps2, delta2), 1))
            first = ApproxDpEvent(eps1, delta1, "glm_objective_perturbation")
            mechanisms = {"mechanism": "gaussian", "output_mechanism": "gaussian"}
        sigma2 = release.unit_scale * 2.0 * r_max
        # Public bound on E||theta - argmin J||^2 (the shrinkage threshold): B moves the
        # minimiser of the lam_min-strongly convex J by at most ||B|| / lam_min (E||B||^2 =
        # p K sigma^2, sigma the per-coordinate rms), the certified solve adds at most
        # r_max, and H is independent with mean 0: E||H||^2 = m (m + 1) b^2 for the l2
        # Laplace of scale b, m sigma_2^2 for the Gaussian (m = p K).
        m = p * k
        h_power = (m * (m + 1) if pure else m) * sigma2 ** 2
        noise_power = (math.sqrt(m) * sigma / lam_min + r_max) ** 2 + h_power
        return ObjectivePerturbationPlan(
            event=dpe.ComposedDpEvent([first, release.event]), sigma=sigma,
            sigma_output=sigma2, regularization=cal.regularization,
            intercept_regularization=cal.intercept_regularization,
            jacobian_epsilon=cal.jacobian_epsilon, certified_radius=r_max,
            strong_convexity=lam_min, smoothness=smooth_j, noise_power=noise_power,
            epsilon_objective=eps1, delta_objective=delta1, epsilon_output=eps2,
            delta_output=delta2, noise_multiplier_output=release.unit_scale,
            **mechanisms, **common)

    # -- run -------------------------------------------------------------------------------
    def _regularization_vector(self, spec: ProblemSpec, plan: ObjectivePerturbationPlan
                               ) -> np.ndarray:
        lam = np.full(spec.n_params, float(plan.intercept_regularization))
        lam[: spec.n_penalized] = plan.regularization
        return lam

    def release_noise_scale(self, plan: ObjectivePerturbationPlan) -> float:
        """The larger of the objective noise's shift of the minimiser and the output noise.

        <<release_parameters>>

        Returns
        -------
        float
            ``max(sigma / Lambda, sigma_output)`` per coordinate.
        """
        # The release is argmin(J + <b, w>) + H: b moves the argmin by about
        # sigma / Lambda per coordinate, H adds sigma_output.
        return max(plan.sigma / plan.regularization, plan.sigma_output)

    def _run(self, problem: Problem, plan: ObjectivePerturbationPlan, noise: NoiseSource
             ) -> np.ndarray:
        spec = problem.spec
        shape = (spec.n_params, spec.n_outputs)
        # Both noises are drawn first, independently of the data.
        if plan.mechanism == "k_norm":
            # Blocks in the row-major order of W: features, then the intercept row.
            B = noise.ball_product_k_norm(plan.body_sizes, plan.body_radii,
                                          plan.noise_epsilon).reshape(shape)
        else:
            B = noise.gaussian(shape, plan.sigma)
        H = noise.release(plan.output_mechanism, shape, plan.sigma_output)
        objective = PerturbedObjective(problem, self._regularization_vector(spec, plan), B)
        # A data-free bound on ||0 - argmin J||: grad J(0) = sum_i phi'(0, y_i) x_i + B has
        # norm <= n G + ||B|| (G the public per-example gradient bound), and J is
        # mu-strongly convex. It fixes the sure method's length before the data is read.
        start_bound = None
        if plan.certified_radius is not None:
            start_bound = (spec.n_samples * spec.gradient_bound
                           + float(np.linalg.norm(B))) / plan.strong_convexity
        W, _ = certified_argmin(objective, plan.strong_convexity, plan.smoothness,
                                plan.certified_radius, self.max_iter, start_bound)
        W = W + H
        if self.shrinkage == "threshold" and james_stein_factor(W, plan.noise_power) == 0.0:
            W = np.zeros_like(W)  # post-processing of the release (class docstring)
        if self.projects and spec.constraint.kind != "none":
            # Post-processing (Algorithm 1, step 4).
            W = W.copy()
            W[: spec.n_penalized] = spec.constraint.project(W[: spec.n_penalized])
        return W
