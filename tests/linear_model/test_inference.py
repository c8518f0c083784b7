"""Standard errors and confidence intervals of DPLogisticRegression(solver="newton")."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import expit

from skdp import DPLogisticRegression, DPNewton, PrivacyLeakWarning
from tests.linear_model.interval_coverage import assert_nominal_coverage, coverage_counts

THETA, BIAS = np.array([1.0, -0.5, 0.25]), 0.2
TRUTH = np.r_[THETA, BIAS]
DATA_NORM = math.sqrt(3.0)  # rows in [-1, 1]^3: no row is clipped


def _sample(rng, n):
    X = rng.uniform(-1, 1, size=(n, 3))
    y = (rng.random(n) < expit(X @ THETA + BIAS)).astype(int)
    return X, y


def _fit(X, y, epsilon, alpha=1e-4, random_state=None, **params):
    # A Hessian at every step: the setting docs/inference.md recommends for intervals.
    params = {"classes": [0, 1], "solver": DPNewton(hessian_steps=10), **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return DPLogisticRegression(epsilon, data_norm=DATA_NORM,
                                    alpha=alpha, random_state=random_state,
                                    **params).fit(X, y)


def _reference_covariance(X, y, coef, intercept, alpha):
    """The sandwich A^-1 H A^-1 / n of the penalised logistic M-estimator at the fitted
    point, in plain numpy (the intercept as a column of ones, unpenalised)."""
    n = X.shape[0]
    Z = np.column_stack([X, np.ones(n)])
    p = expit(Z @ np.r_[coef, intercept])
    H = (Z * (p * (1 - p))[:, None]).T @ Z / n
    A = H + np.diag([alpha] * 3 + [0.0])
    A_inv = np.linalg.inv(A)
    return A_inv @ H @ A_inv / n


def test_without_noise_the_standard_errors_are_the_sandwich_of_the_optimum():
    X, y = _sample(np.random.default_rng(0), 2000)
    clf = _fit(X, y, math.inf, alpha=1e-3)
    reference = _reference_covariance(X, y, clf.coef_[0], clf.intercept_[0], 1e-3)
    np.testing.assert_allclose(clf.coef_covariance_, reference, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(clf.standard_errors_, np.sqrt(np.diag(reference)), rtol=1e-6)
    ci = clf.conf_int(0.1)
    estimate = np.r_[clf.coef_[0], clf.intercept_]
    np.testing.assert_allclose(ci.mean(axis=1), estimate)
    np.testing.assert_allclose((ci[:, 1] - ci[:, 0]) / 2, 1.6448536269514722
                               * clf.standard_errors_)


def test_the_privacy_noise_widens_the_intervals_by_its_known_law():
    X, y = _sample(np.random.default_rng(1), 10_000)
    clf = _fit(X, y, 1.0, random_state=0)
    exact = _fit(X, y, math.inf)
    assert np.all(clf.standard_errors_ > 0.9 * exact.standard_errors_)
    # The noise part is (s^2 / m) A^-2 with the plan's gradient noise s.
    assert clf.privacy_plan_.sigma_gradient > 0


@pytest.mark.slow
def test_95_percent_intervals_cover_the_true_parameter():
    """200 data sets of n = 10,000 from a well-specified logistic model, epsilon = 1,
    fresh noise each (the binomial bounds: assert_nominal_coverage; 1,000 unseeded runs
    in docs/inference.md)."""
    assert_nominal_coverage(lambda rng: _sample(rng, 10_000),
                            lambda X, y, k: _fit(X, y, 1.0, random_state=k).conf_int(),
                            TRUTH)


def test_a_large_penalty_is_flagged_from_released_quantities():
    X, y = _sample(np.random.default_rng(3), 10_000)
    with pytest.warns(UserWarning, match="smaller alpha"):
        _fit(X, y, 1.0, alpha=1e-2, random_state=0).conf_int()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fit(X, y, 1.0, alpha=1e-5, random_state=0).conf_int()


def test_conf_int_names_the_setting_when_the_fit_released_no_hessian():
    X, y = _sample(np.random.default_rng(4), 500)
    clf = DPLogisticRegression(1.0, data_norm=DATA_NORM, classes=[0, 1]).fit(X, y)
    assert clf.coef_covariance_ is None
    with pytest.raises(ValueError, match="solver='newton'"):
        clf.conf_int()
    y3 = np.random.default_rng(5).integers(0, 3, size=500)
    clf = _fit(X, y3, 1.0, classes=None)
    with pytest.raises(ValueError, match="3 classes"):
        clf.conf_int()
    clf = _fit(X, y, 1.0)
    with pytest.raises(ValueError, match="alpha must be in"):
        clf.conf_int(1.5)
    assert clf.conf_int().shape == (4, 2)
    assert _fit(X, y, 1.0, fit_intercept=False).conf_int().shape == (3, 2)


@pytest.mark.slow
def test_the_default_schedule_gives_intervals_too():
    """The default (two Hessian releases) is faster and its intervals slightly narrower
    than nominal (0.925-0.954 per coefficient over 1,000 runs): 100 data sets, at least
    85 covers per coefficient (probability below 1e-3 at a true coverage of 0.925)."""
    covers = coverage_counts(
        lambda rng: _sample(rng, 10_000),
        lambda X, y, k: _fit(X, y, 1.0, random_state=k, solver="newton").conf_int(0.05),
        TRUTH, 100, 7)
    assert np.all(covers >= 85), covers


def _release_counts(event):
    """DP Newton's ledger (newton_event): the gradient releases (the first one and the
    others, composed) and the Hessian releases, counted."""
    gradients, hessians = event.events[:2]
    return [sum(e.count for e in gradients.events), hessians.count]


def test_estimators_without_intervals_pay_for_no_standard_errors():
    """``ProblemSpec.inference``: DPLasso (no intervals) and a multinomial fit release one
    Hessian and no dispersion with DP Newton; DPLinearRegression (intervals, one output)
    keeps the second Hessian and the dispersion. Read from the ledgers."""
    from sklearn.datasets import load_diabetes

    from skdp import DPLasso, DPLinearRegression

    X, y = load_diabetes(return_X_y=True)
    counts = {}
    for est in (DPLasso(5.0, solver="newton", random_state=0),
                DPLinearRegression(5.0, solver=DPNewton(clip_norm=1.0), random_state=0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        parts = dict(getattr(est.privacy_ledger_, "parts", ()))
        event = parts.get("fit", est.privacy_ledger_).event
        counts[type(est).__name__] = (_release_counts(event)
                                      + ["dispersion"] * (len(event.events) - 2))
    assert counts == {"DPLasso": [10, 1], "DPLinearRegression": [10, 2, "dispersion"]}
    rng = np.random.default_rng(0)
    Xm = rng.normal(size=(3000, 3)) / 3
    ym = rng.integers(0, 3, size=3000)
    multi = DPLogisticRegression(5.0, data_norm=1.0, classes=[0, 1, 2], solver="newton",
                                 random_state=0).fit(Xm, ym)
    assert _release_counts(multi.privacy_ledger_.event) == [10, 1]
    assert multi.coef_covariance_ is None


def test_a_constrained_newton_fit_releases_no_standard_errors():
    """A minimiser held on the constraint's boundary has no normal law: DP Newton under
    a constraint releases one Hessian and no Inference, and conf_int names the setting
    (before, it returned intervals around the constrained point)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (5000, 3)) / 2
    y = (X @ np.array([3.0, -2.0, 1.0]) + rng.logistic(size=5000) > 0).astype(int)
    clf = DPLogisticRegression(5.0, data_norm=1.0, classes=[0, 1], solver="newton",
                               constraint="l2", radius=0.5, fit_intercept=False,
                               random_state=0).fit(X, y)
    assert clf.coef_covariance_ is None
    assert _release_counts(clf.privacy_ledger_.event) == [10, 1]
    with pytest.raises(ValueError, match=r"constrained fit.*Set constraint=None\.$"):
        clf.conf_int()
    free = DPLogisticRegression(5.0, data_norm=1.0, classes=[0, 1], solver="newton",
                                fit_intercept=False, random_state=0).fit(X, y)
    assert free.conf_int().shape == (3, 2)
