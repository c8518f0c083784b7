"""Randomness: generator provenance, independent streams and the Gaussian sampler."""

import numpy as np
import pytest
from scipy.stats import chi2, kstest

from skdp.privacy.noise import NoiseSource, as_generator, as_noise_source


def test_none_draws_fresh_os_entropy_not_global_state():
    np.random.seed(0)  # noqa: NPY002 (the global state must not matter)
    a = as_generator(None).standard_normal(4)
    np.random.seed(0)  # noqa: NPY002 (the global state must not matter)
    b = as_generator(None).standard_normal(4)
    assert not np.allclose(a, b)


def test_integer_seed_reproduces_and_generator_is_used_as_is():
    np.testing.assert_array_equal(as_generator(3).random(3), as_generator(3).random(3))
    g = np.random.default_rng(1)
    assert as_generator(g) is g
    assert isinstance(as_generator(np.random.RandomState(0)), np.random.Generator)
    with pytest.raises(ValueError, match="random_state"):
        as_generator("seed")
    with pytest.raises(ValueError, match="random_state"):
        as_generator(True)


def test_spawned_streams_are_independent():
    children = as_noise_source(5).spawn(3)
    draws = np.array([c.gaussian((20000,), 1.0) for c in children])
    corr = np.corrcoef(draws)
    # Null sd of a sample correlation is 1/sqrt(20000) = 0.007; 0.05 is > 7 sd (p < 1e-11).
    assert np.all(np.abs(corr[np.triu_indices(3, 1)]) < 0.05)


def test_gaussian_sampler_scale_and_shape():
    """Chi-square test of the variance (two-sided failure probability 1e-6, fixed seed)
    and a KS test of normality (failure probability 1e-6)."""
    sigma, d = 0.37, 50_000
    x = NoiseSource(np.random.default_rng(2024)).gaussian((d,), sigma)
    stat = float(np.sum((x / sigma) ** 2))
    assert chi2.ppf(5e-7, d) < stat < chi2.ppf(1 - 5e-7, d)
    assert kstest(x / sigma, "norm").pvalue > 1e-6
    assert not np.any(NoiseSource(np.random.default_rng(0)).gaussian((3,), 0.0))


def test_batches_have_the_declared_law():
    src = NoiseSource(np.random.default_rng(7))
    b = src.batch_without_replacement(100, 30)
    assert len(b) == 30 == len(set(b.tolist())) and b.min() >= 0 and b.max() < 100
    sizes = [len(src.batch_poisson(1000, 0.05)) for _ in range(2000)]
    # Mean of 2000 Binomial(1000, 0.05) sizes: sd 0.154; 1.0 is > 6 sd.
    assert abs(np.mean(sizes) - 50) < 1.0


def test_laplace_sampler_law_and_permutation():
    # KS test of the i.i.d. Laplace(0, b) entries against the exact CDF; failure probability
    # 1e-6 at the fixed seed (the KS p-value must exceed it).
    from scipy.stats import laplace

    source = NoiseSource(np.random.default_rng(11))
    draws = source.laplace((200, 50), 0.7)
    assert draws.shape == (200, 50)
    assert kstest(draws.ravel(), laplace(scale=0.7).cdf).pvalue > 1e-6
    assert not np.any(source.laplace((3,), 0.0))
    # Permutations: every index exactly once; positions uniform (chi-square on where
    # index 0 lands over many draws, failure probability 1e-6).
    perms = np.array([source.permutation(5) for _ in range(5000)])
    assert np.all(np.sort(perms, axis=1) == np.arange(5))
    counts = np.bincount(np.argmax(perms == 0, axis=1), minlength=5)
    stat = np.sum((counts - 1000.0) ** 2 / 1000.0)
    assert stat < chi2.ppf(1 - 1e-6, 4)


