"""skdp.preprocessing (issue 19, item 2): public maps read nothing; the DP scaler's noise
is what its ledger says."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from scipy import stats
from sklearn.pipeline import make_pipeline

from skdp import BudgetAccountant, DPLogisticRegression, PrivacyLeakWarning, privacy_spent
from skdp.mechanisms import grid_points
from skdp.preprocessing import DPStandardScaler, PublicBoundsScaler, RowNormClipper
from skdp.privacy.accounting import epsilon_spent


@pytest.mark.parametrize("make", [lambda: PublicBoundsScaler(((-2.0, 0.0), (3.0, 9.0))),
                                  lambda: RowNormClipper(2.5)])
def test_public_maps_read_no_statistic(make):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(50, 2)) * 10, rng.normal(size=(7, 2)) + 100
    C = rng.normal(size=(20, 2)) * 5
    np.testing.assert_array_equal(make().fit(A).transform(C), make().fit(B).transform(C))
    out = make().fit(A).transform(C)
    assert np.all(np.abs(out) <= 2.5 + 1e-12)


def test_public_bounds_scaler_maps_bounds_to_minus_one_one():
    Z = PublicBoundsScaler(((0.0, 10.0), (1.0, 30.0))).fit_transform([[0.0, 30.0],
                                                                       [1.0, 50.0]])
    np.testing.assert_allclose(Z, [[-1.0, 1.0], [1.0, 1.0]])


def test_dp_scaler_ledger_reaccounts_and_the_pipeline_total_composes():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 4, size=(300, 5))
    y = (X[:, 0] > 2).astype(int)
    acc = BudgetAccountant(5.0, 1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        pipe = make_pipeline(DPStandardScaler(0.4, bounds=(0.0, 4.0), accountant=acc),
                             DPLogisticRegression(0.6, classes=[0, 1], accountant=acc))
        pipe.fit(X, y)
    scaler = pipe[0]
    ledger = scaler.privacy_ledger_
    assert epsilon_spent(ledger.event, 1e-5, accounting=ledger.accounting,
                         relation="replace_one") <= 0.4
    assert len(acc) == 2
    total = privacy_spent(pipe)
    assert total == acc.spent()
    assert total.epsilon <= 1.0 and total.delta == pytest.approx(2e-5)


@pytest.mark.slow
@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_dp_scaler_noise_is_what_the_ledger_says(delta):
    """The released per-feature sums minus the exact ones, over 400 fits with independent
    seeds, follow the ledger's law: N(0, (z sqrt(2d))^2) per coordinate (KS), or for pure
    DP the l2-Laplace of scale sqrt(2d)/epsilon, whose radius is Gamma(2d) (KS). Failure
    probability 1e-4 each under a correct implementation (seeds fixed)."""
    rng = np.random.default_rng(2)
    n, d, eps = 500, 3, 0.5
    X = rng.uniform(0.2, 0.8, size=(n, d))  # u = x: bounds (0, 1), means far from 0 and 1
    exact = X.mean(axis=0)
    z_values, errors = [], []
    seeds = np.random.default_rng(3).spawn(400)
    for seed in seeds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            s = DPStandardScaler(eps, delta, bounds=(0.0, 1.0), shrink_mean=False,
                                 random_state=seed).fit(X)
        errors.append((s.mean_ - exact) * n)  # the noise on the sums of u
        z_values.append(s.noise_scale_)
    errors = np.array(errors)
    scale = z_values[0]
    assert all(v == scale for v in z_values)
    if delta > 0:
        event = s.privacy_ledger_.event
        assert isinstance(event, dpe.GaussianDpEvent)
        assert scale == pytest.approx(event.noise_multiplier * math.sqrt(2 * d))
        assert stats.kstest(errors.ravel() / scale, "norm").pvalue > 1e-4
    else:
        assert scale == pytest.approx(math.sqrt(2 * d) / eps)
        # Only the mean half of the 2d-vector is observed: its coordinates are a
        # projection of the l2-Laplace draw, compared with a simulation of the same law.
        sim = np.random.default_rng(4)
        radius = sim.gamma(2 * d, scale, size=20000)
        direction = sim.standard_normal((20000, 2 * d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        reference = (radius[:, None] * direction)[:, :d].ravel()
        assert stats.ks_2samp(errors.ravel(), reference).pvalue > 1e-4


def test_bounds_whose_width_overflows_are_refused():
    with pytest.raises(ValueError, match="bounds"):
        DPStandardScaler(bounds=(-1e308, 1e308)).fit(np.zeros((5, 2)))


def test_a_dp_scaler_with_private_bounds_fits_inside_a_private_search():
    from sklearn.datasets import make_classification

    from skdp.model_selection import PrivateRandomizedSearch
    from skdp.privacy.composition import rdp_curve

    X, y = make_classification(n_samples=300, n_features=4, random_state=0)
    est = make_pipeline(DPStandardScaler(), DPLogisticRegression(data_norm=3.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        s = PrivateRandomizedSearch(est, {"dplogisticregression__alpha": [0.1, 1.0]},
                                    n_candidates_mean=2, random_state=0).fit(X, y)
    z = s.privacy_ledger_.event.event.noise_multiplier
    reference = rdp_curve(dpe.GaussianDpEvent(z))
    scaler, model = s.best_estimator_
    total = sum(rdp_curve(part.event) for _, part in scaler.privacy_ledger_.parts)
    total = total + rdp_curve(model.privacy_ledger_.event)
    assert np.all(total <= reference)


def test_repr_shows_the_spend_and_a_failure_after_the_private_bound_keeps_its_charge(
        monkeypatch):
    import skdp.preprocessing._scalers as scalers

    X = np.random.default_rng(0).normal(size=(200, 3))
    scaler = DPStandardScaler().fit(X)
    assert "privacy spent: epsilon=" in scaler._repr_html_()
    acc = BudgetAccountant(5.0, 1e-4)

    def boom(*a, **k):
        raise RuntimeError("failure after the bound estimate")

    monkeypatch.setattr(scalers, "as_noise_source", boom)
    with pytest.raises(RuntimeError):
        DPStandardScaler(accountant=acc).fit(X)
    (entry,) = acc.entries
    assert [name for name, _ in entry.ledger.parts] == ["bounds"]
    assert acc.spent().epsilon == pytest.approx(0.3 * 0.5)


def test_shrink_to_centre_is_the_non_negative_garrote():
    """Plain-numpy reference: the distance z to 1/2 becomes z max(0, 1 - (2 s / z)^2)."""
    from skdp.preprocessing._scalers import shrink_to_centre

    mean_u = np.array([0.5, 0.52, 0.6, 0.9, 0.1, 0.45])
    s = 0.02
    out, shrunk = shrink_to_centre(mean_u, s)
    z = mean_u - 0.5
    expected = np.zeros_like(z)
    for j, zj in enumerate(z):
        if zj != 0:
            expected[j] = zj * max(0.0, 1.0 - (2 * s / zj) ** 2)
    np.testing.assert_allclose(out, 0.5 + expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(shrunk, [True, True, False, False, False, False])


def test_shrunk_means_fall_to_the_centre_and_the_rest_is_the_noisy_release():
    """Post-processing of one release: with the same seed, shrink_mean=False gives the
    raw noisy means; shrink_mean=True maps exactly those through shrink_to_centre with
    the release's per-coordinate noise std (a budget far too small: every mean falls to
    the centre of its bounds; a large one: none does)."""
    from skdp.preprocessing._scalers import shrink_to_centre

    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(300, 4)) * [1, 1, 1, 0.2]
    lower, upper = np.zeros(4), np.full(4, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        raw = DPStandardScaler(0.5, bounds=(lower, upper), shrink_mean=False,
                               random_state=1).fit(X)
        shrunk = DPStandardScaler(0.5, bounds=(lower, upper), random_state=1).fit(X)
        tiny = DPStandardScaler(1e-3, bounds=(lower, upper), random_state=1).fit(X)
        large = DPStandardScaler(1e4, bounds=(lower, upper), random_state=1).fit(X)
    expected, flags = shrink_to_centre(raw.mean_ / 2.0, raw.noise_scale_ / 300)
    np.testing.assert_allclose(shrunk.mean_, 2.0 * expected, rtol=1e-12)
    np.testing.assert_array_equal(shrunk.shrunk_, flags)
    np.testing.assert_allclose(shrunk.var_, raw.var_)
    assert not raw.shrunk_.any()
    assert tiny.shrunk_.all() and np.all(tiny.mean_ == 1.0)
    assert not large.shrunk_.any()


def test_variances_below_their_noise_level_are_raised_to_it():
    """Plain-numpy reference fed the same noise: the released variance of u is the noisy
    one (floored at 1e-4, at most 1/4) raised to the moment's noise level std / n; at
    epsilon=inf there is no noise floor."""
    from skdp.privacy.noise import NoiseSource

    rng = np.random.default_rng(0)
    n, d = 300, 4
    X = rng.uniform(0.0, 1.0, size=(n, d)) * [1, 1, 1, 0.05]
    lower, upper = np.zeros(d), np.full(d, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        noisy = DPStandardScaler(0.5, bounds=(lower, upper), shrink_mean=False,
                                 random_state=1).fit(X)
        exact = DPStandardScaler(np.inf, bounds=(lower, upper)).fit(X)
    u = X / 2.0
    _, noise_rng = np.random.default_rng(1).spawn(2)
    sums = np.r_[u.sum(axis=0), (u ** 2).sum(axis=0)] + NoiseSource(noise_rng).gaussian(
        (2 * d,), noisy.noise_scale_)
    mean_u = np.clip(sums[:d] / n, 0.0, 1.0)
    raw = np.clip(sums[d:] / n - mean_u ** 2, 1e-4, 0.25)
    floor = noisy.noise_scale_ / n
    assert 0 < floor < 0.25 and np.any(raw < floor)  # the floor binds here
    np.testing.assert_allclose(noisy.var_ / 4.0, np.maximum(raw, floor), rtol=1e-12)
    # epsilon=inf: the exact variances (with the 1e-4 floor of the squared range only).
    np.testing.assert_allclose(exact.var_, np.maximum(X.var(axis=0), 1e-4 * 4.0),
                               rtol=1e-12)


# -- bounds="auto": rows clipped to the l2 ball ------------------------------------------
def _auto_reference(X, epsilon, delta, seed, shrink_mean=True):
    """Plain-numpy reference of DPStandardScaler(bounds="auto") fed the same noise: the
    private bound C, rows clipped to the ball of radius C, the 2d-vector [sum x / (2C),
    sum x^2 / (sqrt(2) C^2)] plus the release's noise (sensitivity sqrt(2)), then the
    means and variances in the units of u = (x + C) / (2C)."""
    from skdp.mechanisms import private_bound
    from skdp.preprocessing._scalers import BOUNDS_QUANTILE, shrink_to_centre
    from skdp.privacy.budget import Budget
    from skdp.privacy.calibration import single_release
    from skdp.privacy.noise import NoiseSource

    n, d = X.shape
    bounds_rng, noise_rng = np.random.default_rng(seed).spawn(2)
    eps_b = 0.5 * epsilon
    norms = np.sqrt((X * X).sum(axis=1))
    c = private_bound(norms, eps_b, bounds_rng, quantile=BOUNDS_QUANTILE)
    target = c * (1 - 1e-12)  # the clip's safety margin (NORM_SAFETY)
    rows = np.where((norms > target)[:, None], X / norms[:, None] * target, X)
    v = np.concatenate([rows.sum(axis=0) / (2 * c), (rows * rows).sum(axis=0)
                        / (math.sqrt(2) * c * c)])
    pure = delta == 0
    release = single_release(Budget(epsilon - eps_b, delta), "pure" if pure else "gaussian",
                             "replace_one")
    source = NoiseSource(noise_rng)
    scale = release.unit_scale * math.sqrt(2)
    v = v + (source.l2_laplace((2 * d,), scale) if pure else source.gaussian((2 * d,), scale))
    mean_u = np.clip(0.5 + v[:d] / n, 0.0, 1.0)
    second = math.sqrt(2) / 4
    var_u = np.clip(second * v[d:] / n - (mean_u - 0.5) ** 2, 1e-4, 0.25)
    std = scale * (math.sqrt(2 * d + 1) if pure else 1.0)
    var_u = np.maximum(var_u, min(second * std / n, 0.25))
    if shrink_mean:
        mean_u, _ = shrink_to_centre(mean_u, std / n)
    return c, -c + 2 * c * mean_u, 4 * c * c * var_u


@pytest.mark.parametrize("shrink_mean, delta", [(True, 1e-5), (False, 1e-5), (True, 0.0)])
def test_auto_scaler_equals_its_numpy_reference_fed_the_same_noise(shrink_mean, delta):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6)) * [100.0, 30.0, 5.0, 1.0, 0.1, 0.01] + [50, 0, 0, 1, 0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        s = DPStandardScaler(0.8, delta, accounting="auto" if delta == 0 else "gaussian",
                             shrink_mean=shrink_mean, random_state=3).fit(X)
    c, mean, var = _auto_reference(X, 0.8, delta, 3, shrink_mean)
    assert s.upper_[0] == c and np.all(s.lower_ == -c)
    assert np.sum(np.linalg.norm(X, axis=1) > c) > 40  # the ball binds for many rows
    np.testing.assert_allclose(s.mean_, mean, rtol=1e-10, atol=1e-10 * c)
    np.testing.assert_allclose(s.var_, var, rtol=1e-10)
    # The ledger (the bound's pure part and the moments' release) re-accounts within the
    # budget, and the noise drawn is the one its event calibrates.
    ledger = s.privacy_ledger_
    assert [name for name, _ in ledger.parts] == ["bounds", "moments"]
    assert ledger.spent() == s.privacy_spent_
    assert s.privacy_spent_.epsilon <= 0.8 * (1 + 1e-9)
    assert s.privacy_spent_.delta <= delta * (1 + 1e-9)
    event = ledger.parts[1][1].event
    if delta == 0:
        assert s.noise_scale_ == pytest.approx(math.sqrt(2) / event.epsilon)
    else:
        assert s.noise_scale_ == pytest.approx(event.noise_multiplier * math.sqrt(2))


def test_auto_release_moves_by_at_most_sqrt_2_on_neighbours():
    """The ball's sensitivity: over adversarial replacements of one row (huge rows,
    opposite rows, rows on different axes, zero rows), the normalised release vector moves
    by at most sqrt(2), and the box's sqrt(2 d) is far from tight for it (d = 8)."""
    from skdp.losses import row_norms
    from skdp.preprocessing._scalers import BALL_SENSITIVITY, _ball_sums

    rng = np.random.default_rng(1)
    d, c = 8, 3.0
    base = rng.normal(size=(50, d))
    worst = 0.0
    candidates = [np.zeros(d), 1e300 * np.ones(d), -1e300 * np.ones(d)]
    candidates += [s * c * np.eye(d)[j] for j in range(d) for s in (1.0, -1.0)]
    candidates += list(rng.normal(size=(40, d)) * 10.0 ** rng.integers(-3, 6, size=(40, 1)))
    for a in candidates:
        for b in candidates:
            X, Y = base.copy(), base.copy()
            X[0], Y[0] = a, b
            diff = _ball_sums(X, c, row_norms(X)) - _ball_sums(Y, c, row_norms(Y))
            worst = max(worst, float(np.linalg.norm(diff)))
    assert worst <= BALL_SENSITIVITY * (1 + 1e-12)
    assert worst > 1.2  # rows on two axes: sqrt(1/2 + 1); a search finds at most 1.25
    assert BALL_SENSITIVITY < math.sqrt(2 * d)


