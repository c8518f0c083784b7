"""Private scorers (skdp.metrics): ledgers, noise law, searches end to end, audit."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.dummy import DummyClassifier
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score, cross_validate

from skdp import BudgetAccountant, DPLinearRegression, DPLogisticRegression
from skdp.audit import audit_scores
from skdp.exceptions import BudgetError, PrivacyLeakWarning
from skdp.mechanisms import discrete_gaussian, discrete_laplace, private_range_mean
from skdp.metrics import make_private_scorer
from skdp.model_selection import privacy_cost
from skdp.privacy import DiscreteGaussianDpEvent
from skdp.privacy.composition import Totals, summarize

pytestmark = pytest.mark.filterwarnings("ignore::skdp.NoiseDominatedWarning")


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X, y


class _Constant(ClassifierMixin, BaseEstimator):
    """A fitted 'model' whose predictions are fixed: the score's noise is all there is."""

    classes_ = np.array([0, 1])

    def __init__(self, pred=None):
        self.pred = pred

    def predict(self, X):
        return np.asarray(self.pred)[: len(X)]

    def predict_proba(self, X):
        pred = np.asarray(self.pred)[: len(X)]
        p = np.zeros((len(X), 2))
        p[np.arange(len(X)), pred] = 1.0
        return p


class _ConstantRegressor(RegressorMixin, BaseEstimator):
    """Fixed real predictions."""

    def __init__(self, pred=None):
        self.pred = pred

    def predict(self, X):
        return np.asarray(self.pred, dtype=float)[: len(X)]


def test_every_call_charges_its_ledger_and_the_ledger_reaccounts():
    acc = BudgetAccountant(epsilon=10.0)
    scorer = make_private_scorer("accuracy", epsilon=0.25, accountant=acc)
    X, y = np.zeros((40, 2)), np.arange(40) % 2
    for _ in range(3):
        scorer(_Constant(y), X, y)
    assert len(acc) == 3
    for entry in acc.entries:
        assert entry.source == "PrivateScorer"
        assert entry.ledger.reaccount().epsilon == pytest.approx(0.25, rel=1e-12)
        assert entry.ledger.reaccount().delta == 0.0
    # Pure DP: basic composition (or tighter) of three 0.25.
    assert acc.spent().epsilon <= 0.75 + 1e-12


def test_r2_ledger_is_three_thirds_of_epsilon():
    acc = BudgetAccountant(epsilon=10.0)
    scorer = make_private_scorer("r2", epsilon=0.9, accountant=acc, y_range=(-1, 1))
    scorer(_ConstantRegressor(np.zeros(30)), np.zeros((30, 1)), np.linspace(-1, 1, 30))
    (entry,) = acc.entries
    assert entry.ledger.reaccount().epsilon <= 0.9
    assert entry.ledger.reaccount().epsilon == pytest.approx(0.9, rel=1e-12)


@pytest.mark.parametrize("sensitivity", [1, 64])
def test_discrete_laplace_draws_its_law(sensitivity):
    # Chi-square goodness of fit against P(k) ~ exp(-eps |k| / s); false failure 1e-4.
    eps = 0.7
    rng = np.random.default_rng(3)
    draws = np.array([discrete_laplace(sensitivity, eps, rng) for _ in range(20000)])
    scale = sensitivity / eps
    edges = np.unique(np.round(np.linspace(-4 * scale, 4 * scale, 12))).astype(int)
    r = math.exp(-eps / sensitivity)
    ks = np.arange(-int(20 * scale) - 2, int(20 * scale) + 3)
    pmf = (1 - r) / (1 + r) * r ** np.abs(ks)
    bins = np.digitize(ks, edges)
    expected = np.bincount(bins, weights=pmf) * draws.size
    observed = np.bincount(np.digitize(draws, edges), minlength=expected.size)
    observed = observed[: expected.size]
    assert stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue > 1e-4