def test_release_dispatches_to_the_planned_mechanism():
    from skdp.privacy import Budget
    from skdp.privacy.accounting import PureDpEvent, epsilon_spent, single_release

    pure = single_release(Budget(0.5, 0.0), "pure", "replace_one")
    assert pure.mechanism == "l2_laplace" and pure.unit_scale == 2.0
    assert isinstance(pure.event, PureDpEvent) and pure.event.epsilon == 0.5
    gauss = single_release(Budget(1.0, 1e-5), "gaussian", "replace_one")
    assert gauss.mechanism == "gaussian"
    assert 0.99 <= epsilon_spent(gauss.event, 1e-5, accounting="gaussian",
                                 relation="replace_one") <= 1.0
    a, b = NoiseSource(np.random.default_rng(0)), NoiseSource(np.random.default_rng(0))
    np.testing.assert_array_equal(a.release("gaussian", (4,), 3.0), b.gaussian((4,), 3.0))
    np.testing.assert_array_equal(a.release("l2_laplace", (4,), 3.0), b.l2_laplace((4,), 3.0))
    np.testing.assert_array_equal(a.release("none", (4,), 0.0), np.zeros(4))
    with pytest.raises(ValueError, match="unknown release mechanism"):
        a.release("laplace", (4,), 1.0)


def test_ball_product_k_norm_law():
    """Density proportional to exp(-eps max_j ||z_j|| / rho_j) on R^6 = R^5 x R^1.

    Three consequences of the law, each with failure probability <= 1e-6 (fixed seed):
    ``||z||_K ~ Gamma(m, 1/eps)`` (KS); block j attains the max with probability
    ``sizes[j] / m`` (the cone-measure share of its face; binomial, 5 sd); the first
    block's direction is uniform (its first squared coordinate is Beta(1/2, 2), KS)."""
    from scipy.stats import beta, binomtest, gamma

    sizes, radii, eps, draws = (5, 1), (2.0, 0.5), 1.3, 20_000
    source = NoiseSource(np.random.default_rng(12))
    Z = np.array([source.ball_product_k_norm(sizes, radii, eps) for _ in range(draws)])
    assert Z.shape == (draws, 6)
    block_norms = np.column_stack([np.linalg.norm(Z[:, :5], axis=1) / radii[0],
                                   np.abs(Z[:, 5]) / radii[1]])
    k_norm = block_norms.max(axis=1)
    assert kstest(k_norm, gamma(a=6, scale=1 / eps).cdf).pvalue > 1e-6
    first_wins = int(np.sum(block_norms[:, 0] >= block_norms[:, 1]))
    assert binomtest(first_wins, draws, 5 / 6).pvalue > 1e-6
    u = Z[:, 0] ** 2 / np.sum(Z[:, :5] ** 2, axis=1)
    assert kstest(u, beta(0.5, 2.0).cdf).pvalue > 1e-6
    # one block is the l2 Laplace law: ||z|| ~ Gamma(d, rho / eps)
    single = np.array([source.ball_product_k_norm((3,), (0.7,), eps) for _ in range(5000)])
    assert kstest(np.linalg.norm(single, axis=1), gamma(a=3, scale=0.7 / eps).cdf).pvalue > 1e-6
    np.testing.assert_array_equal(source.ball_product_k_norm((2, 1), (1.0, 1.0), np.inf),
                                  np.zeros(3))
    with pytest.raises(ValueError, match="pair up"):
        source.ball_product_k_norm((2,), (1.0, 1.0), 1.0)


# -- batched draws: each row has the law of one single draw ------------------------------
def _subset_chi2(rows, n, probs):
    """Chi-square statistic of the observed subsets of range(n) against ``probs`` (a map
    from a subset's bitmask to its probability); every subset with positive probability is
    a cell."""
    codes = np.array([int(sum(1 << int(i) for i in row)) for row in rows])
    cells = sorted(probs)
    counts = np.array([np.sum(codes == c) for c in cells], dtype=float)
    assert counts.sum() == len(rows)  # no subset outside the support
    expected = len(rows) * np.array([probs[c] for c in cells])
    return float(np.sum((counts - expected) ** 2 / expected)), len(cells) - 1