@pytest.mark.parametrize("c", [float(grid_points()[0]), 1.0, float(grid_points()[-1])])
def test_auto_clipped_rows_never_leave_the_ball(c):
    """Rows far above the radius (up to 1.7e308) and at the smallest grid radius, where a
    single factor c / ||x|| is subnormal: every clipped row stays within c (the release's
    sensitivity needs it), on the host and through an array API namespace alike."""
    from skdp.losses import clip_rows, row_norms
    from skdp.preprocessing._scalers import _ball_sums, _device_ball_sums

    rng = np.random.default_rng(3)
    X = rng.normal(size=(64, 5)) * 10.0 ** rng.integers(-8, 308, size=(64, 1))
    X = np.clip(X, -1.7e308, 1.7e308)
    X[0] = 0.0
    clipped = clip_rows(X, c)
    norms = np.linalg.norm(clipped / c, axis=1)
    assert np.all(norms <= 1.0)
    assert np.all(np.isfinite(_ball_sums(X, c, row_norms(X))))
    # The device path needs scikit-learn's array-api-compat (absent from the oldest
    # scikit-learn the floors job installs, where no array is ever sent down that path).
    from skdp import _array_api

    if _array_api.compat is None:
        pytest.skip("no array-api-compat in this scikit-learn")
    strict = pytest.importorskip("array_api_strict")
    device = _device_ball_sums(strict.asarray(X), c)
    np.testing.assert_allclose(device, _ball_sums(X, c, row_norms(X)), rtol=1e-9,
                               atol=1e-300)


