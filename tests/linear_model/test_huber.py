"""HuberLoss and DPHuberRegressor."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import HuberRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model._huber import DPHuberRegressor
from skdp.losses import HuberLoss
from skdp.solvers.phased_sgd import PhasedDPSGD


# ---------------------------------------------------------------------------------------
# HuberLoss
# ---------------------------------------------------------------------------------------
def _points(c, rng, n=400):
    z = rng.uniform(-4 * c - 3, 4 * c + 3, size=(n, 1))
    y = rng.uniform(-3, 3, size=(n, 1))
    r = (z - y)[:, 0]
    keep = np.abs(np.abs(r) - c) > 1e-3  # finite differences away from the kinks
    return z[keep], y[keep]


@pytest.mark.parametrize("c", [0.1, 1.0, 2.5])
def test_value_and_derivative_match_definition_and_finite_differences(c):
    rng = np.random.default_rng(0)
    loss = HuberLoss(c, label_bound=3.0)
    z, y = _points(c, rng)
    r = (z - y)[:, 0]
    expected = np.where(np.abs(r) <= c, 0.5 * r**2, c * np.abs(r) - 0.5 * c**2)
    np.testing.assert_allclose(loss.value(z, y), expected, rtol=1e-13, atol=1e-15)
    h = 1e-6
    fd = (loss.value(z + h, y) - loss.value(z - h, y)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(z, y)[:, 0], fd, rtol=1e-6, atol=1e-8)
    # curvature: phi'' in {0, 1} away from the kinks, <= curvature_bound everywhere
    fd2 = (loss.derivative(z + h, y) - loss.derivative(z - h, y))[:, 0] / (2 * h)
    np.testing.assert_allclose(fd2, np.where(np.abs(r) < c, 1.0, 0.0), atol=1e-6)
    assert loss.curvature_bound == 1.0 and loss.smooth


def test_derivative_is_lipschitz_and_bounded_everywhere():
    rng = np.random.default_rng(1)
    loss = HuberLoss(0.7)
    z = rng.uniform(-1e6, 1e6, size=(2000, 1))
    y = rng.uniform(-1e6, 1e6, size=(2000, 1))
    d = loss.derivative(z, y)
    assert np.max(np.abs(d)) <= loss.derivative_bound == 0.7
    z2 = z + rng.normal(size=z.shape)
    assert np.all(np.abs(loss.derivative(z2, y) - d) <= np.abs(z2 - z) + 1e-12)
    assert np.max(np.abs(loss.derivative(z2, y) - d)) <= loss.derivative_diameter
    assert np.all(np.isfinite(loss.value(np.array([[1e300]]), np.array([[-1e300]]))))


def test_bounds_on_a_bounded_domain():
    loss = HuberLoss(1.0, label_bound=2.0)
    rng = np.random.default_rng(2)
    for S in (0.0, 0.5, 3.0):
        z = rng.uniform(-S, S, size=(5000, 1))
        y = rng.uniform(-2, 2, size=(5000, 1))
        # derivative bound at scores |z| <= S: min(c, S + B)
        assert loss.derivative_bound_at(S) == min(1.0, S + 2.0)
        assert np.max(np.abs(loss.derivative(z, y))) <= loss.derivative_bound_at(S)
        values = loss.value(z, y)
        assert values.max() - 0.0 <= loss.value_range(S)
        # the extreme corner attains it
        corner = loss.value(np.array([[S]]), np.array([[-2.0]]))[0]
        assert corner == pytest.approx(loss.value_range(S))
    # initial gap: sup_y phi(0, y) - inf phi = h(B) = 2 - 1/2
    assert loss.initial_gap(1) == pytest.approx(1.5)
    assert HuberLoss(5.0, label_bound=2.0).initial_gap(1) == pytest.approx(2.0)
    unbounded = HuberLoss(1.0)
    assert unbounded.derivative_bound_at(10.0) == 1.0
    assert math.isinf(unbounded.initial_gap(1)) and math.isinf(unbounded.value_range(1.0))


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_bad_threshold_raises(bad):
    with pytest.raises(ValueError, match="huber_delta"):
        HuberLoss(bad)


def test_sklearn_objective_relation():
    """sigma H_eps(r / sigma) = (2 / sigma) h_{eps sigma}(r) (documented relation)."""
    eps, sigma = 1.35, 0.7
    r = np.linspace(-5, 5, 101)
    t = np.abs(r / sigma)
    sk = sigma * np.where(t < eps, t**2, 2 * eps * t - eps**2)
    ours = HuberLoss(eps * sigma).value(r[:, None], np.zeros((101, 1)))
    np.testing.assert_allclose(sk, 2 / sigma * ours, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------
# DPHuberRegressor
# ---------------------------------------------------------------------------------------
ESTIMATORS = [
    DPHuberRegressor(),
    DPHuberRegressor(solver="output_perturbation", delta=0.0, alpha=1.0),
    DPHuberRegressor(solver=PhasedDPSGD(), delta=0.0),
    DPHuberRegressor(solver=PhasedDPSGD(batch_size=4), constraint="lp", p=4.0, radius=2.0),
]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: {})
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _robust_data(seed, n=3000, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / 2
    w = np.array([1.0, -0.7, 0.3, 0.0])[:d]
    y = X @ w + 0.5 + 0.1 * rng.normal(size=n)
    out = rng.random(n) < 0.1
    y[out] += rng.choice([-20.0, 20.0], size=out.sum())
    return X, y, w


def test_matches_sklearn_huber_at_epsilon_inf():
    """At sklearn's fitted scale, the objectives coincide (HuberLoss docstring)."""
    X, y, _ = _robust_data(0)
    sk = HuberRegressor(epsilon=1.35, alpha=1e-3, max_iter=1000, tol=1e-10).fit(X, y)
    n = X.shape[0]
    ours = DPHuberRegressor(
        epsilon=math.inf, solver="gd", huber_delta=1.35 * sk.scale_,
        alpha=1e-3 * sk.scale_ / n, y_bound=25.0, data_norm=3.0, random_state=0,
    )
    assert np.linalg.norm(X, axis=1).max() < 3.0 and np.abs(y).max() < 25.0  # no clipping
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        ours.fit(X, y)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=2e-4)
    assert ours.intercept_ == pytest.approx(sk.intercept_, abs=2e-4)


