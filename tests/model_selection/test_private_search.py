"""PrivateRandomizedSearch: private hyperparameter selection (issue 18, item 3)."""

from __future__ import annotations

import math
import warnings

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod
from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import load_diabetes, make_classification
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp import (
    BudgetAccountant,
    BudgetError,
    DPLinearRegression,
    DPLogisticRegression,
    IncompatibleSolverError,
    PrivacyLeakWarning,
)
from skdp.audit import audit_estimator, make_canary_pair
from skdp.model_selection import PrivateRandomizedSearch, privacy_cost
from skdp.model_selection import _private_search as ps
from skdp.privacy.accounting import RDP_ORDERS
from skdp.privacy.composition import rdp_curve
from tests.conftest import Untouchable

X, Y = make_classification(n_samples=200, n_features=4, random_state=0)
X = X / np.linalg.norm(X, axis=1).max()
GRID = {"alpha": [0.01, 0.1, 1.0], "solver": ["gd", "output_perturbation"]}


def search(**kw):
    kw.setdefault("n_candidates_mean", 3)
    return PrivateRandomizedSearch(DPLogisticRegression(data_norm=1.0), GRID, **kw)


def quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return fn(*a, **k)


def direct_rdp_epsilon(event, delta):
    """dp_accounting's own ``RdpAccountant`` (not skdp's subclass) on the search's event."""
    acc = RdpAccountant(orders=list(RDP_ORDERS),
                        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(event)
    return acc.get_epsilon(delta)


#: The two scoring modes: in-sample (the default, the score with 30% of the candidate's
#: curve; fit on all 200 rows) and a 20% hold-out (40 rows, the whole curve each).
MODES = [({}, 0.7, 0.3, 200), ({"validation_fraction": 0.2}, 1.0, 1.0, 40)]


@pytest.mark.parametrize("mode", MODES, ids=["in_sample", "hold_out"])
@pytest.mark.parametrize("distribution", list(ps.DISTRIBUTIONS))
def test_spent_within_total_and_reaccounted_by_dp_accounting(distribution, mode):
    kw, fit_share, score_share, n_val = mode
    s = quiet(search(epsilon=1.0, delta=1e-5, distribution=distribution,
                     random_state=1, **kw).fit, X, Y)
    event = s.privacy_ledger_.event
    assert isinstance(event, dpe.RepeatAndSelectDpEvent)
    assert event.mean == 3.0 and event.shape == ps.DISTRIBUTIONS[distribution] or (
        distribution == "truncated_negative_binomial" and event.shape == 0.5)
    assert s.privacy_spent_.epsilon <= 1.0 and s.privacy_spent_.delta == 1e-5
    assert direct_rdp_epsilon(event, 1e-5) <= 1.0 + 1e-9
    # The released candidate's own curve lies under the reference at every order.
    reference = rdp_mod._compute_rdp_poisson_subsampled_gaussian(
        1.0, event.event.noise_multiplier, RDP_ORDERS)
    # The released candidate's fit lies under its share of the reference, at every order;
    # its score's Gaussian (sensitivity 1 / n_val) has exactly the rest: together the
    # candidate's curve is at most the reference.
    fit_curve = rdp_curve(s.best_estimator_.privacy_ledger_.event)
    assert np.all(fit_curve <= fit_share * reference * (1 + 1e-12))
    z_score = s.score_noise_scale_ * n_val
    score_curve = rdp_curve(dpe.GaussianDpEvent(z_score))
    np.testing.assert_allclose(score_curve, score_share * reference, rtol=1e-9)
    if score_share < 1:
        assert np.all(fit_curve + score_curve <= reference * (1 + 1e-12))
    assert s.score_noise_scale_ == pytest.approx(
        event.event.noise_multiplier / math.sqrt(score_share) / n_val, rel=1e-12)
    assert privacy_cost(s, X, Y) == s.privacy_spent_


@pytest.mark.parametrize("mode", MODES, ids=["in_sample", "hold_out"])
@pytest.mark.parametrize(("distribution", "factor"),
                         [("truncated_negative_binomial", 2.5), ("geometric", 3.0),
                          ("logarithmic", 2.0)])
def test_pure_search(distribution, factor, mode):
    kw, fit_share, score_share, n_val = mode
    s = quiet(PrivateRandomizedSearch(
        DPLogisticRegression(data_norm=1.0, solver="output_perturbation"),
        {"alpha": [0.1, 1.0]}, epsilon=1.5, delta=0.0, distribution=distribution,
        n_candidates_mean=3, random_state=2, **kw).fit, X, Y)
    assert s.privacy_spent_ == (pytest.approx(1.5), 0.0)
    # The candidate's epsilon eps_c = 1.5 / factor: the fit gets its share, the score the
    # rest (epsilons add), or each the whole of it with a hold-out.
    assert s.candidate_epsilon_ == pytest.approx(1.5 / factor * fit_share)
    assert s.best_estimator_.privacy_spent_.delta == 0.0
    assert s.best_estimator_.privacy_spent_.epsilon <= 1.5 / factor * fit_share * (1 + 1e-12)
    # Laplace scale Delta / (score_share eps_c), Delta = 1 / n_val.
    assert s.score_noise_scale_ == pytest.approx(factor / 1.5 / score_share / n_val)


def test_no_exact_score_is_reachable(monkeypatch):
    sentinel = 0.123456789
    monkeypatch.setattr(ps, "_raw_score", lambda *a: sentinel)
    s = quiet(search(random_state=3).fit, X, Y)
    assert not hasattr(s, "cv_results_")

    def floats(obj, seen):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, float | np.floating):
            yield float(obj)
        elif isinstance(obj, dict):
            for v in obj.values():
                yield from floats(v, seen)
        elif isinstance(obj, list | tuple):
            for v in obj:
                yield from floats(v, seen)
        elif hasattr(obj, "__dict__"):
            yield from floats(vars(obj), seen)

    assert sentinel not in set(floats(s, set()))
    assert s.best_score_ != sentinel


