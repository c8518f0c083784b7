"""Black-box output perturbation (Lowy & Razaviyayn, Algorithms 1-3), certified.

A non-private optimiser minimises a strongly convex objective (ERM, tilted ERM or the
adversarially robust loss); its output is CERTIFIED to lie within a public radius
``r_max`` of the exact minimiser, then noise calibrated to ``Delta_F + 2 r_max`` is added
(pure epsilon-DP l2 "multivariate Laplace" when ``delta = 0``, the exact analytic Gaussian
when ``delta > 0``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import L2Ball, Unconstrained
from skdp.losses import HingeLoss, SmoothedHingeLoss
from skdp.privacy.accounting import check_sensitivity, single_release
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import (
    BaseDPSolver,
    Plan,
    Problem,
    ProblemSpec,
    _legacy_plan,
    james_stein_factor,
)
from skdp.solvers._capabilities import Capabilities

__all__ = ["CertificateError", "OutputPerturbation", "output_sensitivity"]

INNER = ("auto", "lbfgs", "gd", "subgradient")
# Default certified radius of smooth objectives as a fraction of Delta_F: the noise
# scale Delta_F + 2 r_max is then 10% above the exact-minimiser sensitivity.
DEFAULT_RADIUS_FRACTION = 0.05
# A certificate is accepted only below this fraction of r_max, so that the rounding
# error of a float64 gradient can never push the true distance above r_max.
CERTIFICATE_MARGIN = 0.5


class CertificateError(RuntimeError):
    """The optimiser's output could not be certified (floating point only; see docs)."""


@dataclass(frozen=True)
class OutputSensitivity:
    """The public constants of one output-perturbation release.

    Attributes
    ----------
    sensitivity : float
        ``Delta_F``: l2 sensitivity of the exact minimiser under replace-one.
    domain_radius : float
        ``R``: every possible minimiser lies in ``B(0, R)``.
    lipschitz : float
        ``L``: per-example gradient bound of the loss on ``B(0, R)``.
    objective_lipschitz : float
        ``L + alpha R``: subgradient bound of the whole objective on ``B(0, R)``.
    smoothness : float
        Smoothness of the objective (``inf`` when it is not smooth).
    """

    sensitivity: float
    domain_radius: float
    lipschitz: float
    objective_lipschitz: float
    smoothness: float


