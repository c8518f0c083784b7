"""``DPLogisticRegression(solver="auto")``: DP Newton where its released Hessian is
precise, DP-GD elsewhere (docs/algorithms/newton.md), and the private threshold's share
on large data (docs/algorithms/threshold.md)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from skdp import BudgetAccountant, DPLogisticRegression
from skdp.geometry import Unconstrained
from skdp.linear_model._logistic import AUTO_NEWTON_NOISE
from skdp.losses import LogisticLoss
from skdp.model_selection import privacy_cost
from skdp.privacy import Budget
from skdp.solvers import DPNewton, ProblemSpec, get_solver
from skdp.solvers.newton import relative_hessian_noise


def _data(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ np.linspace(2, -1, d) + 0.3)))).astype(int)
    return X, y


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


@pytest.mark.parametrize(("n", "dim", "epsilon"), [(30_000, 55, 1.0), (5_000, 11, 5.0),
                                                   (10**6, 2048, 0.3)])
def test_the_rule_reads_the_plan_s_own_hessian_noise(n, dim, epsilon):
    """The closed form the rule reads is the noise edge a default DP Newton plan computes,
    over the per-example curvature bound (``c_F R^2 = Delta_H n / sqrt(2)``)."""
    budget = Budget(epsilon, 1e-5)
    spec = ProblemSpec(n_samples=n, n_params=dim, n_outputs=1, n_penalized=dim - 1,
                       row_norm_bound=1.0, loss=LogisticLoss(), alpha=1e-2,
                       constraint=Unconstrained(), intercept_feature=0.5)
    plan = DPNewton().plan(spec, budget, "gaussian", "replace_one")
    curvature = plan.hessian_sensitivity * n / math.sqrt(2.0)
    assert plan.hessian_floor / curvature == pytest.approx(
        relative_hessian_noise(n, dim, budget), rel=1e-9)


@pytest.mark.parametrize(("shape", "settings", "expected"), [
    ((200_000, 54), {}, "newton"),
    ((200_000, 54, 1), {}, "newton"),
    ((5_000, 54), {}, "gd"),                        # noise edge 0.05 of the curvature
    ((200_000, 54, 50), {}, "gd"),                  # 55 x 50 Hessian dimensions > 2048
    ((200_000, 54, 3), {}, "newton"),               # multinomial: D = 165
    ((200_000, 54), {"epsilon": 0.05}, "gd"),
    ((200_000, 54), {"epsilon": math.inf}, "gd"),   # DP-GD reaches the optimum
    ((200_000, 54), {"delta": 0.0}, "gd"),          # DP Newton needs delta > 0
    ((200_000, 54), {"secure": True}, "gd"),
    ((200_000, 54), {"accounting": "basic"}, "gd"),
    ((200_000, 54), {"tilt": 0.5}, "gd"),
    ((200_000, 54), {"adversarial_radius": 0.1}, "gd"),
    ((200_000, 54), {"solver": "svrg"}, "svrg"),
    ((200_000, 54), {"constraint": "l1", "radius": 5.0}, "gd"),
    ((200_000, 54), {"constraint": "l2", "radius": 5.0}, "newton"),
    # alpha below the noise edge in the problem's units (5.5e-4 at 200,000 rows): the
    # floor, not the penalty, would condition the step.
    ((200_000, 54), {"alpha": 3e-4}, "gd"),
    ((200_000, 54), {"alpha": 1e-3}, "newton"),
    # A declared bound of 10: the edge is 100 times the unit bound's; a raw number 1e-2
    # is below it, alpha="auto"'s 1e-2 in units of the bound (1.0 raw) is not.
    ((200_000, 54), {"data_norm": 10.0, "alpha": 1e-2}, "gd"),
    ((200_000, 54), {"data_norm": 10.0}, "newton"),
    ((200_000, 54), {"data_norm": 10.0, "alpha": 1.0}, "newton"),
    (None, {}, "gd"),
])
def test_auto_rule_is_public(shape, settings, expected):
    assert DPLogisticRegression(**settings)._solver_name(shape) == expected


def test_the_crossover_is_where_the_noise_edge_meets_the_bound():
    budget = Budget(1.0, 1e-5)
    n = next(n for n in range(50_000, 200_000, 100)
             if relative_hessian_noise(n, 55, budget) <= AUTO_NEWTON_NOISE)
    est = DPLogisticRegression()
    assert est._solver_name((n, 54)) == "newton"
    assert est._solver_name((n - 100, 54)) == "gd"
    assert 90_000 <= n <= 110_000  # about 100,000 rows for 54 features at epsilon 1 (docs)


def test_both_choices_share_what_the_shapeless_callers_read():
    """The bounds' rules, the row norm and the out-of-core check read the choice without
    the number of outputs: DP-GD and DP Newton must declare those alike."""
    gd, newton = get_solver("gd").capabilities, get_solver("newton").capabilities
    assert gd.row_norm == newton.row_norm and gd.out_of_core == newton.out_of_core


def test_large_binary_fit_runs_newton_with_a_small_threshold_share():
    """End to end: DP Newton runs, the threshold takes the share that places the intercept
    to a thousandth of the rows (2 / (1e-3 n epsilon_fit)), the accountant reads what
    privacy_cost priced, and conf_int says which setting gives intervals."""
    X, y = _data(40_000)
    acc = BudgetAccountant(5.0, 1e-4)
    clf = DPLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=acc)
    priced = privacy_cost(clf, X, y)
    _fit(clf, X, y)
    assert clf.solver_.name == "newton" and clf.n_iter_ == 10
    parts = dict(clf.privacy_ledger_.parts)
    fit_eps, thr_eps = parts["fit"].budget.epsilon, parts["threshold"].budget.epsilon
    assert fit_eps + thr_eps == pytest.approx(1.0, rel=1e-12)  # declared bound: no bounds part
    fraction = 2.0 / (1e-3 * 40_000 * (fit_eps + thr_eps))
    assert thr_eps == pytest.approx(fraction * (fit_eps + thr_eps), rel=1e-9)
    assert acc.spent().epsilon == pytest.approx(priced.epsilon, rel=1e-12)
    assert clf.coef_covariance_ is None
    with pytest.raises(ValueError, match=r"threshold_fraction=0 \(or solver='newton'\)\.$"):
        clf.conf_int()
    own = _fit(DPLogisticRegression(data_norm=1.0, classes=[0, 1], threshold_fraction=0.0),
               X, y)
    assert own.solver_.name == "newton"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # alpha=1e-2 moves the coefficients (a notice)
        assert own.conf_int().shape == (4, 2)
    # solver="newton" set by the user (a name or an object) keeps the solver's intercept.
    for solver in ("newton", DPNewton(hessian_steps=10)):
        chosen = _fit(DPLogisticRegression(data_norm=1.0, classes=[0, 1], solver=solver,
                                           alpha=1e-4), X, y)
        assert "threshold" not in dict(getattr(chosen.privacy_ledger_, "parts", ()))
        assert chosen.conf_int().shape == (4, 2)


def _hessian_releases(clf) -> int:
    """The number ``k`` of Hessian releases in a DP Newton fit's ledger (T gradients, the
    first one and the T - 1 others, and k Hessians: newton_event)."""
    event = dict(clf.privacy_ledger_.parts)["fit"].event if hasattr(
        clf.privacy_ledger_, "parts") else clf.privacy_ledger_.event
    gradients, hessians = event.events[:2]
    assert sum(e.count for e in gradients.events) == clf.n_iter_ == 10
    return hessians.count


@pytest.mark.parametrize("data_norm", [1.0, "auto"])
def test_a_fit_without_intervals_releases_one_hessian(data_norm):
    """The second Hessian (near the output) is for the standard errors: a thresholded fit
    (whose intervals are withheld) releases the first only, and the accountant still reads
    what privacy_cost priced; the solver's own intercept keeps both, and its intervals."""
    X, y = _data(40_000)
    acc = BudgetAccountant(5.0, 1e-4)
    clf = DPLogisticRegression(data_norm=data_norm, classes=[0, 1], accountant=acc)
    priced = privacy_cost(clf, X, y)
    _fit(clf, X, y)
    assert clf.solver_.name == "newton" and "threshold" in dict(clf.privacy_ledger_.parts)
    assert _hessian_releases(clf) == 1
    assert acc.spent().epsilon == pytest.approx(priced.epsilon, rel=1e-12)
    assert clf.privacy_ledger_.spent().within(Budget(1.0, 1e-5))
    own = _fit(DPLogisticRegression(data_norm=data_norm, classes=[0, 1],
                                    threshold_fraction=0.0), X, y)
    assert own.solver_.name == "newton" and _hessian_releases(own) == 2
    assert own.coef_covariance_ is not None