def _uniform_probs(n, size):
    from itertools import combinations
    from math import comb

    return {sum(1 << i for i in c): 1.0 / comb(n, size) for c in combinations(range(n), size)}


@pytest.mark.parametrize("n, size", [(6, 3), (8, 4), (6, 5), (7, 1), (5, 0), (4, 4)])
@pytest.mark.parametrize("path", ["default", "choice", "sorted"])
def test_batches_without_replacement_are_uniform_subsets(monkeypatch, n, size, path):
    """Chi-square goodness of fit over all C(n, size) subsets (20000 rows in one call;
    failure probability 1e-6 at the fixed seed). (8, 4): many ties to redraw; (6, 5):
    drawn as the complement; "choice": the row-by-row path of large dense subsets;
    "sorted": the redraw rounds however large the subsets (as for large sparse ones)."""
    import skdp.privacy.noise as noise_module

    if path != "default":
        monkeypatch.setattr(noise_module, "_SORT_LIMIT", 0)
        monkeypatch.setattr(noise_module, "_CHOICE_FRACTION", 10**9 if path == "choice" else 0)
    rows = NoiseSource(np.random.default_rng(n * 10 + size)).batches_without_replacement(
        n, size, 20000)
    assert rows.shape == (20000, size)
    assert np.all(np.diff(rows, axis=1) > 0) and (size == 0 or (rows.min() >= 0
                                                                and rows.max() < n))
    stat, dof = _subset_chi2(rows, n, _uniform_probs(n, size))
    if dof > 0:
        assert stat < chi2.ppf(1 - 1e-6, dof)


@pytest.mark.parametrize("n, size", [(40000, 1500), (20000, 1500)])
def test_large_batches_without_replacement_at_scale(n, size):
    """Subsets above _SORT_LIMIT: (40000, 1500) takes the sorted redraw rounds (about 28
    ties a row), (20000, 1500) numpy's row sampler (1500 > n / 16; the paths are asserted).
    300 rows: each has distinct sorted indices in range, and each index's inclusion count
    is uniform (chi-square over the n counts; failure probability 1e-6 at the fixed
    seed)."""
    import skdp.privacy.noise as noise_module

    assert (size * noise_module._CHOICE_FRACTION > n) == (n == 20000)
    assert size > noise_module._SORT_LIMIT
    rows = NoiseSource(np.random.default_rng(n + size)).batches_without_replacement(
        n, size, 300)
    assert rows.shape == (300, size)
    assert np.all(np.diff(rows, axis=1) > 0) and rows.min() >= 0 and rows.max() < n
    counts = np.bincount(rows.ravel(), minlength=n)
    expected = 300 * size / n
    stat = float(np.sum((counts - expected) ** 2 / expected))
    # Without replacement the counts' variance is (1 - size / n) times the multinomial's.
    assert stat / (1.0 - size / n) < chi2.ppf(1 - 1e-6, n - 1)


@pytest.mark.parametrize("rate", [0.3, 0.8, 0.0, 1.0])
def test_poisson_batches_have_the_independent_inclusion_law(rate):
    """Every subset A of range(5) has probability rate^|A| (1 - rate)^(5 - |A|): chi-square
    over the 32 subsets (20000 batches; failure probability 1e-6 at the fixed seed), and
    the inclusions are independent of each other (that is the law)."""
    n = 5
    batches = NoiseSource(np.random.default_rng(3)).poisson_batches(n, rate, 20000)
    assert len(batches) == 20000
    assert all(np.all(np.diff(b) > 0) and (b.size == 0 or b.max() < n) for b in batches)
    probs = {m: rate ** bin(m).count("1") * (1 - rate) ** (n - bin(m).count("1"))
             for m in range(2**n)}
    probs = {m: p for m, p in probs.items() if p > 0}
    stat, dof = _subset_chi2(batches, n, probs)
    if dof > 0:
        assert stat < chi2.ppf(1 - 1e-6, dof)


