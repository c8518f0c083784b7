"""Private bounds (issue 19, item 1): data_norm="auto" and y_bound="auto"."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from sklearn.datasets import load_breast_cancer, load_diabetes

from skdp import (
    BudgetAccountant,
    DPHuberRegressor,
    DPLasso,
    DPLinearRegression,
    DPLinearSVC,
    DPLogisticRegression,
    PrivacyLeakWarning,
)
from skdp.audit import audit_scores
from skdp.mechanisms import grid_points, on_grid, private_bound
from skdp.privacy import PureDpEvent
from skdp.privacy.accounting import ApproxDpEvent, epsilon_spent
from skdp.privacy.composition import CompositeLedger

X_BC, Y_BC = load_breast_cancer(return_X_y=True)
X_D, Y_D = load_diabetes(return_X_y=True)


def quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return fn(*a, **k)


def test_auto_ledger_reaccounts_within_the_budget_and_shows_both_parts():
    clf = quiet(DPLogisticRegression(epsilon=1.0, delta=1e-5).fit, X_BC, Y_BC)
    ledger = clf.privacy_ledger_
    assert isinstance(ledger, CompositeLedger)
    bounds, fit = ledger.part("bounds"), ledger.part("fit")
    # The bound estimate: one pure release of 0.2 epsilon (bounds_fraction).
    assert bounds.event == dpe.ComposedDpEvent([PureDpEvent(0.2)])
    eps_bounds = epsilon_spent(bounds.event, 0.0, accounting="pure", relation="replace_one")
    eps_fit = epsilon_spent(fit.event, 1e-5, accounting=fit.accounting,
                            relation="replace_one")
    assert eps_bounds == pytest.approx(0.2)
    assert eps_bounds + eps_fit <= 1.0
    assert clf.privacy_spent_.epsilon <= 1.0 and clf.privacy_spent_.delta <= 1e-5
    assert clf.data_norm_ > 100  # raw breast cancer rows have norms ~ 300-4000


@pytest.mark.parametrize("solver", ["sufficient_statistics", "auto"])
def test_regressor_bounds_centre_and_four_parts(solver):
    reg = quiet(DPLinearRegression(epsilon=1.0, solver=solver, random_state=0).fit,
                X_D, Y_D)
    bounds = reg.privacy_ledger_.part("bounds")
    # data_norm, the scale of |y| (twice the share), the centre (a mean clipped to that
    # scale) and y_bound, sharing bounds_fraction="auto": 30 records' worth per unit of
    # weight, between 0.2 and 0.4 of epsilon (442 rows: 150 / 442 = 0.34). "auto" runs
    # DP-GD on these 442 rows x 10 features (n epsilon below 150 x 11), whose noise grows
    # with y_bound: the split 1 : 3 : 1 : 2 (210 / 442 > 0.4: the cap binds).
    total, weights = ((150 / 442, (1, 2, 1, 1)) if solver == "sufficient_statistics"
                      else (0.4, (1, 3, 1, 2)))
    assert reg.solver_.name == ("gd" if solver == "auto" else solver)
    assert [e.epsilon for e in bounds.event.events] == pytest.approx(
        [total * w / sum(weights) for w in weights])
    assert 25 <= reg.y_centre_ <= 346  # the targets' documented range
    assert reg.y_bound_ > 0 and reg.data_norm_ > 0
    pred = reg.predict(X_D)
    assert np.all(pred >= reg.y_centre_ - reg.y_bound_ - 1e-9)
    assert np.all(pred <= reg.y_centre_ + reg.y_bound_ + 1e-9)


@pytest.mark.parametrize("make", [
    lambda: DPLinearRegression(epsilon=math.inf),
    lambda: DPHuberRegressor(epsilon=math.inf),
    lambda: DPLogisticRegression(epsilon=math.inf),
    lambda: DPLasso(epsilon=math.inf),  # solver="auto": the statistics, rows in l2
], ids=["linear", "huber", "logistic", "lasso"])
def test_auto_bounds_at_epsilon_inf_are_the_exact_maximum_and_range(make):
    """Non-private mode: ``data_norm_`` is the largest row norm rounded up onto the public
    grid (no row clipped), and a regressor's ``y_centre_ +- y_bound_`` covers the exact
    range of ``y`` (no target clipped), so the default fit is the non-private one."""
    from skdp.losses import row_norms

    X, y = (X_BC, Y_BC) if isinstance(make(), DPLogisticRegression) else (X_D, Y_D)
    est = quiet(make().fit, X, y)
    grid = grid_points()
    top = row_norms(X, 2.0).max()
    assert est.data_norm_ == grid[np.searchsorted(grid, top)] and on_grid(est.data_norm_)
    if hasattr(est, "y_bound_"):
        assert est.y_centre_ - est.y_bound_ <= y.min()
        assert est.y_centre_ + est.y_bound_ >= y.max()
        assert est.y_bound_ <= 2.0 ** 0.5 * (y.max() - y.min()) / 2.0
        assert on_grid(est.y_bound_)


def test_accountant_holds_the_real_events_not_the_reservation():
    acc = BudgetAccountant(5.0, 1e-4)
    quiet(DPLogisticRegression(accountant=acc).fit, X_BC, Y_BC)
    (entry,) = acc.entries
    assert isinstance(entry.ledger, CompositeLedger)
    fit = entry.ledger.part("fit")
    assert not isinstance(fit.event, ApproxDpEvent)  # amended to the solver's events
    assert acc.spent().epsilon <= 1.0


def test_pure_dp_keeps_working_with_auto_bounds():
    clf = quiet(DPLogisticRegression(delta=0.0, solver="output_perturbation").fit,
                X_BC, Y_BC)
    assert clf.privacy_spent_.delta == 0.0 and clf.privacy_spent_.epsilon <= 1.0
    reg = quiet(DPLinearRegression(delta=0.0).fit, X_D, Y_D)
    assert reg.privacy_spent_.delta == 0.0


def test_a_number_keeps_the_raw_behaviour():
    a = quiet(DPLogisticRegression(data_norm=3000.0, random_state=3).fit, X_BC, Y_BC)
    # No bounds part: the solver's ledger and the private threshold's.
    assert [name for name, _ in a.privacy_ledger_.parts] == ["fit", "threshold"]
    assert a.data_norm_ == 3000.0
    b = quiet(DPLinearRegression(data_norm=1.0, y_bound=400.0, random_state=3).fit,
              X_D, Y_D)
    assert b.y_centre_ == 0.0 and b.y_bound_ == 400.0


@pytest.mark.parametrize("est", [DPLinearSVC(), DPLasso(), DPHuberRegressor()],
                         ids=lambda e: type(e).__name__)
def test_every_estimator_fits_raw_data_with_its_defaults(est):
    X, y = (X_BC, Y_BC) if isinstance(est, DPLinearSVC) else (X_D, Y_D)
    fitted = quiet(est.fit, X, y)
    assert fitted.privacy_spent_.epsilon <= 1.0
    assert np.all(np.isfinite(fitted.predict(X)))


@pytest.mark.slow
def test_audit_of_the_bound_estimate_with_an_extreme_canary(monkeypatch):
    """Audit the released data_norm_ on neighbours that differ by one row of norm 1e12
    (95% confidence): no violation at the accounted share; an under-noised twin (the
    mechanism run at 250 times its share) is flagged."""
    import skdp._base as base

    # Two rows: the bound of the norms lies at or above the larger one, so moving it
    # from norm 1e6 to 1e12 moves the grid points where the search stops.
    X = np.array([[1.0, 0.0], [1e6, 0.0]])
    X_prime = np.array([[1.0, 0.0], [1e12, 0.0]])
    y = np.array([0, 1])

    def run(greedy: float, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
        real = base.private_bound
        monkeypatch.setattr(base, "private_bound",
                            lambda v, e, r, **kw: real(v, e * greedy, r, **kw))
        out = []
        streams = np.random.default_rng(seed).spawn(800)
        for k, data in enumerate([X, X_prime] * 400):
            clf = DPLogisticRegression(epsilon=1.0, solver="output_perturbation",
                                       delta=0.0, random_state=streams[k],
                                       noise_dominated="fit")
            out.append(np.log(quiet(clf.fit, data, y).data_norm_))
        monkeypatch.setattr(base, "private_bound", real)
        return np.array(out[0::2]), np.array(out[1::2]), 0.2

    s, s_prime, claimed = run(1.0, 1)
    assert not audit_scores(s, s_prime, epsilon=claimed, delta=0.0).violated
    s, s_prime, claimed = run(250.0, 2)
    assert audit_scores(s, s_prime, epsilon=claimed, delta=0.0).violated


# -- a public label set (issue 19, item 3) -----------------------------------------------------
def test_declared_classes_make_the_shape_independent_of_y():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.r_[np.zeros(30, int), np.ones(29, int), [2]]  # one record of class 2
    y_prime = y.copy()
    y_prime[-1] = 1  # its neighbour: class 2 absent
    shapes = set()
    for labels in (y, y_prime):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)  # declared: no warning
            clf = DPLogisticRegression(classes=[0, 1, 2], data_norm=1.0,
                                       random_state=np.random.default_rng(1))
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            clf.fit(X, labels)
        shapes.add((clf.coef_.shape, tuple(clf.classes_), clf.predict_proba(X).shape))
    assert len(shapes) == 1
    # Both neighbours with a single class present still fit (no "at least 2 classes").
    DPLinearSVC(classes=[0, 1], data_norm=1.0).fit(X, np.zeros(60, int))
    with pytest.raises(ValueError, match="not in classes"):
        DPLogisticRegression(classes=[0, 1], data_norm=1.0).fit(X, y)


def test_inferred_label_set_warns_exactly_once_per_fit():
    X, y = X_BC[:80] / 1000, Y_BC[:80]
    with pytest.warns(PrivacyLeakWarning, match="label set is read") as record:
        DPLogisticRegression(data_norm=3.0).fit(X, y)
    assert sum("label set" in str(w.message) for w in record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPLogisticRegression(data_norm=3.0, classes=[0, 1]).fit(X, y)


# -- notebook experience (issue 19, item 5) ------------------------------------------------------
def test_progress_text_is_identical_on_neighbouring_data(capsys):
    from skdp.model_selection import PrivateRandomizedSearch
    from skdp.preprocessing import DPStandardScaler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] > 0).astype(int)
    X_prime, y_prime = X.copy(), y.copy()
    X_prime[0], y_prime[0] = [1e6, -1e6, 3.0], 1 - y[0]  # one record replaced
    outputs = []
    for data, labels in ((X, y), (X_prime, y_prime)):
        for model in (DPLogisticRegression(verbose=1, classes=[0, 1]),
                      DPLinearRegression(verbose=1),
                      DPStandardScaler(verbose=1),
                      PrivateRandomizedSearch(DPLogisticRegression(data_norm=1.0),
                                              {"alpha": [0.1, 1.0]}, verbose=1)):
            quiet(model.fit, data, labels)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert "[DPLogisticRegression] fit: 80 rows" in outputs[0]
    assert outputs[0].count("[PrivateRandomizedSearch]") == 2  # never one line per candidate
    # A fit of under a second prints at most 3 lines (start, private bounds, end).
    for name in ("DPLogisticRegression", "DPLinearRegression"):
        lines = [line for line in outputs[0].splitlines() if line.startswith(f"[{name}]")]
        assert 2 <= len(lines) <= 3, lines


def test_verbose_1_shows_the_solvers_progress_for_long_fits_only(capsys, monkeypatch):
    # Ten step-progress lines per long fit, whatever its planned step count (the size
    # that decides is public: rows times features).
    from skdp import _progress

    monkeypatch.setattr(_progress, "LONG_FIT_CELLS", 100)
    X = np.random.default_rng(0).normal(size=(80, 3))
    y = (X[:, 0] > 0).astype(int)
    quiet(DPLogisticRegression(verbose=1, classes=[0, 1]).fit, X, y)
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines()
             if line.startswith("[DPLogisticRegression] solving: ")]
    assert lines == [f"[DPLogisticRegression] solving: {10 * k}%" for k in range(1, 11)]


def test_verbose_2_reports_the_planned_steps_as_the_solver_goes(capsys):
    from skdp.solvers import NoisyGD

    X = np.random.default_rng(0).normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    quiet(DPLogisticRegression(solver=NoisyGD(n_iter=25), data_norm=3.0, classes=[0, 1],
                               verbose=2).fit, X, y)
    out = capsys.readouterr().out
    steps = [int(line.split("step ")[1].split(" of")[0]) for line in out.splitlines()
             if "solving: " in line and "%" in line]
    assert steps == [3, 5, 8, 10, 13, 15, 18, 20, 23, 25]  # ceil(k 25 / 10)
    assert "of 25" in out


def test_html_repr_shows_the_spend_and_sample_weight_is_refused_with_a_reason():
    clf = quiet(DPLogisticRegression(data_norm=1.0).fit, X_BC[:100] / 1000, Y_BC[:100])
    assert "privacy spent: epsilon=" in clf._repr_html_()
    assert "privacy budget: epsilon=1.0, delta=1e-05" in DPLogisticRegression()._repr_html_()
    with pytest.raises(TypeError, match="public maximum weight"):
        clf.fit(X_BC[:100], Y_BC[:100], sample_weight=np.ones(100))


def test_binary_targets_get_their_whole_range():
    """More than half of the targets equal: the private range still spans both values
    (exact mode), so no target is clipped to the centre."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3)) / 2
    y = np.r_[np.ones(1400), -np.ones(600)]
    reg = quiet(DPLinearRegression(epsilon=np.inf).fit, X, y)
    assert reg.y_centre_ - reg.y_bound_ <= -1 and reg.y_centre_ + reg.y_bound_ >= 1