def output_sensitivity(spec: ProblemSpec) -> OutputSensitivity:
    """Sensitivity of the exact minimiser of ``spec``'s objective, from public bounds.

    Lemma (Lowy & Razaviyayn, Lemmas 0.1/0.2): if ``F_D`` and ``F_D'`` are ``mu``-strongly
    convex and their difference ``g`` has gradients bounded by ``L_g`` on a convex set
    containing both minimisers, then ``||w*(D) - w*(D')|| <= L_g / mu``.

    * Domain. ``F(w) >= inf phi + (alpha/2)||w||^2`` and ``F(w*) <= F(0) <= sup_y
      phi(0, y)`` (also for the tilted and robust objectives, which lie between the mean
      and the maximum of per-example losses, and equal ``phi(0, y)`` at ``w = 0``), so
      ``||w*|| <= R_impl = sqrt(2 gap0 / alpha)``; with an l2-ball constraint,
      ``R = min(radius, R_impl)``.
    * Rows. Features are clipped to ``X_f``; adversarial perturbations add at most
      ``rho_2`` (``rho`` for l2, ``rho sqrt(d)`` for l-inf balls); the intercept feature
      ``c`` is not perturbed: ``X = sqrt((X_f + rho_2)^2 + c^2)``. Scores on ``B(0, R)``
      satisfy ``|z| <= S = R X``, so ``L = sup_{|z| <= S} |phi'| X``.
    * ERM: ``g`` is ``(f(w; z') - f(w; z)) / n``, ``L_g = 2 L / n``: ``Delta = 2L/(alpha n)``.
    * Tilted ERM ``tau^-1 ln(mean e^{tau f_i})`` (regulariser outside the tilt):
      ``L_g <= 2 L C / (C + n - 1)`` with ``C = exp(tau (A - a))``, ``A - a`` the range
      of the loss on the domain (privacy-calibration.md 3.2, correcting the paper's
      Lemma 0.5 derivation).
    """
    mu = spec.alpha
    c = spec.intercept_feature
    x_feat = math.sqrt(max(spec.row_bound(2.0) ** 2 - c * c, 0.0))
    n_features = spec.n_params - (1 if c else 0)
    rho = spec.adversarial_radius
    rho_2 = rho if spec.adversarial_norm == 2 else rho * math.sqrt(n_features)
    x_bound = math.sqrt((x_feat + rho_2) ** 2 + c * c)
    radius = math.sqrt(2.0 * spec.initial_gap / mu)
    if isinstance(spec.constraint, L2Ball):
        radius = min(radius, spec.constraint.radius)
    score_bound = radius * x_bound
    lipschitz = spec.loss.derivative_bound_at(score_bound) * x_bound
    n = spec.n_samples
    if spec.tilt > 0:
        spread = spec.loss.value_range(score_bound)
        # C / (C + n - 1) = 1 / (1 + (n - 1) exp(-tau (A - a))), overflow-free.
        share = 1.0 / (1.0 + (n - 1) * math.exp(-spec.tilt * spread))
        delta_f = 2.0 * lipschitz * share / mu
    else:
        delta_f = 2.0 * lipschitz / (mu * n)
    smooth = spec.loss.smooth and spec.adversarial_radius == 0
    if smooth:
        # Loss curvature c X^2 plus alpha; tilting adds 2 L^2 tau (Lemma 4.2 of the
        # paper states L^2 tau; its proof gives 2 L^2 tau).
        beta = spec.loss.curvature_bound * x_bound**2 + mu + 2.0 * lipschitz**2 * spec.tilt
    else:
        beta = math.inf
    return OutputSensitivity(
        sensitivity=check_sensitivity(delta_f, "minimiser sensitivity"),
        domain_radius=radius,
        lipschitz=lipschitz,
        objective_lipschitz=lipschitz + mu * radius,
        smoothness=beta,
    )


