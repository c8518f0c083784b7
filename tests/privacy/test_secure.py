"""Secure mode: the release is snapped to a public grid tied to its noise scale."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skdp import SOLVERS, DPLinearRegression, DPLogisticRegression, IncompatibleSolverError
from skdp.solvers import DPSVRG, NoisyGD, OutputPerturbation
from skdp.solvers._base import SNAP_BITS, snap_release


def test_snap_release_grid():
    W = np.array([[0.123456789], [-3.3], [1e-9]])
    out = snap_release(W, 0.37)
    grid = 2.0 ** (math.floor(math.log2(0.37)) - SNAP_BITS)
    np.testing.assert_array_equal(out / grid, np.rint(out / grid))
    assert np.max(np.abs(out - W)) <= grid / 2
    np.testing.assert_array_equal(snap_release(W, 0.0), W)
    np.testing.assert_array_equal(snap_release(W, math.inf), W)


@pytest.mark.parametrize(
    "est",
    [
        DPLogisticRegression(solver=NoisyGD(n_iter=5), data_norm=1.0),
        DPLogisticRegression(solver=NoisyGD(n_iter=5, iterate="average"), data_norm=1.0),
        DPLogisticRegression(solver=DPSVRG(n_epochs=2, batch_size=10_000), data_norm=1.0),
        DPLogisticRegression(solver=OutputPerturbation(), delta=0.0, data_norm=1.0),
        DPLinearRegression(solver="output_perturbation", delta=0.0, alpha=1.0,
                           data_norm=1.0, y_bound=1.0),
    ],
    ids=lambda e: repr(e.solver),
)
def test_secure_release_lies_on_the_grid_and_barely_moves(est):
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    X /= np.linalg.norm(X, axis=1)[:, None]
    if isinstance(est, DPLinearRegression):
        y = np.clip(X[:, 0], -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = est.set_params(random_state=4, secure=False).fit(X, y)
        coef, intercept = plain.coef_.copy(), np.copy(plain.intercept_)
        scale = plain.solver_.release_noise_scale(plain.privacy_plan_)
        secure = est.set_params(secure=True).fit(X, y)
    assert scale > 0
    grid = 2.0 ** (math.floor(math.log2(scale)) - SNAP_BITS)
    W = secure.coef_.ravel()
    np.testing.assert_allclose(W / grid, np.rint(W / grid), atol=1e-6)
    # The snapped release is within half a cell of the plain one (same noise).
    assert np.max(np.abs(secure.coef_ - coef)) <= grid / 2 * (1 + 1e-9)
    # The intercept is stored as data_norm * W_c: on the grid scaled by data_norm.
    assert np.max(np.abs(np.ravel(secure.intercept_) - np.ravel(intercept))) <= grid


def test_secure_mode_without_declared_scale_is_refused():
    class Anonymous(NoisyGD):
        # A solver that does not declare its release's noise scale (capabilities.secure
        # False, the base release_noise_scale) cannot run in secure mode.
        name = "anonymous"
        capabilities = dataclasses.replace(NoisyGD.capabilities, secure=False)
        release_noise_scale = NoisyGD.__mro__[1].release_noise_scale

    X, y = make_classification(n_samples=50, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    with pytest.raises(IncompatibleSolverError, match="secure"):
        DPLogisticRegression(solver=Anonymous(n_iter=2), secure=True).fit(X, y)


@pytest.mark.parametrize("solver, delta", [
    (name, delta)
    for name in ("objective_perturbation", "approx_objective_perturbation", "phased_sgd",
                 "accelerated_mirror_descent")
    for delta in (1e-5, 0.0) if delta > 0 or not SOLVERS[name].capabilities.needs_delta
])
def test_secure_mode_for_more_solvers(solver, delta):
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    X /= np.linalg.norm(X, axis=1)[:, None]
    est = DPLogisticRegression(solver=solver, delta=delta, random_state=1, secure=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    scale = est.solver_.release_noise_scale(est.privacy_plan_)
    assert 0 < scale < np.inf
    grid = 2.0 ** (math.floor(math.log2(scale)) - SNAP_BITS)
    W = est.coef_.ravel()
    np.testing.assert_allclose(W / grid, np.rint(W / grid), atol=1e-6)


def test_secure_mode_is_a_no_op_for_frank_wolfe():
    # Frank-Wolfe releases a convex combination of vertices: no additive output noise.
    from skdp import DPLasso

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 8))
    y = np.clip(X[:, 0], -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = DPLasso(solver="frank_wolfe", random_state=2).fit(X, y)
        secure = DPLasso(solver="frank_wolfe", random_state=2, secure=True).fit(X, y)
    np.testing.assert_array_equal(secure.coef_, plain.coef_)