def test_privacy_report_lists_both_parts_of_an_auto_fit():
    import skdp

    clf = quiet(DPLogisticRegression().fit, X_BC, Y_BC)
    text = str(skdp.privacy_report(clf))
    assert "bounds: PureDpEvent(epsilon=0.2)" in text and "fit: GaussianDpEvent" in text
    assert "released bounds (DP outputs): {'data_norm_'" in text


def test_audit_estimator_accepts_private_bounds():
    from skdp.audit import audit_estimator

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 2)), rng.integers(0, 2, 20)
    result = audit_estimator(DPLogisticRegression(classes=[0, 1]), X, y, n_trials=20,
                             random_state=0)
    assert result.epsilon <= 1.0 and not result.violated


# -- regressions from the second review ---------------------------------------------------------
def test_a_fit_that_fails_after_its_private_bounds_keeps_their_charge(monkeypatch):
    """Whether a fit fails after the bound estimate can depend on it: the bounds' part of
    the charge must stay (the fit's part is taken back)."""
    import skdp._base as base

    acc = BudgetAccountant(5.0, 1e-4)

    def boom(self, *a, **k):
        raise ValueError("planned failure after the bound estimate")

    monkeypatch.setattr(base.BaseDPLinearModel, "_fit_planned", boom)
    with pytest.raises(ValueError, match="planned failure"):
        quiet(DPLogisticRegression(accountant=acc).fit, X_BC, Y_BC)
    (entry,) = acc.entries
    assert [name for name, _ in entry.ledger.parts] == ["bounds"]
    assert acc.spent().epsilon == pytest.approx(0.2) and acc.spent().delta == 0.0