class _Objective:
    """The strongly convex objective and its certificates on a :class:`Problem`.

    ``F(W) = agg_i ell_i(W) + (alpha/2) ||W||^2`` where ``ell_i`` is the loss (or its
    robust version ``max_{||v|| <= rho} phi((x_i + v)^T W)``) and ``agg`` is the mean or
    the tilted mean ``tau^-1 ln(mean e^{tau ell_i})``. For linear models the robust
    loss has a closed form: the perturbed score ranges over ``[z - r, z + r]`` with
    ``r = rho ||w_f||_*`` (``||.||_*`` the dual of the perturbation norm), and a convex
    ``phi`` is largest at an end point.
    """

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        spec = problem.spec
        self.spec = spec
        self.mu = spec.alpha
        self.n_features = problem.X.shape[1]
        self.dual_ord = 2 if spec.adversarial_norm == 2 else 1

    def _dual_norm(self, W: np.ndarray) -> float:
        return float(np.linalg.norm(W[: self.n_features, 0], ord=self.dual_ord))

    def parts(self, W: np.ndarray, dual_norm: float | None = None
              ) -> tuple[float, np.ndarray, float]:
        """``(F(W), g, c)``: every ``g + c u`` with ``u`` in the subdifferential of
        ``||w_f||_*`` (features only) is a subgradient of ``F`` at ``W``.

        ``dual_norm`` replaces ``||w_f||_*`` (the split l1 formulation passes
        ``sum(w+ + w-)``)."""
        spec = self.spec
        if spec.adversarial_radius == 0 and spec.tilt == 0:
            # Plain ERM: one blocked pass over X (the common, memory-bound case).
            total, g = self.problem.loss_and_gradient_sums(W)
            value, c = total / spec.n_samples, 0.0
            g /= spec.n_samples
        else:
            value, g, c = self._robust_or_tilted_parts(W, dual_norm)
        g += self.mu * W
        value += 0.5 * self.mu * float(np.sum(W * W))
        return value, g, c

    def _robust_or_tilted_parts(self, W: np.ndarray, dual_norm: float | None
                                ) -> tuple[float, np.ndarray, float]:
        """The loss part of :meth:`parts` for adversarial or tilted objectives."""
        spec, problem = self.spec, self.problem
        loss = spec.loss
        rho = spec.adversarial_radius
        Z = problem.scores(W)
        if rho > 0:
            r = rho * (self._dual_norm(W) if dual_norm is None else dual_norm)
            lo, hi = loss.value(Z - r, problem.Y), loss.value(Z + r, problem.Y)
            if r > 0:
                # At a tie both end points are active and the gradient of either piece is
                # a subgradient: take +1 (never 0, which would drop the rho u term).
                side = np.where(hi >= lo, 1.0, -1.0)
            else:
                # r = 0 (w_f = 0): the loss grows on the side where phi' points.
                side = np.sign(loss.derivative(Z, problem.Y)[:, 0])
            V = np.maximum(lo, hi)
            D = loss.derivative(Z + side[:, None] * r, problem.Y)
        else:
            V = loss.value(Z, problem.Y)
            D = loss.derivative(Z, problem.Y)
            side = None
        n = V.shape[0]
        if spec.tilt > 0:
            tau = spec.tilt
            value = (float(logsumexp(tau * V)) - math.log(n)) / tau
            weights = softmax(tau * V)
        else:
            value = float(np.mean(V))
            weights = np.full(n, 1.0 / n)
        g = problem.gradient_sum(D * weights[:, None])
        c = rho * float(np.sum(weights * D[:, 0] * side)) if side is not None else 0.0
        return value, g, c

    def value_and_gradient(self, W: np.ndarray) -> tuple[float, np.ndarray]:
        """``F(W)`` and one subgradient (the gradient where ``F`` is differentiable)."""
        value, g, c = self.parts(W)
        if c:
            g = g.copy()
            g[: self.n_features, 0] += c * self._dual_subgradient(W[: self.n_features, 0], None, c)
        return value, g

    def _dual_subgradient(self, w: np.ndarray, s: np.ndarray | None, c: float) -> np.ndarray:
        """``u`` in the subdifferential of ``||w||_*``; minimising ``||s + c u||`` if given."""
        if self.dual_ord == 1:
            u = np.sign(w)
            if s is not None:
                zero = w == 0
                u[zero] = np.clip(-s[zero] / c, -1.0, 1.0)
            return u
        norm = np.linalg.norm(w)
        if norm > 0:
            return w / norm
        if s is None:
            return np.zeros_like(w)
        s_norm = np.linalg.norm(s)
        return np.zeros_like(w) if s_norm == 0 else -s / s_norm * min(1.0, s_norm / c)

    def distance_bound(self, W: np.ndarray, radius: float | None) -> float:
        """Certified bound on ``||W - W*||`` from a subgradient (strong convexity).

        For a ``mu``-strongly convex ``F`` and any ``h`` in ``d(F + I_C)(W)``, ``W`` in
        ``C``: ``mu ||W - W*||^2 <= <h, W - W*>``, so ``||W - W*|| <= ||h|| / mu``. ``h``
        is the smallest such element we can form: the adversarial kink term and, on the
        boundary of the ball ``C = B(0, radius)``, the normal cone ``{lambda W}``.
        """
        on_sphere = False
        shift = 0.0
        if radius is not None:
            norm = float(np.linalg.norm(W))
            if norm > radius * (1 + 1e-12):
                return math.inf
            if norm >= radius * (1 - 1e-9):
                # The normal cone {lambda W} exists only ON the sphere: certify the point
                # moved radially onto it, and add the move (triangle inequality).
                sphere = W * (radius / norm)
                shift = float(np.linalg.norm(W - sphere))
                W, on_sphere = sphere, True
        _, g, c = self.parts(W)
        h = g.copy()
        if c:
            f = slice(0, self.n_features)
            h[f, 0] += c * self._dual_subgradient(W[f, 0], g[f, 0], c)
        if on_sphere:
            lam = max(0.0, -float(np.sum(h * W)) / float(np.sum(W * W)))
            h = h + lam * W
        return float(np.linalg.norm(h)) / self.mu + shift

    def hinge_gap_bound(self, W_dual: np.ndarray, smoothing: float
                        ) -> tuple[np.ndarray, float]:
        """Primal point and certified distance from a dual point (hinge ERM only).

        For ``P(W) = sum_k mean_i max(0, 1 - y_ik z_ik) + (alpha/2)||W||^2`` the dual is
        ``D(a) = sum_k [mean_i a_ik - ||sum_i a_ik y_ik x_i / n||^2 / (2 alpha)]`` over
        ``a`` in ``[0, 1]^{n x K}``; ``D(a) <= P*`` (weak duality) and strong convexity
        give ``||W(a) - W*|| <= sqrt(2 (P(W(a)) - D(a)) / alpha)`` with
        ``W(a) = sum_i a_ik y_ik x_i / (alpha n)``. ``a`` is the derivative of the hinge
        smoothed with width ``smoothing`` at ``W_dual`` (any ``a`` in the box is valid).
        """
        problem, mu = self.problem, self.mu
        Y = problem.Y
        n = Y.shape[0]
        A = np.clip((1.0 - Y * problem.scores(W_dual)) / smoothing, 0.0, 1.0)
        V = problem.gradient_sum(A * Y) / n
        W = V / mu
        dual = float(np.sum(A)) / n - 0.5 * float(np.sum(V * V)) / mu
        primal, _, _ = self.parts(W)
        gap = max(primal - dual, 0.0)
        return W, math.sqrt(2.0 * gap / mu)