def test_small_data_keeps_the_quarter_and_dp_gd():
    X, y = _data(600)
    clf = _fit(DPLogisticRegression(data_norm=1.0, classes=[0, 1]), X, y)
    parts = dict(clf.privacy_ledger_.parts)
    assert clf.solver_.name == "gd"
    assert parts["threshold"].budget.epsilon == pytest.approx(0.25)


def test_auto_newton_learns_what_dp_gd_learns():
    """Seeded, 40,000 rows: the two choices' test accuracies agree within 0.02 (DP
    Newton with its 10 passes, DP-GD with more)."""
    X, y = _data(60_000, seed=1)
    scores = {}
    for solver in ("auto", "gd"):
        clf = _fit(DPLogisticRegression(data_norm=1.0, classes=[0, 1], solver=solver,
                                        random_state=0), X[:40_000], y[:40_000])
        scores[clf.solver_.name] = clf.score(X[40_000:], y[40_000:])
    assert abs(scores["newton"] - scores["gd"]) <= 0.02


def test_conf_int_messages_name_the_setting_that_gives_intervals():
    """Review: the threshold message is for DP Newton fits only, and suggests
    solver='newton' only where "auto" chose it."""
    X, y = _data(3_000)
    small = _fit(DPLogisticRegression(data_norm=1.0, classes=[0, 1], alpha=1e-4), X, y)
    assert small.solver_.name == "gd"
    with pytest.raises(ValueError, match="solver 'gd'.*Set solver='newton'"):
        small.conf_int()
    X, y = _data(20_000)
    chosen = _fit(DPLogisticRegression(data_norm=1.0, classes=[0, 1], solver="newton",
                                       threshold_fraction=0.1, alpha=1e-4), X, y)
    with pytest.raises(ValueError, match=r"threshold_fraction=0\.$"):
        chosen.conf_int()