def test_a_failure_before_reading_data_is_refunded():
    acc = BudgetAccountant(5.0, 1e-4)
    bad = X_BC.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        quiet(DPLogisticRegression(accountant=acc).fit, bad, Y_BC)
    assert len(acc) == 0


def test_bound_of_values_with_nan_is_on_the_grid():
    rng = np.random.default_rng(0)
    est = private_bound(np.array([1.0, 2.0, np.nan]), 1.0, rng)
    assert np.isfinite(est) and on_grid(est)


@pytest.mark.parametrize("epsilon", [7.7, 1.0, 0.3, 2.9])
def test_three_bound_shares_never_sum_above_the_total(epsilon):
    """A declared data_norm with y_bound="auto" and an intercept: three estimates whose
    equal shares of 0.5 * 7.7 summed to one rounding step above it, so a pure fit raised
    PrivacyAccountingError after the bounds were spent (independent review)."""
    from skdp._planning import _split

    shares = _split(0.5 * epsilon, {"a": 1.0, "b": 1.0, "c": 1.0})
    assert sum(shares.values()) <= 0.5 * epsilon
    reg = quiet(DPLinearRegression(epsilon=epsilon, delta=0.0, bounds_fraction=0.5,
                                   data_norm=5.0).fit, X_D, Y_D)
    assert reg.privacy_spent_.epsilon <= epsilon