class OutputPerturbation(BaseDPSolver):
    """Black-box output perturbation with a certified non-private optimiser.

    Minimises the strongly convex objective (plain, tilted or adversarially robust ERM;
    ``alpha > 0``, the intercept penalised too) with a fast non-private method, certifies
    that the result ``w_hat`` satisfies ``||w_hat - w*|| <= r_max``, releases
    ``Proj_{B(0, R)}(w_hat + z)``.

    Parameters
    ----------
    inner : {"auto", "lbfgs", "gd", "subgradient"} or callable, default="auto"
        The non-private optimiser. ``"lbfgs"`` (``"auto"``): scipy's L-BFGS (for the
        hinge loss: on smoothed hinges with a duality-gap certificate), falling back to
        the sure method below when its output cannot be certified. ``"gd"``: projected
        gradient descent for the public count that guarantees ``r_max`` (smooth
        objectives). ``"subgradient"``: the projected subgradient method with
        ``eta_t = 2/(mu (t + 1))`` and the weighted average (the paper's Theorem 2.1),
        whose accuracy is sure after a public count. A callable
        ``inner(fun, w0) -> w`` receives ``fun(w) -> (value, gradient)`` on flat arrays
        and is certified like L-BFGS.
    certified_radius : float, optional
        Public ``r_max``. Default: ``0.05 Delta_F`` for smooth objectives; for non-smooth
        ones (hinge, adversarial) the radius that the sure subgradient method reaches in
        ``max_iter`` steps, ``2 L_F / (mu sqrt(max_iter + 1))``, if larger.
    max_iter : int, default=100000
        Step budget of the sure subgradient fallback (non-smooth objectives).
    shrinkage : {"auto"} or None, default="auto"
        ``"auto"`` releases ``Proj_{B(0, R)}(c (w_hat + z))`` with the positive-part
        James-Stein factor ``c = max(0, 1 - E||z||^2 / ||w_hat + z||^2)`` (``E||z||^2``
        public: ``m (m + 1) b^2`` for the l2 Laplace of scale ``b``, ``m sigma^2`` for the
        Gaussian). ``c`` is a function of the noisy release and public constants only, so
        this is post-processing: the guarantee is unchanged. When the noise dwarfs the
        minimiser (small ``epsilon`` or ``n``) the release moves to ``0`` instead of
        landing on the boundary of ``B(0, R)``, far worse than the trivial output; when it
        does not, ``c`` is close to 1 (exactly 1 at ``epsilon = inf``). ``None`` releases
        ``Proj(w_hat + z)`` as in the paper.

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation; rows clipped to the public
    ``data_norm``; labels in the loss's public domain. The exact minimiser has l2
    sensitivity ``Delta_F`` (:func:`output_sensitivity`; ``2L/(mu n)`` for ERM). The
    released point before noise is within ``r_max`` of it whatever the data (the
    certificate is checked, or the method's count guarantees it), so its sensitivity is
    ``Delta_T = Delta_F + 2 r_max``. ``delta = 0``: noise with density proportional to
    ``exp(-epsilon ||z||_2 / Delta_T)`` is epsilon-DP (the density ratio at ``u`` and
    ``u + v`` is at most ``exp(epsilon ||v|| / Delta_T)`` by the triangle inequality);
    recorded as a ``PureDpEvent``. ``delta > 0``: ``N(0, sigma^2 I)`` with the analytic
    Gaussian ``sigma = sigma_B1(epsilon, delta) Delta_T`` (exact; the paper's Algorithm 2
    Gaussian is ``sqrt(2)`` too small and its ``c_delta`` formula 12-70% looser). The
    projection is post-processing. Reference: Lowy & Razaviyayn, "Output perturbation for
    differentially private convex optimization", Algorithms 1-3 and Propositions 2.1/2.2,
    with the corrections of docs/privacy.md (sure instead of in-expectation accuracy;
    minimiser domain; tilted ERM sensitivity; ``2 sqrt(2 alpha / mu)`` in Algorithm 3).
    """

    name = "output_perturbation"
    capabilities = Capabilities(
        algorithm=("output perturbation, Lowy-Razaviyayn Algs. 1-3 (ERM, tilted ERM, "
                   "adversarial training)"),
        needs_delta=False, accountants=("pure", "gaussian", "rdp", "pld"),
        default_accountant="gaussian",
        losses=("logistic", "multinomial", "hinge", "smoothed_hinge", "squared", "huber"),
        intercept="penalized",
        strongly_convex=True,
        objectives=("erm", "tilted", "adversarial", "tilted_adversarial"), secure=True,
    )

    def __init__(self, inner="auto", certified_radius=None, max_iter=100_000,
                 shrinkage="auto"):
        self.inner = inner
        self.certified_radius = certified_radius
        self.max_iter = max_iter
        self.shrinkage = shrinkage

    def _validate_params(self) -> None:
        if not (callable(self.inner) or self.inner in INNER):
            raise ValueError(
                f"OutputPerturbation.inner must be one of {INNER} or a callable, got "
                f"{self.inner!r}."
            )
        self._check_positive_real("certified_radius")
        self._check_positive_int("max_iter")
        if self.shrinkage not in ("auto", None):
            raise ValueError(
                f"OutputPerturbation.shrinkage must be 'auto' or None, got {self.shrinkage!r}."
            )

    def check_compatible(self, spec: ProblemSpec, accountant: str, relation: str) -> None:
        super().check_compatible(spec, accountant, relation)
        if spec.n_penalized != spec.n_params:
            raise IncompatibleSolverError(
                "output perturbation needs every coefficient penalised (the sensitivity "
                "argument uses strong convexity in all coordinates); build the problem "
                "with n_penalized == n_params."
            )
        if not isinstance(spec.constraint, Unconstrained | L2Ball):
            raise IncompatibleSolverError(
                "output perturbation supports constraint=None or 'l2' only (its "
                "sensitivity bound uses an l2 domain)."
            )
        if spec.adversarial_radius > 0 and spec.n_outputs != 1:
            raise IncompatibleSolverError(
                "adversarial training is available for binary classification and "
                "regression (one output) only."
            )
        if spec.adversarial_norm not in (2, math.inf):
            raise IncompatibleSolverError(
                f"adversarial_norm must be 2 or inf, got {spec.adversarial_norm}."
            )
        if spec.tilt > 0 and not math.isfinite(spec.loss.value_range(1.0)):
            raise IncompatibleSolverError(
                f"tilted ERM needs a loss with a bounded range; {type(spec.loss).__name__} "
                "has none."
            )

    # -- plan ------------------------------------------------------------------------------
    def plan(self, spec: ProblemSpec, budget: Budget, accountant: str, relation: str) -> Plan:
        bounds = output_sensitivity(spec)
        mu, radius = spec.alpha, bounds.domain_radius
        # The sure fallback: projected GD for smooth objectives, unless the subgradient
        # method is asked for; its step count and the default radius must match it.
        smooth = math.isfinite(bounds.smoothness) and self.inner != "subgradient"
        # Sure step count of the fallback for a target radius r:
        #  smooth: projected GD with step 1/beta contracts ||w - w*||^2 by (1 - mu/beta)
        #   per step from ||0 - w*|| <= R: T = 2 ln(R / r) / -ln(1 - mu/beta);
        #  non-smooth: the subgradient method's weighted average has
        #   F - F* <= 2 L_F^2 / (mu (T + 1)) and ||w - w*||^2 <= 2 (F - F*) / mu, so
        #   ||w - w*|| <= 2 L_F / (mu sqrt(T + 1)).
        if self.certified_radius is not None:
            r_max = float(self.certified_radius)
        else:
            r_max = DEFAULT_RADIUS_FRACTION * bounds.sensitivity
            if not smooth:
                sure = 2.0 * bounds.objective_lipschitz / (mu * math.sqrt(self.max_iter + 1))
                r_max = max(r_max, sure)
        if smooth:
            # GD aims at half the radius: its output is certified again, with a margin.
            target = CERTIFICATE_MARGIN * r_max
            rate = -math.log1p(-mu / bounds.smoothness)
            fallback_steps = max(1, math.ceil(2.0 * math.log(max(radius / target, 1.0)) / rate))
        else:
            # The subgradient bound is sure: no certificate, no margin.
            # (1 - 1e-12): the default radius is computed from max_iter; rounding must not
            # ask for one step more.
            fallback_steps = max(1, math.ceil(
                ((2.0 * bounds.objective_lipschitz / (mu * r_max)) ** 2 - 1.0) * (1 - 1e-12)))
            if fallback_steps > self.max_iter:
                raise IncompatibleSolverError(
                    f"certified_radius={r_max:.3g} needs {fallback_steps} subgradient steps "
                    f"on this non-smooth objective, more than max_iter={self.max_iter}; "
                    "raise max_iter or certified_radius (or leave it at None)."
                )
        sensitivity = check_sensitivity(bounds.sensitivity + 2.0 * r_max, "output sensitivity")
        settings = {
            "minimizer_sensitivity": bounds.sensitivity,
            "certified_radius": r_max,
            "sensitivity": sensitivity,
            "domain_radius": radius,
            "lipschitz": bounds.lipschitz,
            "smoothness": bounds.smoothness,
            "fallback_steps": fallback_steps,
            "fallback": "gd" if smooth else "subgradient",
        }
        # One release of sensitivity Delta_T: pure l2 Laplace (density ∝ exp(-eps ||z|| /
        # Delta_T)) or the calibrated Gaussian, scaled by Delta_T.
        release = single_release(budget, accountant, relation)
        event = release.event
        scale = release.unit_scale * sensitivity
        settings.update(mechanism=release.mechanism,
                        sigma=scale if release.mechanism == "gaussian" else 0.0,
                        laplace_scale=scale if release.mechanism == "l2_laplace" else 0.0)
        if release.mechanism == "gaussian":
            settings["noise_multiplier"] = release.unit_scale
        # Expected squared noise norm in R^m: l2 Laplace E||z||^2 = E[Gamma(m, b)^2] =
        # m (m + 1) b^2; Gaussian m sigma^2 (public; used by the shrinkage).
        m = spec.n_params * spec.n_outputs
        settings["noise_power"] = (m * (m + 1) * settings["laplace_scale"] ** 2
                                   + m * settings["sigma"] ** 2)
        return _legacy_plan(n_iter=1, event=event, accountant=accountant, relation=relation,
                    settings=settings)

    def release_noise_scale(self, plan: Plan) -> float:
        # Per-coordinate scale of the one noise draw (before the shrinkage).
        s = plan.settings
        return max(s["sigma"], s["laplace_scale"])

    # -- run -------------------------------------------------------------------------------
    def _run(self, problem: Problem, plan: Plan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        shape = (spec.n_params, spec.n_outputs)
        # Noise is drawn first, independently of the data.
        z = noise.release(plan.settings["mechanism"], shape, self.release_noise_scale(plan))
        W = self.certified_minimizer(problem, plan)
        radius = plan.settings["domain_radius"]
        return L2Ball(radius).project(self.shrink(W + z, plan.settings["noise_power"]))

    def shrink(self, noisy: np.ndarray, noise_power: float) -> np.ndarray:
        """Positive-part James-Stein shrinkage of the noisy point (post-processing).

        ``E||c (w* + z) - w*||^2 = (1 - c)^2 ||w*||^2 + c^2 E||z||^2`` is minimised at
        ``c = ||w*||^2 / (||w*||^2 + E||z||^2)``; ``||w + z||^2 - E||z||^2`` estimates
        ``||w*||^2`` (``E<w*, z> = 0``), which gives ``c = 1 - E||z||^2 / ||w + z||^2``,
        clipped at 0. It reads only the noisy release and the public noise power. Every
        minimiser lies in ``B(0, R)`` (and in the constraint), which contains 0 and is
        convex, so the projection that follows keeps the release there.
        """
        if self.shrinkage is None:
            return noisy
        return james_stein_factor(noisy, noise_power) * noisy

    def certified_minimizer(self, problem: Problem, plan: Plan) -> np.ndarray:
        """A point within ``certified_radius`` of the exact minimiser, for any data."""
        objective = _Objective(problem)
        spec = problem.spec
        shape = (spec.n_params, spec.n_outputs)
        r_max = plan.settings["certified_radius"]
        target = CERTIFICATE_MARGIN * r_max
        radius = plan.settings["domain_radius"]
        ball_radius = radius if spec.constraint.bounded else None
        inner = "lbfgs" if self.inner == "auto" else self.inner
        # L-BFGS stops once its largest gradient entry is below mu target / (4 sqrt(p)):
        # then ||grad|| / mu <= target / 4, certified below (no need to go further; without
        # privacy r_max is irrelevant, so solve to full precision).
        private = plan.settings["mechanism"] != "none"
        gtol = objective.mu * target / (4.0 * math.sqrt(np.prod(shape))) if private else 1e-13
        if callable(inner) or inner == "lbfgs":
            for W, bound in self._fast_candidates(objective, shape, inner, target,
                                                  ball_radius, gtol):
                if bound is None:
                    bound = objective.distance_bound(W, ball_radius)
                if bound <= target:
                    return W
        # The sure methods: their public step counts guarantee the radius for every data
        # set (GD: r_max / 2, the other half a floating-point margin). Their output is NOT
        # checked again: the certificate ||grad|| / mu can exceed the true distance by up
        # to beta / mu (more on an active constraint), so a check could fail on one data
        # set and pass on its neighbour, and an abort that depends on the data breaks the
        # guarantee (found by review: 80% of small constrained logistic fits aborted).
        gd = plan.settings["fallback"] == "gd"
        return (self._projected_gd if gd else self._subgradient)(objective, shape, plan, radius)

    def _fast_candidates(self, objective, shape, inner, target, ball_radius, gtol=1e-13):
        """``(W, bound)`` candidates of the fast path; ``bound`` is a certified distance
        to the minimiser, or ``None`` for the caller to certify ``W`` by a subgradient."""
        spec = objective.spec

        def fun(w):
            return _flat(objective, w, shape)

        w0 = np.zeros(int(np.prod(shape)))
        if isinstance(spec.loss, HingeLoss) and not isinstance(spec.loss, SmoothedHingeLoss) \
                and spec.objective_kind == "erm" and ball_radius is None:
            # Hinge ERM: L-BFGS on smoothed hinges of decreasing width, certified by the
            # duality gap of the hinge problem at the smoothed solution.
            for h in (0.5, 0.1, 0.02, 4e-3, 8e-4, 1.6e-4, 3.2e-5):
                smoothed = _Objective(_with_loss(objective.problem,
                                                 SmoothedHingeLoss(shape[1], h)))
                w0 = _lbfgs(lambda w, o=smoothed: _flat(o, w, shape), w0)
                W, dist = objective.hinge_gap_bound(w0.reshape(shape), h)
                if dist <= target:
                    yield W, dist
                    return
            return
        if spec.adversarial_radius > 0 and objective.dual_ord == 1 and not callable(inner):
            # l-inf adversary: the robust loss has the kink rho ||w_f||_1. With
            # w_f = p - m, p, m >= 0, the term rho sum(p + m) is smooth and equals
            # rho ||w_f||_1 at the optimum (raising p_j and m_j together only shrinks
            # every margin), so L-BFGS-B with bounds solves it, and coordinates where
            # both bounds are active come out exactly 0 (the certificate needs that).
            yield _split_l1_solve(objective, shape), None
        w = inner(fun, w0) if callable(inner) else _lbfgs(fun, w0, gtol)
        W = np.asarray(w, dtype=float).reshape(shape)
        if ball_radius is not None:
            W = L2Ball(ball_radius).project(W)
        yield W, None
        if spec.adversarial_radius > 0:
            # Kinks of ||w_f||_*: coordinates that should be exactly 0 rarely are after
            # L-BFGS; snapping tiny ones gives another candidate (certified or not).
            snapped = W.copy()
            f = slice(0, objective.n_features)
            scale = np.max(np.abs(W[f])) if W[f].size else 0.0
            snapped[f][np.abs(W[f]) <= 1e-6 * max(scale, 1e-300)] = 0.0
            yield snapped, None
            # A large radius makes w_f = 0 optimal (the kink of ||w_f||_* at 0), which
            # L-BFGS approaches but never reaches: fix w_f = 0, optimise the intercept.
            k = objective.n_features
            if k < shape[0]:
                def fun_rest(v):
                    Wr = np.zeros(shape)
                    Wr[k:, 0] = v
                    value, g = objective.value_and_gradient(Wr)
                    return value, g[k:, 0]

                zero = np.zeros(shape)
                zero[k:, 0] = _lbfgs(fun_rest, np.zeros(shape[0] - k))
            else:
                zero = np.zeros(shape)
            yield zero, None

    def _projected_gd(self, objective, shape, plan, radius):
        ball = L2Ball(radius)
        step = 1.0 / plan.settings["smoothness"]
        W = np.zeros(shape)
        for _ in range(plan.settings["fallback_steps"]):
            _, g = objective.value_and_gradient(W)
            W = ball.project(W - step * g)
        return W

    def _subgradient(self, objective, shape, plan, radius):
        # Lacoste-Julien, Schmidt & Bach (2012) / the paper's Theorem 2.1: steps
        # 2 / (mu (t + 1)), output sum_t t w_t * 2 / (T (T + 1)).
        ball = L2Ball(radius)
        mu = objective.mu
        steps = plan.settings["fallback_steps"]
        W = np.zeros(shape)
        total = np.zeros(shape)
        for t in range(1, steps + 1):
            total += t * W
            _, g = objective.value_and_gradient(W)
            W = ball.project(W - (2.0 / (mu * (t + 1))) * g)
        return total * (2.0 / (steps * (steps + 1)))


def _flat(objective: _Objective, w: np.ndarray, shape) -> tuple[float, np.ndarray]:
    value, g = objective.value_and_gradient(w.reshape(shape))
    return value, g.ravel()


def _split_l1_solve(objective: _Objective, shape) -> np.ndarray:
    """Minimise the l-inf-robust objective over ``(p, m, rest)`` with ``p, m >= 0``."""
    k = objective.n_features
    size = int(np.prod(shape))
    extra = size - k  # the intercept coefficient (one output: shape = (n_params, 1))

    def unpack(v):
        W = np.empty(shape)
        W[:k, 0] = v[:k] - v[k: 2 * k]
        W[k:, 0] = v[2 * k:]
        return W

    def fun(v):
        W = unpack(v)
        value, g, c = objective.parts(W, dual_norm=float(np.sum(v[: 2 * k])))
        gf = g[:k, 0]
        return value, np.concatenate([gf + c, -gf + c, g[k:, 0]])

    bounds = [(0.0, None)] * (2 * k) + [(None, None)] * extra
    result = minimize(fun, np.zeros(2 * k + extra), jac=True, method="L-BFGS-B",
                      bounds=bounds,
                      options={"maxiter": 5000, "gtol": 1e-13, "ftol": 1e-15, "maxcor": 20})
    return unpack(result.x)


def _lbfgs(fun: Callable, w0: np.ndarray, gtol: float = 1e-13) -> np.ndarray:
    result = minimize(fun, w0, jac=True, method="L-BFGS-B",
                      options={"maxiter": 2000, "gtol": gtol, "ftol": 0.0, "maxcor": 20})
    return result.x


def _with_loss(problem: Problem, loss) -> Problem:
    return replace(problem, spec=replace(problem.spec, loss=loss))
