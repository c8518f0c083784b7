"""Standard errors and confidence intervals of DPHuberRegressor (solver="newton"), and of
DPLinearRegression through DP Newton: Huber's sandwich with the released dispersion
(docs/inference.md)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from skdp import DPHuberRegressor, DPLinearRegression
from skdp.solvers import DPNewton
from tests.linear_model import interval_coverage as model

Y_BOUND = 5.0  # |y| <= 1.95 + 3: no label is clipped
HUBER_DELTA = 1.0


def _sample(rng, n):
    # Heavy-tailed symmetric errors (0.5 t_3 truncated at 3): the Huber estimand is the
    # model's parameter.
    return model.linear_model(rng, n,
                        lambda rng, n: np.clip(0.5 * rng.standard_t(3, n), -3.0, 3.0))


def _fit(X, y, epsilon, random_state=None, **params):
    params = {"solver": "newton", "alpha": 1e-4, "huber_delta": HUBER_DELTA, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPHuberRegressor(epsilon, data_norm=model.DATA_NORM, y_bound=Y_BOUND,
                                random_state=random_state, **params).fit(X, y)


def test_without_noise_the_standard_errors_are_huber_s_sandwich():
    """epsilon=inf: the covariance is ``phi A^-1 H A^-1 / n`` with ``H`` the mean Huber
    Hessian at the fit, ``A = H + alpha P`` and ``phi = mean psi^2 / mean psi'`` (Huber
    1981), in plain numpy (the intercept as a column of ones)."""
    X, y = _sample(np.random.default_rng(0), 3000)
    reg = _fit(X, y, math.inf)
    n = len(y)
    Z = np.column_stack([X, np.ones(n)])
    r = Z @ np.r_[reg.coef_, reg.intercept_] - y
    inside = (np.abs(r) <= HUBER_DELTA).astype(float)
    H = (Z * inside[:, None]).T @ Z / n
    A = H + np.diag([1e-4] * 3 + [0.0])
    psi = np.clip(r, -HUBER_DELTA, HUBER_DELTA)
    phi = np.mean(psi**2) / np.mean(inside)
    A_inv = np.linalg.inv(A)
    np.testing.assert_allclose(reg.coef_covariance_, phi * A_inv @ H @ A_inv / n,
                               rtol=1e-6)


def test_newton_linear_regression_releases_the_residual_variance():
    """Through DP Newton the squared loss's dispersion is the residual variance, as the
    sufficient statistics give it (before this release it was taken as 1): at
    epsilon=inf the two solvers' standard errors agree."""
    rng = np.random.default_rng(1)
    X, y = model.linear_model(rng, 4000,
                              lambda rng, n: np.clip(rng.normal(0, 0.3, n), -0.9, 0.9))
    kw = dict(data_norm=model.DATA_NORM, y_bound=4.0, alpha=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        newton = DPLinearRegression(math.inf, solver=DPNewton(clip_norm=20.0), **kw).fit(X, y)
        stats = DPLinearRegression(math.inf, **kw).fit(X, y)
    np.testing.assert_allclose(newton.standard_errors_, stats.standard_errors_, rtol=2e-3)


@pytest.mark.slow
def test_95_percent_intervals_cover_the_true_parameter():
    """200 data sets of n = 10,000 with heavy-tailed errors, epsilon = 1, fresh noise
    each (the binomial bounds: assert_nominal_coverage)."""
    model.assert_nominal_coverage(lambda rng: _sample(rng, 10_000),
                                  lambda X, y, k: _fit(X, y, 1.0, random_state=k).conf_int(),
                                  model.TRUTH)


def test_conf_int_names_the_setting_when_the_fit_released_nothing_for_it():
    X, y = _sample(np.random.default_rng(4), 500)
    reg = _fit(X, y, 1.0, solver="gd")
    assert reg.coef_covariance_ is None
    with pytest.raises(ValueError, match="solver='newton'"):
        reg.conf_int()
