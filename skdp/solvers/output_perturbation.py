"""Black-box output perturbation (Lowy & Razaviyayn, Algorithms 1-3), certified.

A non-private optimiser minimises a strongly convex objective (ERM, tilted ERM or the
adversarially robust loss); its output is CERTIFIED to lie within a public radius
``r_max`` of the exact minimiser, then noise calibrated to ``Delta_F + 2 r_max`` is added
(pure epsilon-DP l2 "multivariate Laplace" when ``delta = 0``, the exact analytic Gaussian
when ``delta > 0``). The objective, its sensitivity bound and certificates live in
:mod:`skdp.solvers._output_perturbation_objective` (re-exported here). Derivations:
docs/algorithms/output_perturbation.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skdp._params import OPTIONAL_COUNT, OPTIONAL_POSITIVE, store_params
from skdp._sklearn_compat import StrOptions
from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import L2Ball
from skdp.losses import SmoothedHingeLoss
from skdp.privacy.accounting import check_sensitivity, single_release
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import (
    BaseDPSolver,
    Plan,
    Problem,
    ProblemSpec,
    james_stein_factor,
)
from skdp.solvers._capabilities import LOSS_NAMES, Capabilities
from skdp.solvers._output_perturbation_objective import (
    OutputSensitivity,
    _flat,
    _lbfgs,
    _Objective,
    _split_l1_solve,
    _with_loss,
    output_sensitivity,
)

__all__ = [
    "CertificateError",
    "OutputPerturbation",
    "OutputPerturbationPlan",
    "OutputSensitivity",
    "output_sensitivity",
]

INNER = ("auto", "lbfgs", "gd", "subgradient")
# Default certified radius of smooth objectives as a fraction of Delta_F: the noise
# scale Delta_F + 2 r_max is then 10% above the exact-minimiser sensitivity.
DEFAULT_RADIUS_FRACTION = 0.05
#: A certificate is accepted only below this fraction of ``r_max``, so that the rounding
#: error of a float64 gradient can never push the true distance above ``r_max`` (also
#: objective perturbation's certificates, :mod:`skdp.solvers._perturbed_objective`).
CERTIFICATE_MARGIN = 0.5


class CertificateError(RuntimeError):
    """The optimiser's output could not be certified (floating point only; see docs)."""


