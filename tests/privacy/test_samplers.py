"""Generalized Gaussian and K-norm samplers (NoiseSource.generalized_gaussian / k_norm).

Every statistical test uses a fixed seed and states its failure probability under the null
(the sampler has the claimed law); with a fixed seed each test is deterministic.
"""

import math

import numpy as np
import pytest
from scipy import stats

from skdp.privacy.noise import NoiseSource

# Two-sided failure probability of every test below under the null hypothesis.
ALPHA = 1e-6


def _source(seed):
    return NoiseSource(np.random.default_rng(seed))


def _lr(Z, r):
    return np.max(np.abs(Z), axis=1) if r == math.inf else np.sum(np.abs(Z) ** r, axis=1) ** (
        1.0 / r)


def _draws(method, n, shape, scale, order, seed):
    src = _source(seed)
    return np.array([getattr(src, method)(shape, scale, order).ravel() for _ in range(n)])


@pytest.mark.parametrize("d, r", [(1, 3.0), (7, 2.0), (20, 3.5), (50, 8.8)])
def test_generalized_gaussian_second_moment_is_d_sigma2(d, r):
    """||Z||_r^2 / sigma^2 = 2 Gamma(d/2) ~ chi2(d) exactly, so the sum over N draws is
    chi2(N d): an exact two-sided test of E||Z||_r^2 = d sigma^2 (failure prob. 1e-6)."""
    sigma, n = 0.7, 4000
    Z = _draws("generalized_gaussian", n, (d,), sigma, r, seed=11)
    total = float(np.sum(_lr(Z, r) ** 2) / sigma**2)
    assert stats.chi2.ppf(ALPHA / 2, n * d) < total < stats.chi2.ppf(1 - ALPHA / 2, n * d)
    # And the sample mean is d sigma^2 to within 6 standard errors (sd of chi2(d) = sqrt(2d)).
    mean = np.mean(_lr(Z, r) ** 2)
    assert abs(mean - d * sigma**2) < 6 * sigma**2 * math.sqrt(2 * d / n)


@pytest.mark.parametrize("d, r", [(3, 2.5), (30, 4.0), (30, math.inf)])
def test_generalized_gaussian_radius_law(d, r):
    """KS test of ||Z||_r^2 / sigma^2 against chi2(d) (failure probability 1e-6)."""
    sigma = 2.0
    Z = _draws("generalized_gaussian", 3000, (d,), sigma, r, seed=5)
    assert stats.kstest(_lr(Z, r) ** 2 / sigma**2, stats.chi2(d).cdf).pvalue > ALPHA


@pytest.mark.parametrize("d, q", [(1, 3.0), (4, 2.0), (25, 6.0), (25, math.inf)])
def test_k_norm_radius_law(d, q):
    """KS test of ||Z||_q against Gamma(d, scale) (failure probability 1e-6)."""
    scale = 0.3
    Z = _draws("k_norm", 3000, (d,), scale, q, seed=9)
    assert stats.kstest(_lr(Z, q), stats.gamma(d, scale=scale).cdf).pvalue > ALPHA


@pytest.mark.parametrize("method", ["generalized_gaussian", "k_norm"])
@pytest.mark.parametrize("d, r", [(5, 3.0), (12, 1.5), (40, 9.0), (20, 101.0)])
def test_direction_follows_the_cone_measure(method, d, r):
    """Under the cone measure of the l_r sphere, (|U_1|^r, ..., |U_d|^r) ~ Dirichlet(1/r,
    ..., 1/r), so |U_1|^r ~ Beta(1/r, (d - 1)/r): KS test (failure probability 1e-6).
    Signs are fair coins (binomial test, 1e-6) and the radius is independent of the
    direction (Spearman correlation, 1e-6)."""
    n = 4000
    Z = _draws(method, n, (d,), 1.3, r, seed=21)
    radius = _lr(Z, r)
    U = Z / radius[:, None]
    np.testing.assert_allclose(_lr(U, r), 1.0, rtol=1e-12)
    coord = np.abs(U[:, 0]) ** r
    assert stats.kstest(coord, stats.beta(1.0 / r, (d - 1.0) / r).cdf).pvalue > ALPHA
    positives = int(np.sum(U[:, 1 % d] > 0))
    assert stats.binomtest(positives, n, 0.5).pvalue > ALPHA
    assert stats.spearmanr(radius, coord).pvalue > ALPHA


