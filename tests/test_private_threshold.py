"""The private decision threshold of binary classifiers (``threshold_fraction``):
report-noisy-max of the training accuracy over public candidates
(docs/algorithms/threshold.md)."""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from skdp import BudgetAccountant, DPLinearSVC, DPLogisticRegression
from skdp.audit import audit_scores
from skdp.mechanisms import private_threshold, threshold_grid
from skdp.mechanisms.threshold import correct_counts
from skdp.model_selection import privacy_cost
from skdp.privacy import PureDpEvent
from tests.conftest import require_array_api_dispatch

X_BC, Y_BC = load_breast_cancer(return_X_y=True)


def _fit(estimator, X=X_BC, y=Y_BC):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, y)


def test_grid_is_public_symmetric_and_geometric():
    grid = threshold_grid(8.0)
    assert grid.size == 643 and np.all(np.diff(grid) > 0)
    np.testing.assert_array_equal(grid, -grid[::-1])
    assert grid[-1] == 8.0 and grid[321] == 0.0
    assert grid[-2] == pytest.approx(8.0 * 2 ** (-1 / 16))
    assert grid[322] == pytest.approx(8.0 * 2.0 ** -20)


@pytest.mark.parametrize("kind", ["dense", "memmap", "dask", "torch"])
def test_blocked_counts_are_the_counts_of_every_row(kind, tmp_path, monkeypatch):
    """The estimators sum the counts over blocks of rows (``Problem.block_sum``; a dask
    array's chunks on its workers; a torch array's blocks through the device form of the
    pass): exactly the counts of every row's score, each as its block's pass computes it
    (a one-product score may differ in its last bit)."""
    from skdp.solvers import Problem

    if kind in ("dask", "torch"):
        pytest.importorskip(f"{kind}.array" if kind == "dask" else kind)
    rng = np.random.default_rng(4)
    n = 5000  # 8 blocks of 625 rows in memory
    X = rng.normal(size=(n, 4)) / 3
    Y = np.where(rng.random((n, 1)) < 0.4, 1.0, -1.0)
    if kind == "memmap":
        np.save(tmp_path / "X.npy", X)
        X = np.load(tmp_path / "X.npy", mmap_mode="r")
    elif kind == "dask":
        import dask.array as da

        X = da.from_array(X, chunks=(700, 4))
    elif kind == "torch":  # an array API array: its blocks scored on the device
        import sklearn
        import torch

        require_array_api_dispatch(monkeypatch)
        X = torch.asarray(X)
    with contextlib.ExitStack() as stack:
        if kind == "torch":
            stack.enter_context(sklearn.config_context(array_api_dispatch=True))
        problem = Problem.build(X, Y, _blocked_spec(n), data_norm=1.0, intercept=0.5)
        assert problem.on_device == (kind == "torch")
        _check_blocked_counts(problem, Y, rng, kind)


def _check_blocked_counts(problem, Y, rng, kind):
    from skdp._base import _threshold_counts

    W = rng.normal(size=(5, 1))
    W[-1] = 0.0
    grid = threshold_grid(2.0)
    blocked = problem.block_sum(_threshold_counts, (grid.size,), W, grid)
    if kind in ("dask", "torch"):
        scores = np.asarray(problem.scores(W))[:, 0]  # computed by the same blocks
    else:
        scores = np.concatenate([problem.scores(W, rows)[:, 0]
                                 for _, rows in problem.row_blocks()])
    np.testing.assert_array_equal(blocked, correct_counts(scores, Y[:, 0], grid))
    assert blocked.max() > blocked.min()  # the candidates are not all alike


def _blocked_spec(n):
    from skdp.geometry import Unconstrained
    from skdp.losses import LogisticLoss
    from skdp.solvers import ProblemSpec

    return ProblemSpec(n_samples=n, n_params=5, n_outputs=1, n_penalized=4,
                       row_norm_bound=math.hypot(1.0, 0.5), loss=LogisticLoss(),
                       constraint=Unconstrained(), alpha=0.1, intercept_feature=0.5)


def test_counts_match_brute_force():
    rng = np.random.default_rng(0)
    z, signs = rng.normal(size=40), np.where(rng.random(40) < 0.6, 1.0, -1.0)
    grid = np.concatenate([threshold_grid(3.0), -z[:5]])  # ties at the scores too
    brute = [np.sum(np.where(z + b > 0, 1.0, -1.0) == signs) for b in grid]
    np.testing.assert_array_equal(correct_counts(z, signs, grid), brute)


