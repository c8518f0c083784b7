"""A toy solver that shows what adding a solver takes: this file, one registry line and
its own test file (``tests/solvers/test_toy.py``). It is registered only in the test run
that checks exactly that (``SKDP_TEST_SOLVERS``, read by ``tests/conftest.py``).

Noisy full-batch gradient descent with a fixed number of steps and no momentum, the
simplest member of the DP-GD family (:class:`skdp.solvers.NoisyGD` is the real one).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from skdp._sklearn_compat import Interval
from skdp.privacy.accounting import check_sensitivity
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers import BaseDPSolver, Plan, Problem, ProblemSpec
from skdp.solvers._capabilities import Capabilities
from skdp.solvers.gd import full_batch_gaussian


@dataclass(frozen=True, kw_only=True)
class ToyPlan(Plan):
    """Constants of a toy run: Gaussian noise ``sigma`` per step, ``sensitivity`` of one
    step's mean gradient, the clip and the step size."""

    sigma: float
    noise_multiplier: float
    sensitivity: float
    clip_norm: float
    step_size: float


class ToyGD(BaseDPSolver):
    """Noisy full-batch gradient descent with ``n_iter`` steps of size ``1 / beta``.

    Privacy guarantee: each step releases the mean of the ``n`` per-example gradients,
    clipped to the public bound ``C``, plus Gaussian noise; replacing one record moves the
    mean by at most ``2 C / n``, and the ``n_iter`` releases compose into the calibrated
    ``(epsilon, delta)`` (the ledger is ``n_iter`` Gaussian events). Everything after the
    noisy gradient is post-processing.

    Parameters
    ----------
    n_iter : int, default=20
        Number of gradient steps (public, fixed before any data is read).
    """

    name = "toy"
    capabilities = Capabilities(algorithm="toy noisy gradient descent",
                                accounting_methods=("gaussian", "rdp"),
                                default_accounting="gaussian")
    _parameter_constraints = {"n_iter": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, n_iter=20):
        self.n_iter = n_iter

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> ToyPlan:
        clip = self.gradient_clip(spec)
        # Replace-one: the mean of n clipped gradients (denominator n) moves by <= 2C/n.
        sensitivity = check_sensitivity(2.0 * clip / spec.n_samples, "gradient sensitivity")
        return ToyPlan(**full_batch_gaussian(sensitivity, self.n_iter, budget, accounting,
                                             relation, clip),
                       step_size=1.0 / spec.smoothness)

    def release_noise_scale(self, plan: ToyPlan) -> float:
        # The last step adds step_size * N(0, sigma^2) to the released iterate.
        return plan.step_size * plan.sigma

    def _run(self, problem: Problem, plan: ToyPlan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        W = np.zeros((spec.n_params, spec.n_outputs))
        for _ in range(plan.n_iter):
            grad = (problem.clipped_gradient(W, plan.clip_norm, passes=plan.n_iter)
                    + noise.gaussian(W.shape, plan.sigma))
            grad[:spec.n_penalized] += spec.alpha * W[:spec.n_penalized]
            W = W - plan.step_size * grad
            W[:spec.n_penalized] = spec.constraint.project(W[:spec.n_penalized])
            problem.advance(1)
        return W