def test_poisson_batches_sizes_at_scale():
    """n = 20000 at rate 0.01: the mean size over 2000 batches (sd 14.07 / sqrt(2000) =
    0.31) within 6 sd of 200, and each index's inclusion frequency is the rate (chi-square
    of the 20000 counts, failure probability 1e-6)."""
    src = NoiseSource(np.random.default_rng(9))
    batches = src.poisson_batches(20000, 0.01, 2000)
    sizes = np.array([b.size for b in batches])
    assert abs(sizes.mean() - 200.0) < 6 * 0.315
    counts = np.bincount(np.concatenate(batches), minlength=20000)
    expected, var = 2000 * 0.01, 2000 * 0.01 * 0.99
    stat = float(np.sum((counts - expected) ** 2) / var)
    assert stat < chi2.ppf(1 - 1e-6, 20000)


def test_generalized_gaussians_have_the_single_draw_law():
    """Rows of generalized_gaussians: ||Z||_r^2 / (2 sigma^2) ~ Gamma(d/2) (KS, failure
    probability 1e-6) and the direction's coordinates match single draws' (two-sample KS
    of the first coordinate, failure probability 1e-6)."""
    from scipy.stats import gamma, ks_2samp

    from skdp.losses import vector_norms

    d, sigma, r = 4, 0.7, 3.0
    src = NoiseSource(np.random.default_rng(21))
    Z = src.generalized_gaussians((d,), sigma, r, 4000)
    assert Z.shape == (4000, d)
    s = vector_norms(Z, r) ** 2 / (2 * sigma**2)
    assert kstest(s, gamma(d / 2).cdf).pvalue > 1e-6
    single = np.array([src.generalized_gaussian((d,), sigma, r) for _ in range(4000)])
    assert ks_2samp(Z[:, 0] / vector_norms(Z, r), single[:, 0] / vector_norms(single, r)
                    ).pvalue > 1e-6
    assert not np.any(src.generalized_gaussians((2, 3), 0.0, r, 5))
    assert src.generalized_gaussians((2, 3), 1.0, r, 0).shape == (0, 2, 3)
    with pytest.raises(ValueError, match="count"):
        src.generalized_gaussians((2,), 1.0, r, -1)


def test_batched_draws_go_through_overridden_single_draws():
    """A subclass that changes single draws (a recorder, the audit's under-noised twin)
    sees every draw of the batched methods: one call per row, in order."""
    from skdp.audit._canaries import ScaledNoiseSource

    class Recorder(NoiseSource):
        def __init__(self, rng):
            super().__init__(rng)
            self.calls = []

        def batch_without_replacement(self, n, size):
            self.calls.append("batch")
            return super().batch_without_replacement(n, size)

        def batch_poisson(self, n, rate):
            self.calls.append("poisson")
            return super().batch_poisson(n, rate)

        def generalized_gaussian(self, shape, sigma, r):
            self.calls.append("gg")
            return super().generalized_gaussian(shape, sigma, r)

    rec = Recorder(np.random.default_rng(0))
    assert rec.batches_without_replacement(10, 3, 4).shape == (4, 3)
    assert len(rec.poisson_batches(10, 0.5, 2)) == 2
    assert rec.generalized_gaussians((3,), 1.0, 2.5, 3).shape == (3, 3)
    assert rec.calls == ["batch"] * 4 + ["poisson"] * 2 + ["gg"] * 3
    base, twin = NoiseSource(np.random.default_rng(4)), ScaledNoiseSource(
        np.random.default_rng(4), 5.0)
    np.testing.assert_allclose(twin.generalized_gaussians((3,), 2.0, 1.5, 4),
                               np.array([base.generalized_gaussian((3,), 2.0, 1.5)
                                         for _ in range(4)]) / 5)