@pytest.mark.slow
def _zero_scores_recording_repetitions(monkeypatch) -> list:
    """Every exact score 0; the numbers of repetitions drawn are appended to the list
    returned."""
    monkeypatch.setattr(ps, "_raw_score", lambda *a: 0.0)
    drawn = []
    real_sampler = ps.sample_repetitions

    def recording_sampler(*a):
        drawn.append(real_sampler(*a))
        return drawn[-1]

    monkeypatch.setattr(ps, "sample_repetitions", recording_sampler)
    return drawn


def test_score_noise_matches_the_ledger(monkeypatch):
    """With every exact score 0, best_score_ is the max of K draws of N(0, s^2), so
    Phi(best / s)^K is uniform. KS test; failure probability 1e-4 under a correct
    implementation (fixed seeds make the outcome deterministic)."""
    drawn = _zero_scores_recording_repetitions(monkeypatch)
    u = []
    rng = np.random.default_rng(7)
    small_X, small_Y = X[:60], Y[:60]
    for k in range(300):
        # Alternately in-sample (60 rows, 30% of the curve) and a 20% hold-out (12 rows).
        hold_out = k % 2 == 1
        s = quiet(PrivateRandomizedSearch(DPLogisticRegression(data_norm=1.0),
                                          {"alpha": [0.1, 1.0]}, n_candidates_mean=2,
                                          distribution="geometric",
                                          validation_fraction=0.2 if hold_out else 0.0,
                                          random_state=rng.integers(2**32)).fit,
                  small_X, small_Y)
        z = s.privacy_ledger_.event.event.noise_multiplier
        expected = z / 12 if hold_out else z / math.sqrt(0.3) / 60
        assert s.score_noise_scale_ == pytest.approx(expected, rel=1e-12)
        assert not hasattr(s, "n_candidates_")  # K stays hidden
        u.append(stats.norm.cdf(s.best_score_ / s.score_noise_scale_) ** drawn[-1])
    assert stats.kstest(u, "uniform").pvalue > 1e-4


