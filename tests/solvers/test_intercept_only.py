"""The intercept-only model (solver ``"intercept_only"``): one noisy mean of the encoded
targets, its sensitivity, its noise law and its link to the intercept."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import Unconstrained
from skdp.losses import (
    HingeLoss,
    HuberLoss,
    LogisticLoss,
    MultinomialLogisticLoss,
    SmoothedHingeLoss,
    SquaredLoss,
)
from skdp.privacy import Budget
from skdp.privacy.noise import as_noise_source
from skdp.solvers import InterceptOnly, Problem, ProblemSpec


def _problem(loss, Y, n_features=3, intercept=1.0, seed=0):
    rng = np.random.default_rng(seed)
    n = Y.shape[0]
    X = rng.normal(size=(n, n_features)) / np.sqrt(n_features)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    spec = ProblemSpec(n_samples=n, n_params=n_features + (1 if intercept else 0),
                       n_outputs=Y.shape[1], n_penalized=n_features,
                       row_norm_bound=math.hypot(1.0, intercept), loss=loss,
                       constraint=Unconstrained(), alpha=0.0, intercept_feature=intercept)
    return Problem.build(X, Y, spec, data_norm=1.0, intercept=intercept)


def _targets(kind, n=60, seed=0):
    """Encoded targets and their loss: +-1 (logistic, hinge), one-hot (multinomial),
    one-vs-rest +-1 rows (hinge, 3 classes), labels in [-2, 2] (squared, Huber)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=n)
    if kind == "logistic":
        return LogisticLoss(), np.where(labels == 1, 1.0, -1.0)[:, None]
    if kind == "multinomial":
        return MultinomialLogisticLoss(3), np.eye(3)[labels]
    if kind == "hinge":
        return HingeLoss(3), np.where(np.eye(3)[labels] == 1, 1.0, -1.0)
    if kind == "smoothed_hinge":
        return SmoothedHingeLoss(1), np.where(labels == 1, 1.0, -1.0)[:, None]
    if kind == "huber":
        return HuberLoss(1.0, label_bound=2.0), rng.uniform(-2, 2, size=(n, 1))
    return SquaredLoss(2.0), rng.uniform(-2, 2, size=(n, 1))


KINDS = ("logistic", "multinomial", "hinge", "smoothed_hinge", "squared", "huber")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_intercept_is_the_link_of_the_noisy_mean(kind, delta):
    """Plain-numpy reference fed the same noise: the released intercept is the loss's
    link of mean(Y) plus the plan's draw; every coefficient is 0."""
    loss, Y = _targets(kind)
    problem = _problem(loss, Y, intercept=2.0)
    solver = InterceptOnly()
    accounting = "gaussian" if delta else "pure"
    result = solver.solve(problem, Budget(1.0, delta), 7, accounting=accounting)
    plan = result.plan
    draw = as_noise_source(7).release(plan.mechanism, (Y.shape[1],), plan.unit_scale)
    mean = Y.mean(axis=0) + draw * plan.sensitivity
    expected = loss.intercept_only(mean, Y.shape[0])
    assert np.all(result.coef[:-1] == 0.0)
    np.testing.assert_allclose(result.coef[-1] * 2.0, expected, rtol=1e-12, atol=1e-15)
    assert plan.mechanism == ("gaussian" if delta else "l2_laplace")


@pytest.mark.parametrize("kind", ["logistic", "multinomial", "squared"])
def test_epsilon_inf_gives_the_intercept_only_optimum(kind):
    """Without noise the intercept minimises the mean loss over constant scores (checked
    against a numerical minimiser)."""
    from scipy.optimize import minimize

    loss, Y = _targets(kind, n=80, seed=3)
    problem = _problem(loss, Y)
    coef = InterceptOnly().solve(problem, Budget(math.inf, 0.0)).coef
    b = coef[-1]

    def objective(v):
        return float(np.mean(loss.value(np.tile(v, (Y.shape[0], 1)), Y)))

    best = minimize(objective, np.zeros(Y.shape[1]), method="BFGS").fun
    assert objective(b) <= best + 1e-8


def test_brute_force_mean_target_sensitivity():
    """Replacing one record (every pair of labels of each loss's domain) moves the mean
    of the encoded targets by at most the plan's sensitivity, and by exactly that for the
    most distant pair: the bound is tight."""
    for kind in KINDS:
        loss, Y = _targets(kind, n=30)
        problem = _problem(loss, Y)
        plan = InterceptOnly().plan(problem.spec, Budget(1.0, 1e-5), "gaussian",
                                    "replace_one")
        domain = {"logistic": [[1.0], [-1.0]], "smoothed_hinge": [[1.0], [-1.0]],
                  "multinomial": list(np.eye(3)),
                  "hinge": list(np.where(np.eye(3) == 1, 1.0, -1.0)),
                  "squared": [[-2.0], [0.3], [2.0]], "huber": [[-2.0], [0.3], [2.0]]}[kind]
        worst = 0.0
        for i in (0, 7):
            for label in domain:
                Y2 = Y.copy()
                Y2[i] = label
                worst = max(worst, float(np.linalg.norm(Y2.mean(axis=0) - Y.mean(axis=0))))
                for other in domain:
                    Y3 = Y.copy()
                    Y3[i], Y2[i] = other, label
                    moved = np.linalg.norm(Y2.mean(axis=0) - Y3.mean(axis=0))
                    assert moved <= plan.sensitivity * (1 + 1e-12), kind
                    worst = max(worst, float(moved))
        assert worst == pytest.approx(plan.sensitivity, rel=1e-12), kind