def test_auto_scaler_at_epsilon_inf_is_exact():
    """At epsilon=inf the bound is the maximum (no row clipped) and the statistics are
    exact (the non-private fit; this fit used to fail on its bounds' charge)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4)) * [10.0, 1.0, 0.1, 3.0] + [5.0, -1.0, 0.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        s = DPStandardScaler(np.inf).fit(X)
    c = s.upper_[0]
    assert c >= np.linalg.norm(X, axis=1).max()
    np.testing.assert_allclose(s.mean_, X.mean(axis=0), rtol=1e-10, atol=1e-12)
    # The exact variances, with the 1e-4 floor of the squared range only (as with public
    # bounds: test_variances_below_their_noise_level_are_raised_to_it).
    np.testing.assert_allclose(s.var_, np.maximum(X.var(axis=0), 1e-4 * 4 * c * c),
                               rtol=1e-10)
    assert not s.shrunk_.any()


@pytest.mark.slow
def test_audit_of_the_auto_scaler_on_neighbouring_data(monkeypatch):
    """Neighbouring data sets: one row on the first axis in D, on the second in D' (both
    far outside the ball, so both clip to its radius: the largest move of the release,
    ``sqrt(1/2 + 1)`` of its sensitivity ``sqrt(2)``). The statistic projects the
    released moments on that move. Audited at the claimed total epsilon 1 (bound and
    moments), 2,000 runs per side: not flagged; a twin whose sensitivity is declared 20
    times too small (its moments' noise a twentieth) is flagged, so the audit can fail
    (each verdict wrong with probability at most 5%; seeds fixed)."""
    import skdp.preprocessing._scalers as scalers
    from skdp.audit import audit_scores

    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 5))
    X[0] = [0.0, 100.0, 0.0, 0.0, 0.0]
    Xp = X.copy()
    Xp[0] = [100.0, 0.0, 0.0, 0.0, 0.0]

    def statistic(data, seeds):
        out = []
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                s = DPStandardScaler(1.0, 1e-5, shrink_mean=False, random_state=seed).fit(data)
            c = s.upper_[0]
            second = s.var_ + s.mean_ ** 2
            # The release's move from D to D': +(e1 - e2) in both halves.
            out.append((s.mean_[0] - s.mean_[1]) / (2 * c)
                       + (second[0] - second[1]) / (math.sqrt(2) * c * c))
        return np.array(out)

    seeds = np.random.default_rng(6).spawn(8000)
    a, b = statistic(X, seeds[:2000]), statistic(Xp, seeds[2000:4000])
    assert not audit_scores(a, b, epsilon=1.0, delta=1e-5).violated
    monkeypatch.setattr(scalers, "BALL_SENSITIVITY", scalers.BALL_SENSITIVITY / 20)
    a5, b5 = statistic(X, seeds[4000:6000]), statistic(Xp, seeds[6000:])
    assert audit_scores(a5, b5, epsilon=1.0, delta=1e-5).violated