@pytest.mark.parametrize("method", ["generalized_gaussian", "k_norm"])
@pytest.mark.parametrize("r", [101.0, 1001.0])
def test_no_noise_coordinate_is_exactly_zero_for_large_orders(method, r):
    """Regression: the gennorm magnitudes were Gamma(1/r)^(1/r), and Gamma(1/r) underflows
    to exactly 0 with probability ~10^(-323.6 / r) per coordinate (0.48 of them at
    r = 1001), which released those coordinates without noise. Also checks the Dirichlet
    law of the cone measure through E|U_1|^r = 1/d, computed in logs (z-test, 1e-6)."""
    d, n = 20, 3000
    Z = _draws(method, n, (d,), 1.0, r, seed=17)
    assert np.all(Z != 0.0) and np.all(np.isfinite(Z))
    log_abs = np.log(np.abs(Z))
    peak = log_abs.max(axis=1, keepdims=True)
    # |U_1|^r = |Z_1|^r / sum_j |Z_j|^r, evaluated relative to the row's largest entry.
    log_coord = r * (log_abs[:, 0] - peak[:, 0]) - np.log(
        np.sum(np.exp(r * (log_abs - peak)), axis=1))
    coord = np.exp(log_coord)
    a, b = 1.0 / r, (d - 1.0) / r
    sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)) / n)
    assert abs(coord.mean() - 1.0 / d) < stats.norm.isf(ALPHA / 2) * sd


@pytest.mark.parametrize("method", ["generalized_gaussian", "k_norm"])
def test_direction_for_l_infinity(method):
    """Cone measure of the cube's surface: one coordinate is +-1 (probability 1/d each),
    the others are U[-1, 1]: binomial test of P(|U_1| = 1) = 1/d and KS test of the
    remaining |U_1| against U[0, 1] (failure probabilities 1e-6)."""
    d, n = 6, 6000
    Z = _draws(method, n, (d,), 1.0, math.inf, seed=3)
    U = Z / _lr(Z, math.inf)[:, None]
    on_face = np.abs(np.abs(U[:, 0]) - 1.0) < 1e-12
    assert stats.binomtest(int(on_face.sum()), n, 1.0 / d).pvalue > ALPHA
    assert stats.kstest(np.abs(U[~on_face, 0]), "uniform").pvalue > ALPHA


def test_one_dimensional_densities():
    """d = 1: ||z||_r = |z|, so the generalized Gaussian is N(0, sigma^2) and the K-norm
    draw is Laplace(0, scale) for every order: KS tests (failure probability 1e-6)."""
    for r in (2.0, 3.0, math.inf):
        z = _draws("generalized_gaussian", 5000, (1,), 0.4, r, seed=1)[:, 0]
        assert stats.kstest(z, stats.norm(scale=0.4).cdf).pvalue > ALPHA
        z = _draws("k_norm", 5000, (1,), 0.4, r, seed=2)[:, 0]
        assert stats.kstest(z, stats.laplace(scale=0.4).cdf).pvalue > ALPHA


def _cell_probabilities(log_density, box, coarse, fine):
    """Probabilities of a coarse x coarse grid of cells of [-box, box]^2 (plus the outside)
    by a midpoint rule on a fine grid; the density is normalised on a 3x larger box, whose
    complement has negligible mass for the densities used here."""
    def masses(half_width, cells):
        h = 2 * half_width / (cells * fine)
        t = -half_width + h * (np.arange(cells * fine) + 0.5)
        Z1, Z2 = np.meshgrid(t, t, indexing="ij")
        m = np.exp(log_density(Z1, Z2)) * h * h
        return m.reshape(cells, fine, cells, fine).sum(axis=(1, 3))

    inner = masses(box, coarse)
    total = masses(3 * box, 3 * coarse).sum()
    probs = inner.ravel() / total
    return np.append(probs, max(0.0, 1.0 - probs.sum()))


