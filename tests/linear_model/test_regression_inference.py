"""Standard errors and confidence intervals of DPLinearRegression (sufficient statistics).

The release behind them (``y'y`` with ``X'X`` and ``X'y``) is tested with the solver
(tests/solvers/test_sufficient_statistics.py: sensitivity, noise law); here the noise
of ``y'y`` alone, an audit of it on neighbouring data sets, and the intervals.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from skdp import DPLinearRegression
from skdp.audit import audit_scores
from skdp.geometry import Unconstrained
from skdp.losses import SquaredLoss
from skdp.privacy import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers import Problem, ProblemSpec, SufficientStatistics
from tests.linear_model.interval_coverage import (
    DATA_NORM,
    TRUTH,
    assert_nominal_coverage,
    linear_model,
)

Y_BOUND = 4.0  # |y| <= 1.95 + 1.5: no label is clipped
SD = 0.5


def _sample(rng, n):
    # Errors N(0, SD^2) truncated at 3 SD (symmetric: mean 0, a well-specified model).
    return linear_model(rng, n, lambda rng, n: np.clip(rng.normal(0, SD, n), -3 * SD, 3 * SD))


def _fit(X, y, epsilon, alpha=1e-4, random_state=None, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        params = {"solver": "sufficient_statistics", **params}
        return DPLinearRegression(epsilon, data_norm=DATA_NORM, y_bound=Y_BOUND,
                                  alpha=alpha, random_state=random_state,
                                  **params).fit(X, y)


def test_without_noise_the_standard_errors_are_those_of_ols():
    """epsilon=inf: the covariance is the penalised least-squares sandwich
    sigma^2 A^-1 H A^-1 / n with sigma^2 = RSS / (n - m), in plain numpy (the intercept
    as a column of ones, unpenalised); at a tiny alpha, statsmodels' OLS covariance."""
    X, y = _sample(np.random.default_rng(0), 2000)
    alpha = 1e-4
    reg = _fit(X, y, math.inf, alpha=alpha)
    n = X.shape[0]
    Z = np.column_stack([X, np.ones(n)])
    H = Z.T @ Z / n
    A = H + np.diag([alpha] * 3 + [0.0])
    w = np.linalg.solve(A, Z.T @ y / n)
    np.testing.assert_allclose(np.r_[reg.coef_, reg.intercept_], w, rtol=1e-9)
    sigma2 = float(np.sum((y - Z @ w) ** 2)) / (n - 4)
    A_inv = np.linalg.inv(A)
    expected = sigma2 * A_inv @ H @ A_inv / n
    np.testing.assert_allclose(reg.coef_covariance_, expected, rtol=1e-6)
    ols = sigma2 * np.linalg.inv(Z.T @ Z)
    np.testing.assert_allclose(reg.coef_covariance_, ols, rtol=1e-3,
                               atol=1e-3 * float(np.max(np.diag(ols))))


def test_the_privacy_noise_is_the_spread_of_refits():
    """One data set, 400 fits with fresh noise at epsilon = 1: the variance of each
    released coefficient across them (the privacy noise alone) matches the noise part of
    standard_errors_^2 (theirs minus the epsilon=inf ones) within 30% (the variance of 400
    draws has a relative standard deviation of 7%: 4 sd)."""
    X, y = _sample(np.random.default_rng(1), 10_000)
    exact = _fit(X, y, math.inf)
    fits = [_fit(X, y, 1.0, random_state=seed) for seed in range(400)]
    released = np.array([np.r_[f.coef_, f.intercept_] for f in fits])
    predicted = np.mean([f.standard_errors_ ** 2 for f in fits], axis=0)
    noise_part = predicted - exact.standard_errors_ ** 2
    np.testing.assert_allclose(released.var(axis=0), noise_part, rtol=0.3)


@pytest.mark.slow
def test_95_percent_intervals_cover_the_true_parameter():
    """200 data sets of n = 10,000 from a well-specified linear model, epsilon = 1,
    fresh noise each (the binomial bounds: assert_nominal_coverage)."""
    assert_nominal_coverage(lambda rng: _sample(rng, 10_000),
                            lambda X, y, k: _fit(X, y, 1.0, random_state=k).conf_int(),
                            TRUTH)