def test_numpy_reference_fed_the_same_noise():
    """The choice is the argmax of the counts plus Laplace(2 / epsilon) draws, one per
    candidate, from the given generator."""
    rng = np.random.default_rng(1)
    z, signs = rng.normal(size=100), np.where(rng.random(100) < 0.5, 1.0, -1.0)
    grid = threshold_grid(4.0)
    noise = np.random.default_rng(7).laplace(0.0, 2.0 / 0.3, size=grid.size)
    expected = grid[np.argmax(correct_counts(z, signs, grid) + noise)]
    assert private_threshold(z, signs, 4.0, 0.3, np.random.default_rng(7)) == expected


def test_epsilon_inf_is_the_best_candidate():
    rng = np.random.default_rng(2)
    z = rng.normal(size=200) + 1.5
    signs = np.where(z + 0.3 * rng.normal(size=200) > 1.5, 1.0, -1.0)
    b = private_threshold(z, signs, 10.0, math.inf, rng)
    counts = correct_counts(z, signs, threshold_grid(10.0))
    assert np.sum(np.where(z + b > 0, 1.0, -1.0) == signs) == counts.max()
    assert b in threshold_grid(10.0)


@pytest.mark.slow
def test_audit_on_neighbouring_data_sets():
    """One record, replaced by one of the other label: its correctness flips at every
    candidate, in opposite directions on either side of 0 (the worst case of the
    non-monotone analysis). Over 4000 runs at 95% confidence the released threshold's
    sign does not beat epsilon; a twin with a fifth of the noise is flagged."""
    epsilon = 1.0

    def runs(scale: float, seed: int):
        rng = np.random.default_rng(seed)
        out = []
        for signs in ([1.0], [-1.0]):
            out.append([private_threshold([0.0], signs, 1.0, epsilon * scale, rng)
                        for _ in range(4000)])
        return np.array(out[0]), np.array(out[1])

    s, s_prime = runs(1.0, 0)
    assert not audit_scores(s, s_prime, epsilon=epsilon, delta=0.0).violated
    s, s_prime = runs(5.0, 1)
    assert audit_scores(s, s_prime, epsilon=epsilon, delta=0.0).violated


def test_estimator_ledger_noise_and_price():
    """The default binary fit with a declared bound spends a quarter of epsilon on the
    threshold (a pure event in its ledger), the solver the rest; the accountant reads
    what privacy_cost priced, and the released intercept is a public candidate."""
    acc = BudgetAccountant(10.0, 1e-3)
    clf = DPLogisticRegression(epsilon=1.0, data_norm=3000.0, classes=[0, 1], accountant=acc)
    priced = privacy_cost(clf, X_BC, Y_BC)
    _fit(clf)
    parts = dict(clf.privacy_ledger_.parts)
    assert parts["threshold"].event == PureDpEvent(0.25)
    assert parts["fit"].budget.epsilon == pytest.approx(0.75)
    assert clf.privacy_spent_.epsilon <= 1.0
    assert acc.spent().epsilon == pytest.approx(priced.epsilon, rel=1e-12)
    # intercept_ = (b / c) c for the chosen candidate b: a public candidate up to the
    # rounding of that product.
    grid = threshold_grid(np.linalg.norm(clf.coef_[0]) * clf.data_norm_)
    assert np.min(np.abs(grid - clf.intercept_[0])) <= 1e-12 * abs(clf.intercept_[0])


def test_the_threshold_fixes_the_tail_it_is_for():
    """Seeded (40 fits each way) on raw breast cancer: with the threshold, fewer fits fall
    below 0.7 (1 against 3; the solver's intercept put them near the majority class) and
    the median is higher (0.903 against 0.883). ``alpha=1e-2`` in raw units (the former
    default), almost no penalty in units of the bound: ``alpha="auto"``'s 1e-2 in units
    of the bound removes this tail by itself (200 unseeded 70/30 splits without the
    threshold: p5 0.702 against 0.613, min 0.608 against 0.205)."""
    def scores(**kw):
        return np.array([_fit(DPLogisticRegression(
            epsilon=1.0, data_norm=3000.0, classes=[0, 1], random_state=seed, alpha=1e-2,
            **kw)
        ).score(X_BC, Y_BC) for seed in range(40)])

    without, with_ = scores(threshold_fraction=0.0), scores()
    assert np.sum(with_ < 0.7) < np.sum(without < 0.7)
    assert np.median(with_) > np.median(without)


@pytest.mark.parametrize("estimator", [
    DPLogisticRegression(epsilon=1.0, threshold_fraction=0.0),
    DPLogisticRegression(epsilon=math.inf),
    DPLogisticRegression(epsilon=1.0, fit_intercept=False),
    DPLogisticRegression(epsilon=1.0, solver="newton"),
    DPLogisticRegression(epsilon=0.1),  # the intercept-only model
    DPLogisticRegression(epsilon=1.0, solver="intercept_only"),
])
def test_no_threshold_where_it_does_not_apply(estimator):
    _fit(estimator)
    parts = getattr(estimator.privacy_ledger_, "parts", ())
    assert "threshold" not in dict(parts)