@pytest.mark.parametrize("method, order, scale, box", [
    ("generalized_gaussian", 3.0, 1.0, 2.5),
    ("generalized_gaussian", math.inf, 0.8, 2.0),
    ("k_norm", 4.0, 0.5, 2.5),
    ("k_norm", math.inf, 0.5, 2.5),
])
def test_two_dimensional_density(method, order, scale, box):
    """d = 2: chi-square goodness of fit of a 6 x 6 grid of cells (plus the outside) to the
    claimed density exp(-||z||_r^2 / (2 sigma^2)) resp. exp(-||z||_q / scale), integrated
    numerically (failure probability 1e-6)."""
    def norm(Z1, Z2):
        if order == math.inf:
            return np.maximum(np.abs(Z1), np.abs(Z2))
        return (np.abs(Z1) ** order + np.abs(Z2) ** order) ** (1.0 / order)

    if method == "generalized_gaussian":
        def log_density(Z1, Z2):
            return -norm(Z1, Z2) ** 2 / (2 * scale**2)
    else:
        def log_density(Z1, Z2):
            return -norm(Z1, Z2) / scale

    probs = _cell_probabilities(log_density, box, 6, 60)
    n = 40_000
    Z = _draws(method, n, (2,), scale, order, seed=17)
    edges = np.linspace(-box, box, 7)
    inside = np.all(np.abs(Z) < box, axis=1)
    counts, _, _ = np.histogram2d(Z[inside, 0], Z[inside, 1], bins=[edges, edges])
    observed = np.append(counts.ravel(), n - inside.sum())
    expected = n * probs
    keep = expected > 5
    stat = float(np.sum((observed[keep] - expected[keep]) ** 2 / expected[keep]))
    assert stat < stats.chi2.ppf(1 - ALPHA, int(keep.sum()) - 1)


def test_zero_scale_shapes_and_validation():
    src = _source(0)
    assert not np.any(src.generalized_gaussian((3, 2), 0.0, 3.0))
    assert not np.any(src.k_norm((4,), 0.0, 2.0))
    assert src.generalized_gaussian((3, 2), 1.0, 3.0).shape == (3, 2)
    assert src.k_norm((4, 1), 1.0, math.inf).shape == (4, 1)
    for bad in (0.5, float("nan"), "2"):
        with pytest.raises(ValueError, match="r must be"):
            src.generalized_gaussian((3,), 1.0, bad)
        with pytest.raises(ValueError, match="q must be"):
            src.k_norm((3,), 1.0, bad)


def test_same_seed_same_draws_and_large_orders_are_finite():
    a = _source(4).generalized_gaussian((100,), 1.0, 60.0)
    b = _source(4).generalized_gaussian((100,), 1.0, 60.0)
    np.testing.assert_array_equal(a, b)
    assert np.all(np.isfinite(_source(5).k_norm((100,), 1.0, 500.0)))


@pytest.mark.parametrize("q", [3.0, math.inf])
def test_k_norm_stacked_draws_have_the_same_law(q):
    """``count`` independent draws in one call: radius ~ Gamma(d, scale) (KS) and, for
    finite q, |U_1|^q ~ Beta(1/q, (d-1)/q) (KS); failure probabilities 1e-6 each."""
    d, n, scale = 8, 4000, 0.7
    Z = _source(31).k_norm((d, 1), scale, q, count=n)
    assert Z.shape == (n, d, 1)
    Z = Z.reshape(n, d)
    radius = _lr(Z, q)
    assert stats.kstest(radius, stats.gamma(d, scale=scale).cdf).pvalue > ALPHA
    if q != math.inf:
        coord = np.abs(Z[:, 2] / radius) ** q
        assert stats.kstest(coord, stats.beta(1 / q, (d - 1) / q).cdf).pvalue > ALPHA
    assert _source(0).k_norm((3,), 0.0, q, count=5).shape == (5, 3)
