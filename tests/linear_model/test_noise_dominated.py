"""Noise-dominated fits release the intercept-only model (``noise_dominated``).

The decision reads ``n``, the number of coefficients and the budget only
(:func:`skdp._planning.noise_ratio`); docs/algorithms/intercept_only.md.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from skdp import BudgetAccountant, DPLasso, DPLinearRegression, DPLogisticRegression
from skdp._planning import NOISE_DOMINATED, noise_ratio
from skdp.exceptions import NoiseDominatedWarning
from skdp.model_selection import privacy_cost
from skdp.privacy import Budget
from skdp.solvers import InterceptOnly, NoisyGD
from tests.estimators import LINEAR, REGRESSORS


def _classification(n=400, d=30, share=0.7, seed=0):
    """Raw-scale positive features (as breast cancer's) and a 70/30 label split."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < share).astype(int)
    X = np.abs(rng.normal(size=(n, d))) * np.logspace(0, 3, d) + y[:, None]
    return X, y


def _fit(estimator, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return [str(w.message) for w in caught if issubclass(w.category, NoiseDominatedWarning)]


def test_a_noise_dominated_classifier_predicts_the_private_majority():
    # seed 0 at share 0.8 draws 301 of 400 labels 1 (0.7525; at share 0.7 it drew 0.6425,
    # only 5.7 noise scales above 1/2: the test failed 6 times in 3000 runs).
    X, y = _classification(share=0.8)
    clf = DPLogisticRegression(epsilon=0.1, classes=[0, 1])
    messages = _fit(clf, X, y)
    assert isinstance(clf.solver_, InterceptOnly)
    assert np.all(clf.coef_ == 0.0)
    # The private share of class 1 carries Laplace noise of scale 1 / (n epsilon) =
    # 0.025; the majority (0.7525) is 10.1 scales above 1/2: it is predicted everywhere
    # but with probability e^-10.1 / 2 = 2e-5, and the share is within 0.2 of the true
    # one (8 scales) but with probability e^-8 = 3.4e-4.
    assert np.all(clf.predict(X) == 1)
    share = 1.0 / (1.0 + math.exp(-clf.intercept_[0]))
    assert abs(share - np.mean(y)) < 0.2
    assert len(messages) == 1 and "intercept-only model" in messages[0]
    proba = clf.predict_proba(X[:3])
    np.testing.assert_allclose(proba[:, 1], share)


def test_noise_dominated_fit_runs_the_solver_and_warns():
    X, y = _classification()
    # Seeded: an unseeded private data_norm at epsilon 0.1 lands on its grid's edge now
    # and then, which adds a warning of its own (CI saw two messages once).
    clf = DPLogisticRegression(epsilon=0.1, classes=[0, 1], noise_dominated="fit",
                               random_state=0)
    messages = _fit(clf, X, y)
    assert isinstance(clf.solver_, NoisyGD)
    assert len(messages) == 1 and "near chance" in messages[0]


@pytest.mark.parametrize("n", [200, 1000, 5000])
def test_the_decision_is_the_public_noise_ratio(n):
    """With a declared bound the fit gets the whole budget; the intercept-only model is
    released exactly when noise_ratio(n, p, budget) >= 1."""
    X, y = _classification(n=n, d=10)
    clf = DPLogisticRegression(epsilon=0.1, data_norm=1e4, classes=[0, 1])
    _fit(clf, X, y)
    dominated = noise_ratio(n, 11, Budget(0.1, 1e-5)) >= NOISE_DOMINATED
    assert isinstance(clf.solver_, InterceptOnly) == dominated
    assert dominated == (n == 200)


def test_no_budget_goes_to_data_norm_and_the_prices_agree():
    """A classifier that falls back skips the private data_norm: its whole epsilon goes to
    the one release, as privacy_cost prices it and an accountant reads it."""
    X, y = _classification()
    accountant = BudgetAccountant(epsilon=10, delta=1e-3)
    clf = DPLogisticRegression(epsilon=0.1, classes=[0, 1], accountant=accountant)
    priced = privacy_cost(clf, X, y)
    _fit(clf, X, y)
    parts = dict(clf.privacy_ledger_.parts)
    assert set(parts) == {"fit"}
    assert clf.privacy_spent_.epsilon == pytest.approx(0.1)
    assert accountant.spent().epsilon == pytest.approx(priced.epsilon)
    assert clf.data_norm_ == 1.0  # the placeholder: the model reads no feature


def test_a_noise_dominated_regressor_predicts_a_constant():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 10))
    y = 50.0 + 10.0 * rng.normal(size=300)
    for cls in REGRESSORS:
        reg = cls(epsilon=0.05, delta=1e-5, data_norm=5.0, y_bound=100.0)
        messages = _fit(reg, X, y)
        assert isinstance(reg.solver_, InterceptOnly), cls.__name__
        assert np.all(reg.coef_ == 0.0)
        prediction = reg.predict(X[:5])
        assert np.all(prediction == prediction[0])
        # The mean of y clipped to [-100, 100] with Laplace noise of scale 200/(300 0.05).
        assert abs(prediction[0] - y.mean()) < 13.3 * 12  # fails with probability e^-12
        assert messages and "intercept-only model" in messages[0]


def test_multiclass_intercepts_are_the_log_shares():
    rng = np.random.default_rng(1)
    y = rng.choice(3, size=1000, p=[0.8, 0.15, 0.05])
    X = rng.normal(size=(1000, 150))
    clf = DPLogisticRegression(epsilon=0.1, data_norm=10.0, classes=[0, 1, 2])
    _fit(clf, X, y)
    assert isinstance(clf.solver_, InterceptOnly)
    # The noise of the shares is l2 Laplace in 3-D of scale sqrt(2) / (n epsilon) =
    # 0.014: its norm exceeds 0.2 (14 scales) with probability 1e-4.
    shares = clf.predict_proba(X[:1])[0]
    np.testing.assert_allclose(shares, np.bincount(y) / 1000, atol=0.2)
    assert np.all(clf.predict(X) == 0)


@pytest.mark.parametrize("cls", LINEAR)
def test_never_at_epsilon_inf_nor_with_enough_data(cls):
    X, y = _classification(n=400, d=5)
    if cls in REGRESSORS:
        y = X[:, 0] + y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epsilon in (math.inf, 5.0):
            est = cls(epsilon=epsilon).fit(X, y)
            assert not isinstance(est.solver_, InterceptOnly), (cls.__name__, epsilon)


def test_an_explicit_intercept_only_solver_is_the_baseline():
    X, y = _classification(n=2000, d=5)
    clf = DPLogisticRegression(epsilon=1.0, solver="intercept_only", classes=[0, 1])
    _fit(clf, X, y)
    assert np.all(clf.coef_ == 0.0) and np.all(clf.predict(X) == 1)


def test_basic_accounting_keeps_the_solver():
    """The release has no "basic" reading: a fit accounted so runs its solver (and warns)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 10)), rng.normal(size=200)
    reg = DPLasso(epsilon=0.1, accounting="basic")
    _fit(reg, X, y)
    assert not isinstance(reg.solver_, InterceptOnly)


def test_without_an_intercept_the_zero_model_spends_nothing():
    """No intercept: the constant model is 0, so neither the release nor the targets'
    bounds are spent."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 10)), 5.0 + rng.normal(size=200)
    reg = DPLinearRegression(epsilon=0.1, fit_intercept=False)
    _fit(reg, X, y)
    assert isinstance(reg.solver_, InterceptOnly)
    assert np.all(reg.coef_ == 0.0) and reg.privacy_spent_.epsilon == 0.0
