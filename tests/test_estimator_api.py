"""Estimator-level behaviour of DPLogisticRegression: the scikit-learn API contract,
fitted attributes, calibration of multiclass fits, randomness, input formats, the
non-private mode and warnings."""

from __future__ import annotations

import inspect
import math
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp import (
    DPSVRG,
    DPHuberRegressor,
    DPLasso,
    DPLinearRegression,
    DPLinearSVC,
    DPLogisticRegression,
    NoisyGD,
    PrivacyLeakWarning,
)
from skdp._warnings import reset_shown
from skdp.linear_model._parameters import BOUNDS, RUN_OPTIONS
from tests.conftest import dp_clf

# One SVRG configuration for every SVRG fit below, on N_SVRG rows: its RDP calibration
# (about 3 s) is cached by its inputs, so it is paid once for the whole module.
N_SVRG = 200


def small_svrg():
    return DPSVRG(n_epochs=2, batch_size=16)


def make_data(n=300, d=5, n_classes=2, seed=0, labels=None):
    """Rows of norm <= 1 and labels from a noisy linear model."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    X *= np.minimum(1.0, 0.99 / np.linalg.norm(X, axis=1))[:, None]
    W = rng.normal(size=(d, n_classes)) * 3.0
    scores = X @ W + rng.gumbel(size=(n, n_classes))
    y = np.argmax(scores, axis=1)
    # Every class appears.
    y[:n_classes] = np.arange(n_classes)
    if labels is not None:
        y = np.asarray(labels)[y]
    return X, y


# -- scikit-learn meta-estimators ---------------------------------------------------------


def _pipeline(**clf_params):
    return Pipeline(
        [
            ("identity", FunctionTransformer()),
            ("clf", dp_clf(**clf_params)),
        ]
    )


def test_grid_search_over_epsilon_in_pipeline():
    X, y = make_data(n=300)
    search = GridSearchCV(
        _pipeline(), {"clf__epsilon": [0.5, 1, 2]}, cv=3, error_score="raise"
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 3
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    best = search.best_estimator_.named_steps["clf"]
    assert best.epsilon == search.best_params_["clf__epsilon"]
    spent = best.privacy_spent_
    assert 0.99 * best.epsilon <= spent.epsilon <= best.epsilon
    assert spent.delta == best.delta
    # The refitted best model sees the whole dataset.
    assert best.privacy_plan_.n_iter == best.n_iter_
    assert search.predict(X).shape == (300,)


def test_grid_search_over_nested_solver_parameter():
    X, y = make_data(n=300)
    grid_solver = NoisyGD()
    search = GridSearchCV(
        _pipeline(),
        {"clf__solver": [grid_solver], "clf__solver__n_iter": [5, 10]},
        cv=3,
        error_score="raise",
    ).fit(X, y)
    n_iters = [p["clf__solver__n_iter"] for p in search.cv_results_["params"]]
    assert sorted(n_iters) == [5, 10]
    best = search.best_estimator_.named_steps["clf"]
    assert isinstance(best.solver, NoisyGD)
    assert best.solver.n_iter == search.best_params_["clf__solver__n_iter"]
    assert best.n_iter_ == best.solver.n_iter
    assert best.privacy_spent_.epsilon <= best.epsilon
    # The object in the grid was cloned, never mutated by set_params or fit.
    assert grid_solver.n_iter is None
    assert best.solver is not grid_solver


def test_grid_search_parallel_matches_sequential():
    X, y = make_data(n=100)
    grid = {"epsilon": [0.5, 1.0]}
    results = [
        GridSearchCV(dp_clf(), grid, cv=2, n_jobs=n_jobs, error_score="raise")
        .fit(X, y)
        .cv_results_["mean_test_score"]
        for n_jobs in (1, 2)
    ]
    # Fixed random_state: the workers must reproduce the sequential scores exactly.
    np.testing.assert_array_equal(results[0], results[1])


# -- parameters ---------------------------------------------------------------------------


def test_clone_keeps_parameters():
    solver = NoisyGD(n_iter=7, step_size=0.5, iterate="average")
    est = DPLogisticRegression(
        epsilon=0.7,
        delta=1e-6,
        solver=solver,
        alpha=0.05,
        data_norm=2.0,
        fit_intercept=False,
        constraint="l2",
        radius=3.0,
        accounting="rdp",
        neighboring="replace_one",
        random_state=4,
    )
    copy = clone(est)
    params, copy_params = est.get_params(deep=False), copy.get_params(deep=False)
    assert params.keys() == copy_params.keys()
    for key, value in params.items():
        if key == "solver":
            assert copy_params[key] is not solver
            assert type(copy_params[key]) is NoisyGD
            assert copy_params[key].get_params() == solver.get_params()
        else:
            assert copy_params[key] == value
    assert copy.get_params(deep=True)["solver__n_iter"] == 7


@pytest.mark.parametrize(
    "solver_factory",
    [lambda: "gd", lambda: NoisyGD(n_iter=9, clip_norm=0.5), small_svrg],
    ids=["gd-name", "gd-object", "svrg-object"],
)
def test_fit_does_not_write_constructor_parameters(solver_factory):
    solver = solver_factory()
    X, y = make_data(n=N_SVRG)
    est = dp_clf(solver=solver)
    before = est.get_params(deep=True)
    solver_params_before = None if isinstance(solver, str) else dict(solver.get_params())
    est.fit(X, y)
    after = est.get_params(deep=True)
    assert before.keys() == after.keys()
    for key in before:
        assert after[key] is before[key] or after[key] == before[key], key
    assert est.solver is solver
    if solver_params_before is not None:
        assert solver.get_params() == solver_params_before
        assert est.solver_ is not solver
        assert est.solver_.get_params() == solver_params_before
    else:
        assert est.solver == "gd"
        assert isinstance(est.solver_, NoisyGD)
    # The unfitted clone of a fitted estimator has the same parameters, no fitted state.
    fresh = clone(est)
    assert not hasattr(fresh, "coef_")
    assert fresh.get_params(deep=False).keys() == est.get_params(deep=False).keys()


# -- fitted attributes ----------------------------------------------------------------------


def test_fitted_attributes_binary():
    X, y = make_data(n=300, d=5, labels=np.array(["no", "yes"]))
    est = dp_clf(data_norm=1.0).fit(X, y)
    np.testing.assert_array_equal(est.classes_, ["no", "yes"])
    assert est.coef_.shape == (1, 5)
    assert est.intercept_.shape == (1,)
    assert est.n_features_in_ == 5
    assert isinstance(est.n_iter_, int | np.integer) and est.n_iter_ >= 1
    assert est.n_iter_ == est.privacy_plan_.n_iter
    # The solver's releases and the private threshold's (docs/algorithms/threshold.md).
    assert [name for name, _ in est.privacy_ledger_.parts] == ["fit", "threshold"]
    assert est.privacy_ledger_.part("fit").relation == "replace_one"
    assert 0.99 * 1.0 <= est.privacy_spent_.epsilon <= 1.0
    assert est.privacy_spent_.delta == 1e-5
    assert est.decision_function(X).shape == (300,)
    assert set(est.predict(X)) <= {"no", "yes"}
    proba = est.predict_proba(X)
    assert proba.shape == (300, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(est.predict_log_proba(X)), proba, rtol=1e-9, atol=1e-14)
    # predict agrees with the probabilities.
    np.testing.assert_array_equal(est.predict(X), est.classes_[np.argmax(proba, axis=1)])


def test_fitted_attributes_multiclass():
    X, y = make_data(n=300, d=4, n_classes=3, labels=np.array([10, 20, 30]))
    est = dp_clf().fit(X, y)
    np.testing.assert_array_equal(est.classes_, [10, 20, 30])
    assert est.coef_.shape == (3, 4)
    assert est.intercept_.shape == (3,)
    assert est.n_iter_ == est.privacy_plan_.n_iter
    assert 0.99 <= est.privacy_spent_.epsilon <= 1.0
    proba = est.predict_proba(X)
    assert proba.shape == (300, 3)
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    pred = est.predict(X)
    assert set(pred) <= set(est.classes_)
    np.testing.assert_array_equal(pred, est.classes_[np.argmax(proba, axis=1)])
    assert est.decision_function(X).shape == (300, 3)


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_gd_spends_its_whole_budget_and_no_more(epsilon, n_classes):
    X, y = make_data(n=300, n_classes=n_classes)
    est = dp_clf(epsilon=epsilon).fit(X, y)
    assert 0.99 * epsilon <= est.privacy_spent_.epsilon <= epsilon


def test_explicit_iteration_counts():
    X, y = make_data(n=N_SVRG)
    assert dp_clf(solver=NoisyGD(n_iter=17)).fit(X, y).n_iter_ == 17
    # batch_size >= n keeps the calibration cheap (no subsampling to account).
    est = dp_clf(solver=DPSVRG(n_epochs=2, inner_steps=3, batch_size=10**6)).fit(X, y)
    assert est.privacy_plan_.epoch_lengths == (3, 3)
    assert est.n_iter_ == 6


@pytest.mark.parametrize("solver_factory", [lambda: "gd", small_svrg], ids=["gd", "svrg"])
def test_n_iter_and_noise_do_not_depend_on_the_data(solver_factory):
    X1, y1 = make_data(n=N_SVRG, seed=1)
    X2, y2 = make_data(n=N_SVRG, seed=2, n_classes=2)
    X2 = 0.1 * X2  # different norms, different labels, same shape
    y2 = 1 - y2
    a = dp_clf(solver=solver_factory(), data_norm=1.0).fit(X1, y1)
    b = dp_clf(solver=solver_factory(), data_norm=1.0, random_state=1).fit(X2, y2)
    assert a.n_iter_ == b.n_iter_
    assert a.privacy_plan_.constants() == b.privacy_plan_.constants()
    assert a.privacy_spent_ == b.privacy_spent_


# -- multiclass calibration -------------------------------------------------------------------


def test_multiclass_is_one_joint_calibration():
    n = 300
    Xb, yb = make_data(n=n, n_classes=2, seed=3)
    X3, y3 = make_data(n=n, n_classes=3, seed=3)
    X5, y5 = make_data(n=n, n_classes=5, seed=3)

    def sigma(X, y, **solver_params):
        # The solver's calibration alone (no private threshold for two classes).
        est = dp_clf(solver=NoisyGD(n_iter=20, **solver_params),
                     threshold_fraction=0.0).fit(X, y)
        assert est.privacy_spent_.epsilon <= 1.0
        return est.privacy_plan_

    # With the same per-example gradient clip the noise is identical: one Gaussian release
    # per step of the whole (d, K) gradient, not K releases with a split budget.
    same_clip = [sigma(X, y, clip_norm=1.0) for X, y in ((Xb, yb), (X3, y3), (X5, y5))]
    assert same_clip[0].sigma == same_clip[1].sigma == same_clip[2].sigma

    # With the default clip (the derivative's bound at w = 0 times the row bound:
    # ||1/K - e_y|| = sqrt((K - 1) / K) against |phi'(0)| = 1/2 for two classes) the noise
    # follows that bound, below sqrt(2) whatever K: a per-class split would grow with K.
    default = [sigma(X, y) for X, y in ((Xb, yb), (X3, y3), (X5, y5))]
    assert default[0].noise_multiplier == default[1].noise_multiplier
    for plan, k in ((default[1], 3), (default[2], 5)):
        assert plan.sigma == pytest.approx(
            math.sqrt((k - 1) / k) / 0.5 * default[0].sigma, rel=1e-12)
        assert plan.sigma < math.sqrt(2.0) / 0.5 * default[0].sigma


def test_multiclass_noise_is_independent_across_classes():
    # With X = 0 and no intercept every gradient vanishes: after one step from W = 0,
    # coef_ = -step * N(0, sigma^2) exactly, so its rows are the noise of each class.
    d, n_classes = 2000, 3
    X = np.zeros((60, d))
    y = np.arange(60) % n_classes
    est = dp_clf(epsilon=1e-3, solver=NoisyGD(n_iter=1), fit_intercept=False,
                 noise_dominated="fit").fit(X, y)
    plan = est.privacy_plan_
    scale = plan.step_size * plan.sigma
    assert scale > 0
    coef = est.coef_
    assert coef.shape == (n_classes, d)
    # Every class gets the full noise level (not sigma / sqrt(K)); the sample std of 2000
    # normals is within 10% of the truth with probability 1 - 1e-9.
    np.testing.assert_allclose(coef.std(axis=1), scale, rtol=0.1)
    np.testing.assert_allclose(coef.mean(axis=1), 0.0, atol=6 * scale / math.sqrt(d))
    # Independent rows: the sample correlation has std 1/sqrt(d) ~ 0.022, so |corr| < 0.15
    # fails with probability < 1e-10.
    corr = np.corrcoef(coef)
    off_diagonal = corr[~np.eye(n_classes, dtype=bool)]
    assert np.all(np.abs(off_diagonal) < 0.15), corr


# -- randomness -----------------------------------------------------------------------------


def test_same_seed_reproduces_and_different_seeds_differ():
    X, y = make_data(n=300)
    a = dp_clf(random_state=3).fit(X, y)
    b = dp_clf(random_state=3).fit(X, y)
    c = dp_clf(random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    assert not np.allclose(a.coef_, c.coef_)
    # Refitting the same estimator with an int seed reproduces too.
    np.testing.assert_array_equal(a.fit(X, y).coef_, b.coef_)


def test_random_state_none_is_fresh_and_ignores_the_global_seed():
    X, y = make_data(n=300)
    coefs = []
    for _ in range(2):
        np.random.seed(0)  # noqa: NPY002 (the legacy global state on purpose)
        coefs.append(dp_clf(random_state=None).fit(X, y).coef_)
    assert not np.allclose(coefs[0], coefs[1])


def test_fit_does_not_touch_the_global_numpy_state():
    X, y = make_data(n=300)
    # The legacy global state on purpose: skdp must neither read nor advance it.
    np.random.seed(123)  # noqa: NPY002
    expected = np.random.random()  # noqa: NPY002
    np.random.seed(123)  # noqa: NPY002
    dp_clf(random_state=None).fit(X, y)
    dp_clf(random_state=1).fit(X, y)
    assert np.random.random() == expected  # noqa: NPY002


def test_random_state_generator_and_randomstate_are_accepted():
    X, y = make_data(n=300)
    a = dp_clf(random_state=np.random.default_rng(5)).fit(X, y)
    b = dp_clf(random_state=np.random.default_rng(5)).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = dp_clf(random_state=np.random.RandomState(5)).fit(X, y)
    d = dp_clf(random_state=np.random.RandomState(5)).fit(X, y)
    np.testing.assert_array_equal(c.coef_, d.coef_)


# -- input formats ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solver_factory, n_classes",
    [(lambda: "gd", 2), (lambda: "gd", 3), (small_svrg, 2)],
    ids=["gd-binary", "gd-multiclass", "svrg-binary"],
)
def test_sparse_input_matches_dense(solver_factory, n_classes):
    # Also checks that a fixed seed reproduces the SVRG batches and noise exactly.
    X, y = make_data(n=N_SVRG, d=6, n_classes=n_classes, seed=4)
    X[np.abs(X) < 0.2] = 0.0  # genuinely sparse rows
    X[5] = 0.0  # and an all-zero row
    X[7] *= 3.0  # and a row that needs clipping
    dense = dp_clf(solver=solver_factory()).fit(X, y)
    sparse = dp_clf(solver=solver_factory()).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        sparse.decision_function(sp.csr_matrix(X)),
        dense.decision_function(X),
        rtol=1e-10,
        atol=1e-12,
    )
    assert not sp.issparse(sparse.coef_)


def test_other_sparse_formats_are_accepted():
    X, y = make_data(n=100, d=6, seed=4)
    X[np.abs(X) < 0.2] = 0.0
    dense = dp_clf().fit(X, y)
    for fmt in (sp.csc_matrix, sp.coo_matrix, sp.csr_array):
        est = dp_clf().fit(fmt(X), y)
        np.testing.assert_allclose(est.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(
            est.predict_proba(fmt(X)), dense.predict_proba(X), rtol=1e-10, atol=1e-12
        )


def test_dataframe_input_sets_feature_names():
    pd = pytest.importorskip("pandas")
    X, y = make_data(n=300, d=3)
    df = pd.DataFrame(X, columns=["age", "height", "weight"])
    est = dp_clf().fit(df, pd.Series(y))
    np.testing.assert_array_equal(est.feature_names_in_, ["age", "height", "weight"])
    from_array = dp_clf().fit(X, y)
    # Same noise; only the memory layout (and so the rounding) of the data may differ.
    np.testing.assert_allclose(est.coef_, from_array.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(est.predict(df.copy()), from_array.predict(X))
    np.testing.assert_allclose(est.predict_proba(df), from_array.predict_proba(X), rtol=1e-10)
    # Renamed or reordered columns are refused by scikit-learn's validation.
    with pytest.raises(ValueError, match="feature names"):
        est.predict(df[["height", "age", "weight"]])
    # A plain numpy array does not set feature names.
    assert not hasattr(dp_clf().fit(X, y), "feature_names_in_")


def test_pickle_roundtrip_predicts_identically():
    X, y = make_data(n=300, n_classes=3)
    est = dp_clf().fit(X, y)
    loaded = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
    assert loaded.privacy_spent_ == est.privacy_spent_


# -- non-private mode ---------------------------------------------------------------------------


def _objective_and_gradient(theta, X, s, alpha):
    """F(w, b) = mean log(1 + exp(-s (X w + b))) + alpha/2 ||w||^2, and its gradient."""
    w, b = theta[:-1], theta[-1]
    margin = s * (X @ w + b)
    value = np.mean(np.logaddexp(0.0, -margin)) + 0.5 * alpha * w @ w
    coef = -s * expit(-margin) / len(s)
    grad = np.append(X.T @ coef + alpha * w, coef.sum())
    return value, grad


def _hessian(theta, X, s, alpha):
    w, b = theta[:-1], theta[-1]
    p = expit(X @ w + b)
    Xa = np.hstack([X, np.ones((len(s), 1))])
    H = (Xa * (p * (1 - p))[:, None]).T @ Xa / len(s)
    H[:-1, :-1] += alpha * np.eye(X.shape[1])
    return H


def test_epsilon_inf_reaches_the_exact_optimum():
    X, y = make_data(n=300, d=5, seed=5)
    assert np.linalg.norm(X, axis=1).max() <= 1.0
    alpha = 0.1
    s = np.where(y == 1, 1.0, -1.0)
    with pytest.warns(PrivacyLeakWarning):
        est = dp_clf(
            epsilon=np.inf, alpha=alpha, data_norm=1.0, solver=NoisyGD(n_iter=3000)
        ).fit(X, y)
    assert est.privacy_plan_.sigma == 0.0
    theta = np.append(est.coef_[0], est.intercept_[0])
    _, grad = _objective_and_gradient(theta, X, s, alpha)
    assert np.linalg.norm(grad) < 1e-8

    ref = minimize(
        _objective_and_gradient,
        np.zeros(6),
        args=(X, s, alpha),
        jac=True,
        hess=_hessian,
        method="trust-exact",
        options={"gtol": 1e-12},
    )
    assert np.linalg.norm(_objective_and_gradient(ref.x, X, s, alpha)[1]) < 1e-10
    np.testing.assert_allclose(theta, ref.x, atol=1e-6, rtol=0)

    # With a finite budget the noise moves the model away from the optimum.
    private = dp_clf(epsilon=1.0, alpha=alpha, data_norm=1.0).fit(X, y)
    private_theta = np.append(private.coef_[0], private.intercept_[0])
    assert np.max(np.abs(private_theta - ref.x)) > 1e-3


def test_epsilon_inf_classifies_separable_data():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 2)) * 0.1
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    X[:, 0] += np.where(y == 1, 0.3, -0.3)
    with pytest.warns(PrivacyLeakWarning):
        est = dp_clf(epsilon=np.inf).fit(X, y)
    assert est.score(X, y) > 0.83
    assert est.privacy_spent_.epsilon == np.inf


# -- warnings -------------------------------------------------------------------------------------


def test_epsilon_inf_warns():
    X, y = make_data(n=300)
    with pytest.warns(PrivacyLeakWarning, match="WITHOUT differential privacy"):
        dp_clf(epsilon=np.inf).fit(X, y)
    reset_shown()  # shown once per process: forget it to see it again
    with pytest.warns(PrivacyLeakWarning):
        dp_clf(epsilon=float("inf"), solver=NoisyGD(n_iter=5)).fit(X, y)


@pytest.mark.parametrize("delta", [1 / 300, 0.01, 0.5])
def test_large_delta_warns(delta):
    X, y = make_data(n=300)
    with pytest.warns(PrivacyLeakWarning, match="1/n_samples"):
        dp_clf(delta=delta).fit(X, y)


@pytest.mark.parametrize(
    "solver_factory",
    [lambda: "gd", lambda: NoisyGD(n_iter=5), small_svrg],
    ids=["gd", "gd-object", "svrg"],
)
def test_private_fit_emits_no_warnings(solver_factory):
    n = N_SVRG
    X, y = make_data(n=n)
    assert 1e-5 < 1 / n
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = dp_clf(solver=solver_factory(), random_state=None, classes=[0, 1]).fit(X, y)
        est.predict_proba(X)
        est.predict(X)
        est.decision_function(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dp_clf(delta=1e-5, random_state=None, classes=[0, 1, 2]).fit(
            *make_data(n=300, n_classes=3)
        )


@pytest.mark.parametrize("seed", [0, np.random.default_rng(0), np.random.RandomState(0)])
def test_a_stored_seed_is_warned_about(seed):
    """Whoever holds the estimator (or the seed) can regenerate and remove the noise."""
    with pytest.warns(PrivacyLeakWarning, match="random_state is set"):
        dp_clf(random_state=seed).fit(*make_data(n=300))


# -- non-Euclidean constraints ---------------------------------------------------------------
@pytest.mark.parametrize(
    "constraint, p, ord",
    [("l2", None, 2.0), ("l1", None, np.inf), ("lp", 1.5, 3.0), ("lp", 4.0, 4.0 / 3.0)],
)
def test_data_norm_is_measured_in_the_dual_norm_of_the_constraint(constraint, p, ord):
    X, y = make_classification(n_samples=80, n_features=6, random_state=0)
    est = DPLogisticRegression(
        epsilon=np.inf, constraint=constraint, radius=0.5, p=p, fit_intercept=False,
        solver=NoisyGD(n_iter=5), data_norm=1.0,
    )
    with pytest.warns(PrivacyLeakWarning):
        est.fit(X, y)
    assert est._data_norm_ord() == ord
    # Rows are clipped in that norm at predict time too: scaling a row past data_norm
    # leaves its score unchanged.
    row = X[:1] / np.linalg.norm(X[:1].ravel(), ord=ord)
    np.testing.assert_allclose(est.decision_function(row * 10), est.decision_function(row))


@pytest.mark.parametrize("constraint, p", [("l1", None), ("lp", 1.5), ("lp", 3.0)])
def test_gd_respects_non_euclidean_constraints(constraint, p):
    X, y = make_classification(n_samples=80, n_features=6, random_state=0)
    est = DPLogisticRegression(
        epsilon=1.0, constraint=constraint, radius=0.3, p=p, fit_intercept=False,
        random_state=0, solver=NoisyGD(n_iter=20),
    )
    with pytest.warns(PrivacyLeakWarning):
        est.fit(X, y)
    norm = np.linalg.norm(est.coef_.ravel(), ord=1 if constraint == "l1" else p)
    assert norm <= 0.3 * (1 + 1e-9)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearSVC, DPLinearRegression,
                                 DPHuberRegressor, DPLasso])
def test_declared_constructor_behaves_as_a_written_one(cls):
    # The signature comes from one declaration per parameter group (declared_init):
    # epsilon and delta by position, the rest keyword-only, every shared group in full,
    # and a call stores exactly its arguments, with the TypeErrors of a written __init__.
    params = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in params[:2]] == ["epsilon", "delta"]
    assert all(p.kind is p.KEYWORD_ONLY for p in params[2:])
    names = [p.name for p in params]
    assert set(BOUNDS) | set(RUN_OPTIONS) <= set(names)
    assert len(names) == len(set(names))
    est = cls(0.5, 1e-6, random_state=3)
    assert vars(est) == est.get_params(deep=False)
    assert (est.epsilon, est.delta, est.random_state) == (0.5, 1e-6, 3)
    assert est.get_params()["verbose"] == RUN_OPTIONS["verbose"]
    # Python's own messages for a written __init__, naming the class.
    where = rf"^{cls.__name__}\.__init__\(\) "
    with pytest.raises(TypeError, match=where + "got an unexpected keyword argument 'bogus'$"):
        cls(bogus=1)
    with pytest.raises(TypeError, match=where + "takes from 1 to 3 positional arguments but "
                                                "4 were given$"):
        cls(0.5, 1e-6, "auto")
    with pytest.raises(TypeError, match=where + "got multiple values for argument 'epsilon'$"):
        cls(0.5, epsilon=1.0)
    assert clone(est).get_params() == est.get_params()
    # The function reads as the class's own and pickles by reference.
    assert cls.__init__.__qualname__ == f"{cls.__name__}.__init__"
    assert cls.__init__.__module__ == cls.__module__
    assert pickle.loads(pickle.dumps(cls.__init__)) is cls.__init__