@dataclass(frozen=True, kw_only=True)
class OutputPerturbationPlan(Plan):
    """The public constants of one output-perturbation release.

    Attributes
    ----------
    minimizer_sensitivity : float
        ``Delta_F``: l2 sensitivity of the exact minimiser (:func:`output_sensitivity`).
    certified_radius : float
        ``r_max``: the released point before noise is within it of the exact minimiser.
    sensitivity : float
        ``Delta_T = Delta_F + 2 r_max``, the sensitivity the noise is calibrated to.
    domain_radius : float
        ``R``: every minimiser lies in ``B(0, R)``; the release is projected onto it.
    lipschitz : float
        ``L``: per-example gradient bound of the loss on ``B(0, R)``.
    smoothness : float
        Smoothness of the objective (``inf`` when it is not smooth).
    fallback_steps : int
        Public step count of the sure fallback method.
    fallback : {"gd", "subgradient"}
        The sure fallback: projected gradient descent (smooth) or the projected
        subgradient method.
    mechanism : {"gaussian", "l2_laplace", "none"}
        The release's noise law.
    sigma : float
        Gaussian std (0 for the other mechanisms).
    laplace_scale : float
        Scale of the l2 Laplace (0 for the other mechanisms).
    noise_multiplier : float or None
        ``sigma / Delta_T`` (Gaussian only).
    noise_power : float
        ``E||z||^2``, public (the James-Stein shrinkage reads it).
    """

    minimizer_sensitivity: float
    certified_radius: float
    sensitivity: float
    domain_radius: float
    lipschitz: float
    smoothness: float
    fallback_steps: int
    fallback: str
    mechanism: str
    sigma: float
    laplace_scale: float
    noise_multiplier: float | None = None
    noise_power: float


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
        public): post-processing, the guarantee is unchanged. When the noise dwarfs the
        minimiser the release moves to ``0`` instead of the boundary of ``B(0, R)``
        (docs/algorithms/output_perturbation.md, "Shrinkage"). ``None`` releases
        ``Proj(w_hat + z)`` as in the paper.

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation; rows clipped to the public
    ``data_norm``; labels in the loss's public domain; ``alpha > 0`` on every coefficient.
    The exact minimiser has l2 sensitivity ``Delta_F`` (:func:`output_sensitivity`;
    ``2L/(mu n)`` for ERM). The released point before noise is within ``r_max`` of it
    whatever the data (the certificate is checked, or the sure method's public count
    guarantees it), so its sensitivity is ``Delta_T = Delta_F + 2 r_max``. ``delta = 0``:
    l2 Laplace noise (density proportional to ``exp(-epsilon ||z||_2 / Delta_T)``),
    epsilon-DP, a ``PureDpEvent``; ``delta > 0``: the analytic Gaussian ``sigma =
    sigma_B1(epsilon, delta) Delta_T``. The projection and the shrinkage are
    post-processing.

    Reference: Lowy & Razaviyayn, "Output perturbation for differentially private convex
    optimization", Algorithms 1-3 and Propositions 2.1/2.2. Derivations and the
    corrections to the paper (sure instead of in-expectation accuracy; minimiser domain;
    tilted ERM sensitivity; Algorithm 2's Gaussian; ``2 sqrt(2 alpha / mu)`` in Algorithm
    3): docs/algorithms/output_perturbation.md and docs/privacy.md, section 6b.
    """

    name = "output_perturbation"
    capabilities = Capabilities(
        algorithm=("output perturbation, Lowy-Razaviyayn Algs. 1-3 (ERM, tilted ERM, "
                   "adversarial training)"),
        needs_delta=False, accounting_methods=("pure", "gaussian", "rdp", "pld"),
        default_accounting="gaussian",
        losses=LOSS_NAMES,
        intercept="penalized",
        strongly_convex=True,
        objectives=("erm", "tilted", "adversarial", "tilted_adversarial"), secure=True,
        out_of_core=True,
    )
    _parameter_constraints = {
        "inner": [StrOptions(set(INNER)), callable],
        "certified_radius": OPTIONAL_POSITIVE,
        "max_iter": OPTIONAL_COUNT,
        "shrinkage": [StrOptions({"auto"}), None],
    }

    def __init__(self, inner="auto", certified_radius=None, max_iter=100_000,
                 shrinkage="auto"):
        store_params(self, locals())

    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """The generic check, then the conditions on the objective's numbers.

        <<check_sections>>
            If a generic check fails, adversarial training meets more than one output or
            a norm other than 2 and inf, or tilted ERM meets a loss of unbounded range.
        """
        # The declaration covers the constraint (none or l2: the sensitivity uses an l2
        # domain) and the penalised intercept; these depend on the objective's numbers.
        super().check_compatible(spec, accounting, relation)
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
    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> OutputPerturbationPlan:
        """Fix the certified radius, the sure fallback's steps and the output noise.

        <<plan_parameters>>

        Returns
        -------
        OutputPerturbationPlan
            One release of sensitivity ``Delta + 2 r`` (the minimiser's sensitivity plus
            twice the certified radius), with l2-Laplace or Gaussian noise.

        Raises
        ------
        IncompatibleSolverError
            If the subgradient fallback needs more than ``max_iter`` steps for the
            certified radius.
        """
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
        # One release of sensitivity Delta_T: pure l2 Laplace (density ∝ exp(-eps ||z|| /
        # Delta_T)) or the calibrated Gaussian, scaled by Delta_T.
        release = single_release(budget, accounting, relation)
        scale = release.unit_scale * sensitivity
        sigma = scale if release.mechanism == "gaussian" else 0.0
        laplace_scale = scale if release.mechanism == "l2_laplace" else 0.0
        # Expected squared noise norm in R^m: l2 Laplace E||z||^2 = E[Gamma(m, b)^2] =
        # m (m + 1) b^2; Gaussian m sigma^2 (public; used by the shrinkage).
        m = spec.n_params * spec.n_outputs
        return OutputPerturbationPlan(
            n_iter=1, event=release.event, accounting=accounting, relation=relation,
            minimizer_sensitivity=bounds.sensitivity, certified_radius=r_max,
            sensitivity=sensitivity, domain_radius=radius, lipschitz=bounds.lipschitz,
            smoothness=bounds.smoothness, fallback_steps=fallback_steps,
            fallback="gd" if smooth else "subgradient", mechanism=release.mechanism,
            sigma=sigma, laplace_scale=laplace_scale,
            noise_multiplier=release.unit_scale if release.mechanism == "gaussian" else None,
            noise_power=m * (m + 1) * laplace_scale ** 2 + m * sigma ** 2)

    def release_noise_scale(self, plan: OutputPerturbationPlan) -> float:
        """Scale of the one noise draw, Gaussian or l2-Laplace (before the shrinkage).

        <<release_parameters>>

        Returns
        -------
        float
            The per-coordinate scale of the output noise.
        """
        # Per-coordinate scale of the one noise draw (before the shrinkage).
        return max(plan.sigma, plan.laplace_scale)

    # -- run -------------------------------------------------------------------------------
    def _run(self, problem: Problem, plan: OutputPerturbationPlan, noise: NoiseSource
             ) -> np.ndarray:
        spec = problem.spec
        shape = (spec.n_params, spec.n_outputs)
        # Noise is drawn first, independently of the data.
        z = noise.release(plan.mechanism, shape, self.release_noise_scale(plan))
        W = self.certified_minimizer(problem, plan)
        radius = plan.domain_radius
        return L2Ball(radius).project(self.shrink(W + z, plan.noise_power))

    def shrink(self, noisy: np.ndarray, noise_power: float) -> np.ndarray:
        """Positive-part James-Stein shrinkage of the noisy point (post-processing).

        ``E||c (w* + z) - w*||^2 = (1 - c)^2 ||w*||^2 + c^2 E||z||^2`` is minimised at
        ``c = ||w*||^2 / (||w*||^2 + E||z||^2)``; ``||w + z||^2 - E||z||^2`` estimates
        ``||w*||^2`` (``E<w*, z> = 0``), which gives ``c = 1 - E||z||^2 / ||w + z||^2``,
        clipped at 0. It reads only the noisy release and the public noise power. Every
        minimiser lies in ``B(0, R)`` (and in the constraint), which contains 0 and is
        convex, so the projection that follows keeps the release there.

        Parameters
        ----------
        noisy : ndarray of shape (n_params, n_outputs)
            The noisy release.
        noise_power : float
            Public ``E||z||^2`` of the noise.

        Returns
        -------
        ndarray of shape (n_params, n_outputs)
            ``c * noisy`` (``noisy`` itself with ``shrinkage=None``).
        """
        if self.shrinkage is None:
            return noisy
        return james_stein_factor(noisy, noise_power) * noisy

    def certified_minimizer(self, problem: Problem, plan: OutputPerturbationPlan
                            ) -> np.ndarray:
        """A point within ``certified_radius`` of the exact minimiser, for any data.

        A fast solve whose certificate passes, else the sure fallback, whose public step
        count guarantees the radius.

        Parameters
        ----------
        problem : Problem
            The data and its public specification.
        plan : OutputPerturbationPlan
            The plan (certified radius, fallback and its steps).

        Returns
        -------
        ndarray of shape (n_params, n_outputs)
            The certified point, before the noise.
        """
        objective = _Objective(problem)
        spec = problem.spec
        shape = (spec.n_params, spec.n_outputs)
        r_max = plan.certified_radius
        target = CERTIFICATE_MARGIN * r_max
        radius = plan.domain_radius
        ball_radius = radius if spec.constraint.bounded else None
        inner = "lbfgs" if self.inner == "auto" else self.inner
        # L-BFGS stops once its largest gradient entry is below mu target / (4 sqrt(p)):
        # then ||grad|| / mu <= target / 4, certified below (no need to go further; without
        # privacy r_max is irrelevant, so solve to full precision).
        private = plan.mechanism != "none"
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
        gd = plan.fallback == "gd"
        return (self._projected_gd if gd else self._subgradient)(objective, shape, plan, radius)

    def _fast_candidates(self, objective, shape, inner, target, ball_radius, gtol=1e-13):
        """``(W, bound)`` candidates of the fast path; ``bound`` is a certified distance
        to the minimiser, or ``None`` for the caller to certify ``W`` by a subgradient."""
        spec = objective.spec

        def fun(w):
            return _flat(objective, w, shape)

        w0 = np.zeros(int(np.prod(shape)))
        if spec.loss.name == "hinge" and spec.objective_kind == "erm" and ball_radius is None:
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
        step = 1.0 / plan.smoothness
        W = np.zeros(shape)
        for _ in range(plan.fallback_steps):
            _, g = objective.value_and_gradient(W)
            W = ball.project(W - step * g)
        return W

    def _subgradient(self, objective, shape, plan, radius):
        # Lacoste-Julien, Schmidt & Bach (2012) / the paper's Theorem 2.1: steps
        # 2 / (mu (t + 1)), output sum_t t w_t * 2 / (T (T + 1)).
        ball = L2Ball(radius)
        mu = objective.mu
        steps = plan.fallback_steps
        W = np.zeros(shape)
        total = np.zeros(shape)
        for t in range(1, steps + 1):
            total += t * W
            _, g = objective.value_and_gradient(W)
            W = ball.project(W - (2.0 / (mu * (t + 1))) * g)
        return total * (2.0 / (steps * (steps + 1)))