def test_conf_int_names_the_setting_when_the_fit_released_nothing_for_it():
    X, y = _sample(np.random.default_rng(4), 500)
    reg = _fit(X, y, 1.0, constraint="l2", radius=3.0)
    assert reg.coef_covariance_ is None
    with pytest.raises(ValueError, match=r"constrained fit.*Set constraint=None\.$"):
        reg.conf_int()
    gd = _fit(X, y, 1.0, constraint="l2", radius=3.0, solver="gd")
    with pytest.raises(ValueError, match="solver='sufficient_statistics' and "
                                         "constraint=None"):
        gd.conf_int()
    reg = _fit(X, y, 1.0)
    assert reg.conf_int().shape == (4, 2)
    assert _fit(X, y, 1.0, fit_intercept=False).conf_int().shape == (3, 2)
    with pytest.raises(ValueError, match="alpha must be in"):
        reg.conf_int(0.0)
    # A noise-dominated fit released the intercept-only model: the error says so.
    small = _fit(X[:40], y[:40], 0.05)
    assert small.solver_.name == "intercept_only"
    with pytest.raises(ValueError, match="noise_dominated='fit'"):
        small.conf_int()
    # The default alpha moves the coefficients by more than a quarter of a standard
    # error at n = 10,000: said from released quantities.
    X, y = _sample(np.random.default_rng(5), 10_000)
    with pytest.warns(UserWarning, match="smaller alpha"):
        _fit(X, y, 1.0, alpha=1e-2, random_state=0).conf_int()


def _squares_problem(label: float, n: int = 20) -> Problem:
    spec = ProblemSpec(n_samples=n, n_params=2, n_outputs=1, n_penalized=2,
                       row_norm_bound=1.0, loss=SquaredLoss(1.0),
                       constraint=Unconstrained(), alpha=0.0, intercept_feature=0.0)
    Y = np.zeros((n, 1))
    Y[0, 0] = label
    return Problem.build(np.zeros((n, 2)), Y, spec, data_norm=1.0, intercept=0.0)


def test_the_sum_of_squares_noise_is_the_plans():
    """Zero data: the released y'y is its noise, N(0, sigma_S^2) with sigma_S =
    Y^2 / sqrt(SQUARES_SHARE) times the plan's multiplier (KS over 2000 releases,
    level 1e-6)."""
    problem = _squares_problem(0.0)
    solver = SufficientStatistics()
    plan = solver.plan(problem.spec, Budget(1.0, 1e-5), "gaussian", "replace_one")
    noise = NoiseSource(np.random.default_rng(0))
    draws = [solver.noisy_statistics(problem, plan, noise)[2] for _ in range(2000)]
    assert stats.kstest(np.array(draws) / plan.sigma_squares, "norm").pvalue > 1e-6


@pytest.mark.slow
def test_audit_of_the_sum_of_squares_on_neighbouring_data_sets():
    """One label replaced, 0 by Y = 1 (y'y moves by exactly Y^2): over 4000 releases on
    each data set the released y'y does not beat the fit's (epsilon, delta) at 95%
    confidence; a twin with a hundredth of its noise is flagged."""
    epsilon, delta = 1.0, 1e-5
    solver = SufficientStatistics()
    pair = (_squares_problem(0.0), _squares_problem(1.0))
    plan = solver.plan(pair[0].spec, Budget(epsilon, delta), "gaussian", "replace_one")

    def runs(plan, seed):
        noise = NoiseSource(np.random.default_rng(seed))
        return [np.array([solver.noisy_statistics(p, plan, noise)[2] for _ in range(4000)])
                for p in pair]

    s, s_prime = runs(plan, 0)
    assert not audit_scores(s, s_prime, epsilon=epsilon, delta=delta).violated
    weak = dataclasses.replace(plan, squares_scale=plan.squares_scale / 100)
    s, s_prime = runs(weak, 1)
    assert audit_scores(s, s_prime, epsilon=epsilon, delta=delta).violated