def test_scorer_noise_is_the_ledgers_discrete_laplace():
    # The released accuracy times n minus the exact count is the noise: a KS-style check of
    # its distribution against the discrete Laplace of scale 1 / epsilon (chi-square,
    # false failure 1e-4).
    eps, n = 0.5, 50
    y = np.arange(n) % 2
    pred = y.copy()
    pred[:13] = 1 - pred[:13]  # 37 correct
    scorer = make_private_scorer("accuracy", epsilon=eps, accountant=None,
                                 random_state=np.random.default_rng(11))
    noise = np.array([round(scorer(_Constant(pred), np.zeros((n, 1)), y) * n) - 37
                      for _ in range(8000)])
    r = math.exp(-eps)
    edges = np.array([-6, -3, -1, 0, 1, 2, 4, 7])
    ks = np.arange(-200, 201)
    pmf = (1 - r) / (1 + r) * r ** np.abs(ks)
    expected = np.bincount(np.digitize(ks, edges), weights=pmf)
    observed = np.bincount(np.digitize(noise, edges), minlength=expected.size)
    assert stats.chisquare(observed, expected * noise.size).pvalue > 1e-4


def test_released_scores_lie_on_the_public_grid():
    rng = np.random.default_rng(0)
    values = rng.uniform(0, 3, 37)
    for _ in range(50):
        s = private_range_mean(values, 0.0, 3.0, 1.0, rng)
        k = (s - 0.0) * 37 / (3.0 / 64)
        assert abs(k - round(k)) < 1e-6


def test_epsilon_inf_gives_the_exact_metrics(cancer):
    X, y = cancer
    clf = DPLogisticRegression(epsilon=math.inf, classes=[0, 1]).fit(X, y)
    acc = make_private_scorer("accuracy", epsilon=math.inf, accountant=None)
    assert acc(clf, X, y) == accuracy_score(y, clf.predict(X))
    Xr, yr = load_diabetes(return_X_y=True)
    reg = DPLinearRegression(epsilon=math.inf).fit(Xr, yr)
    rng_ = (float(yr.min()), float(yr.max()))
    r2 = make_private_scorer("r2", epsilon=math.inf, accountant=None, y_range=rng_)
    mse = make_private_scorer("neg_mean_squared_error", epsilon=math.inf, accountant=None,
                              y_range=(-1e6, 1e6))
    assert r2(reg, Xr, yr) == pytest.approx(r2_score(yr, np.clip(reg.predict(Xr), *rng_)))
    assert mse(reg, Xr, yr) == pytest.approx(-mean_squared_error(yr, reg.predict(Xr)))


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_gridsearch_total_is_every_fit_score_and_refit(cancer, delta):
    X, y = cancer
    acc = BudgetAccountant(epsilon=50.0, delta=1e-3)
    scorer = make_private_scorer("accuracy", epsilon=0.2, delta=delta, accountant=acc)
    est = DPLogisticRegression(data_norm=3000.0, classes=[0, 1], accountant=acc)
    grid = {"epsilon": [0.5, 1.0, 2.0]}
    cv = KFold(5, shuffle=True, random_state=0)
    search = GridSearchCV(est, grid, scoring=scorer, cv=cv).fit(X, y)
    sources = [e.source for e in acc.entries]
    assert sources.count("PrivateScorer") == 15
    assert sources.count("DPLogisticRegression") == 16
    # The accountant's total is the composition of exactly these releases, re-accounted.
    total = Totals.of(summarize(e.ledger) for e in acc.entries).spent()[0]
    assert acc.spent().epsilon == pytest.approx(total.epsilon, rel=1e-12)
    # ... and privacy_cost of the same search, scorer included, prices it.
    priced = privacy_cost(GridSearchCV(est, grid, scoring=scorer, cv=cv), X, y)
    assert priced.epsilon >= acc.spent().epsilon * (1 - 1e-9)
    assert search.best_params_["epsilon"] in grid["epsilon"]


def test_train_scores_and_multimetric_are_charged(cancer):
    X, y = cancer
    acc = BudgetAccountant(epsilon=50.0, delta=1e-3)
    scoring = {"acc": make_private_scorer("accuracy", epsilon=0.1, accountant=acc),
               "ll": make_private_scorer("neg_log_loss", epsilon=0.1, accountant=acc)}
    est = DPLogisticRegression(epsilon=1.0, data_norm=3000.0, classes=[0, 1],
                               solver="output_perturbation", accountant=acc)
    cross_validate(est, X, y, cv=KFold(3, shuffle=True, random_state=0), scoring=scoring,
                   return_train_score=True)
    sources = [e.source for e in acc.entries]
    assert sources.count("PrivateScorer") == 3 * 2 * 2  # folds x metrics x (test, train)
    assert sources.count("DPLogisticRegression") == 3


