"""Where the calibration's search starts (``calibrate_noise_multiplier(..., start=...)``,
docs/privacy.md): any start gives a multiplier within the budget, the same one to the
search's tolerance, and an unreachable budget is refused whatever the start; DP-SVRG's
start (the snapshots' Gaussian lower bound) keeps the PLD engine off the tiny
multipliers that exhausted memory."""

import math

import numpy as np
import pytest

from skdp.exceptions import BudgetError
from skdp.geometry import Unconstrained
from skdp.losses import LogisticLoss
from skdp.privacy import Budget, calibrate_noise_multiplier
from skdp.privacy.accounting import (
    add_remove_budget,
    analytic_gaussian_multiplier,
    gaussian_event,
)
from skdp.privacy.calibration import epsilon_spent
from skdp.privacy.noise import NoiseSource
from skdp.solvers import DPSVRG, DPSVRGPlusPlus, Problem, ProblemSpec


def two_gaussians(z, ratio, accounting, relation):
    """A Gaussian of multiplier ``z`` and one of ``z / ratio`` (module level: cached)."""
    from dp_accounting import dp_event as dpe

    return dpe.ComposedDpEvent([
        gaussian_event(z, 1.0, accounting=accounting, relation=relation),
        gaussian_event(z / ratio, 1.0, accounting=accounting, relation=relation)])


@pytest.mark.parametrize("start", [None, 0.5, 3.0, 7.0, 1e3, 5e6])
def test_any_start_gives_the_same_multiplier_within_the_budget(start):
    budget = Budget(1.0, 1e-6)
    args = (2.0, "gaussian", "replace_one")  # the exact accounting method of Gaussians
    z = calibrate_noise_multiplier(two_gaussians, args, budget, accounting="gaussian",
                                   relation="replace_one", start=start)
    spent = epsilon_spent(two_gaussians(z, *args), budget.delta, accounting="gaussian",
                          relation="replace_one")
    assert spent <= budget.epsilon
    # The two releases are one Gaussian of multiplier z / sqrt(1 + ratio^2) (exact).
    exact = analytic_gaussian_multiplier(budget, 1) * math.sqrt(5.0)
    assert exact <= z <= exact * 1.002


@pytest.mark.parametrize("start", [None, 1e5, 1e9])
def test_an_unreachable_budget_is_refused_whatever_the_start(start):
    # About 1.05e8 would be needed: above the largest multiplier the search tries (1e6);
    # a start above it (1e9) must not skip that check.
    with pytest.raises(BudgetError, match="no noise level"):
        calibrate_noise_multiplier(two_gaussians, (1.0, "gaussian", "replace_one"),
                                   Budget(1e-7, 1e-12), accounting="gaussian",
                                   relation="replace_one", start=start)


@pytest.mark.parametrize("cls", [DPSVRG, DPSVRGPlusPlus])
def test_svrg_poisson_with_a_small_correction_clip_calibrates(cls):
    """Poisson batches (PLD accounting) with a small correction clip: the snapshots'
    multiplier z / (sqrt(m) ratio) is far below z, where the PLD engine's memory
    explodes (a search started at z = 1 asked for 0.1-1 TB and raised MemoryError). From
    the snapshots' lower bound the fit completes, with a multiplier that spends the
    budget within 2% (the smallest, to the search's tolerance) and is above the bound."""
    rng = np.random.default_rng(3)
    X = rng.standard_t(3.0, size=(301, 6)) / 3.0
    Y = np.where(rng.random(301) < 0.5, 1.0, -1.0)[:, None]
    # A loose public row bound: the default gradient clip G is large against C.
    spec = ProblemSpec(n_samples=301, n_params=7, n_outputs=1, n_penalized=6,
                       row_norm_bound=1e3, loss=LogisticLoss(), constraint=Unconstrained(),
                       alpha=0.1)
    problem = Problem.build(X, Y, spec, intercept=1.0)
    solver = cls(n_epochs=2, inner_steps=9, batch_size=13, step_size=0.3,
                 sampling="poisson", correction_clip=0.05)
    budget = Budget(1.0, 1e-5)
    res = solver.solve(problem, budget, NoiseSource(np.random.default_rng(2)))
    plan, event_budget = res.plan, add_remove_budget(budget)
    ratio = plan.sensitivity_snapshot / plan.sensitivity_inner
    bound = (analytic_gaussian_multiplier(event_budget, 1) * ratio
             * math.sqrt(sum(plan.epoch_lengths)))
    assert bound > 100.0  # the case the start protects: the old search began at 1
    assert plan.noise_multiplier >= bound
    spent = epsilon_spent(plan.event, event_budget.delta, accounting="pld",
                          relation="add_remove")
    assert 0.98 * event_budget.epsilon <= spent <= event_budget.epsilon
    assert np.all(np.isfinite(res.coef))