def test_no_threshold_for_multiclass_or_small_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = rng.integers(0, 3, size=600)
    multi = _fit(DPLogisticRegression(epsilon=1.0, classes=[0, 1, 2]), X, y)
    assert "threshold" not in dict(multi.privacy_ledger_.parts)
    # 2 / epsilon_t = 2 / (0.25 * 0.6) > 5% of 50 rows: the choice would be near random.
    small = _fit(DPLogisticRegression(epsilon=1.0, classes=[0, 1]), X[:50], y[:50] % 2)
    assert "threshold" not in dict(small.privacy_ledger_.parts)


def test_svc_takes_it_too():
    svc = _fit(DPLinearSVC(epsilon=1.0, data_norm=3000.0, classes=[0, 1]))
    assert dict(svc.privacy_ledger_.parts)["threshold"].event == PureDpEvent(0.25)


def test_shares_never_exceed_the_total():
    """The threshold takes its share of what the bounds leave: a large bounds_fraction
    cannot push the solver's epsilon below 0 (it crashed in review)."""
    for fraction in (0.5, 0.9):
        clf = _fit(DPLogisticRegression(bounds_fraction=fraction, threshold_fraction=0.5))
        parts = dict(clf.privacy_ledger_.parts)
        total = sum(part.budget.epsilon for part in parts.values())
        assert total <= 1.0 and parts["fit"].budget.epsilon > 0
        assert parts["threshold"].budget.epsilon == pytest.approx(
            parts["fit"].budget.epsilon)


@pytest.mark.parametrize("data_norm", [3000.0, "auto"])
def test_the_noise_drawn_is_what_the_ledger_says(monkeypatch, data_norm):
    """Through the public API: the threshold's Laplace scale is 2 / epsilon_t for the
    epsilon_t its ledger part records, and that part re-accounts to it (pure DP)."""
    import skdp._base as base

    calls = []
    real = base.choose_threshold

    def recording(counts, grid, epsilon, rng):
        calls.append(epsilon)
        return real(counts, grid, epsilon, rng)

    monkeypatch.setattr(base, "choose_threshold", recording)
    clf = _fit(DPLogisticRegression(epsilon=1.0, data_norm=data_norm, classes=[0, 1]))
    part = dict(clf.privacy_ledger_.parts)["threshold"]
    assert calls == [part.event.epsilon] and part.event == PureDpEvent(calls[0])
    assert part.reaccount().epsilon == pytest.approx(calls[0], rel=1e-12)
    assert clf.privacy_ledger_.spent().epsilon <= 1.0
    # The draws: Laplace(2 / epsilon_t), one per candidate (numpy reference above).
    rng = np.random.default_rng(3)
    grid = threshold_grid(1.0)
    draws = np.random.default_rng(3).laplace(0.0, 2.0 / calls[0], size=grid.size)
    z, signs = np.zeros(5), np.ones(5)
    expected = grid[np.argmax(correct_counts(z, signs, grid) + draws)]
    assert private_threshold(z, signs, 1.0, calls[0], rng) == expected


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_budget_read_after_searches_is_what_ran(n_jobs, tmp_path):
    """Default binary classifiers (the threshold on) inside cross_val_score and
    GridSearchCV, also in process workers on a file-backed accountant: the accountant
    reads what privacy_cost priced, and every entry holds the threshold's part."""
    from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

    path = tmp_path / "t.sqlite" if n_jobs > 1 else None
    acc = BudgetAccountant(100.0, 1e-3, path=path)
    est = DPLogisticRegression(epsilon=1.0, data_norm=3000.0, classes=[0, 1], accountant=acc)
    cv = KFold(3, shuffle=True, random_state=0)
    price = privacy_cost(est, X_BC, Y_BC, cv=cv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cross_val_score(est, X_BC, Y_BC, cv=cv, n_jobs=n_jobs)
    assert len(acc) == 3
    assert acc.spent().epsilon == pytest.approx(price.epsilon, rel=1e-12)
    assert all("threshold" in dict(e.ledger.parts) for e in acc.entries)

    acc2 = BudgetAccountant(100.0, 1e-3, path=tmp_path / "g.sqlite" if n_jobs > 1 else None)
    search = GridSearchCV(est.set_params(accountant=acc2), {"epsilon": [0.5, 2.0]}, cv=cv,
                          n_jobs=n_jobs, refit=False)
    price = privacy_cost(search, X_BC, Y_BC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X_BC, Y_BC)
    assert len(acc2) == 6
    assert acc2.spent().epsilon == pytest.approx(price.epsilon, rel=1e-12)
