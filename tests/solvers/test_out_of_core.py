"""Out-of-core X: a numpy.memmap and a dask array fit exactly like the in-memory array.

Same seed, same plan, same ledger; the coefficients agree to relative 1e-10 (a dask
fit sums its chunks in another order than the in-memory blocks; a memmap is an array,
so its fit is the in-memory fit bit for bit). See docs/scaling_out.md.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from skdp import BudgetAccountant
from skdp.exceptions import IncompatibleSolverError
from skdp.linear_model import DPLinearRegression, DPLogisticRegression
from skdp.solvers import SOLVERS, Problem

da = pytest.importorskip("dask.array")

N, D = 3000, 6
COMMON = {"epsilon": 1.0, "delta": 1e-5, "data_norm": 1.0, "random_state": 0}


def _classifier(solver, **kw):
    return DPLogisticRegression(solver=solver, alpha=0.01, classes=[0, 1], **COMMON, **kw)


#: One estimator per full-batch solver (the inner solves of output and objective
#: perturbation included), and whether it is a regression.
ESTIMATORS = {
    "gd": (lambda: _classifier("gd"), False),
    "gd_multinomial": (lambda: DPLogisticRegression(solver="gd", alpha=0.01,
                                                    classes=[0, 1, 2], **COMMON), "multi"),
    "accelerated_mirror_descent": (lambda: _classifier("accelerated_mirror_descent"), False),
    "frank_wolfe": (lambda: _classifier("frank_wolfe", constraint="l1", radius=2.0,
                                        fit_intercept=False), False),
    "output_perturbation": (lambda: _classifier("output_perturbation"), False),
    "objective_perturbation": (lambda: _classifier("objective_perturbation"), False),
    "approx_objective_perturbation": (lambda: _classifier("approx_objective_perturbation"),
                                      False),
    "sufficient_statistics": (lambda: DPLinearRegression(solver="sufficient_statistics",
                                                         y_bound=1.0, **COMMON), True),
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D)) / np.sqrt(D) * rng.uniform(0.3, 2.0, size=(N, 1))
    y = (X[:, 0] + 0.3 * rng.standard_normal(N) > 0).astype(int)
    y3 = np.digitize(X[:, 1], [-0.3, 0.3])
    yr = X @ rng.standard_normal(D) * 0.3
    return X, {False: y, True: yr, "multi": y3}


@pytest.fixture(scope="module")
def memmap(data, tmp_path_factory):
    X = data[0]
    path = tmp_path_factory.mktemp("memmap") / "X.dat"
    out = np.memmap(path, dtype=np.float64, mode="w+", shape=X.shape)
    out[:] = X
    out.flush()
    del out
    return np.memmap(path, dtype=np.float64, mode="r", shape=X.shape)


def _fit(make, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make().fit(X, y)


def _assert_same_fit(a, b, rtol=1e-10):
    np.testing.assert_allclose(np.ravel(b.coef_), np.ravel(a.coef_), rtol=rtol,
                               atol=rtol * np.max(np.abs(a.coef_)))
    np.testing.assert_allclose(np.ravel(b.intercept_), np.ravel(a.intercept_), rtol=rtol,
                               atol=rtol * max(np.max(np.abs(a.intercept_)), 1e-300))
    assert b.privacy_spent_ == a.privacy_spent_
    assert repr(b.privacy_plan_) == repr(a.privacy_plan_)
    assert b.privacy_plan_.event == a.privacy_plan_.event
    assert b.n_iter_ == a.n_iter_


@pytest.mark.parametrize("name", ESTIMATORS)
def test_memmap_fit_is_the_in_memory_fit(name, data, memmap):
    make, task = ESTIMATORS[name]
    X, ys = data
    a, b = _fit(make, X, ys[task]), _fit(make, memmap, ys[task])
    _assert_same_fit(a, b, rtol=0.0)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_dask_fit_matches_the_in_memory_fit(name, data):
    make, task = ESTIMATORS[name]
    X, ys = data
    y = ys[task]
    # Uneven row chunks and split columns (rechunked to whole rows), y as dask too.
    Xd = da.from_array(X, chunks=(700, 4))
    yd = da.from_array(y, chunks=500)
    _assert_same_fit(_fit(make, X, y), _fit(make, Xd, yd))


def test_dask_float32_and_auto_bounds(data):
    X, ys = data
    X32 = X.astype(np.float32)

    def make():
        return DPLogisticRegression(solver="gd", classes=[0, 1], epsilon=1.0, delta=1e-5,
                                    random_state=0)

    a = _fit(make, X32, ys[False])
    b = _fit(make, da.from_array(X32, chunks=(1000, D)), ys[False])
    assert a.data_norm_ == b.data_norm_
    _assert_same_fit(a, b)
    # float32 is kept (converted block by block): the same fit as its float64 copy.
    _assert_same_fit(_fit(make, X32.astype(np.float64), ys[False]), a, rtol=0.0)


def test_dask_problem_passes_match(data):
    from tests.conftest import make_problem

    ref = make_problem(n=N, d=D, intercept=True)
    Xd = da.from_array(np.ascontiguousarray(ref.X), chunks=(900, D))
    dask_problem = Problem.build(Xd, ref.Y, ref.spec, data_norm=1.0, intercept=1.0)
    assert dask_problem.out_of_core and not ref.out_of_core
    np.testing.assert_array_equal(dask_problem.row_scale, ref.row_scale)
    np.testing.assert_array_equal(dask_problem.norms, ref.norms)
    W = np.random.default_rng(1).standard_normal((D + 1, 1))
    for method, args in (("clipped_gradient", (W, 0.3)), ("scores", (W,)),
                         ("gradient_sum", (np.ones((N, 1)),)), ("row_norms_in", (1.5,)),
                         ("objective", (W,)), ("gradient", (W,))):
        np.testing.assert_allclose(getattr(dask_problem, method)(*args),
                                   getattr(ref, method)(*args), rtol=1e-12, atol=1e-15)
    (va, ga), (vb, gb) = ref.loss_and_gradient_sums(W), dask_problem.loss_and_gradient_sums(W)
    np.testing.assert_allclose([vb], [va], rtol=1e-12)
    np.testing.assert_allclose(gb, ga, rtol=1e-12)
    index = np.array([5, 1, 2000])
    np.testing.assert_array_equal(dask_problem.rows(index).X, ref.rows(index).X)


def test_huge_rows_in_a_dask_chunk_are_prescaled_like_in_memory():
    from tests.conftest import make_problem

    ref = make_problem(n=600, d=4)
    X = np.array(ref.X)
    X[[3, 400]] = 1e200
    a = Problem.build(X, ref.Y, ref.spec, data_norm=1.0)
    b = Problem.build(da.from_array(X, chunks=(250, 4)), ref.Y, ref.spec, data_norm=1.0)
    np.testing.assert_array_equal(b.row_scale, a.row_scale)
    np.testing.assert_array_equal(b.norms, a.norms)
    W = np.ones((4, 1))
    np.testing.assert_allclose(b.scores(W), a.scores(W), rtol=1e-14)


def test_solvers_that_need_memory_refuse_a_dask_array(data):
    X, ys = data
    Xd = da.from_array(X, chunks=(1000, D))
    accountant = BudgetAccountant(10.0, 1e-3)
    refusing = [k for k, cls in SOLVERS.items() if not cls.capabilities.out_of_core]
    assert "svrg" in refusing and "gd" not in refusing
    with pytest.raises(IncompatibleSolverError,
                       match=r"solver 'svrg' needs X as a numpy array, and X is a dask array"):
        _classifier("svrg", accountant=accountant).fit(Xd, ys[False])
    assert not accountant.entries  # refused before anything was charged
    # A memmap is an array: every solver takes it.
    assert _fit(lambda: _classifier("svrg"), np.asarray(X), ys[False]).coef_.shape == (1, D)


@pytest.mark.parametrize("value, message", [(np.nan, "Input X contains NaN"),
                                            (np.inf, "Input X contains infinity")])
def test_dask_non_finite_input_gets_the_in_memory_error(data, value, message):
    X, ys = data
    X = X.copy()
    X[1234, 2] = value
    for Xin in (X, da.from_array(X, chunks=(1000, D))):
        with pytest.raises(ValueError, match=message):
            _fit(lambda: _classifier("gd"), Xin, ys[False])


def test_dask_labels_are_checked_like_in_memory(data):
    X, ys = data
    Xd = da.from_array(X, chunks=(1000, D))
    y = ys[False].copy()
    y[7] = 5  # outside the declared classes
    for Xin, yin in ((X, y), (Xd, da.from_array(y, chunks=1000))):
        with pytest.raises(ValueError, match="labels that are not in classes"):
            _fit(lambda: _classifier("gd"), Xin, yin)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        _fit(lambda: _classifier("gd"), Xd, ys[False][:-1])
    fitted = _fit(lambda: _classifier("gd"), Xd, ys[False])
    assert fitted.n_features_in_ == D


# -- a dask.distributed cluster ---------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gd", "output_perturbation", "sufficient_statistics"])
def test_local_cluster_fit_matches_the_in_memory_fit(name, data, client):
    make, task = ESTIMATORS[name]
    X, ys = data
    # Persisted: the chunks live on the workers (a from_array graph would ship them in
    # every pass); y stays on the client and its per-row arrays are persisted at build.
    Xd = da.from_array(X, chunks=(750, D)).persist()
    _assert_same_fit(_fit(make, X, ys[task]), _fit(make, Xd, ys[task]))


@pytest.mark.slow
def test_search_and_accountant_under_the_joblib_dask_backend(data, client, tmp_path):
    import joblib
    from sklearn.model_selection import cross_validate

    from skdp.model_selection import PrivateRandomizedSearch

    X, ys = data
    y = ys[False]
    accountant = BudgetAccountant(20.0, 1e-3, path=tmp_path / "budget.sqlite")
    search = PrivateRandomizedSearch(
        _classifier("gd"), {"alpha": [0.01, 0.1, 1.0]}, epsilon=2.0, delta=1e-5,
        n_candidates_mean=2, accountant=accountant, random_state=0)
    with joblib.parallel_backend("dask"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
        # Process workers record to the shared file accountant.
        cross_validate(_classifier("gd", accountant=accountant), X, y, cv=2, n_jobs=2)
    spent = accountant.spent()
    assert spent.epsilon <= 20.0
    assert len(accountant.entries) >= 3  # the search, then one entry per fold
    assert hasattr(search, "best_estimator_")
    # An in-memory accountant refuses to be charged from a process worker.
    memory = BudgetAccountant(20.0, 1e-3)
    with joblib.parallel_backend("dask"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception, match="pickled copy of an in-memory accountant"):
            cross_validate(_classifier("gd", accountant=memory), X, y, cv=2, n_jobs=2,
                           error_score="raise")


def test_chunk_functions_warn_nothing_when_they_overflow(recwarn):
    # They run on dask workers, outside the solver's np.errstate: an overflow there depends
    # on the data and must not be reported either.
    from skdp.losses import LogisticLoss
    from skdp.solvers._blocks import _chunk_gradient_sum, _chunk_scores, _chunk_sum
    from skdp.solvers._problem import _clipped_gradient_block

    X = np.ones((4, 2))
    scale = np.ones((4, 1))
    huge = np.full((3, 1), 1e308)
    Z = _chunk_scores(X, scale, W=huge, intercept=1.0)
    assert np.isinf(Z).all()
    _chunk_gradient_sum(X, scale, np.full((4, 1), 1e308), intercept=1.0, n_params=3)
    _chunk_sum(X, np.ones((4, 1)), scale, np.ones((4, 1)), fn=_clipped_gradient_block,
               args=(huge, LogisticLoss(), 1.0, False), size=3, intercept=1.0, n_params=3)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_tree_sums_are_silent_on_a_distributed_worker(recwarn):
    # A distributed worker does not run under the client's np.errstate: the per-chunk sums
    # and dask's reduction of them must be silent themselves (here +/-1e308 rows make the
    # gradient sum overflow to inf - inf).
    distributed = pytest.importorskip("distributed")
    from skdp.solvers._blocks import DaskBackend

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's own start-up messages
        client = distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                                    dashboard_address=None)
    try:
        X = da.from_array(np.ones((8, 2)), chunks=(2, 2))
        backend = DaskBackend.build(X, np.ones((8, 1)), np.ones(8), np.ones(8))
        D = np.array([1e308] * 4 + [-1e308] * 4)[:, None]
        with np.errstate(all="ignore"):
            out = backend.gradient_sum(D, 1.0, 3)
    finally:
        client.close()
    assert not np.isfinite(out).all()
    # numpy's floating-point warnings ("overflow encountered in ...", "invalid value
    # encountered in ..."), not the cluster's own shutdown messages.
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)
                and "encountered" in str(w.message)]