def _tnb_pmf(k, eta, gamma):
    logc = (stats.nbinom.logpmf(k, eta, gamma))
    return np.exp(logc) / (1.0 - gamma ** eta)


@pytest.mark.parametrize("distribution", list(ps.DISTRIBUTIONS))
def test_number_of_candidates_follows_its_distribution(distribution):
    """Chi-square goodness of fit, 20000 draws; failure probability 1e-6 under a correct
    sampler (the seed is fixed, so the outcome is deterministic)."""
    mean, eta = 5.0, 0.5
    rng = np.random.default_rng(11)
    draws = np.array([ps.sample_repetitions(rng, distribution, mean, eta)
                      for _ in range(20000)])
    ks = np.arange(0, 200)
    if distribution == "poisson":
        pmf = stats.poisson.pmf(ks, mean)
    elif distribution == "geometric":
        pmf = stats.geom.pmf(ks, 1.0 / mean)
    elif distribution == "logarithmic":
        pmf = stats.logser.pmf(ks, 1.0 - ps._tnb_gamma(mean, 0.0))
    else:
        gamma = ps._tnb_gamma(mean, eta)
        pmf = np.where(ks > 0, _tnb_pmf(ks, eta, gamma), 0.0)
        # gamma really gives the requested mean (to the 1e-12 rounding).
        assert np.sum(ks * pmf) == pytest.approx(mean, rel=1e-6)
    observed = np.bincount(np.minimum(draws, 199), minlength=200)
    expected = pmf * len(draws)
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], len(draws) - expected[keep].sum())
    stat = np.sum((obs - exp) ** 2 / exp)
    assert stat < stats.chi2.ppf(1 - 1e-6, len(obs) - 1)
    if distribution != "poisson":
        assert draws.min() >= 1


def test_accountant_is_charged_once_and_refuses_over_the_ceiling():
    acc = BudgetAccountant(1.5, 1e-4)
    s = quiet(search(epsilon=1.0, accountant=acc, random_state=4).fit, X, Y)
    assert len(acc) == 1 and acc.entries[0].ledger == s.privacy_ledger_
    assert acc.entries[0].source == "PrivateRandomizedSearch"

    again = search(epsilon=1.0, accountant=acc)
    with pytest.raises(BudgetError, match="ceiling"):
        again.fit(Untouchable(X.shape), Y)
    assert len(acc) == 1 and not hasattr(again, "best_estimator_")


def test_pipeline_and_regressor_with_clipped_mse():
    Xd, yd = load_diabetes(return_X_y=True)
    est = make_pipeline(FunctionTransformer(lambda Z: Z * 5.0),
                        DPLinearRegression(y_bound=300.0, data_norm=1.0))
    s = quiet(PrivateRandomizedSearch(
        est, {"dplinearregression__alpha": [0.1, 1.0],
              "dplinearregression__y_bound": [200.0, 300.0]},
        n_candidates_mean=3, random_state=5).fit, Xd, yd)
    assert s.scoring_ == "neg_mean_squared_error"
    bound = s.best_params_["dplinearregression__y_bound"]
    z = s.privacy_ledger_.event.event.noise_multiplier
    # In-sample scores on all rows with 30% of the candidate's curve.
    assert s.score_noise_scale_ == pytest.approx(
        z / math.sqrt(0.3) * 4 * bound ** 2 / len(yd), rel=1e-12)
    assert s.predict(Xd).shape == (len(yd),)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"param_distributions": {"epsilon": [1.0]}}, ValueError, "epsilon"),
    ({"distribution": "poisson", "delta": 0.0}, BudgetError, "poisson"),
    ({"param_distributions": {"solver": ["objective_perturbation"]}},
     IncompatibleSolverError, "Renyi"),
    ({"validation_fraction": 0.001}, ValueError, "validation_fraction"),
])
def test_bad_settings_name_the_setting(kwargs, error, match):
    params = {"param_distributions": GRID, "estimator": DPLogisticRegression(data_norm=1.0),
              **kwargs}
    s = PrivateRandomizedSearch(**params)
    with pytest.raises(error, match=match):
        quiet(s.fit, X, Y)
    assert not hasattr(s, "best_estimator_")


