"""DP-GD: noisy projected full-batch gradient descent (Wang, Ye & Xu 2017, Algorithm 4)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from dp_accounting import dp_event as dpe

from skdp._sklearn_compat import Interval, StrOptions
from skdp.privacy.accounting import (
    analytic_gaussian_multiplier,
    calibrate_noise_multiplier,
    check_sensitivity,
    gaussian_event,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec, averaged_from
from skdp.solvers._capabilities import Capabilities

__all__ = ["GDPlan", "NoisyGD", "full_batch_gaussian"]

# Upper limit of the automatic iteration count (each iteration is one pass over the data).
MAX_AUTO_ITER = 2000
ITERATES = ("last", "average", "tail", "random")


def _gd_event(z: float, n_iter: int, accountant: str, relation: str) -> dpe.DpEvent:
    """``n_iter`` Gaussian releases with noise ``z`` times the sensitivity."""
    return dpe.SelfComposedDpEvent(
        gaussian_event(z, 1.0, accountant=accountant, relation=relation), n_iter
    )


def full_batch_gaussian(
    sensitivity: float, n_iter: int, budget: Budget, accountant: str, relation: str
) -> tuple[float, float, dpe.DpEvent]:
    """``(z, sigma, event)`` of ``n_iter`` full-batch Gaussian releases of one sensitivity.

    ``"gaussian"``: the ``T`` releases, each ``Delta``-sensitive with noise ``sigma``,
    compose exactly into one Gaussian release of sensitivity ``sqrt(T) Delta``, so
    ``sigma = sqrt(T) Delta sigma_B1(epsilon, delta)`` (exact). Other accountants calibrate
    their (upper-bounding) ledger, for which that multiplier is a lower bound. ``z = 0``
    when ``epsilon = inf``. Shared by DP-GD and DP-AccMD.
    """
    if not budget.is_private:
        z = 0.0
    elif accountant == "gaussian":
        z = analytic_gaussian_multiplier(budget, n_iter)
    else:
        z = calibrate_noise_multiplier(
            _gd_event, (n_iter, accountant, relation), budget,
            accountant=accountant, relation=relation,
            lower_bound=analytic_gaussian_multiplier(budget, n_iter),
        )
    sigma = z * sensitivity
    event = dpe.SelfComposedDpEvent(
        gaussian_event(sigma, sensitivity, accountant=accountant, relation=relation), n_iter
    )
    return z, sigma, event


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
    """

    sigma: float
    noise_multiplier: float
    sensitivity: float
    clip_norm: float
    step_size: float