def test_auto_bounds_fraction_gives_each_estimate_30_records_within_its_range():
    from skdp._planning import bounds_share

    assert bounds_share(0.3, 2.0, 4, 100) == pytest.approx(0.6)
    assert bounds_share("auto", 1.0, 5, 500) == pytest.approx(150 / 500)  # inside
    assert bounds_share("auto", 5.0, 5, 309) == pytest.approx(1.0)        # 0.2 floor
    assert bounds_share("auto", 0.5, 5, 309) == pytest.approx(0.2)        # 0.4 cap
    reg = quiet(DPHuberRegressor(epsilon=5.0).fit, X_D, Y_D)
    assert reg.privacy_ledger_.part("bounds").budget.epsilon == pytest.approx(1.0)


def test_a_y_bound_overshoot_is_capped_by_the_released_scale(monkeypatch):
    """The y_bound search overshooting (a large threshold draw) is capped at the grid
    point at or above scale + |centre|, both released: post-processing."""
    import skdp._base as base

    real = base.private_bound
    fired = []

    def overshooting(values, epsilon, rng, **kw):
        out = real(values, epsilon, rng, **kw)
        if kw.get("quantile") == 1.0:  # the y_bound search (the scale's passes none)
            fired.append(True)
            return grid_points()[-1]
        return out

    monkeypatch.setattr(base, "private_bound", overshooting)
    reg = quiet(DPLinearRegression(epsilon=1.0, random_state=0).fit, X_D, Y_D)
    assert fired == [True]
    assert reg.y_bound_ < 1e4 and on_grid(reg.y_bound_)