def test_candidates_are_drawn_with_replacement_and_independently():
    rng = np.random.default_rng(0)
    draws = [ps._sample_params(rng, [{"a": [1, 2]}]) for _ in range(2000)]
    pairs = [(draws[i]["a"], draws[i + 1]["a"]) for i in range(0, 2000, 2)]
    # Sampling without replacement would never repeat within a pair.
    assert sum(a == b for a, b in pairs) > 400
    dist = ps._sample_params(rng, {"a": stats.uniform(0, 1)})
    assert 0.0 <= dist["a"] <= 1.0


class UnderNoisedSearch(PrivateRandomizedSearch):
    """A broken twin: candidates are fitted with 100 times the epsilon the search
    accounts for (no cap), so the search's claimed total is false."""

    def _fit_candidate(self, params, X, y, reference, pure_eps, eps, delta, rng,
                       classes=None):
        model = clone(self.estimator).set_params(**params)
        model.set_params(epsilon=100 * eps, delta=delta, accountant=None,
                         random_state=np.random.default_rng(rng.integers(2**63)))
        return model.fit(X, y)


class UnderNoisedScoreSearch(PrivateRandomizedSearch):
    """A broken twin: in-sample scores with a hundredth of the accounted noise."""

    @staticmethod
    def _score_noise_scale(sensitivity, score_z, score_pure):
        return PrivateRandomizedSearch._score_noise_scale(sensitivity, score_z,
                                                          score_pure) / 100


def _audit_search(cls, **search_params):
    """``skdp.audit`` of ``cls`` over {alpha: 0.5, 1} on a 30-row canary pair (300
    trials); returns the audit's result and the search."""
    rng = np.random.default_rng(0)
    base_X = rng.normal(size=(30, 2)) * 0.2
    base_y = (base_X[:, 0] > 0).astype(int)
    pair = make_canary_pair(base_X, base_y, data_norm=1.0)
    # noise_dominated="fit": the candidates run their solver (the intercept-only fallback
    # would release a constant and leave nothing to audit).
    est = cls(DPLogisticRegression(data_norm=1.0, fit_intercept=False,
                                   noise_dominated="fit"),
              {"alpha": [0.5, 1.0]}, epsilon=1.0, delta=1e-5, **search_params)
    result = audit_estimator(
        est, pair.X, pair.y, pair.X_prime, pair.y_prime,
        # An empty search (Poisson K = 0) releases nothing: a constant statistic.
        statistic=lambda s: (0.0 if s.best_estimator_ is None
                             else pair.estimator_statistic(s.best_estimator_)),
        n_trials=300, random_state=1)
    return result, quiet(clone(est).set_params(random_state=0).fit, pair.X, pair.y)


#: The audited laws of K: the geometric law with mean 2, with a hold-out and with in-sample
#: scores, and the default ("auto": Poisson with mean 10 at delta > 0, about ten
#: candidates per trial; seeded, so it never draws K = 0 here).
AUDITED = [({"n_candidates_mean": 2, "distribution": "geometric",
             "validation_fraction": 0.1}, "geometric"),
           ({"n_candidates_mean": 2, "distribution": "geometric"}, "geometric"),
           ({}, "poisson")]


@pytest.mark.slow
@pytest.mark.parametrize(("search_params", "law"), AUDITED,
                         ids=["geometric_hold_out", "geometric_in_sample", "default"])
@pytest.mark.parametrize(("cls", "violated"), [(PrivateRandomizedSearch, False),
                                               (UnderNoisedSearch, True)])
def test_empirical_audit_of_the_whole_search(cls, violated, search_params, law):
    """End-to-end audit through skdp.audit (95% confidence; the broken twin must be
    flagged, the real search must not)."""
    result, fitted = _audit_search(cls, **search_params)
    assert fitted.distribution_ == law
    assert result.violated is violated
    assert result.epsilon <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize(("cls", "violated"), [(PrivateRandomizedSearch, False),
                                               (UnderNoisedScoreSearch, True)])