def test_robust_to_outliers_where_least_squares_is_not():
    X, y, w = _robust_data(1, n=20000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        reg = DPHuberRegressor(epsilon=1.0, delta=1e-5, alpha=1e-3, huber_delta=0.5,
                               y_bound=25.0, data_norm=3.0, random_state=0).fit(X, y)
    assert np.linalg.norm(reg.coef_ - w) < 0.15
    assert reg.privacy_spent_.epsilon <= 1.0


def test_gradient_solvers_need_no_constraint():
    X, y, _ = _robust_data(2, n=500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        for solver in ("gd", PhasedDPSGD()):
            reg = DPHuberRegressor(solver=solver, random_state=0).fit(X, y)
            assert np.all(np.isfinite(reg.coef_)) and isinstance(reg.intercept_, float)


def test_bad_huber_delta_is_rejected_by_parameter_validation():
    X, y, _ = _robust_data(3, n=50)
    with pytest.raises(ValueError, match="huber_delta"):
        DPHuberRegressor(huber_delta=0.0).fit(X, y)


# ---------------------------------------------------------------------------------------
# The default's tail (docs/privacy.md, 1.6)
# ---------------------------------------------------------------------------------------
def test_auto_huber_delta_is_half_the_bound_in_either_mode():
    """``huber_delta="auto"``: half of ``y_bound``, declared (raw units) or private (the
    rescaled problem); a number is in raw units, or in units of the bound when rescaled."""
    from skdp._planning import FitBounds

    y = np.linspace(-3.0, 3.0, 7)
    for rescaled in (False, True):
        bounds = FitBounds(1.0, 4.0, 0.0, rescaled=rescaled)
        loss = DPHuberRegressor()._encode_targets(y, bounds)[1]
        assert loss.huber_delta == pytest.approx(2.0)
        number = DPHuberRegressor(huber_delta=1.0)._encode_targets(y, bounds)[1]
        assert number.huber_delta == pytest.approx(4.0 if rescaled else 1.0)


def test_the_bounds_budget_is_split_one_three_one_two():
    """DPHuberRegressor's own split of the bounds' part (docs/privacy.md, 1.6): the
    shares, the "auto" part from the total weight 7 (30 * 7 / 1000 = 0.21 of epsilon at
    1000 rows, where the other regressors' weight 5 gives the floor 0.2), and a fit's
    ledger holding them."""
    from skdp.privacy.budget import Budget

    est = DPHuberRegressor()
    names = est._auto_bounds()
    assert names == ("data_norm", "y_scale", "y_centre", "y_bound")
    for n, part in ((309, 0.4), (1000, 0.21)):
        shares, _ = est._split_budget(Budget(1.0, 1e-5), names, (n, 10))
        unit = shares["data_norm"]
        assert [shares[k] / unit for k in names] == pytest.approx([1.0, 3.0, 1.0, 2.0])
        assert sum(shares.values()) == pytest.approx(part)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(1000, 2))
    y = X @ [2.0, -1.0] + 5.0 + rng.normal(0, 0.3, 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = DPHuberRegressor(random_state=0).fit(X, y)
    events = reg.privacy_ledger_.part("bounds").event.events
    assert [e.epsilon for e in events] == pytest.approx(
        [0.21 * w / 7.0 for w in (1.0, 3.0, 1.0, 2.0)])


@pytest.mark.slow
def test_default_fits_on_diabetes_have_no_catastrophic_tail():
    """2000 unseeded default fits at epsilon 1 on fresh 70/30 splits of diabetes: at most
    2 below R^2 = -1 and a median above 0.25. Measured 1 of 24,000 below -1 (an
    independent review: 3 of 30,000) and a median of 0.305, so at a rate of 1e-4 the count
    exceeds 2 with probability 1.15e-3 (Poisson, mean 0.2). The former default
    (huber_delta 1.35 in units of y_bound_, the shared split of the bounds' budget:
    median 0.141, 14 of 10,000 below -1) fails it through its median in every 2000-fit
    block the review ran (5 of 5)."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng()
    scores = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2000):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3,
                                                  random_state=int(rng.integers(2**31)))
            scores.append(DPHuberRegressor(epsilon=1.0).fit(Xtr, ytr).score(Xte, yte))
    scores = np.asarray(scores)
    assert np.sum(scores < -1.0) <= 2
    assert np.median(scores) > 0.25


def test_auto_alpha_is_in_units_of_declared_bounds_too():
    """With a declared data_norm D, alpha="auto" fits with 5e-2 D^2 in raw units (the
    same draws as that number), as a number does with private bounds; with private
    bounds it is 5e-2 in their units, the former default."""
    import warnings

    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)

    def fit(**params):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DPHuberRegressor(random_state=2, **params).fit(X, y)

    declared = dict(data_norm=0.2, y_bound=200.0)
    np.testing.assert_allclose(fit(**declared).coef_,
                               fit(alpha=5e-2 * 0.2**2, **declared).coef_, rtol=1e-12)
    np.testing.assert_allclose(fit().coef_, fit(alpha=5e-2).coef_, rtol=1e-12)
