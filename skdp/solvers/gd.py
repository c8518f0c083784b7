"""DP-GD: noisy projected full-batch gradient descent (Wang, Ye & Xu 2017, Algorithm 4)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event as dpe
from scipy.linalg import solve_discrete_lyapunov

from skdp._params import OPTIONAL_COUNT, OPTIONAL_POSITIVE, store_params
from skdp._sklearn_compat import StrOptions
from skdp.exceptions import IncompatibleSolverError
from skdp.privacy.accounting import (
    analytic_gaussian_multiplier,
    calibrate_noise_multiplier,
    check_sensitivity,
    gaussian_event,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import (
    MAX_AUTO_ITER,
    BaseDPSolver,
    Plan,
    Problem,
    ProblemSpec,
    averaged_from,
)
from skdp.solvers._capabilities import Capabilities

__all__ = ["GDPlan", "NoisyGD", "full_batch_gaussian"]

ITERATES = ("last", "average", "tail", "random")
MOMENTA = ("auto", "nesterov", "none")
# Above this condition number the stationary noise factor takes its asymptotic form.
_ASYMPTOTIC_KAPPA = 1e6


def nesterov_momentum(kappa: float) -> float:
    """Constant momentum ``(sqrt(kappa) - 1) / (sqrt(kappa) + 1)`` of Nesterov's method for
    ``alpha``-strongly convex, ``beta``-smooth objectives (``kappa = beta / alpha``)."""
    root = math.sqrt(kappa)
    return (root - 1.0) / (root + 1.0)


def momentum_at(momentum: float, t: int) -> float:
    """Momentum of step ``t`` (0-based): ``min(m, t / (t + 3))``.

    The convex (FISTA) schedule ``t / (t + 3)`` until it reaches the strongly convex
    constant ``m``: when ``T`` is capped far below ``sqrt(kappa)`` (tiny ``alpha``) the
    constant ``m ~ 1`` would barely damp the iteration, while the convex schedule keeps
    Nesterov's ``O(1 / T^2)`` rate; from step ``~ sqrt(kappa) / 2`` on, it is ``m``.
    """
    return min(momentum, t / (t + 3.0))


def stationary_noise_factor(kappa: float, momentum: float) -> float:
    """Stationary excess risk per noisy coordinate in the slowest direction, in units of
    ``sigma^2 / beta``.

    On a quadratic of curvature ``lam = alpha = beta / kappa`` the iteration ``y_t = w_t +
    m (w_t - w_{t-1})``, ``w_{t+1} = y_t - eta (lam y_t + xi_t)`` with ``eta = 1 / beta``
    and ``xi_t ~ N(0, sigma^2)`` is the linear system ``s_{t+1} = A s_t + b xi_t`` on
    ``s_t = (w_t, w_{t-1})``, ``A = [[a (1 + m), -a m], [1, 0]]``, ``a = 1 - 1 / kappa``,
    ``b = (-eta, 0)``. Its stationary covariance ``P`` solves the Lyapunov equation
    ``P = A P A^T + b b^T``, and the excess risk is ``(lam / 2) P_00``. Data-free: a
    function of the public ``kappa`` and ``m``. ``m = 0`` (gradient descent) gives
    ``1 / (2 (2 - 1 / kappa)) ~ 1/4``; Nesterov's momentum about ``sqrt(kappa) / 8`` (0.97 at
    ``kappa = 51``), its largest value over the curvatures in ``[alpha, beta]``.
    """
    if kappa > _ASYMPTOTIC_KAPPA and momentum > 0:
        # The Lyapunov solve loses precision as 1 - m -> 0 (and fails at m = 1); its
        # value is sqrt(kappa) / 8 to 0.2% from kappa = 1e5 on.
        return math.sqrt(kappa) / 8.0
    a = 1.0 - 1.0 / kappa
    A = np.array([[a * (1.0 + momentum), -a * momentum], [1.0, 0.0]])
    # P in units of (eta sigma)^2; (lam / 2) eta^2 = 1 / (2 kappa beta).
    P = solve_discrete_lyapunov(A, np.array([[1.0, 0.0], [0.0, 0.0]]))
    return float(P[0, 0]) / (2.0 * kappa)


def _gd_event(z: float, n_iter: int, accounting: str, relation: str) -> dpe.DpEvent:
    """``n_iter`` Gaussian releases with noise ``z`` times the sensitivity."""
    return dpe.SelfComposedDpEvent(
        gaussian_event(z, 1.0, accounting=accounting, relation=relation), n_iter
    )


def full_batch_gaussian(
    sensitivity: float, n_iter: int, budget: Budget, accounting: str, relation: str,
    clip_norm: float,
) -> dict:
    """The plan fields of ``n_iter`` full-batch Gaussian releases of one sensitivity.

    ``"gaussian"``: the ``T`` releases, each ``Delta``-sensitive with noise ``sigma``,
    compose exactly into one Gaussian release of sensitivity ``sqrt(T) Delta``, so
    ``sigma = sqrt(T) Delta sigma_B1(epsilon, delta)`` (exact). Other accounting methods calibrate
    their (upper-bounding) ledger, for which that multiplier is a lower bound. ``z = 0``
    when ``epsilon = inf``. Shared by DP-GD and DP-AccMD: ``n_iter``, ``event``,
    ``accounting``, ``relation``, ``sigma``, ``noise_multiplier`` (``z``), ``sensitivity``
    and ``clip_norm``, as keyword arguments of their plans.
    """
    if not budget.is_private:
        z = 0.0
    elif accounting == "gaussian":
        z = analytic_gaussian_multiplier(budget, n_iter)
    else:
        z = calibrate_noise_multiplier(
            _gd_event, (n_iter, accounting, relation), budget,
            accounting=accounting, relation=relation,
            lower_bound=analytic_gaussian_multiplier(budget, n_iter),
        )
    sigma = z * sensitivity
    event = dpe.SelfComposedDpEvent(
        gaussian_event(sigma, sensitivity, accounting=accounting, relation=relation), n_iter
    )
    return dict(n_iter=n_iter, event=event, accounting=accounting, relation=relation,
                sigma=sigma, noise_multiplier=z, sensitivity=sensitivity,
                clip_norm=clip_norm)


@dataclass(frozen=True, kw_only=True)
class GDPlan(Plan):
    """Constants of a DP-GD run, fixed from public quantities before any data is read.

    Attributes
    ----------
    sigma : float
        Per-coordinate standard deviation of the Gaussian noise added to each mean
        gradient (gradient units; ``noise_multiplier * sensitivity``).
    noise_multiplier : float
        ``sigma / sensitivity`` (0 when ``epsilon = inf``).
    sensitivity : float
        Replace-one l2 sensitivity ``2 C / n`` of one clipped mean gradient.
    clip_norm : float
        Per-example gradient clip ``C`` (l2).
    step_size : float
        Step size ``eta`` (parameter units per gradient unit).
    momentum : float
        Extrapolation weight ``m`` of Nesterov's method for strongly convex objectives (0:
        plain gradient descent); step ``t`` uses :func:`momentum_at`, ``min(m, t / (t +
        3))``.
    """

    sigma: float
    noise_multiplier: float
    sensitivity: float
    clip_norm: float
    step_size: float
    momentum: float = 0.0


class NoisyGD(BaseDPSolver):
    """DP-GD: projected gradient descent on clipped full-batch gradients plus Gaussian noise.

    Each of the ``T`` iterations releases ``g_t = mean_i clip_C(grad f(y_t; z_i)) + N(0,
    sigma^2 I)`` at the extrapolated point ``y_t = w_t + m (w_t - w_{t-1})`` and steps
    ``w_{t+1} = Proj(y_t - eta (g_t + alpha y_t))``; ``m = 0`` is plain gradient descent.

    Parameters
    ----------
    n_iter : int, optional
        Number of iterations ``T``. Default: from public quantities (see
        docs/algorithms/gd.md).
    step_size : float, optional
        Step size ``eta``. Default ``1 / beta`` with ``beta`` the public smoothness bound
        (Theorems 6.2 and 6.3 of the paper use ``eta = 1/L``).
    clip_norm : float, optional
        Per-example gradient clip ``C``. Default: with a private budget, the loss's
        default clip times the row bound
        (:meth:`~skdp.losses.GLMLoss.default_clip_derivative`): the derivative's bound at
        the start ``w = 0`` for the logistic losses (``1/2``, ``sqrt((K - 1) / K)`` for
        the multinomial one), so no gradient is clipped at the start and only those that
        grow beyond it later (rows the model gets wrong) are; half the label bound for
        the squared loss without a bounded constraint (its derivative is then unbounded);
        the loss bound for the others.
        At ``epsilon=inf`` the loss bound ``sup|phi'| * data_norm``, which makes
        clipping lossless. docs/algorithms/gd.md.
    iterate : {"last", "average", "tail", "random"}, default="last"
        Output the last iterate, the average of ``w_1..w_T``, the suffix average of the
        last ``ceil(T/2)`` iterates (:func:`~skdp.solvers._base.tail_start`; it averages
        the noise like ``"average"`` without the bias towards the early iterates), or a
        uniformly random one of them (Section 6.2 of the paper).
    momentum : {"auto", "nesterov", "none"}, default="auto"
        ``"nesterov"``: Nesterov's constant momentum ``m = (sqrt(kappa) - 1) / (sqrt(kappa)
        + 1)`` for the ``alpha``-strongly convex objective, ``kappa = 1 / (eta alpha)``; it
        reaches the noise floor in about ``sqrt(kappa)`` instead of ``kappa`` passes, and
        the shorter run needs less noise per release. It reads only released noisy
        gradients (post-processing: same ledger). Needs ``alpha > 0``. ``"none"``: plain
        gradient descent. ``"auto"``: ``"nesterov"`` when ``alpha > 0``, else ``"none"``.

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation. Rows are clipped to the
    public ``data_norm`` and per-example gradients to ``C`` in l2, so the mean gradient
    with the public denominator ``n`` has sensitivity ``2C/n``; the ``T`` Gaussian
    releases are exactly ``mu``-GDP with ``mu = sqrt(T) Delta / sigma``, calibrated
    exactly with the analytic Gaussian by the default accounting method (``"gaussian"``) and by
    ``dp_accounting`` with ``"rdp"``/``"pld"``. The projection, the regulariser, the
    momentum and the choice of output iterate are post-processing.

    Assumptions: none on the data (rows and gradients are clipped); ``n`` public. The
    default ``T`` (``alpha > 0``: a strongly convex trade-off of contraction against
    accumulated noise, for the chosen momentum; ``alpha = 0``: Theorem 6.3) is capped at
    2000.

    Reference: Wang, Ye & Xu, "Differentially private empirical risk minimization
    revisited: faster and more general", NeurIPS 2017, Algorithm 4 and Theorems
    6.1-6.3. Calibration and the iteration-count derivation: docs/algorithms/gd.md.
    """

    name = "gd"
    capabilities = Capabilities(
        algorithm="DP-GD, Wang-Ye-Xu 2017 Alg. 4, Thms 6.1-6.3",
        accounting_methods=("gaussian", "rdp", "pld"), default_accounting="gaussian",
        constraints=("none", "l2", "l1", "lp", "simplex"), secure=True, out_of_core=True,
    )
    _parameter_constraints = {
        "n_iter": OPTIONAL_COUNT,
        "step_size": OPTIONAL_POSITIVE,
        "clip_norm": OPTIONAL_POSITIVE,
        "iterate": [StrOptions(set(ITERATES))],
        "momentum": [StrOptions(set(MOMENTA))],
    }

    def __init__(self, n_iter=None, step_size=None, clip_norm=None, iterate="last",
                 momentum="auto"):
        store_params(self, locals())

    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """The generic check, then: Nesterov's momentum needs ``alpha > 0``.

        <<check_sections>>
            If a generic check fails, or ``momentum="nesterov"`` with ``alpha = 0``.
        """
        super().check_compatible(spec, accounting, relation)
        if self.momentum == "nesterov" and not spec.alpha > 0:
            raise IncompatibleSolverError(
                f"solver {self.name!r} with momentum='nesterov' needs alpha > 0 (the strong "
                "convexity fixes its momentum); set momentum='none' (or 'auto'), or alpha > 0."
            )

    def _step(self, spec: ProblemSpec) -> float:
        return float(self.step_size) if self.step_size is not None else 1.0 / spec.smoothness

    def _momentum(self, spec: ProblemSpec) -> float:
        """Public momentum ``m`` (0 without acceleration); ``kappa = 1 / (eta alpha)``."""
        if self.momentum == "none" or not spec.alpha > 0:
            return 0.0
        return nesterov_momentum(max(1.0, 1.0 / (self._step(spec) * spec.alpha)))

    def default_clip(self, spec: ProblemSpec, budget: Budget) -> float:
        """The per-example clip ``C`` of a plan: ``clip_norm``, or the loss's default.

        <<spec_parameters>>
        budget : Budget
            The fit's budget (public).

        Returns
        -------
        float
            ``clip_norm`` (tightened to the loss bound) when set or at ``epsilon=inf``;
            with a private budget ``default_clip_derivative`` times the row bound,
            tightened to the loss bound.

        Raises
        ------
        IncompatibleSolverError
            If neither a finite loss bound nor a default clip exists (the squared loss at
            ``epsilon=inf`` without a constraint or ``clip_norm``).
        """
        if self.clip_norm is None and budget.is_private:
            # Public: the loss, K, the label and row bounds. For the logistic losses
            # |phi'(0, y)| x' bounds every per-example gradient at w = 0, so the clip
            # loses nothing at the start; the noise, proportional to C, is halved for the
            # logistic loss (1/2 against 1) and cut by sqrt(2 K / (K - 1)) for the
            # multinomial one. The squared loss clips its residuals at half the label
            # bound where its scores are unbounded (a Huber fit for the largest rows),
            # losslessly on bounded ones. Measured on the tails' tasks:
            # docs/algorithms/gd.md, "The default clip".
            start = (spec.loss.default_clip_derivative(spec.n_outputs, spec.score_bound)
                     * spec.row_bound(2.0))
            if math.isfinite(start):
                return min(start, spec.gradient_bound)
        return self.gradient_clip(spec)

    def auto_n_iter(self, spec: ProblemSpec, budget: Budget, sensitivity: float) -> int:
        """Data-independent default ``T`` (derivation: docs/algorithms/gd.md).

        <<n_iter_parameters>>

        Returns
        -------
        int
            ``n_iter`` when set; otherwise, with ``alpha > 0``, the trade-off of the
            (accelerated) contraction against the accumulated noise, and with
            ``alpha = 0`` Theorem 6.3's count; in ``[1, 2000]``.
        """
        if self.n_iter is not None:
            return int(self.n_iter)
        beta = spec.smoothness
        if spec.alpha > 0:
            kappa = max(1.0, 1.0 / (self._step(spec) * spec.alpha))
            momentum = self._momentum(spec)
            # Per-step contraction of the suboptimality near the optimum: (1 - 1/r)^2 with
            # r = kappa (gradient descent) or sqrt(kappa) (Nesterov), i.e. exp(-2 T / r).
            rate = math.sqrt(kappa) if momentum > 0 else kappa
            if budget.is_private:
                # Minimiser of Delta0 exp(-2 T / r) + p c T s1^2 / beta, the contraction
                # against the stationary noise c sigma^2 / beta per coordinate with
                # sigma^2 = T s1^2 (s1 = noise of one release with the whole budget;
                # c = stationary_noise_factor: 1/4 for gradient descent, as before):
                # T = (r / 2) ln(2 Delta0 beta / (r p c s1^2)). docs/algorithms/gd.md.
                s1 = sensitivity * analytic_gaussian_multiplier(budget, 1)
                c = stationary_noise_factor(kappa, momentum)
                ratio = 2.0 * spec.initial_gap / self._step(spec) / (
                    rate * spec.dimension * c * s1**2)
                # When the noise dominates (ratio <= e) the bound would stop at once; the
                # floor is one contraction time r / 2, after the momentum_at ramp-up
                # (t / (t + 3) reaches m at t = 3 m / (1 - m); 0 for gradient descent).
                ramp = 3.0 * momentum / max(1.0 - momentum, 1e-300)  # m rounds to 1 at kappa ~ 1e32
                t = max(0.5 * rate * math.log(max(ratio, math.e)), ramp + 0.5 * rate)
            else:
                t = rate * math.log(spec.gap_reduction(budget, spec.gradient_bound))
        elif budget.is_private:
            # Theorem 6.3: T = sqrt(L n eps) / (sqrt(p ln(1/delta)) G), G the clip, for
            # scores of order the loss's residual scale r = target_diameter / 2 (1 for
            # the classification losses): a squared or Huber loss with labels in [-B, B]
            # has G ~ B X and its parameters ~ B / X, so T = ... * r / G does not change
            # with the units of y (with r = 1 it fell like 1 / B: one step on raw
            # diabetes).
            g = 0.5 * sensitivity * spec.n_samples  # the plan's clip C (sensitivity 2C/n)
            r = 0.5 * spec.loss.target_diameter(spec.n_outputs)
            r = r if math.isfinite(r) and r > 0 else 1.0
            t = math.sqrt(beta * spec.n_samples * budget.epsilon) * r / (
                math.sqrt(spec.dimension * math.log(1.0 / budget.delta)) * g
            )
        else:
            t = MAX_AUTO_ITER
        return int(min(max(math.ceil(t), 1), MAX_AUTO_ITER))

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> GDPlan:
        """Fix ``T``, the step size, the momentum and the Gaussian noise of DP-GD.

        <<plan_parameters>>

        Returns
        -------
        GDPlan
            ``T`` full-batch Gaussian releases of sensitivity ``2 C / n``, their noise
            calibrated to ``budget`` (exactly, with ``"gaussian"``).
        """
        clip = self.default_clip(spec, budget)
        # Mean of n per-example gradients of norm <= C with denominator n: replacing one
        # record moves the sum by at most 2C.
        sensitivity = check_sensitivity(2.0 * clip / spec.n_samples, "gradient sensitivity 2C/n")
        n_iter = self.auto_n_iter(spec, budget, sensitivity)
        return GDPlan(
            **full_batch_gaussian(sensitivity, n_iter, budget, accounting, relation, clip),
            step_size=self._step(spec), momentum=self._momentum(spec))

    def release_noise_scale(self, plan: GDPlan) -> float:
        """Noise scale of the released iterate, from the last step's ``eta sigma``.

        Divided by the number of averaged iterates (by its square root without momentum:
        then an average of ``m`` independent draws).

        <<release_parameters>>

        Returns
        -------
        float
            A public lower bound on the per-coordinate noise of the release.
        """
        # The last step adds eta * N(0, sigma^2); without momentum an average of m
        # iterates still carries at least the average of m such independent draws:
        # eta sigma / sqrt(m). With momentum a draw also enters later iterates with
        # weights of either sign, so only the last draw's eta / m is certain.
        scale = plan.step_size * plan.sigma
        m = self._n_averaged(plan.n_iter)
        return scale / (m if plan.momentum > 0 else math.sqrt(m))

    def _n_averaged(self, n_iter: int) -> int:
        """How many iterates the output averages (1 for "last" and "random")."""
        first = averaged_from(self.iterate, n_iter)
        return 1 if first is None else n_iter - first

    def _run(self, problem: Problem, plan: GDPlan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        p = spec.n_penalized
        sigma, step, clip = plan.sigma, plan.step_size, plan.clip_norm
        W = np.zeros((spec.n_params, spec.n_outputs))
        # The random output index is drawn before the data is touched.
        pick = noise.integer(plan.n_iter) if self.iterate == "random" else -1
        # "average" sums w_1..w_T, "tail" the last ceil(T/2) of them.
        first = averaged_from(self.iterate, plan.n_iter)
        total = np.zeros_like(W)
        chosen = W
        previous = W
        for t in range(plan.n_iter):
            # Extrapolation from released iterates only (post-processing); y_0 = w_0.
            momentum = momentum_at(plan.momentum, t)
            Y = W + momentum * (W - previous) if momentum else W
            grad = (problem.clipped_gradient(Y, clip, passes=plan.n_iter)
                    + noise.gaussian(W.shape, sigma))
            grad[:p] += spec.alpha * Y[:p]
            previous, W = W, Y - step * grad
            W[:p] = spec.constraint.project(W[:p])
            if first is not None and t >= first:
                total += W
            elif t == pick:
                chosen = W
            problem.advance()
        if first is not None:
            return total / self._n_averaged(plan.n_iter)
        if self.iterate == "random":
            return chosen
        return W