class NoisyGD(BaseDPSolver):
    """DP-GD: projected gradient descent on clipped full-batch gradients plus Gaussian noise.

    Each of the ``T`` iterations releases ``g_t = mean_i clip_C(grad f(w_t; z_i)) + N(0,
    sigma^2 I)`` and steps ``w_{t+1} = Proj(w_t - eta (g_t + alpha w_t))``.

    Parameters
    ----------
    n_iter : int, optional
        Number of iterations ``T``. Default: from public quantities (see
        docs/algorithms/gd.md).
    step_size : float, optional
        Step size ``eta``. Default ``1 / beta`` with ``beta`` the public smoothness bound
        (Theorems 6.2 and 6.3 of the paper use ``eta = 1/L``).
    clip_norm : float, optional
        Per-example gradient clip ``C``. Default: the loss bound ``sup|phi'| * data_norm``,
        which makes clipping lossless.
    iterate : {"last", "average", "tail", "random"}, default="last"
        Output the last iterate, the average of ``w_1..w_T``, the suffix average of the
        last ``ceil(T/2)`` iterates (:func:`~skdp.solvers._base.tail_start`; it averages
        the noise like ``"average"`` without the bias towards the early iterates), or a
        uniformly random one of them (Section 6.2 of the paper).

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation. Rows are clipped to the
    public ``data_norm`` and per-example gradients to ``C`` in l2, so the mean gradient
    with the public denominator ``n`` has sensitivity ``2C/n``; the ``T`` Gaussian
    releases are exactly ``mu``-GDP with ``mu = sqrt(T) Delta / sigma``, calibrated
    exactly with the analytic Gaussian by the default accountant (``"gaussian"``) and by
    ``dp_accounting`` with ``"rdp"``/``"pld"``. The projection, the regulariser and the
    choice of output iterate are post-processing.

    Assumptions: none on the data (rows and gradients are clipped); ``n`` public. The
    default ``T`` (``alpha > 0``: a strongly convex trade-off of contraction against
    accumulated noise; ``alpha = 0``: Theorem 6.3) is capped at 2000.

    Reference: Wang, Ye & Xu, "Differentially private empirical risk minimization
    revisited: faster and more general", NeurIPS 2017, Algorithm 4 and Theorems
    6.1-6.3. Calibration and the iteration-count derivation: docs/algorithms/gd.md.
    """

    name = "gd"
    capabilities = Capabilities(
        algorithm="DP-GD, Wang-Ye-Xu 2017 Alg. 4, Thms 6.1-6.3",
        accountants=("gaussian", "rdp", "pld"), default_accountant="gaussian",
        constraints=("none", "l2", "l1", "lp", "simplex"), secure=True,
    )
    # Interval(Real, 0, None, "neither") refuses 0, inf and nan.
    _parameter_constraints = {
        "n_iter": [Interval(Integral, 1, None, closed="left"), None],
        "step_size": [Interval(Real, 0, None, closed="neither"), None],
        "clip_norm": [Interval(Real, 0, None, closed="neither"), None],
        "iterate": [StrOptions(set(ITERATES))],
    }

    def __init__(self, n_iter=None, step_size=None, clip_norm=None, iterate="last"):
        self.n_iter = n_iter
        self.step_size = step_size
        self.clip_norm = clip_norm
        self.iterate = iterate

    def auto_n_iter(self, spec: ProblemSpec, budget: Budget, sensitivity: float) -> int:
        """Data-independent default ``T`` (derivation: docs/algorithms/gd.md)."""
        if self.n_iter is not None:
            return int(self.n_iter)
        beta = spec.smoothness
        if spec.alpha > 0:
            kappa = beta / spec.alpha
            if budget.is_private:
                # Minimiser of Delta0 exp(-2 T / kappa) + p T s1^2 / (4 beta) (contraction
                # against accumulated noise; docs/algorithms/gd.md), s1 = one-release noise.
                s1 = sensitivity * analytic_gaussian_multiplier(budget, 1)
                ratio = 8.0 * spec.alpha * spec.initial_gap / (spec.dimension * s1**2)
                t = 0.5 * kappa * math.log(max(ratio, math.e))
            else:
                t = kappa * math.log(spec.gap_reduction(budget, spec.gradient_bound))
        elif budget.is_private:
            # Theorem 6.3: T = sqrt(L n eps) / (sqrt(p ln(1/delta)) G).
            g = self.gradient_clip(spec)
            t = math.sqrt(beta * spec.n_samples * budget.epsilon) / (
                math.sqrt(spec.dimension * math.log(1.0 / budget.delta)) * g
            )
        else:
            t = MAX_AUTO_ITER
        return int(min(max(math.ceil(t), 1), MAX_AUTO_ITER))

    def plan(self, spec: ProblemSpec, budget: Budget, accountant: str, relation: str
             ) -> GDPlan:
        clip = self.gradient_clip(spec)
        # Mean of n per-example gradients of norm <= C with denominator n: replacing one
        # record moves the sum by at most 2C.
        sensitivity = check_sensitivity(2.0 * clip / spec.n_samples, "gradient sensitivity 2C/n")
        n_iter = self.auto_n_iter(spec, budget, sensitivity)
        z, sigma, event = full_batch_gaussian(sensitivity, n_iter, budget, accountant, relation)
        step = self.step_size if self.step_size is not None else 1.0 / spec.smoothness
        return GDPlan(
            n_iter=n_iter,
            event=event,
            accountant=accountant,
            relation=relation,
            sigma=sigma,
            noise_multiplier=z,
            sensitivity=sensitivity,
            clip_norm=clip,
            step_size=float(step),
        )

    def release_noise_scale(self, plan: GDPlan) -> float:
        # The last step adds eta * N(0, sigma^2); an average of m iterates still carries
        # at least the average of m such independent draws: eta sigma / sqrt(m).
        scale = plan.step_size * plan.sigma
        return scale / math.sqrt(self._n_averaged(plan.n_iter))

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
        for t in range(plan.n_iter):
            grad = problem.clipped_gradient(W, clip) + noise.gaussian(W.shape, sigma)
            grad[:p] += spec.alpha * W[:p]
            W = W - step * grad
            W[:p] = spec.constraint.project(W[:p])
            if first is not None and t >= first:
                total += W
            elif t == pick:
                chosen = W
        if first is not None:
            return total / self._n_averaged(plan.n_iter)
        if self.iterate == "random":
            return chosen
        return W