def test_audit_of_the_in_sample_score(cls, violated):
    """The released score of an in-sample search (one candidate, the geometric law with
    mean 1.01): one record's label flips its own correctness, so the exact score moves by
    1 / n between neighbours. The real search is not flagged; a twin with a hundredth
    of the score noise is (95% confidence)."""
    rng = np.random.default_rng(0)
    n = 20
    base_X = np.zeros((n, 2))
    y0 = np.zeros(n, dtype=int)
    y0[: n // 2] = 1
    y1 = y0.copy()
    y1[0] = 0  # the neighbour: one label replaced
    est = cls(DPLogisticRegression(data_norm=1.0, fit_intercept=False, classes=[0, 1]),
              {"alpha": [1.0]}, epsilon=1.0, delta=1e-5, n_candidates_mean=1.01,
              distribution="geometric")
    result = audit_estimator(est, base_X, y0, base_X, y1,
                             statistic=lambda s: s.best_score_, n_trials=1000,
                             random_state=int(rng.integers(2**31)))
    assert result.violated is violated


# -- regressions from the independent review ---------------------------------------------------
def test_meta_estimators_that_clone_share_one_cap():
    from sklearn.multiclass import OneVsRestClassifier

    X3, Y3 = make_classification(n_samples=240, n_features=4, n_informative=3,
                                 n_redundant=0, n_classes=3, random_state=0)
    X3 = X3 / np.linalg.norm(X3, axis=1).max()
    s = quiet(PrivateRandomizedSearch(OneVsRestClassifier(DPLogisticRegression(data_norm=1.0)),
                                      {"estimator__alpha": [0.1, 1.0]}, n_candidates_mean=2,
                                      random_state=0).fit, X3, Y3)
    z = s.privacy_ledger_.event.event.noise_multiplier
    reference = rdp_curve(dpe.GaussianDpEvent(z))
    total = sum(rdp_curve(m.privacy_ledger_.event) for m in s.best_estimator_.estimators_)
    assert len(s.best_estimator_.estimators_) == 3
    assert np.all(total <= reference)


def test_candidates_use_the_label_set_of_the_whole_y():
    y = Y.copy()
    y[0] = 2  # a class with one record: in the validation part or the training part
    for seed in range(4):
        s = quiet(search(random_state=seed).fit, X, y)
        assert s.best_estimator_.classes_.tolist() == [0, 1, 2]
        assert s.best_estimator_.coef_.shape == (3, X.shape[1])


def test_stateful_non_private_steps_are_warned_about():
    from sklearn.preprocessing import StandardScaler

    est = make_pipeline(StandardScaler(), DPLogisticRegression(data_norm=1.0))
    with pytest.warns(PrivacyLeakWarning, match="StandardScaler"):
        PrivateRandomizedSearch(est, {"dplogisticregression__alpha": [0.1]},
                                n_candidates_mean=2).fit(X, Y)


def test_poisson_zero_candidates_releases_nothing_and_keeps_the_charge(monkeypatch):
    monkeypatch.setattr(ps, "sample_repetitions", lambda *a: 0)
    acc = BudgetAccountant(2.0, 1e-4)
    s = search(distribution="poisson", accountant=acc)
    with pytest.warns(UserWarning, match="nothing was released"):
        s.fit(X, Y)
    assert s.best_estimator_ is None and len(acc) == 1
    with pytest.raises(ValueError, match="nothing was released"):
        s.predict(X)


@pytest.mark.parametrize(("settings", "resolved", "shape"), [
    ({"delta": 1e-5, "n_candidates_mean": 10}, "poisson", math.inf),
    # The edge: exp(-mean) = 1e-4 exactly (up to rounding) still picks Poisson.
    ({"delta": 1e-5, "n_candidates_mean": math.log(1e4)}, "poisson", math.inf),
    # exp(-9) = 1.2e-4 > 1e-4: an empty search would not be negligible.
    ({"delta": 1e-5, "n_candidates_mean": 9}, "truncated_negative_binomial", 0.5),
    ({"delta": 0.0, "n_candidates_mean": 10}, "truncated_negative_binomial", None),
], ids=["poisson", "edge", "small_mean", "pure"])
def test_auto_distribution_is_poisson_only_where_an_empty_search_is_negligible(
        settings, resolved, shape):
    assert search().distribution == "auto"  # the default
    s = quiet(search(random_state=0, **settings).fit, X, Y)
    assert s.distribution_ == resolved
    event = s.privacy_ledger_.event
    if shape is None:  # pure DP: (2 + eta) times the candidate's epsilon
        assert isinstance(event, ps.PureDpEvent)
    else:
        assert isinstance(event, dpe.RepeatAndSelectDpEvent) and event.shape == shape
        assert event.mean == settings["n_candidates_mean"]
    # The explicit name gives the same plan: the same ledger and the same release.
    explicit = quiet(search(random_state=0, distribution=resolved, **settings).fit, X, Y)
    assert explicit.privacy_ledger_.event == event
    assert explicit.best_params_ == s.best_params_
    assert np.array_equal(explicit.predict(X), s.predict(X))


def test_an_unknown_distribution_is_refused_where_k_is_drawn():
    with pytest.raises(ValueError, match="unknown distribution 'auto'"):
        ps.sample_repetitions(np.random.default_rng(0), "auto", 10.0, 0.5)


def test_tnb_gamma_refuses_impossible_settings():
    with pytest.raises(ValueError, match="n_candidates_mean"):
        ps._tnb_gamma(1.0001, 1e-6)


def test_private_transformers_inside_a_candidate_share_its_cap():
    """A DP scaler in a candidate pipeline is a private step: the scaler's and the model's
    curves together stay under the reference (the scaler used to run uncapped)."""
    from skdp.preprocessing import DPStandardScaler

    est = make_pipeline(DPStandardScaler(bounds=(-1.0, 1.0)),
                        DPLogisticRegression(data_norm=3.0))
    s = quiet(PrivateRandomizedSearch(est, {"dplogisticregression__alpha": [0.1, 1.0]},
                                      n_candidates_mean=2, random_state=0).fit, X, Y)
    z = s.privacy_ledger_.event.event.noise_multiplier
    reference = rdp_curve(dpe.GaussianDpEvent(z))
    total = sum(rdp_curve(step.privacy_ledger_.event) for step in s.best_estimator_)
    assert np.all(total <= reference)
    assert s.best_estimator_[0].privacy_spent_.epsilon < 1.0


def test_privacy_cost_counts_private_transformers():
    from skdp.preprocessing import DPStandardScaler

    pipe = make_pipeline(DPStandardScaler(0.3, bounds=(-1.0, 1.0)),
                         DPLogisticRegression(0.7, data_norm=3.0))
    price = privacy_cost(pipe, X, Y)
    acc = BudgetAccountant(10.0, 1e-3)
    pipe.set_params(dpstandardscaler__accountant=acc, dplogisticregression__accountant=acc)
    quiet(pipe.fit, X, Y)
    assert len(acc) == 2 and acc.spent().epsilon == pytest.approx(price.epsilon, rel=1e-12)


@pytest.mark.slow
def test_pure_search_score_noise_is_the_ledgers_laplace(monkeypatch):
    """Pure search: with every exact score 0, best_score_ is the max of K Laplace(0, s)
    draws, s = Delta / eps_c, so F(best / s)^K is uniform (KS, failure probability 1e-4
    under a correct implementation, fixed seeds). The ledger's epsilon is (2 + eta) eps_c,
    re-accounted by pure accounting."""
    from skdp.privacy.accounting import epsilon_spent

    drawn = _zero_scores_recording_repetitions(monkeypatch)
    u = []
    rng = np.random.default_rng(9)
    for _ in range(300):
        s = quiet(PrivateRandomizedSearch(
            DPLogisticRegression(data_norm=1.0, solver="output_perturbation"),
            {"alpha": [0.1, 1.0]}, epsilon=1.5, delta=0.0, n_candidates_mean=2,
            distribution="geometric", random_state=rng.integers(2**32)).fit, X[:60], Y[:60])
        # In-sample: Delta = 1 / 60, the score's epsilon 30% of eps_c = 1.5 / 3.
        assert s.score_noise_scale_ == pytest.approx((1 / 60) / (0.3 * 1.5 / 3.0),
                                                     rel=1e-12)
        u.append(stats.laplace.cdf(s.best_score_ / s.score_noise_scale_) ** drawn[-1])
    assert epsilon_spent(s.privacy_ledger_.event, 0.0, accounting="pure",
                         relation="replace_one") == pytest.approx(1.5)
    assert stats.kstest(u, "uniform").pvalue > 1e-4


# -- issue 37: n_jobs, "auto" candidates, declared labels --------------------------------------
def test_n_jobs_gives_the_same_release_and_total_as_one_job():
    out = []
    for n_jobs in (1, 2):
        acc = BudgetAccountant(10.0, 1e-4)
        s = quiet(search(epsilon=1.0, delta=1e-5, random_state=7, n_jobs=n_jobs,
                         accountant=acc).fit, X, Y)
        out.append((s.best_params_, s.best_score_, s.best_estimator_.coef_.tolist(),
                    acc.spent()))
    assert out[0] == out[1]


def test_auto_bounds_candidates_work_and_stay_within_the_total():
    acc = BudgetAccountant(10.0, 1e-4)
    s = PrivateRandomizedSearch(DPLogisticRegression(classes=[0, 1]),
                                {"alpha": [0.01, 0.1]}, epsilon=1.0, delta=1e-5,
                                n_candidates_mean=3, accountant=acc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.fit(X, Y)
    assert s.best_estimator_.data_norm_ > 0  # a private bound, released by the candidate
    assert acc.spent().epsilon <= 1.0 + 1e-12
    # classes are declared: no label-set notice
    assert not [w for w in caught if "label set is read" in str(w.message)]


def test_cap_retries_on_public_plans_only():
    """A retry with a smaller budget must be decided before data is read: a step refused
    only because an earlier step's amendment (its released bounds) used more makes the
    candidate output nothing instead (reviewer's finding, issue 37)."""
    from skdp.privacy import Budget, PrivacyLedger, PureDpEvent

    def pure(eps):
        return PrivacyLedger(PureDpEvent(eps), "pure", "replace_one", Budget(eps, 0.0))

    cap = ps._CandidateCap(None, 1.0)
    first = cap.charge(pure(0.4), source="a")
    cap.amend(first, pure(0.5))
    with pytest.raises(ps._AmendedOverCap):
        cap.charge(pure(0.55), source="b")
    with pytest.raises(ps._OverCap):
        cap.charge(pure(0.7), source="c")  # over on the plans alone: a public retry


def test_the_accountants_report_shows_the_search_as_one_repeat_and_select():
    from skdp import privacy_report

    acc = BudgetAccountant(10.0, 1e-4)
    quiet(search(epsilon=1.0, delta=1e-5, accountant=acc).fit, X, Y)
    text = str(privacy_report(acc))
    assert "1 x RepeatAndSelectDpEvent" in text


def test_raw_scores_stay_within_their_sensitivity():
    """One prediction per row (a column is flattened instead of broadcast against y into
    n x n comparisons), and a NaN prediction scores as the worst clipped residual, so
    one record moves the mean by at most 4 B^2 / n and the noisy scores stay ordered."""

    class Column:
        def predict(self, X):
            return np.asarray(X)[:, :1]

    y = np.array([0.0, 1.0, 1.0, 0.0])
    X = y[:, None]
    assert ps._raw_score(Column(), X, y, "accuracy") == 1.0
    reg = DPLinearRegression(y_bound=2.0)

    class NanRegressor(Pipeline):
        def predict(self, X):
            return np.array([np.nan, 0.0, 1.0, 0.0])

    model = NanRegressor([("reg", reg)])
    # Residuals: the NaN one counts (2 B)^2 = 16, then 1, 0, 0: mean 17 / 4.
    assert ps._raw_score(model, X, y, "neg_mean_squared_error") == pytest.approx(-17 / 4)