def test_each_bound_mechanism_draws_at_its_ledger_epsilon(monkeypatch):
    """The epsilons the mechanisms are called with are the bounds ledger's events, in
    order (data_norm, the scale of |y|, the centre's mean, y_bound): the noise drawn is
    the noise the ledger accounts for (the mechanisms' laws at a given epsilon are tested
    in tests/privacy/test_private_bound.py)."""
    import skdp._base as base

    calls = []
    real_bound, real_mean = base.private_bound, base.private_mean

    def bound(values, epsilon, rng, **kw):
        calls.append(("bound", epsilon))
        return real_bound(values, epsilon, rng, **kw)

    def mean(values, scale, epsilon, rng):
        calls.append(("mean", epsilon))
        return real_mean(values, scale, epsilon, rng)

    monkeypatch.setattr(base, "private_bound", bound)
    monkeypatch.setattr(base, "private_mean", mean)
    reg = quiet(DPLinearRegression(epsilon=1.0).fit, X_D, Y_D)
    events = reg.privacy_ledger_.part("bounds").event.events
    assert [kind for kind, _ in calls] == ["bound", "bound", "mean", "bound"]
    assert [eps for _, eps in calls] == [e.epsilon for e in events]


@pytest.mark.parametrize("slack", [4.0, 12.0])
def test_y_bound_is_doubled_only_when_its_own_search_targets_the_median(monkeypatch, slack):
    """The doubling rule reads the target of the search that ran (its slack included):
    on 442 rows at epsilon 1 a slack of 4 keeps the target above 0.75 n, so y_bound_ is
    the search's output (capped by the scale), while the slack of 12 lowers it to the
    doubling zone, so y_bound_ is twice the output (capped). A check that read another
    slack than the search's had doubled the wrong one."""
    import skdp._base as base
    from skdp._planning import BoundRules
    from skdp.mechanisms import grid_ceil, target_count

    outputs = []
    real = base.private_bound

    def bound(values, epsilon, rng, **kw):
        out = real(values, epsilon, rng, **kw)
        outputs.append((kw, epsilon, out))
        return out

    monkeypatch.setattr(base, "private_bound", bound)
    cls = type("Reg", (DPLinearRegression,),
               {"_bound_rules": BoundRules(0.5, 1.0, 0.75, slack)})
    reg = quiet(cls(epsilon=1.0, solver="sufficient_statistics", random_state=0).fit,
                X_D, Y_D)
    kw, eps, searched = outputs[-1]
    assert kw["slack"] == slack
    doubled = target_count(len(Y_D), eps, 1.0, slack) <= 0.75 * len(Y_D)
    assert doubled == (slack == 12.0)
    scale = next(out for kw_, _, out in outputs if kw_.get("slack") == 20.0)
    cap = grid_ceil(scale + abs(reg.y_centre_))
    assert reg.y_bound_ == min(2.0 * searched if doubled else searched, cap)
    assert DPLinearRegression._bound_rules.y_bound_slack == 12.0


def test_the_y_bound_search_starts_five_octaves_below_the_released_scale(monkeypatch):
    """With an intercept the y_bound search reads the grid from 2^-5 times the released
    scale of |y| (a function of a released value); without one there is no scale and the
    whole grid is searched."""
    import skdp._base as base

    calls = []
    real = base.private_bound

    def bound(values, epsilon, rng, **kw):
        out = real(values, epsilon, rng, **kw)
        calls.append((kw, out))
        return out

    monkeypatch.setattr(base, "private_bound", bound)
    reg = quiet(DPHuberRegressor(epsilon=1.0, random_state=0).fit, X_D, Y_D)
    scale = next(out for kw, out in calls if kw.get("slack") == 20.0)
    kw, searched = calls[-1]
    assert kw["lowest"] == scale * 2.0 ** -5 == scale / 32
    assert searched >= scale / 32 and reg.y_bound_ >= scale / 32
    calls.clear()
    quiet(DPHuberRegressor(epsilon=1.0, fit_intercept=False, random_state=0).fit, X_D, Y_D)
    assert calls[-1][0]["lowest"] is None