def test_a_score_that_fails_after_reading_keeps_its_charge_and_bad_settings_name_the_fix(
        cancer):
    X, y = cancer
    acc = BudgetAccountant(epsilon=5.0)
    scorer = make_private_scorer("accuracy", epsilon=0.5, accountant=acc)

    class Broken(_Constant):
        def predict(self, X):
            raise RuntimeError("boom")

    # Whether scoring fails can depend on the data (scikit-learn releases it as a NaN
    # score): the charge stays.
    with pytest.raises(RuntimeError):
        scorer(Broken(y), X, y)
    assert len(acc) == 1
    acc = BudgetAccountant(epsilon=5.0)
    scorer = make_private_scorer("accuracy", epsilon=0.5, accountant=acc)
    with pytest.raises(ValueError, match="sample_weight"):
        scorer(_Constant(y), X, y, sample_weight=np.ones(len(y)))
    assert len(acc) == 0
    with pytest.raises(ValueError, match="y_range"):
        make_private_scorer("r2", epsilon=1.0, accountant=acc)
    with pytest.raises(ValueError, match="bounds"):
        make_private_scorer(lambda t, p: t == p, epsilon=1.0, accountant=acc)
    with pytest.raises(ValueError, match="no private version"):
        make_private_scorer("roc_auc", epsilon=1.0, accountant=acc)
    with pytest.warns(PrivacyLeakWarning, match="random_state"):
        make_private_scorer("accuracy", epsilon=1.0, accountant=None, random_state=0)


def test_ceiling_refuses_a_score_before_it_reads_data():
    acc = BudgetAccountant(epsilon=0.3)
    scorer = make_private_scorer("accuracy", epsilon=0.2, accountant=acc)
    y = np.arange(20) % 2
    scorer(_Constant(y), np.zeros((20, 1)), y)

    class Untouchable:
        def __len__(self):
            return 20

        shape = (20, 1)

        def __getitem__(self, item):
            raise AssertionError("read")

    from skdp import BudgetError

    with pytest.raises(BudgetError):
        scorer(_Constant(y), Untouchable(), y)
    assert len(acc) == 1


def test_callable_metric_with_declared_range(cancer):
    X, y = cancer
    clf = DummyClassifier(strategy="most_frequent").fit(X, y)
    scorer = make_private_scorer(lambda t, p: (t == p).astype(float), bounds=(0, 1),
                                 epsilon=math.inf, accountant=None)
    assert scorer(clf, X, y) == pytest.approx(np.mean(y == 1))
    loss = make_private_scorer(lambda t, p: (t != p).astype(float), bounds=(0, 1),
                               greater_is_better=False, epsilon=math.inf, accountant=None)
    assert loss(clf, X, y) == pytest.approx(-np.mean(y != 1))


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_n_jobs_2_with_a_file_accountant_totals_as_n_jobs_1(cancer, tmp_path, delta):
    X, y = cancer
    totals = []
    for n_jobs in (1, 2):
        acc = BudgetAccountant(epsilon=50.0, delta=1e-3, path=tmp_path / f"b{n_jobs}.sqlite")
        scorer = make_private_scorer("accuracy", epsilon=0.2, delta=delta, accountant=acc)
        est = DPLogisticRegression(data_norm=3000.0, classes=[0, 1], accountant=acc)
        # Candidates of one cost: the refit costs the same whichever wins.
        GridSearchCV(est, {"alpha": [0.01, 0.1]}, scoring=scorer, n_jobs=n_jobs,
                     cv=KFold(3, shuffle=True, random_state=0)).fit(X, y)
        totals.append((len(acc), acc.spent()))
    assert totals[0][0] == totals[1][0] == 2 * 3 * 2 + 1
    assert totals[0][1].epsilon == pytest.approx(totals[1][1].epsilon, rel=1e-12)
    assert totals[0][1].delta == pytest.approx(totals[1][1].delta, rel=1e-12)


