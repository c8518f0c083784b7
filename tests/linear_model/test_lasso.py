"""DPLasso: least squares over an l1 ball (the intercept inside the ball)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Lasso

from skdp import DPLasso, PrivacyLeakWarning
from skdp.solvers import DPAccMD, PrivateFrankWolfe


def _data(n=400, d=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    w = np.zeros(d)
    w[:3] = [0.5, -0.3, 0.2]
    y = np.clip(X @ w + 0.05 * rng.normal(size=n), -1, 1)
    return X, y


def test_epsilon_inf_matches_sklearn_lasso_at_the_dual_radius():
    # Lagrangian duality: Lasso(alpha) solves the l1-constrained problem with
    # radius = ||w_alpha||_1 (same (1/2n)||y - Xw||^2 scale).
    X, y = _data()
    ref = Lasso(alpha=0.01, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X, y)
    radius = float(np.abs(ref.coef_).sum())
    est = DPLasso(epsilon=np.inf, radius=radius, solver=DPAccMD(n_iter=3000),
                  fit_intercept=False, data_norm=1.0, y_bound=1.0)
    with pytest.warns(PrivacyLeakWarning):
        est.fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=2e-4)
    assert np.abs(est.coef_).sum() <= radius * (1 + 1e-9)


def test_auto_on_few_features_solves_the_lasso_on_the_statistics_exactly_at_inf():
    # 5 * 6 / 2 Gram entries <= 400 / 4: the sufficient statistics, rows in l2.
    X, y = _data(d=5)
    ref = Lasso(alpha=0.01, fit_intercept=False, tol=1e-14, max_iter=100_000).fit(X, y)
    radius = float(np.abs(ref.coef_).sum())
    est = DPLasso(epsilon=np.inf, radius=radius, fit_intercept=False, data_norm=2.3,
                  y_bound=1.0)
    with pytest.warns(PrivacyLeakWarning):
        est.fit(X, y)
    assert est.solver_.name == "sufficient_statistics"
    # A declared data_norm keeps its documented l-infinity meaning.
    assert est.data_norm_ord_ == np.inf
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-7)


def test_the_fitted_norm_is_kept_for_predict():
    X, y = _data(d=5)
    est = DPLasso(epsilon=5.0, y_bound=1.0, random_state=0)
    with pytest.warns(PrivacyLeakWarning):
        est.fit(X, y)
    # data_norm="auto" with the statistics: rows measured in l2.
    assert est.solver_.name == "sufficient_statistics" and est.data_norm_ord_ == 2.0
    before = est.predict(X * 3)  # rows beyond data_norm: clipped in the fitted norm
    est.set_params(data_norm_ord=np.inf)
    np.testing.assert_array_equal(est.predict(X * 3), before)
    # An estimator fitted before data_norm_ord_ existed clipped in the dual norm.
    del est.data_norm_ord_
    est.set_params(data_norm_ord="auto")
    assert est._data_norm_ord() == np.inf
    wide, _ = _data(n=200, d=40)
    with pytest.warns(PrivacyLeakWarning):
        fw = DPLasso(epsilon=5.0, data_norm=1.0, y_bound=1.0, random_state=0).fit(
            wide, np.clip(wide[:, 0], -1, 1))
    assert fw.solver_.name == "frank_wolfe" and fw.data_norm_ord_ == np.inf


@pytest.mark.parametrize(("n", "d", "delta", "expected"), [
    (220, 10, 1e-5, "sufficient_statistics"),  # 10 * 11 <= 220 / 2
    (219, 10, 1e-5, "frank_wolfe"),
    (10**6, 10, 0.0, "frank_wolfe"),           # pure DP: Frank-Wolfe's own
])
def test_auto_rule_reads_the_shape_and_delta_only(n, d, delta, expected):
    est = DPLasso(delta=delta)
    assert est._solver_name((n, d)) == expected
    assert est._solver_name(None) == "frank_wolfe"
    assert DPLasso(solver="gd")._solver_name((n, d)) == "gd"


@pytest.mark.parametrize("setting", [{"secure": True}, {"accounting": "basic"}])
def test_auto_runs_frank_wolfe_where_the_statistics_cannot_honour_a_setting(setting):
    # The statistics declare neither secure snapping nor basic accounting.
    assert DPLasso(**setting)._solver_name((10**6, 3)) == "frank_wolfe"
    assert DPLasso()._solver_name((10**6, 3)) == "sufficient_statistics"


def test_every_solver_auto_can_run_shares_the_tags_of_the_shapeless_choice():
    # __sklearn_tags__ reads the shape-less choice; dask and device input are checked
    # against the shape's: the declarations must agree.
    from skdp.solvers import get_solver

    est = DPLasso()
    choices = {est._solver_name(shape) for shape in ((10**6, 3), (10, 50), None)}
    assert len({get_solver(name).capabilities.out_of_core for name in choices}) == 1


def test_auto_at_epsilon_inf_is_the_exact_lasso_up_to_the_statistics_size():
    est = DPLasso(epsilon=np.inf, delta=0.0)
    assert est._solver_name((10, 4095)) == "sufficient_statistics"  # 4096 parameters
    assert est._solver_name((10, 4096)) == "frank_wolfe"
    X, y = _data(n=100, d=30)  # wide for the private rule: 465 Gram entries > 25
    ref = Lasso(alpha=0.01, fit_intercept=False, tol=1e-14, max_iter=100_000).fit(X, y)
    radius = float(np.abs(ref.coef_).sum())
    with pytest.warns(PrivacyLeakWarning):
        fit = DPLasso(epsilon=np.inf, radius=radius, fit_intercept=False,
                      data_norm=float(np.sqrt(30)), y_bound=1.0).fit(X, y)
    np.testing.assert_allclose(fit.coef_, ref.coef_, atol=1e-7)


def test_the_bound_rules_follow_the_solver_that_runs():
    # The statistics' rules (a lower data_norm quantile, y_bound doubled at small n eps) help them
    # and hurt Frank-Wolfe: each fit reads the rules of the solver it runs.
    from skdp.linear_model._lasso import LASSO_STATISTICS_RULES
    from skdp.linear_model._regression import STATISTICS_BOUND_RULES
    from skdp.solvers import get_solver

    est = DPLasso()
    assert est._rules_for(get_solver("sufficient_statistics")) is LASSO_STATISTICS_RULES
    assert LASSO_STATISTICS_RULES.y_bound_slack == 4.0
    assert LASSO_STATISTICS_RULES.data_norm_quantile == \
        STATISTICS_BOUND_RULES.data_norm_quantile == 0.5
    assert est._rules_for(get_solver("frank_wolfe")) == DPLasso._bound_rules
    assert DPLasso._bound_rules.data_norm_quantile == 0.75


def test_auto_runs_pure_dp_frank_wolfe_on_many_features_and_learns_the_support():
    X, y = _data(n=4000, d=50)  # 50 * 51 / 2 Gram entries > 4000 / 4
    est = DPLasso(epsilon=5.0, delta=0.0, radius=1.0, data_norm=1.0, y_bound=1.0,
                  random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est.fit(X, y)
    assert est.privacy_spent_.epsilon <= 5.0
    assert est.privacy_ledger_.accounting == "pure"
    assert isinstance(est.solver_, PrivateFrankWolfe)
    # Intercept inside the ball: ||(coef, intercept / data_norm)||_1 <= radius.
    assert np.abs(est.coef_).sum() + abs(est.intercept_) / est.data_norm <= 1.0 + 1e-9
    assert est.score(X, y) > 0.0  # better than predicting 0 (the labels have mean ~0)
    assert np.argmax(np.abs(est.coef_)) == 0


def test_sparse_input_stays_sparse_and_equals_dense():
    X, y = _data(n=300, d=40)
    X[np.abs(X) < 0.7] = 0.0
    Xs = sp.csr_matrix(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        dense = DPLasso(epsilon=2.0, radius=1.0, random_state=3).fit(X, y)
        sparse = DPLasso(epsilon=2.0, radius=1.0, random_state=3).fit(Xs, y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10, atol=1e-12)


def test_rows_are_clipped_in_l_infinity_by_default():
    X, y = _data(n=200, d=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est = DPLasso(epsilon=1.0, radius=1.0, data_norm=0.5, random_state=0).fit(X, y)
    row = np.full((1, 10), 0.5)
    # Every entry already at 0.5 = data_norm in l-inf: scaling it up changes nothing.
    np.testing.assert_allclose(est.predict(row * 4), est.predict(row))


@pytest.mark.parametrize("params, match", [({"radius": 0.0}, "radius"),
                                           ({"radius": None}, "radius"),
                                           ({"y_bound": -1.0}, "y_bound")])
def test_bad_parameters(params, match):
    X, y = _data(n=50, d=5)
    with pytest.raises(ValueError, match=match):
        DPLasso(**params).fit(X, y)