def test_progress_names_the_solver_that_runs(capsys):
    """Review: with three classes the Hessian has three times the dimensions, so "auto"
    runs DP-GD where two classes would run DP Newton; verbose=1 names the one that runs."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(40_000, 5)) / math.sqrt(5)
    y = rng.integers(0, 3, size=40_000)
    clf = DPLogisticRegression(data_norm=1.0, classes=[0, 1, 2], verbose=1)
    assert clf._solver_name((40_000, 5)) == "newton"
    _fit(clf, X, y)
    assert clf.solver_.name == "gd"
    assert "solver 'gd'" in capsys.readouterr().out


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_search_across_the_crossover_charges_what_ran(n_jobs, tmp_path):
    """GridSearchCV of the default over alpha on 18,000 rows of 3 features at epsilon 2:
    the 12,000-row folds sit below the crossover (DP-GD; about 14,300 rows), the
    18,000-row refit above it (DP Newton); private bounds too. The accountant holds each fit's own
    events and equals what privacy_cost priced before."""
    from sklearn.model_selection import GridSearchCV, KFold

    X, y = _data(18_000, seed=2)
    acc = BudgetAccountant(100.0, 1e-3, path=tmp_path / "b.sqlite" if n_jobs > 1 else None)
    est = DPLogisticRegression(epsilon=2.0, classes=[0, 1], accountant=acc)
    assert est._solver_name((12_000, 3)) == "gd" and est._solver_name((18_000, 3)) == "newton"
    search = GridSearchCV(est, {"alpha": [1e-2, 3e-2]}, cv=KFold(3), n_jobs=n_jobs)
    price = privacy_cost(search, X, y)
    _fit(search, X, y)
    assert search.best_estimator_.solver_.name == "newton"
    assert len(acc) == 2 * 3 + 1
    assert "ComposedDpEvent" in repr(acc.entries[-1].ledger.part("fit").event)
    # The folds ran DP-GD: its ledger is one self-composed Gaussian, not DP Newton's
    # composition of gradient and Hessian releases.
    assert all(type(e.ledger.part("fit").event).__name__ == "SelfComposedDpEvent"
               for e in acc.entries[:6])
    assert acc.spent().epsilon == pytest.approx(price.epsilon, rel=1e-12)
    assert acc.spent().delta == pytest.approx(price.delta, rel=1e-12)
