"""Plain-numpy reference implementations fed the SAME noise and sample indices.

The references loop over examples one at a time (no vectorisation, no shared helper), so
they check the library's vectorised clipping, batching, prox and averaging exactly.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skdp.geometry import L2Ball
from skdp.privacy import Budget
from skdp.solvers import DPSVRG, DPSVRGPlusPlus, NoisyGD, Problem
from skdp.solvers import mirror_descent as mirror_descent_module
from skdp.solvers import svrg as svrg_module
from tests.conftest import RecordingNoiseSource, ReplayNoiseSource, make_problem


def _example_gradient(w, x, y, clip):
    """Clipped gradient of log(1 + exp(-y <w, x>)) for ONE example (binary)."""
    margin = y * float(x @ w)
    g = -y * x / (1.0 + np.exp(margin))
    norm = np.linalg.norm(g)
    return g if norm <= clip else g * (clip / norm)


def _clip(v, c):
    n = np.linalg.norm(v)
    return v if n <= c else v * (c / n)


def reference_svrg(X, y, alpha, radius, plan, replay, restart_at_snapshot, p=None):
    """The inner noise of an epoch is drawn in blocks of steps (one Gaussian draw of shape
    (steps, d, 1)) before those steps' batches: each step takes the next row, a block is
    read when the previous one is used up. ``p``: penalised (shrunk and constrained)
    leading coordinates, all by default."""
    n, d = X.shape
    p = d if p is None else p
    eta, b = plan.step_size, plan.batch_size
    G, C = plan.clip_norm, plan.correction_clip
    snapshot = np.zeros(d)
    x = snapshot.copy()
    for m in plan.epoch_lengths:
        full = sum(_example_gradient(snapshot, X[i], y[i], G) for i in range(n)) / n
        v_snap = full + replay.next("gaussian")[:, 0]
        if restart_at_snapshot:
            x = snapshot.copy()
        total = np.zeros(d)
        inner = []
        for _ in range(m):
            if not inner:
                inner = list(replay.next("gaussian")[:, :, 0])
            noise = inner.pop(0)
            batch = replay.next("batch")
            corr = np.zeros(d)
            for i in batch:
                corr += _clip(
                    _example_gradient(x, X[i], y[i], G)
                    - _example_gradient(snapshot, X[i], y[i], G), C)
            v = corr / b + v_snap + noise
            x = x - eta * v
            x[:p] = x[:p] / (1.0 + eta * alpha)
            if radius is not None and np.linalg.norm(x[:p]) > radius:
                x[:p] = x[:p] * (radius / np.linalg.norm(x[:p]))
            total += x
        assert not inner
        snapshot = total / m
    return snapshot


def reference_gd(X, y, alpha, plan, replay, n_iter):
    """Gradients at y_t = w_t + m_t (w_t - w_{t-1}), m_t = min(plan.momentum, t / (t + 3))
    (0: plain GD)."""
    n, d = X.shape
    w = np.zeros(d)
    w_prev = np.zeros(d)
    for t in range(n_iter):
        point = w + min(plan.momentum, t / (t + 3)) * (w - w_prev)
        grad = sum(_example_gradient(point, X[i], y[i], plan.clip_norm) for i in range(n)) / n
        grad = grad + replay.next("gaussian")[:, 0] + alpha * point
        w_prev, w = w, point - plan.step_size * grad
    return w


@pytest.mark.parametrize("cls", [DPSVRG, DPSVRGPlusPlus])
@pytest.mark.parametrize("radius", [None, 0.3])
@pytest.mark.parametrize("clip", [None, 0.4])
def test_svrg_matches_reference(cls, radius, clip):
    problem = make_problem(n=60, d=4, alpha=0.05, seed=3,
                           constraint=L2Ball(radius) if radius else None)
    solver = cls(n_epochs=3, inner_steps=4, batch_size=7, clip_norm=clip, step_size=0.3)
    noise = RecordingNoiseSource(np.random.default_rng(11))
    res = solver.solve(problem, Budget(1.0, 1e-5), noise)
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_svrg(problem.design_matrix(), problem.Y[:, 0], 0.05, radius,
                         res.plan, replay, restart_at_snapshot=cls is DPSVRG)
    assert replay.exhausted()
    np.testing.assert_allclose(res.coef[:, 0], ref, rtol=1e-10, atol=1e-13)
    # The draws have the calibrated scales: snapshot noise sigma_in / sqrt(m_s).
    s = res.plan
    assert s.epoch_lengths[0] == (4 if cls is DPSVRG else 8)
    assert s.sigma_snapshots[0] == pytest.approx(
        s.sigma_inner / np.sqrt(s.epoch_lengths[0]))


@pytest.mark.parametrize("cls", [DPSVRG, DPSVRGPlusPlus])
@pytest.mark.parametrize("sampling", ["without_replacement", "poisson"])
@pytest.mark.parametrize("sparse", [False, True])
def test_svrg_blocks_of_inner_noise_match_reference(monkeypatch, cls, sampling, sparse):
    """Inner noise drawn in blocks of 3 steps (epochs of 5 and 10 steps end mid-block),
    an intercept, clipped rows, Poisson batches and CSR rows."""
    monkeypatch.setattr(mirror_descent_module, "NOISE_BLOCK_ELEMENTS", 3 * 5)
    problem = make_problem(n=60, d=4, alpha=0.05, seed=6, intercept=True)
    if sparse:
        problem = Problem.build(sp.csr_matrix(problem.X), problem.Y, problem.spec,
                                data_norm=1.0, intercept=1.0)
    assert np.any(problem.row_scale < 1)
    solver = cls(n_epochs=2, inner_steps=5, batch_size=7, step_size=0.3, sampling=sampling,
                 correction_clip=0.05)
    noise = RecordingNoiseSource(np.random.default_rng(2))
    res = solver.solve(problem, Budget(1.0, 1e-5), noise,
                       accounting="rdp" if sampling == "poisson" else "auto")
    shapes = [value.shape for kind, value in noise.draws if kind == "gaussian"]
    assert (3, 5, 1) in shapes and max(shape[0] for shape in shapes) == 5
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_svrg(problem.design_matrix(), problem.Y[:, 0], 0.05, None, res.plan,
                         replay, restart_at_snapshot=cls is DPSVRG, p=4)
    assert replay.exhausted()
    np.testing.assert_allclose(res.coef[:, 0], ref, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("cls", [DPSVRG, DPSVRGPlusPlus])
@pytest.mark.parametrize("correction_clip", [None, 0.05])
@pytest.mark.parametrize("unit_rows", [False, True])
def test_svrg_lossless_clips_are_skipped_exactly(cls, correction_clip, unit_rows):
    """Default clips on rows clipped at build: public facts prove neither clip can bind,
    the clipping arithmetic is skipped, and the result is still the per-example
    reference's (which clips every gradient and correction). ``unit_rows``: no row needs
    clipping, the dense unclipped fast path runs."""
    problem = make_problem(n=60, d=4, alpha=0.05, seed=8, intercept=True)
    if unit_rows:
        X = problem.X / (1.01 * np.linalg.norm(problem.X, axis=1).max())
        problem = Problem.build(X, problem.Y, problem.spec, data_norm=1.0, intercept=1.0)
    solver = cls(n_epochs=2, inner_steps=5, batch_size=7, step_size=0.3,
                 correction_clip=correction_clip)
    noise = RecordingNoiseSource(np.random.default_rng(4))
    res = solver.solve(problem, Budget(1.0, 1e-5), noise)
    batches = svrg_module._InnerBatches(problem, res.plan, "without_replacement")
    assert batches.skip_clip
    assert batches.skip_correction_clip is (correction_clip is None)
    assert batches.fast is (unit_rows and correction_clip is None)
    ref = reference_svrg(problem.design_matrix(), problem.Y[:, 0], 0.05, None, res.plan,
                         ReplayNoiseSource(noise.draws), restart_at_snapshot=cls is DPSVRG,
                         p=4)
    np.testing.assert_allclose(res.coef[:, 0], ref, rtol=1e-10, atol=1e-13)


def test_svrg_unclipped_fast_path_falls_back_on_non_finite_derivatives():
    """An iterate that overflows gives non-finite derivatives: the step takes the clipping
    path (which drops them), exactly as without the unclipped fast path."""
    problem = make_problem(n=60, d=4, alpha=0.05, seed=8, intercept=True)
    X = problem.X / (1.01 * np.linalg.norm(problem.X, axis=1).max())  # no row clipped
    problem = Problem.build(X, problem.Y, problem.spec, data_norm=1.0, intercept=1.0)
    plan = DPSVRG(n_epochs=1, inner_steps=2, batch_size=7).plan(
        problem.spec, Budget(1.0, 1e-5), "rdp", "replace_one")
    fast = svrg_module._InnerBatches(problem, plan, "without_replacement")
    slow = svrg_module._InnerBatches(problem, plan, "without_replacement")
    slow.fast = False
    assert fast.fast and type(fast.loss).__name__ == "LogisticLoss"  # its in-place derivative
    idx = np.arange(0, 60, 4)
    coef_snap = np.random.default_rng(0).uniform(-1, 1, size=(60, 1)) * 0.5
    for x in (np.full((5, 1), 0.3), np.array([[np.inf], [0.0], [1.0], [-1.0], [0.0]]),
              np.array([[np.nan], [0.0], [1.0], [-1.0], [0.0]])):
        with np.errstate(all="ignore"):
            got = fast.step_correction(x, 0.3, idx, problem.Y[idx], coef_snap[idx])
            want = slow.step_correction(x, 0.3, idx, problem.Y[idx], coef_snap[idx])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        assert np.all(np.isfinite(got))


def test_svrg_correction_clip_is_applied():
    """A small correction clip changes the result, exactly as the reference predicts."""
    problem = make_problem(n=60, d=4, alpha=0.05, seed=4)
    solver = DPSVRG(n_epochs=2, inner_steps=5, batch_size=6, correction_clip=0.01)
    noise = RecordingNoiseSource(np.random.default_rng(5))
    res = solver.solve(problem, Budget(2.0, 1e-5), noise)
    assert res.plan.correction_clip == 0.01
    ref = reference_svrg(problem.design_matrix(), problem.Y[:, 0], 0.05, None, res.plan,
                         ReplayNoiseSource(noise.draws), restart_at_snapshot=True)
    np.testing.assert_allclose(res.coef[:, 0], ref, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("clip", [None, 0.2])
def test_gd_matches_reference(clip):
    problem = make_problem(n=50, d=3, alpha=0.1, seed=2)
    solver = NoisyGD(n_iter=12, clip_norm=clip)
    noise = RecordingNoiseSource(np.random.default_rng(0))
    res = solver.solve(problem, Budget(0.5, 1e-6), noise)
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_gd(problem.design_matrix(), problem.Y[:, 0], 0.1, res.plan, replay, 12)
    assert replay.exhausted()
    np.testing.assert_allclose(res.coef[:, 0], ref, rtol=1e-10, atol=1e-13)


def test_gd_random_iterate_is_one_of_the_iterates():
    problem = make_problem(n=40, d=3, seed=6)
    noise = RecordingNoiseSource(np.random.default_rng(1))
    res = NoisyGD(n_iter=6, iterate="random").solve(problem, Budget(1.0, 1e-5), noise)
    pick = noise.draws[0][1]
    assert noise.draws[0][0] == "integer"
    last = NoisyGD(n_iter=pick + 1).solve(
        problem, Budget(1.0, 1e-5), ReplayingSource(noise.draws[1:])
    )
    np.testing.assert_allclose(res.coef, last.coef)


@pytest.mark.parametrize("n_iter", [1, 6, 7])
def test_gd_tail_iterate_is_the_mean_of_the_last_half(n_iter):
    """iterate="tail" averages exactly the last ceil(T/2) iterates (each rebuilt as the
    last iterate of a prefix run fed the same noise), and the declared release noise
    scale shrinks by the square root of that count."""
    problem = make_problem(n=40, d=3, seed=7)
    budget = Budget(1.0, 1e-5)
    noise = RecordingNoiseSource(np.random.default_rng(2))
    res = NoisyGD(n_iter=n_iter, iterate="tail").solve(problem, budget, noise)
    assert [kind for kind, _ in noise.draws] == ["gaussian"] * n_iter
    kept = range(n_iter // 2, n_iter)
    assert len(kept) == -(-n_iter // 2)
    iterates = [NoisyGD(n_iter=t + 1).solve(problem, budget,
                                            ReplayingSource(noise.draws)).coef
                for t in kept]
    np.testing.assert_allclose(res.coef, np.mean(iterates, axis=0), rtol=1e-12, atol=1e-15)
    # With momentum (the default at alpha > 0) only the last draw's eta / m is certain;
    # plain gradient descent keeps the square-root shrinkage.
    assert res.plan.momentum > 0
    last = NoisyGD(n_iter=n_iter)
    scale = last.release_noise_scale(res.plan)
    assert NoisyGD(n_iter=n_iter, iterate="tail").release_noise_scale(res.plan) == \
        pytest.approx(scale / len(kept), rel=1e-15)
    plain = NoisyGD(n_iter=n_iter, iterate="tail", momentum="none")
    plain_plan = plain.plan(problem.spec, budget, "gaussian", "replace_one")
    assert plain.release_noise_scale(plain_plan) == pytest.approx(
        NoisyGD(n_iter=n_iter).release_noise_scale(plain_plan) / np.sqrt(len(kept)),
        rel=1e-15)


class ReplayingSource(RecordingNoiseSource):
    """A NoiseSource that returns recorded Gaussian draws (for prefix comparisons)."""

    def __init__(self, draws):
        super().__init__(np.random.default_rng(0))
        self._replay = ReplayNoiseSource(draws)

    def gaussian(self, shape, sigma):
        return self._replay.next("gaussian")