@pytest.mark.parametrize("accounting", ["gaussian", "pure"])
def test_noise_drawn_is_what_the_ledger_says(accounting):
    """The release minus the exact mean follows the plan's law: N(0, sigma^2) (a
    chi-square test of the variance) or the 1-D l2 Laplace, Laplace(0, sigma) (a
    Kolmogorov-Smirnov test); each fails a correct solver with probability 1e-4."""
    loss, Y = _targets("squared", n=50)
    problem = _problem(loss, Y)
    solver = InterceptOnly()
    plan = solver.plan(problem.spec, Budget(0.5, 1e-5), accounting, "replace_one")
    exact = Y.mean(axis=0)
    rng = np.random.default_rng(11)
    draws = np.array([solver.noisy_mean(problem, plan, as_noise_source(rng))[0] - exact[0]
                      for _ in range(3000)])
    if accounting == "gaussian":
        statistic = np.sum(draws**2) / plan.sigma**2
        low, high = stats.chi2.ppf([5e-5, 1 - 5e-5], draws.size)
        assert low <= statistic <= high
    else:
        assert stats.kstest(draws, stats.laplace(scale=plan.sigma).cdf).pvalue > 1e-4
    # The sensitivity is the squared loss's label diameter over n.
    assert plan.sensitivity == pytest.approx(4.0 / 50)


@pytest.mark.parametrize("accounting, delta", [("gaussian", 1e-5), ("pure", 0.0),
                                               ("rdp", 1e-5), ("pld", 1e-5)])
def test_ledger_reaccounts_within_the_budget(accounting, delta):
    loss, Y = _targets("logistic")
    problem = _problem(loss, Y)
    budget = Budget(0.3, delta)
    plan, ledger, spent = InterceptOnly().prepare(problem.spec, budget, accounting=accounting)
    assert spent.within(budget)
    assert spent.epsilon == pytest.approx(0.3, rel=1e-3) if accounting != "pure" else \
        spent.epsilon == 0.3
    assert ledger.reaccount() == spent
    assert plan.n_iter == 1


def test_pure_dp_is_the_default():
    """``"auto"`` reads the release as pure DP (the l2 Laplace) at any delta."""
    assert InterceptOnly().resolve_accounting("auto", Budget(1.0, 1e-5)) == "pure"


def test_without_an_intercept_nothing_is_released():
    loss, Y = _targets("logistic")
    problem = _problem(loss, Y, intercept=0.0)
    result = InterceptOnly().solve(problem, Budget(1.0, 1e-5), 0)
    assert result.plan.n_iter == 0 and np.all(result.coef == 0.0)
    assert result.spent.epsilon == 0.0


def test_unbounded_labels_are_refused():
    rng = np.random.default_rng(0)
    problem = _problem(HuberLoss(1.0), rng.normal(size=(20, 1)))
    with pytest.raises(IncompatibleSolverError, match="set y_bound"):
        InterceptOnly().prepare(problem.spec, Budget(1.0, 1e-5))


def test_links_keep_the_noisy_shares_within_half_a_record():
    """A noisy share at or beyond 0 or 1 gives a finite intercept: the log odds of half a
    record (public n)."""
    n = 40
    assert LogisticLoss().intercept_only(np.array([1.5]), n)[0] == pytest.approx(
        math.log((1 - 0.5 / n) / (0.5 / n)))
    out = MultinomialLogisticLoss(3).intercept_only(np.array([-0.2, 0.5, 0.7]), n)
    assert np.all(np.isfinite(out)) and out[0] == pytest.approx(math.log(0.5 / n))


# -- what the registry-wide suites need (tests/solvers/_cases.py) -------------------------
def solver_cases():
    from skdp.losses import LogisticLoss
    from skdp.solvers import InterceptOnly
    from tests.solvers._cases import AuditCase, SolverCases

    # The canary's label flip moves the mean of the +-1 targets by the full 2 / n, which
    # the intercept carries (intercept_statistic); the default accounting is pure DP, so
    # both budgets run the l2 Laplace in one dimension.
    return {"intercept_only": SolverCases(
        fast=InterceptOnly,
        not_erm="it fits the intercept only (the noise-dominated fallback's model)",
        sensitivity=("test_intercept_only.py", "test_brute_force_mean_target_sensitivity"),
        audits=tuple(AuditCase(InterceptOnly, LogisticLoss, alpha=0.0, epsilon=2.0,
                               delta=delta, n_trials=4000, intercept=True)
                     for delta in (1e-5, 0.0)),
        zero_signal_elsewhere="the release reads no feature; its noise law is tested "
                              "in this file (test_noise_drawn_is_what_the_ledger_says)",
        one_release=True,
        intercept=True,
    )}
