"""DPGaussianNB: scikit-learn's checks, the exact sensitivity, the noise the ledger says,
parity with scikit-learn's GaussianNB at epsilon=inf, the accountant, and an audit."""

from __future__ import annotations

import contextlib
import math
import pickle
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from scipy import stats
from sklearn.base import clone
from sklearn.naive_bayes import GaussianNB
from sklearn.utils.estimator_checks import parametrize_with_checks

import skdp.naive_bayes._gaussian as gnb
from skdp import BudgetAccountant, PrivacyLeakWarning
from skdp.audit import audit_estimator
from skdp.exceptions import BudgetError
from skdp.mechanisms import grid_ceil
from skdp.naive_bayes import DPGaussianNB
from skdp.privacy import PrivacyLedger, reaccount
from skdp.privacy.accounting import epsilon_spent
from skdp.privacy.composition import CompositeLedger


@contextlib.contextmanager
def _quiet():
    """Silence the (expected) privacy notices of seeded fits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        yield


def _data(n=300, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, d)) + y[:, None] * 1.5
    return X, y


# -- scikit-learn's estimator checks -----------------------------------------------------
@parametrize_with_checks(
    [DPGaussianNB(), DPGaussianNB(delta=0.0, bounds=(-5.0, 5.0)),
     DPGaussianNB(bounds=(-5.0, 5.0), variances="per_class", budget_split=(1, 1, 1))],
    expected_failed_checks=lambda est: {})
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_clone_and_pickle_keep_the_model():
    X, y = _data()
    with _quiet():
        model = DPGaussianNB(2.0, bounds=(-4.0, 8.0), classes=[0, 1, 2], random_state=0)
        model.fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_proba(X), model.predict_proba(X))
    assert clone(model).get_params() == model.get_params()


# -- the sensitivity --------------------------------------------------------------------
SPLITS = [(0.05, 0.8, 0.15), (1.0, 1.0, 1.0), (0.01, 0.01, 0.98), (0.9, 0.05, 0.05),
          (0.2, 0.2, 0.6)]


@pytest.mark.parametrize("ball", [False, True])
@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("split", SPLITS)
def test_joint_sensitivity_is_at_most_one(norm, split, ball):
    """The whitened vector never needs more noise than the three parts composed."""
    for d in (1, 3, 30, 64):
        for pooled in (False, True):
            scales = gnb.part_scales(d, split, norm, pooled, ball)
            assert gnb.joint_sensitivity(d, scales, norm, pooled, ball) <= 1.0 + 1e-12


@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("pooled", [False, True])
@pytest.mark.parametrize("split", SPLITS)
def test_brute_force_sensitivity_of_the_ball_on_neighbouring_data(norm, pooled, split):
    """bounds="auto": rows clipped to the l2 ball of radius c. Replace one record
    (features AND label), including huge, opposite, axis and zero rows: the released
    vector's change never exceeds the declared sensitivity (an upper bound), and pairs on
    the sphere come within 30% of it (it is not vacuous)."""
    rng = np.random.default_rng(2)
    d, classes, c = 4, np.array([0, 1, 2]), 2.0
    X = rng.normal(size=(12, d))
    y = rng.integers(0, 3, 12)
    scales = gnb.part_scales(d, split, norm, pooled, ball=True)
    declared = gnb.joint_sensitivity(d, scales, norm, pooled, ball=True)
    order = 2 if norm == "l2" else 1

    def whitened(X_, y_):
        cnt, sums, sq = gnb.class_statistics(gnb.ball_features(X_, c), y_, classes, pooled)
        return np.concatenate([cnt / scales[0], sums.ravel() / scales[1],
                               sq.ravel() / scales[2]])

    base = whitened(X, y)
    rows = [np.zeros(d), 1e300 * np.ones(d), *(s * 10.0 * np.eye(d)[j] for j in range(d)
                                               for s in (1.0, -1.0))]
    largest = 0.0
    for trial in range(1500):
        i = int(rng.integers(12))
        X2, y2 = X.copy(), y.copy()
        X2[i] = (rows[trial % len(rows)] if trial < 4 * len(rows)
                 else rng.normal(size=d) * 10.0 ** rng.integers(-2, 3))
        y2[i] = rng.integers(3)
        change = np.linalg.norm(whitened(X2, y2) - base, ord=order)
        assert change <= declared * (1 + 1e-12)
        largest = max(largest, change)
    # Pairs on the sphere: a record moves from one axis to another (and class).
    for j, k in [(0, 1), (0, 2), (1, 3)]:
        for label in (0, 1, 2):
            Xa, Xb, yb = X.copy(), X.copy(), y.copy()
            Xa[0], Xb[0], yb[0] = 10.0 * np.eye(d)[j], 10.0 * np.eye(d)[k], label
            largest = max(largest, np.linalg.norm(whitened(Xb, yb) - whitened(Xa, y),
                                                  ord=order))
    assert largest >= 0.7 * declared


def _whitened(X, y, classes, lower, upper, scales, pooled):
    """The released vector without noise: (c / r_c, S / r_s, Q / r_q), flattened."""
    c, s, q = gnb.class_statistics(gnb.centred_features(X, lower, upper), y, classes,
                                   pooled)
    return np.concatenate([c / scales[0], s.ravel() / scales[1], q.ravel() / scales[2]])


def _change(X, y, X2, y2, classes, scales, pooled, order):
    lower, upper = np.zeros(X.shape[1]), np.ones(X.shape[1])
    return np.linalg.norm(_whitened(X, y, classes, lower, upper, scales, pooled)
                          - _whitened(X2, y2, classes, lower, upper, scales, pooled),
                          ord=order)


@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("pooled", [False, True])
@pytest.mark.parametrize("split", SPLITS)
def test_brute_force_sensitivity_on_neighbouring_data(norm, pooled, split):
    """Replace one record (features AND label) of a data set, compute the released
    vector without noise on both: its change never exceeds the declared sensitivity
    (3000 random replacements, values also outside the bounds), and the attaining pairs
    of the derivation reach it (the bound is exact)."""
    rng = np.random.default_rng(1)
    d, classes = 3, np.array([0, 1, 2])
    X = rng.uniform(-0.2, 1.2, size=(12, d))  # bounds (0, 1): some entries clipped
    y = rng.integers(0, 3, 12)
    scales = gnb.part_scales(d, split, norm, pooled)
    declared = gnb.joint_sensitivity(d, scales, norm, pooled)
    order = 2 if norm == "l2" else 1
    for _ in range(3000):
        i = rng.integers(12)
        X2, y2 = X.copy(), y.copy()
        X2[i] = rng.choice([rng.uniform(-0.5, 1.5), 0.0, 0.5, 1.0], size=d)
        y2[i] = rng.integers(3)
        assert _change(X, y, X2, y2, classes, scales, pooled, order) <= declared * (
            1 + 1e-12)
    # The attaining pairs: label kept, u = 1/2 - t -> u' = 1/2 in every coordinate (t on a
    # fine grid); label changed, u' = 1/2 and u on a fine grid of [0, 1/2] (a vertex,
    # except for pooled squares in l1), or u = u' = 0 -> 1/2.
    largest = 0.0
    for t in np.linspace(0.0, 1.0, 4001):
        Xa, Xb = X.copy(), X.copy()
        Xa[0], Xb[0] = 1.0 - t, 1.0
        largest = max(largest, _change(Xa, y, Xb, y, classes, scales, pooled, order))
    for x_old, x_new in [*((v, 1.0) for v in np.linspace(0.5, 1.0, 4001)), (0.5, 0.5),
                         (1.0, 0.5)]:
        Xa, Xb, yb = X.copy(), X.copy(), y.copy()
        Xa[0], Xb[0], yb[0] = x_old, x_new, (y[0] + 1) % 3
        change = _change(Xa, y, Xb, yb, classes, scales, pooled, order)
        assert change <= declared * (1 + 1e-12)
        largest = max(largest, change)
    assert largest >= declared * (1 - 1e-6)


def test_same_class_maximum_matches_a_dense_search():
    for a, b in [(1.0, 0.0), (1.0, 1.0), (1.0, 8.0), (1.0, 50.0), (0.1, 30.0)]:
        t = np.linspace(0.0, 1.0, 200001)
        assert gnb._max_same_class_l2(a, b) == pytest.approx(
            np.max(t * t * (a + b * (1 - t) ** 2)), rel=1e-8)
        assert gnb._max_same_class_l1(a, b) == pytest.approx(
            np.max(t * (a + b * (1 - t))), rel=1e-8)


# -- the ledger and the noise -------------------------------------------------------------
@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_ledger_reaccounts_to_the_budget(delta):
    X, y = _data()
    model = DPGaussianNB(0.7, delta, bounds=(-3.0, 6.0), classes=[0, 1, 2]).fit(X, y)
    ledger = model.privacy_ledger_
    assert isinstance(ledger, PrivacyLedger)
    spent = reaccount(ledger)
    assert spent == model.privacy_spent_
    assert spent.epsilon <= 0.7 and spent.delta == delta
    if delta > 0:
        assert isinstance(ledger.event, dpe.GaussianDpEvent)
        assert spent.epsilon == pytest.approx(0.7, rel=1e-6)  # exact calibration
        assert epsilon_spent(ledger.event, delta, accounting="gaussian",
                             relation="replace_one") <= 0.7
    else:
        assert isinstance(ledger.event, dpe.LaplaceDpEvent)
        assert spent.epsilon == pytest.approx(0.7, rel=1e-12)


def test_auto_bounds_compose_with_the_statistics():
    X, y = _data()
    model = DPGaussianNB(1.0, classes=[0, 1, 2]).fit(X, y)
    ledger = model.privacy_ledger_
    assert isinstance(ledger, CompositeLedger)
    assert [name for name, _ in ledger.parts] == ["bounds", "statistics"]
    assert ledger.part("bounds").budget.epsilon == pytest.approx(0.1)
    spent = ledger.spent()
    assert spent.epsilon <= 1.0 + 1e-12 and spent.delta <= 1e-5 * (1 + 1e-12)
    assert np.all(model.upper_ == -model.lower_)


def _capture_releases(monkeypatch) -> list:
    """The released (noisy) statistics ``(c, S, Q)`` of every fit from here on, as
    post_process receives them."""
    captured = []
    real = gnb.post_process

    def spy(counts, sums, squares, n, noise_std, var_floor):
        captured.append((counts.copy(), sums.copy(), squares.copy()))
        return real(counts, sums, squares, n, noise_std, var_floor)

    monkeypatch.setattr(gnb, "post_process", spy)
    return captured


@pytest.mark.parametrize("delta", [1e-5, 0.0])
@pytest.mark.parametrize("variances", ["pooled", "per_class"])
def test_noise_is_what_the_ledger_says(monkeypatch, delta, variances):
    """The released statistics minus the exact ones, over 60 fits with independent
    seeds, follow the ledger's law part by part: N(0, (z Delta r_i)^2) (the Gaussian
    event's z, the joint sensitivity Delta, the part's scale r_i) or Laplace of scale
    Delta r_i / epsilon (the Laplace event's 1 / epsilon) per coordinate. KS tests,
    each with failure probability 1e-4 under a correct implementation (seeds fixed)."""
    captured = _capture_releases(monkeypatch)
    X, y = _data(n=200, d=3, k=2)
    classes = np.array([0, 1])
    lower, upper = np.full(3, -2.0), np.full(3, 5.0)
    pooled = variances == "pooled"
    exact = gnb.class_statistics(gnb.centred_features(X, lower, upper), y, classes, pooled)
    eps = 0.8
    errors = [[], [], []]
    with _quiet():
        for seed in np.random.default_rng(3).spawn(60):
            model = DPGaussianNB(eps, delta, bounds=(lower, upper), classes=classes,
                                 variances=variances, random_state=seed).fit(X, y)
            for i in range(3):
                errors[i].append((captured[-1][i] - exact[i]).ravel())
    norm = "l2" if delta > 0 else "l1"
    scales = gnb.part_scales(3, gnb.BUDGET_SPLIT, norm, pooled)
    sensitivity = gnb.joint_sensitivity(3, scales, norm, pooled)
    event = model.privacy_ledger_.event
    if delta > 0:
        unit = event.noise_multiplier
    else:
        assert event.noise_multiplier == pytest.approx(1.0 / eps)
        unit = event.noise_multiplier
    np.testing.assert_allclose(model.noise_scales_, unit * sensitivity * scales, rtol=1e-12)
    for i in range(3):
        e = np.concatenate(errors[i]) / model.noise_scales_[i]
        law = "norm" if delta > 0 else "laplace"
        assert stats.kstest(e, law).pvalue > 1e-4


def test_ball_features_stay_in_the_half_ball():
    """Rows up to 1.7e308 at radii from the grid's bottom to its top: ||u|| <= 1/2 (the
    sensitivities assume it), and rows inside the ball are only rescaled."""
    from skdp.mechanisms import grid_points

    rng = np.random.default_rng(8)
    X = rng.normal(size=(64, 5)) * 10.0 ** rng.integers(-8, 308, size=(64, 1))
    X = np.clip(X, -1.7e308, 1.7e308)
    for c in (float(grid_points()[0]), 1.0, 1e6, float(grid_points()[-1])):
        u = gnb.ball_features(X, c)
        assert np.all(np.linalg.norm(u * 2.0, axis=1) <= 1.0)
        inside = np.linalg.norm(X, axis=1) < c * 0.5
        np.testing.assert_allclose(u[inside], X[inside] / (2 * c), rtol=1e-15)


@pytest.mark.parametrize("variances", ["pooled", "per_class"])
@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_noise_with_auto_bounds_is_what_the_ledger_says(monkeypatch, delta, variances):
    """bounds="auto" (the l2 ball): the released statistics minus the exact ones on the
    rows clipped to the ball of the released radius, over 60 fits with independent
    seeds, follow the ledger's law with the ball's sensitivity and scales (KS, failure
    probability 1e-4 each under a correct implementation; seeds fixed)."""
    captured = _capture_releases(monkeypatch)
    X, y = _data(n=200, d=3, k=2)
    X = X * [10.0, 1.0, 0.1]  # features on different scales: the ball binds for many rows
    classes = np.array([0, 1])
    pooled = variances == "pooled"
    eps = 2.0
    errors = [[], [], []]
    with _quiet():
        for seed in np.random.default_rng(4).spawn(60):
            model = DPGaussianNB(eps, delta, classes=classes, variances=variances,
                                 random_state=seed).fit(X, y)
            c = float(model.upper_[0])
            exact = gnb.class_statistics(gnb.ball_features(X, c), y, classes, pooled)
            for i in range(3):
                errors[i].append((captured[-1][i] - exact[i]).ravel())
    norm = "l2" if delta > 0 else "l1"
    scales = gnb.part_scales(3, gnb.BUDGET_SPLIT, norm, pooled, ball=True)
    sensitivity = gnb.joint_sensitivity(3, scales, norm, pooled, ball=True)
    event = model.privacy_ledger_.parts[1][1].event
    unit = event.noise_multiplier
    np.testing.assert_allclose(model.noise_scales_, unit * sensitivity * scales, rtol=1e-12)
    for i in range(3):
        e = np.concatenate(errors[i]) / model.noise_scales_[i]
        assert stats.kstest(e, "norm" if delta > 0 else "laplace").pvalue > 1e-4


def test_variances_auto_is_a_public_rule():
    X, y = _data(n=300)
    small = DPGaussianNB(0.5, bounds=(-3.0, 6.0), classes=[0, 1, 2]).fit(X, y)
    assert small.variances_ == "pooled"
    Xl, yl = _data(n=100_000, d=2, k=2)
    large = DPGaussianNB(5.0, bounds=(-3.0, 6.0), classes=[0, 1]).fit(Xl, yl)
    assert large.variances_ == "per_class"
    exact = DPGaussianNB(np.inf, bounds=(-3.0, 6.0), classes=[0, 1, 2]).fit(X, y)
    assert exact.variances_ == "per_class"


# -- epsilon = inf: scikit-learn's GaussianNB on the clipped features ---------------------
@pytest.mark.parametrize("bounds", [(-1.0, 3.0), ((-2.0, 0.0, -1.0, 1.0), 4.0), "auto"])
def test_epsilon_inf_equals_scikit_learn_on_clipped_data(bounds):
    X, y = _data(n=400, d=4, k=3)
    model = DPGaussianNB(np.inf, bounds=bounds, classes=[0, 1, 2]).fit(X, y)
    if bounds == "auto":
        # The l2 ball of the largest row norm (no row clipped at epsilon=inf).
        c = grid_ceil(np.max(np.linalg.norm(X, axis=1)))
        assert np.all(model.upper_ == c) and np.all(model.lower_ == -c)
    Xc = np.clip(X, model.lower_, model.upper_)
    reference = GaussianNB().fit(Xc, y)
    for name in ("theta_", "var_", "class_prior_", "class_count_"):
        np.testing.assert_allclose(getattr(model, name), getattr(reference, name),
                                   rtol=1e-10, atol=1e-12)
    assert model.epsilon_ == pytest.approx(reference.epsilon_, rel=1e-10)
    np.testing.assert_allclose(model.predict_joint_log_proba(Xc),
                               reference.predict_joint_log_proba(Xc), rtol=1e-10)
    np.testing.assert_allclose(model.predict_proba(Xc), reference.predict_proba(Xc),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(model.predict(Xc), reference.predict(Xc))
    assert math.isinf(model.privacy_spent_.epsilon)


def test_public_priors_and_a_declared_class_absent_from_y():
    X, y = _data(n=200, k=2)
    model = DPGaussianNB(1.0, bounds=(-3.0, 6.0), classes=[0, 1, 2],
                         priors=[0.5, 0.3, 0.2]).fit(X, y)
    assert model.theta_.shape == (3, 4) and model.var_.shape == (3, 4)
    np.testing.assert_array_equal(model.class_prior_, [0.5, 0.3, 0.2])
    assert np.all(model.class_count_ >= 1.0)
    assert np.all(model.theta_ >= -3.0) and np.all(model.theta_ <= 6.0)
    with pytest.raises(ValueError, match="priors"):
        DPGaussianNB(bounds=(-3.0, 6.0), classes=[0, 1, 2], priors=[0.5, 0.5]).fit(X, y)


def test_no_floating_point_warning_depends_on_the_data():
    X, y = _data(n=50, k=2)
    X[3, 1] = 1e308
    X[4, 0] = -1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for bounds in [(-1e307, 1e307), "auto"]:
            DPGaussianNB(1.0, bounds=bounds, classes=[0, 1]).fit(X, y).predict(X)


# -- the accountant -----------------------------------------------------------------------
def test_the_accountant_is_charged_once_and_refunded_on_input_errors():
    X, y = _data(n=200, k=2)
    acc = BudgetAccountant(2.0, 1e-4)
    model = DPGaussianNB(0.5, bounds=(-3.0, 6.0), classes=[0, 1], accountant=acc).fit(X, y)
    assert len(acc) == 1 and acc.spent() == model.privacy_spent_
    bad = X.copy()
    bad[0, 0] = np.nan
    for Xb, yb in ((bad, y), (X, np.where(y == 0, 7, y))):  # NaN; a label not declared
        with pytest.raises(ValueError):
            DPGaussianNB(0.5, bounds=(-3.0, 6.0), classes=[0, 1], accountant=acc).fit(Xb, yb)
        assert len(acc) == 1
    with pytest.raises(BudgetError, match="ceiling"):
        DPGaussianNB(5.0, bounds=(-3.0, 6.0), classes=[0, 1], accountant=acc).fit(X, y)
    assert len(acc) == 1 and acc.spent() == model.privacy_spent_


def test_a_failure_after_the_private_bound_keeps_its_charge_only(monkeypatch):
    X, y = _data(n=200, k=2)
    acc = BudgetAccountant(5.0, 1e-4)

    def boom(*a, **k):
        raise RuntimeError("failure after the bound estimate")

    monkeypatch.setattr(gnb, "as_noise_source", boom)
    with pytest.raises(RuntimeError):
        DPGaussianNB(1.0, classes=[0, 1], accountant=acc).fit(X, y)
    (entry,) = acc.entries
    assert [name for name, _ in entry.ledger.parts] == ["bounds"]
    assert acc.spent().epsilon == pytest.approx(0.1)
    with pytest.raises(RuntimeError):
        DPGaussianNB(1.0, bounds=(-3.0, 6.0), classes=[0, 1], accountant=acc).fit(X, y)
    assert len(acc) == 1  # public bounds: nothing released, refunded


def test_the_label_set_read_from_y_is_said_once():
    X, y = _data(n=100, k=2)
    with pytest.warns(PrivacyLeakWarning, match="label set is read from y"):
        DPGaussianNB(bounds=(-3.0, 6.0)).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPGaussianNB(bounds=(-3.0, 6.0), classes=[0, 1]).fit(X, y)


# -- an audit on neighbouring data sets ----------------------------------------------------
@pytest.mark.slow
def test_audit_on_neighbouring_data_sets_finds_no_violation():
    """D and D' differ in one record, features AND label (a corner row of class 0 in D,
    the opposite corner of class 1 in D'); the statistic is the class-1 mean of the
    first feature. 1000 fits on each; the audit's lower bound must stay within the
    claimed epsilon (it fails with probability at most 5% only if the code is wrong)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0.4, 0.6, size=(40, 2))
    y = np.tile([0, 1], 20)
    Xp, yp = X.copy(), y.copy()
    X[0], y[0] = [0.0, 0.0], 0
    Xp[0], yp[0] = [1.0, 1.0], 1
    model = DPGaussianNB(1.0, bounds=(0.0, 1.0), classes=[0, 1], variances="pooled")
    result = audit_estimator(model, X, y, Xp, yp, statistic=lambda m: m.theta_[1, 0],
                             n_trials=1000, random_state=0)
    assert not result.violated
    assert result.epsilon == pytest.approx(1.0, rel=1e-6)


@pytest.mark.slow
def test_audit_with_auto_bounds_finds_no_violation():
    """bounds="auto" (private radius, rows clipped to the l2 ball): D and D' differ in
    one record far out on opposite axes and in its label; the statistic is the class-1
    mean of the first feature over the released radius. 1000 fits on each side; the
    audit's lower bound stays within the claimed total epsilon 1."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    y = np.tile([0, 1], 20)
    Xp, yp = X.copy(), y.copy()
    X[0], y[0] = [-50.0, 0.0], 0
    Xp[0], yp[0] = [50.0, 0.0], 1
    model = DPGaussianNB(1.0, classes=[0, 1], variances="pooled")
    result = audit_estimator(model, X, y, Xp, yp,
                             statistic=lambda m: m.theta_[1, 0] / m.upper_[0],
                             n_trials=1000, random_state=0)
    assert not result.violated
    assert result.epsilon == pytest.approx(1.0, rel=1e-6)