def test_cross_val_score_with_a_private_scorer(cancer):
    X, y = cancer
    acc = BudgetAccountant(epsilon=20.0, delta=1e-4)
    scorer = make_private_scorer("accuracy", epsilon=1.0, accountant=acc)
    scores = cross_val_score(DPLogisticRegression(classes=[0, 1], accountant=acc), X, y,
                             scoring=scorer, cv=KFold(3, shuffle=True, random_state=0))
    assert scores.shape == (3,)
    assert len(acc) == 6


def test_audit_of_one_score_flags_an_unnoised_scorer_and_passes_the_private_one():
    # Neighbouring test sets (one label replaced); the statistic is the released score.
    # The private scorer must not be flagged (false failure <= 5%: the audit's
    # confidence 0.95); the same scorer at epsilon=inf must be (its scores differ surely).
    n, eps, trials = 20, 1.0, 600
    y = np.arange(n) % 2
    y_prime = y.copy()
    y_prime[0] = 1 - y_prime[0]
    model = _Constant(y)
    X = np.zeros((n, 1))
    rng = np.random.default_rng(5)
    scorer = make_private_scorer("accuracy", epsilon=eps, accountant=None, random_state=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s0 = [scorer(model, X, y) for _ in range(trials)]
        s1 = [scorer(model, X, y_prime) for _ in range(trials)]
        result = audit_scores(s0, s1, epsilon=eps, delta=0.0, confidence=0.95)
    assert not result.violated
    assert result.epsilon_lower_bound > 0.2  # the audit sees the score's real leakage
    exact = make_private_scorer("accuracy", epsilon=math.inf, accountant=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad = audit_scores([exact(model, X, y)] * trials, [exact(model, X, y_prime)] * trials,
                           epsilon=eps, delta=0.0, confidence=0.95)
    assert bad.violated


@pytest.mark.slow
def test_audit_of_a_whole_gridsearch_stays_within_the_accountants_total():
    # Neighbouring data sets (one record replaced by a canary with a flipped label and a
    # large feature), a whole GridSearchCV with private scores; the released statistic is
    # best_score_ + the index of best_params_. Claimed: what the accountant read. False
    # failure <= 5% (the audit's confidence).
    rng = np.random.default_rng(0)
    n = 24
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    X_prime, y_prime = X.copy(), y.copy()
    X_prime[0], y_prime[0] = [3.0, 3.0], 1 - y[0]
    grid = {"epsilon": [0.2, 0.4]}
    cv = KFold(2, shuffle=True, random_state=1)
    stats_, claims = ([], []), []
    for data, out in (((X, y), stats_[0]), ((X_prime, y_prime), stats_[1])):
        for _ in range(300):
            acc = BudgetAccountant(epsilon=math.inf)
            scorer = make_private_scorer("accuracy", epsilon=1.0, accountant=acc)
            est = DPLogisticRegression(data_norm=4.0, classes=[0, 1], accountant=acc,
                                       solver="output_perturbation", delta=0.0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                search = GridSearchCV(est, grid, scoring=scorer, cv=cv).fit(*data)
            out.append(search.best_score_ + grid["epsilon"].index(
                search.best_params_["epsilon"]))
            claims.append(acc.spent().epsilon)
    # The refit's epsilon depends on the winner: the guarantee is the largest total,
    # what privacy_cost prices before the run.
    claim = max(claims)
    assert claim == pytest.approx(privacy_cost(GridSearchCV(est, grid, scoring=scorer, cv=cv),
                                               X, y).epsilon, rel=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_scores(stats_[0], stats_[1], epsilon=claim, delta=0.0)
    assert not result.violated


def test_a_column_y_is_one_value_per_row():
    # (n, 1) targets must not broadcast into n x n values (one record would move n).
    y = np.linspace(-1, 1, 40)
    pred = _ConstantRegressor(np.zeros(40))
    for metric in ("r2", "neg_mean_squared_error"):
        scorer = make_private_scorer(metric, epsilon=math.inf, accountant=None,
                                     y_range=(-1, 1))
        assert scorer(pred, np.zeros((40, 1)), y[:, None]) == pytest.approx(
            scorer(pred, np.zeros((40, 1)), y))
    labels = np.arange(40) % 2
    ll = make_private_scorer("neg_log_loss", epsilon=math.inf, accountant=None)
    assert ll(_Constant(labels), np.zeros((40, 1)), labels[:, None]) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="one value"):
        ll(_Constant(labels), np.zeros((40, 1)), np.zeros((40, 2)))


def test_the_grid_leaves_no_visible_rounding_bias():
    # Small squared errors on a wide range: 64 levels rounded them all to 0.
    rng = np.random.default_rng(1)
    y = rng.uniform(-10, 10, 200)
    model = _ConstantRegressor(y + rng.normal(0, 1.0, 200))
    exact = -np.mean((y - model.pred) ** 2)
    scorer = make_private_scorer("neg_mean_squared_error", epsilon=1e9, accountant=None,
                                 y_range=(-20, 20), random_state=rng)
    assert scorer(model, np.zeros((200, 1)), y) == pytest.approx(exact, rel=1e-3)


def test_a_seeded_scorer_refuses_to_run_in_a_process_worker(monkeypatch):
    import multiprocessing

    scorer = make_private_scorer("accuracy", epsilon=1.0, accountant=None,
                                 random_state=np.random.default_rng(0))
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    y = np.arange(10) % 2
    with pytest.raises(ValueError, match="process worker"):
        scorer(_Constant(y), np.zeros((10, 1)), y)


def test_privacy_cost_names_folds_that_read_the_labels(cancer):
    X, y = cancer
    est = DPLogisticRegression(classes=[0, 1])
    with pytest.warns(PrivacyLeakWarning, match="KFold"):
        privacy_cost(est, X, y, cv=3)  # a classifier's cv=3 is StratifiedKFold
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        privacy_cost(est, X, y, cv=KFold(3, shuffle=True, random_state=0),
                     scoring=make_private_scorer("accuracy", epsilon=0.1,
                                                 accountant=None))


def test_settings_that_fail_whatever_the_data_are_refused_before_charging(cancer):
    X, y = cancer
    acc = BudgetAccountant(epsilon=5.0)
    from sklearn.svm import LinearSVC

    svc = LinearSVC().fit(X[:50], y[:50])  # no predict_proba
    with pytest.raises(ValueError, match="predict_proba"):
        make_private_scorer("neg_log_loss", epsilon=0.5, accountant=acc)(svc, X, y)
    with pytest.raises(ValueError, match="scores classifiers"):
        make_private_scorer("accuracy", epsilon=0.5, accountant=acc)(
            _ConstantRegressor(np.zeros(len(y))), X, y)
    assert len(acc) == 0
    with pytest.raises(ValueError, match="finite ceiling"):
        make_private_scorer("accuracy", epsilon=math.inf, accountant=acc)
    with pytest.raises(ValueError, match="callable metric"):
        make_private_scorer("accuracy", epsilon=1.0, accountant=acc, greater_is_better=False)


def test_released_scores_stay_in_their_range():
    y = np.arange(10) % 2
    scorer = make_private_scorer("accuracy", epsilon=0.05, accountant=None,
                                 random_state=np.random.default_rng(0))
    scores = [scorer(_Constant(y), np.zeros((10, 1)), y) for _ in range(200)]
    assert min(scores) >= 0.0 and max(scores) <= 1.0


def test_privacy_cost_names_exact_scores_and_refuses_nested_searches(cancer):
    X, y = cancer
    est = DPLogisticRegression(classes=[0, 1])
    cv = KFold(3, shuffle=True, random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="scores are exact"):
        privacy_cost(est, X, y, cv=cv)
    search = GridSearchCV(est, {"alpha": [0.1, 1.0]}, cv=cv)
    with pytest.raises(ValueError, match="Nested cross-validation"):
        privacy_cost(search, X, y, cv=cv)


def test_privacy_report_of_a_search_names_private_scores_and_stratified_folds(cancer):
    from skdp import privacy_report

    X, y = cancer
    acc = BudgetAccountant(epsilon=50.0, delta=1e-3)
    est = DPLogisticRegression(data_norm=3000.0, classes=[0, 1], accountant=acc)
    private = make_private_scorer("accuracy", epsilon=0.2, accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        good = GridSearchCV(est, {"alpha": [0.1, 1.0]}, scoring=private,
                            cv=KFold(3, shuffle=True, random_state=0)).fit(X, y)
        exact = GridSearchCV(est, {"alpha": [0.1, 1.0]}, cv=3).fit(X, y)
    text = str(privacy_report(good))
    assert "charged to one accountant" in text and "stratified" not in text
    text = str(privacy_report(exact))
    assert "NOT private" in text and "stratified" in text


# -- discrete Gaussian scores (delta > 0) ----------------------------------------------------
def _discrete_gaussian_pmf(sigma, ks):
    w = np.exp(-(ks.astype(float) ** 2) / (2 * sigma**2))
    return w / w.sum()


@pytest.mark.parametrize("sigma", [0.6, 3.3, 40.0])
def test_discrete_gaussian_draws_its_law(sigma):
    # Chi-square goodness of fit against P(k) ~ exp(-k^2 / (2 sigma^2)) on bins of about
    # equal mass; false failure 1e-4 per sigma.
    rng = np.random.default_rng(7)
    draws = np.array([discrete_gaussian(sigma, rng) for _ in range(20000)])
    ks = np.arange(-int(12 * sigma) - 3, int(12 * sigma) + 4)
    pmf = _discrete_gaussian_pmf(sigma, ks)
    edges = np.unique(np.round(np.linspace(-2.5 * sigma, 2.5 * sigma, 10))).astype(int)
    expected = np.bincount(np.digitize(ks, edges), weights=pmf) * draws.size
    observed = np.bincount(np.digitize(draws, edges), minlength=expected.size)
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    with pytest.raises(ValueError, match="sigma"):
        discrete_gaussian(0.0, rng)


@pytest.mark.parametrize("metric,y_range,parts", [("accuracy", None, 1), ("r2", (-1, 1), 3)])
def test_a_gaussian_scores_ledger_reaccounts_to_its_epsilon_and_delta(metric, y_range, parts):
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    scorer = make_private_scorer(metric, epsilon=0.6, delta=1e-6, accountant=acc,
                                 y_range=y_range)
    n = 40
    if metric == "accuracy":
        y = np.arange(n) % 2
        scorer(_Constant(y), np.zeros((n, 2)), y)
    else:
        scorer(_ConstantRegressor(np.zeros(n)), np.zeros((n, 1)), np.linspace(-1, 1, n))
    (entry,) = acc.entries
    ledger = entry.ledger
    assert ledger.accounting == "rdp"
    leaves = [ledger.event] if parts == 1 else ledger.event.events
    assert len(leaves) == parts
    assert all(leaf == DiscreteGaussianDpEvent(scorer.noise_multiplier()) for leaf in leaves)
    spent = ledger.reaccount()
    # The smallest multiplier within the budget: at most epsilon, within the solver's
    # 0.01% of it, at the scorer's delta; the accountant adds that delta.
    assert spent.delta == 1e-6
    assert 0.6 * (1 - 1e-3) <= spent.epsilon <= 0.6
    assert acc.spent().delta == pytest.approx(1e-6)


def test_gaussian_scorer_noise_is_the_ledgers_discrete_gaussian():
    # The released accuracy times n minus the exact count is the noise: its law must be
    # N_Z(0, z^2) with z the ledger's multiplier (accuracy: sensitivity 1 count).
    # Chi-square, false failure 1e-4.
    n = 50
    y = np.arange(n) % 2
    pred = y.copy()
    pred[:13] = 1 - pred[:13]  # 37 correct
    acc = BudgetAccountant(epsilon=math.inf, delta=1e-3)
    scorer = make_private_scorer("accuracy", epsilon=2.0, delta=1e-5, accountant=acc,
                                 random_state=np.random.default_rng(13))
    noise = []
    for _ in range(6000):
        score = scorer(_Constant(pred), np.zeros((n, 1)), y)
        # Clipped to [0, 1]: the noise is known where the score is interior only.
        noise.append(round(score * n) - 37 if 0 < score < 1 else np.nan)
    noise = np.array(noise)
    (z,) = {e.ledger.event.noise_multiplier for e in acc.entries}
    assert z == scorer.noise_multiplier()
    interior = noise[np.isfinite(noise)].astype(int)
    ks = np.arange(-36, 13)  # interior: 0 < 37 + k < 50
    pmf = _discrete_gaussian_pmf(z, np.arange(-400, 401))
    pmf = pmf[(np.arange(-400, 401) >= ks[0]) & (np.arange(-400, 401) <= ks[-1])]
    edges = np.array([-4, -2, -1, 0, 1, 2, 4])
    expected = np.bincount(np.digitize(ks, edges), weights=pmf / pmf.sum()) * interior.size
    observed = np.bincount(np.digitize(interior, edges), minlength=expected.size)
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_gaussian_noise_scales_with_the_grid_of_a_real_valued_metric():
    # Squared errors in [0, 1] live on a grid of 2^20 levels: the integer sum's
    # sensitivity is 2^20 steps, so the noise is z * 2^20 steps. With values 0 or 1 the
    # exact sum is known and the noise K is read back from each released score; K / (z R)
    # must be standard normal (the discrete Gaussian at this scale is the normal to
    # 1e-12). Kolmogorov-Smirnov, false failure 1e-4.
    n, ones = 50, 20
    resolution = 2**20
    y = np.zeros(n)
    y[:ones] = 1.0  # squared error 1 on 20 rows, 0 on 30: the mean 0.4
    scorer = make_private_scorer("neg_mean_squared_error", epsilon=2.0, delta=1e-5,
                                 accountant=None, y_range=(0.0, 1.0),
                                 random_state=np.random.default_rng(19))
    z = scorer.noise_multiplier()
    h = 1.0 / resolution
    draws = []
    for _ in range(3000):
        mean = -scorer(_ConstantRegressor(np.zeros(n)), np.zeros((n, 1)), y)
        draws.append(round(mean * n / h) - ones * resolution)
    draws = np.array(draws, dtype=float) / (z * resolution)
    assert stats.kstest(draws, "norm").pvalue > 1e-4


def test_the_renyi_engine_reads_a_discrete_gaussian_as_its_divergence():
    # An independent check of the engine's reading: the Renyi divergence of two discrete
    # Gaussians one step apart, summed directly, against the curve the engine composes for
    # DiscreteGaussianDpEvent(z) (R = 1, sigma = z). The curve must bound it (privacy)
    # and be tight (the mapping is not looser than the Gaussian's).
    from scipy.special import logsumexp

    from skdp.privacy import make_engine
    from skdp.privacy.accounting import RDP_ORDERS

    for z in (0.7, 2.0, 8.7):
        engine = make_engine("rdp").compose(DiscreteGaussianDpEvent(z))
        curve = np.asarray(engine.rdp, dtype=float)
        np.testing.assert_allclose(curve, np.asarray(RDP_ORDERS) / (2 * z * z), rtol=1e-12)
        ks = np.arange(-int(60 * z) - 60, int(60 * z) + 61, dtype=float)
        log_p = -ks**2 / (2 * z * z)
        log_p -= logsumexp(log_p)
        log_q = -(ks - 1.0) ** 2 / (2 * z * z)
        log_q -= logsumexp(log_q)
        for i, alpha in enumerate(RDP_ORDERS):
            if alpha > 64:
                break
            divergence = logsumexp(alpha * log_p + (1 - alpha) * log_q) / (alpha - 1)
            assert divergence <= curve[i] * (1 + 1e-9) + 1e-15
            assert divergence >= 0.98 * curve[i]


def test_a_gaussian_score_the_renyi_bound_cannot_reach_is_refused():
    with pytest.raises(BudgetError, match="delta=0"):
        make_private_scorer("accuracy", epsilon=0.01, delta=1e-6, accountant=None)
    with pytest.raises(BudgetError, match="no noise level"):
        make_private_scorer("accuracy", epsilon=0.01, delta=1e-9, accountant=None)
    # Usual settings pass, "r2" included (three means share the budget).
    make_private_scorer("r2", epsilon=0.5, delta=1e-6, accountant=None, y_range=(0, 1))


def test_gaussian_scores_compose_better_than_pure_ones_at_the_same_noise():
    # Fifteen scores (a 3 x 5 grid search): discrete Gaussian scores with less noise than
    # discrete Laplace scores at 0.15 cost less in total, read at the same delta (1.87
    # against 2.13; deterministic: no noise is read).
    y = np.arange(80) % 2
    X = np.zeros((80, 1))
    ledgers = {}
    for delta, epsilon in ((0.0, 0.15), (1e-6, 0.5)):
        acc = BudgetAccountant(epsilon=math.inf, delta=1e-3)
        scorer = make_private_scorer("accuracy", epsilon=epsilon, delta=delta,
                                     accountant=acc)
        for _ in range(15):
            scorer(_Constant(y), X, y)
        ledgers[delta] = [e.ledger for e in acc.entries]
    r = math.exp(-0.15)
    pure_sd = math.sqrt(2 * r) / (1 - r)  # the discrete Laplace's standard deviation
    assert scorer.noise_multiplier() < pure_sd
    at = 15 * 1e-6
    pure = Totals.of(summarize(ledger) for ledger in ledgers[0.0]).bounds(at)
    gauss = Totals.of(summarize(ledger) for ledger in ledgers[1e-6]).bounds(at)
    assert min(gauss.values()) < 0.9 * min(pure.values())


def test_gaussian_scorer_settings_are_checked_and_shown():
    with pytest.raises(BudgetError, match="delta"):
        make_private_scorer("accuracy", epsilon=1.0, delta=1.0, accountant=None)
    with pytest.raises(BudgetError, match="delta"):
        make_private_scorer("accuracy", epsilon=1.0, delta=-1e-9, accountant=None)
    with pytest.raises(BudgetError, match="delta"):
        make_private_scorer("accuracy", epsilon=1.0, delta=True, accountant=None)
    scorer = make_private_scorer("accuracy", epsilon=0.5, delta=1e-6, accountant=None)
    assert "delta=1e-06" in repr(scorer)
    assert "delta" not in repr(make_private_scorer("accuracy", epsilon=0.5, accountant=None))
    # epsilon=inf: exact scores whatever delta; a pure-DP ceiling refuses a Gaussian score
    # before it reads the data.
    exact = make_private_scorer("accuracy", epsilon=math.inf, delta=1e-6, accountant=None)
    assert exact.noise_multiplier() is None
    y = np.arange(20) % 2
    assert exact(_Constant(y), np.zeros((20, 1)), y) == 1.0
    acc = BudgetAccountant(epsilon=5.0)  # delta 0
    with pytest.raises(BudgetError):
        make_private_scorer("accuracy", epsilon=0.5, delta=1e-6, accountant=acc)(
            _Constant(y), np.zeros((20, 1)), y)
    assert len(acc) == 0
    # A pickled scorer keeps its noise.
    import pickle

    clone = pickle.loads(pickle.dumps(scorer))
    assert clone.noise_multiplier() == scorer.noise_multiplier()


def test_audit_of_one_gaussian_score_stays_within_its_claim():
    # Neighbouring test sets (one label replaced); the statistic is the released score.
    # False failure <= 5% (the audit's confidence).
    n, trials = 20, 600
    y = np.arange(n) % 2
    y_prime = y.copy()
    y_prime[0] = 1 - y_prime[0]
    model, X = _Constant(y), np.zeros((n, 1))
    rng = np.random.default_rng(17)
    # epsilon 4: noise of about 1.2 counts, so that the shift of one count is visible.
    scorer = make_private_scorer("accuracy", epsilon=4.0, delta=1e-5, accountant=None,
                                 random_state=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s0 = [scorer(model, X, y) for _ in range(trials)]
        s1 = [scorer(model, X, y_prime) for _ in range(trials)]
    result = audit_scores(s0, s1, epsilon=4.0, delta=1e-5, confidence=0.95)
    assert not result.violated
    assert result.epsilon_lower_bound > 0.2  # the audit sees the score's leakage
