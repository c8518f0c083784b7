"""DPPCA: parity with scikit-learn at epsilon=inf, the ledger, the noise it says, the
sensitivity it declares, and an audit on neighbouring data sets."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from scipy import stats
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline

import skdp.decomposition._pca as pca_module
from skdp import BudgetAccountant, PrivacyLeakWarning, privacy_report, privacy_spent
from skdp.audit import audit_scores
from skdp.decomposition import DPPCA
from skdp.decomposition._pca import covariance_sensitivity
from skdp.privacy.accounting import reaccount
from skdp.privacy.composition import CompositeLedger


def quiet_fit(est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return est.fit(X)


def _data(n=500, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * np.linspace(4.0, 0.5, d) + np.arange(d)


def _svec(M):
    """The upper triangle of a symmetric matrix, off-diagonal entries times sqrt(2)."""
    rows, cols = np.triu_indices(M.shape[0])
    return M[rows, cols] * np.where(rows == cols, 1.0, math.sqrt(2.0))


def _released_gram(pca):
    """The released second-moment matrix, rebuilt from the components and variances
    (exact when ``n_components=None`` and no eigenvalue was floored)."""
    V = pca.components_
    return (V.T * pca.explained_variance_) @ V * (pca.n_samples_ - 1)


@pytest.mark.parametrize("center", [True, False])
def test_epsilon_inf_equals_scikit_learn(center):
    X = _data()
    if not center:
        X = X - X.mean(axis=0)  # the same problem for scikit-learn's centring PCA
    ours = quiet_fit(DPPCA(3, epsilon=math.inf, center=center), X)
    ref = PCA(3, svd_solver="full").fit(X)
    np.testing.assert_allclose(ours.components_, ref.components_, atol=1e-10)
    np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(ours.singular_values_, ref.singular_values_, rtol=1e-10)
    np.testing.assert_allclose(ours.transform(X), ref.transform(X), atol=1e-9)
    np.testing.assert_allclose(ours.inverse_transform(ours.transform(X)),
                               ref.inverse_transform(ref.transform(X)), atol=1e-9)
    assert ours.noise_scale_ == 0.0
    ours = quiet_fit(DPPCA(3, epsilon=math.inf, whiten=True, center=center), X)
    ref = PCA(3, whiten=True, svd_solver="full").fit(X)
    np.testing.assert_allclose(ours.transform(X), ref.transform(X), atol=1e-9)


def test_a_variance_fraction_chooses_the_components_from_the_release():
    X = _data()
    ours = quiet_fit(DPPCA(0.8, epsilon=math.inf), X)
    ref = PCA(0.8, svd_solver="full").fit(X)
    assert ours.n_components_ == ref.n_components_
    np.testing.assert_allclose(ours.explained_variance_ratio_, ref.explained_variance_ratio_,
                               rtol=1e-10)
    private = DPPCA(0.8, epsilon=1.0).fit(X)
    assert 1 <= private.n_components_ <= 5
    assert np.cumsum(private.explained_variance_ratio_)[-1] >= 0.8 or (
        private.n_components_ == 5)


@pytest.mark.parametrize("params", [
    dict(), dict(center=False), dict(data_norm=20.0), dict(delta=0.0),
    dict(accounting="rdp"), dict(accounting="pld", data_norm=20.0),
])
def test_the_ledger_reaccounts_within_the_budget_and_charges_one_accountant(params):
    X = _data()
    acc = BudgetAccountant(5.0, 1e-4)
    pca = DPPCA(2, epsilon=1.0, accountant=acc, **params).fit(X)
    ledger = pca.privacy_ledger_
    parts = ledger.parts if isinstance(ledger, CompositeLedger) else (("release", ledger),)
    for _, part in parts:
        spent = reaccount(part)
        assert spent.epsilon <= part.budget.epsilon * (1 + 1e-9)
        assert spent.delta <= part.budget.delta
    assert pca.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert len(acc) == 1 and acc.spent() == privacy_spent(pca)
    assert "DPPCA" in str(privacy_report(acc))


def test_a_refused_fit_leaves_the_estimator_and_the_accountant_unchanged():
    acc = BudgetAccountant(5.0, 1e-4)
    pca = DPPCA(7, accountant=acc)
    with pytest.raises(ValueError, match="n_components"):
        pca.fit(_data(d=5))
    assert len(acc) == 0 and not hasattr(pca, "components_")
    with pytest.raises(ValueError, match="delta=0"):
        DPPCA(accounting="gaussian", delta=0.0, accountant=acc).fit(_data())
    assert len(acc) == 0


def test_a_pipeline_reports_one_total():
    from skdp import DPLogisticRegression
    from skdp.preprocessing import PublicBoundsScaler

    rng = np.random.default_rng(3)
    X = rng.uniform(0, 16, size=(400, 6))
    y = (X[:, 0] > 8).astype(int)
    acc = BudgetAccountant(3.0, 1e-4)
    pipe = make_pipeline(PublicBoundsScaler((0.0, 16.0)), DPPCA(3, epsilon=0.5, accountant=acc),
                         DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=acc))
    pipe.fit(X, y)
    assert len(acc) == 2
    assert privacy_spent(pipe) == acc.spent()
    assert pipe.predict(X).shape == (400,)
    assert list(pipe[:2].get_feature_names_out()) == ["dppca0", "dppca1", "dppca2"]


def test_the_declared_sensitivity_bounds_every_replacement_and_is_reached():
    """Brute force: rows on the sphere of radius R (the worst case of the clip), random
    pairs and axis pairs; svec(x x^T - x' x'^T) never exceeds sqrt(2) R^2, which
    orthogonal axis rows reach."""
    rng = np.random.default_rng(0)
    d, R = 6, 2.5
    worst = 0.0
    for _ in range(3000):
        a, b = rng.normal(size=(2, d))
        if rng.random() < 0.3:  # sparse rows: where the diagonal terms are largest
            a[rng.random(d) < 0.7] = 0.0
            b[rng.random(d) < 0.7] = 0.0
        a, b = (v * R / max(np.linalg.norm(v), 1e-300) for v in (a, b))
        worst = max(worst, float(np.linalg.norm(_svec(np.outer(a, a) - np.outer(b, b)))))
    bound = covariance_sensitivity(R)
    assert worst <= bound * (1 + 1e-12)
    e = np.eye(d) * R
    diff = _svec(np.outer(e[0], e[0]) - np.outer(e[1], e[1]))
    assert np.linalg.norm(diff) == pytest.approx(bound)
    # The mean's release: clipped rows move the sum by at most 2 R_0 (opposite rows).
    from skdp.losses import clip_rows

    big = rng.normal(size=(200, d)) * 10
    moved = np.linalg.norm(clip_rows(big, R) - clip_rows(-big, R), axis=1)
    assert moved.max() <= 2 * R


@pytest.mark.slow
@pytest.mark.parametrize("accounting", ["gaussian", "pld"])
def test_the_noise_drawn_is_what_the_ledger_says(accounting):
    """Over 300 fits with independent seeds, the released mean and svec of the second
    moment minus their exact values (given the released mean), divided by the ledger's
    multipliers times the declared sensitivities, are N(0, 1) (KS, failure probability 1e-4 each
    under a correct implementation; seeds fixed)."""
    rng = np.random.default_rng(5)
    n, d, R = 400, 3, 4.0
    X = rng.normal(size=(n, d)) * [1.0, 0.8, 0.6] + [0.5, -0.5, 0.2]
    X *= np.minimum(1.0, 0.9 * R / np.linalg.norm(X, axis=1))[:, None]  # inside the clip
    mean_errors, cov_errors = [], []
    for seed in np.random.default_rng(6).spawn(300):
        pca = quiet_fit(DPPCA(epsilon=2.0, data_norm=R, accounting=accounting,
                              random_state=seed), X)
        # The ledger's multipliers per unit of replace-one sensitivity (PLD records
        # add/remove units: twice the replace-one multiplier).
        z_mean, z_cov = (e.noise_multiplier / (2.0 if accounting == "pld" else 1.0)
                         for e in pca.privacy_ledger_.event.events)
        mean_errors.append((pca.mean_ - X.mean(axis=0)) * n / (z_mean * 2 * R))
        C = X - pca.mean_
        C *= np.minimum(1.0, R * pca_module.NORM_SAFETY / np.linalg.norm(C, axis=1))[:, None]
        noise = _svec(_released_gram(pca) - C.T @ C)
        assert pca.noise_scale_ == pytest.approx(z_cov * covariance_sensitivity(R))
        cov_errors.append(noise / pca.noise_scale_)
    assert isinstance(pca.privacy_ledger_.event.events[0], dpe.GaussianDpEvent)
    assert stats.kstest(np.ravel(mean_errors), "norm").pvalue > 1e-4
    assert stats.kstest(np.ravel(cov_errors), "norm").pvalue > 1e-4


def _audit_statistic(noise_factor: float, n_trials: int, seed: int):
    """G_11 - G_22 of the released matrix on D (canary e1) and D' (canary e2): the
    replacement moves the upper triangle by (1, 0, ..., -1), the full sensitivity
    sqrt(2) R^2 with R = 1 (center=False, public data_norm)."""
    rng = np.random.default_rng(seed)
    base = np.repeat(np.eye(2), 200, axis=0) * 0.9  # a well-conditioned gram: no floor
    D = np.vstack([base, [[1.0, 0.0]]])
    D_prime = np.vstack([base, [[0.0, 1.0]]])
    out = []
    for data in (D, D_prime):
        scores = []
        for child in rng.spawn(n_trials):
            pca = quiet_fit(DPPCA(epsilon=2.0, data_norm=1.0, center=False,
                                  random_state=child), data)
            G = _released_gram(pca)
            scores.append(G[0, 0] - G[1, 1])
        out.append(np.array(scores))
    return out


@pytest.mark.slow
def test_an_audit_on_neighbouring_data_finds_no_leak_and_a_weakened_twin_is_caught(
        monkeypatch):
    """confidence 0.99: a correct release is flagged with probability at most 1%."""
    s0, s1 = _audit_statistic(1.0, 1500, seed=11)
    result = audit_scores(s0, s1, epsilon=2.0, delta=1e-5, confidence=0.99)
    assert not result.violated, result
    # The twin: a sensitivity declared 5 times too small (noise 5 times too small).
    monkeypatch.setattr(pca_module, "covariance_sensitivity",
                        lambda norm: math.sqrt(2.0) * norm ** 2 / 5.0)
    s0, s1 = _audit_statistic(1.0, 1500, seed=12)
    twin = audit_scores(s0, s1, epsilon=2.0, delta=1e-5, confidence=0.99)
    assert twin.violated, twin


def test_verbose_text_is_the_same_on_neighbouring_data(capsys):
    X = _data(n=80, d=3)
    X_prime = X.copy()
    X_prime[0] = [1e6, -1e6, 3.0]
    outputs = []
    for data in (X, X_prime):
        quiet_fit(DPPCA(2, verbose=1), data)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "[DPPCA] fit: 80 rows" in outputs[0]


def test_non_finite_and_huge_rows_are_clipped_silently():
    X = _data(n=300, d=4)
    X[0] = [1e300, -1e300, 1e300, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pca = DPPCA(2, random_state=None).fit(X)
    assert np.all(np.isfinite(pca.components_)) and np.all(np.isfinite(pca.mean_))


def test_clipped_rows_stay_within_the_bound_even_for_huge_rows():
    """One factor norm / ||x|| is subnormal for rows near 1e308 and tiny bounds: the
    clip divides first (review finding: rows up to 2x the bound before)."""
    from skdp.losses import clip_rows

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)) * 10.0 ** rng.uniform(-300, 307, size=(3000, 1))
    for R in (3e-16, 1e-15, 9.5e-7, 1.0, 1e100):
        assert np.all(np.linalg.norm(clip_rows(X, R) / R, axis=1) <= 1.0)


def test_a_norm_whose_sensitivity_underflows_is_refused():
    with pytest.raises(ValueError, match="sensitivity"):
        DPPCA(data_norm=1e-170, center=False).fit(_data())


def test_cross_validation_on_two_workers_charges_what_ran(tmp_path):
    """Through the public API: cross_val_score(n_jobs=2) over a pipeline of DPPCA and
    DPGaussianNB records every fit of every fold in the one accountant, and its total is
    what privacy_cost priced before the run."""
    from sklearn.model_selection import KFold, cross_val_score

    from skdp.model_selection import privacy_cost
    from skdp.naive_bayes import DPGaussianNB
    from skdp.preprocessing import PublicBoundsScaler

    rng = np.random.default_rng(8)
    X = rng.uniform(0, 16, size=(300, 6))
    y = (X[:, 0] + X[:, 1] > 16).astype(int)
    # Process workers record into a shared file (an in-memory accountant refuses them).
    acc = BudgetAccountant(50.0, 1e-2, path=tmp_path / "budget.sqlite")
    pipe = make_pipeline(PublicBoundsScaler((0.0, 16.0)),
                         DPPCA(3, epsilon=0.4, accountant=acc),
                         DPGaussianNB(0.6, bounds=(-8.0, 8.0), classes=[0, 1],
                                      accountant=acc))
    cv = KFold(3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        price = privacy_cost(pipe, X, y, cv=cv)
        cross_val_score(pipe, X, y, cv=cv, n_jobs=2)
    assert len(acc) == 6
    assert {entry.source for entry in acc.entries} == {"DPPCA", "DPGaussianNB"}
    assert acc.spent().epsilon == pytest.approx(price.epsilon, rel=1e-9)
    assert acc.spent().delta == pytest.approx(price.delta, rel=1e-9)
