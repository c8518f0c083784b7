"""Noisy mirror descent and localized noisy mirror descent (Asi, Feldman, Koren & Talwar)."""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from skdp._warnings import reset_shown
from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import (
    EntropyMirrorMap,
    EuclideanMirrorMap,
    L1Ball,
    L1PNormMirrorMap,
    L2Ball,
    LpBall,
    PNormMirrorMap,
    Simplex,
    Unconstrained,
)
from skdp.losses import SquaredLoss
from skdp.privacy import Budget, add_remove_budget, epsilon_spent
from skdp.privacy.noise import NoiseSource
from skdp.solvers import Problem, ProblemSpec
from skdp.solvers import mirror_descent as md_module
from skdp.solvers.localized_mirror_descent import LocalizedMirrorDescent
from skdp.solvers.mirror_descent import (
    NoisyMirrorDescent,
    batch_gradient,
    calibrate_md_phase,
    mirror_step,
)
from tests.conftest import RecordingNoiseSource, ReplayNoiseSource, make_problem
from tests.solvers._helpers import (
    clipped_logistic_gradient,
    grad_w,
    grad_w_conj,
    ref_l1_mirror_step,
)

BUDGET = Budget(1.0, 1e-5)
INF = Budget(math.inf, 0.0)


def _problem(X, y, loss, *, alpha=0.0, constraint=None, bound=1.0, row_ord=2.0):
    n, d = X.shape
    spec = ProblemSpec(
        n_samples=n, n_params=d, n_outputs=1, n_penalized=d, row_norm_bound=bound,
        loss=loss, constraint=constraint or Unconstrained(), alpha=alpha, row_norm_ord=row_ord,
    )
    return Problem.build(X, np.asarray(y, float)[:, None], spec, data_norm=bound)


class PermutationRecorder(RecordingNoiseSource):
    """Also records permutations (the localized solver's blocks)."""

    def permutation(self, n):
        value = super().permutation(n)
        self.draws.append(("permutation", value.copy()))
        return value


# ---------------------------------------------------------------------------------------
# The mirror step: optimality against brute force
# ---------------------------------------------------------------------------------------
def _objective(mm, x, g, eta):
    """phi(y) = <g, y> + D_w(y, x) / eta, for a brute-force solver."""
    def phi(y):
        return float(g @ y) + mm.bregman(y, x) / eta
    return phi


def _brute_l1(mm, x, g, eta, radius):
    """SLSQP on the split y = u - v, u, v >= 0, sum(u + v) <= R (smooth constraints)."""
    d = x.size
    phi = _objective(mm, x, g, eta)
    cons = [{"type": "ineq", "fun": lambda z: radius - z.sum(), "jac": lambda z: -np.ones(2 * d)}]
    z0 = np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)])
    res = minimize(lambda z: phi(z[:d] - z[d:]), z0, method="SLSQP", constraints=cons,
                   bounds=[(0, None)] * (2 * d), options={"ftol": 1e-14, "maxiter": 2000})
    return res.x[:d] - res.x[d:]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("d", [3, 8])
def test_l1_pnorm_step_is_optimal(seed, d):
    rng = np.random.default_rng(seed)
    radius = 1.5
    mm = L1Ball(radius).mirror_map_for(d)
    assert isinstance(mm, PNormMirrorMap) and mm.p == pytest.approx(1 + 1 / math.log(d))
    x = L1Ball(radius).project(rng.normal(size=d) * 0.4)
    g = rng.normal(size=d) * (3.0 if seed % 2 else 0.3)
    eta = 0.7
    y = mirror_step(L1Ball(radius), mm, x, g, eta)
    assert np.abs(y).sum() <= radius * (1 + 1e-12)
    # Variational inequality at every vertex +-R e_j (enough on a polytope):
    # <grad phi(y), v - y> >= 0 with grad phi(y) = g + (grad w(y) - grad w(x)) / eta.
    grad = g + (mm.grad(y) - mm.grad(x)) / eta
    vi = -radius * np.abs(grad).max() - grad @ y
    assert vi >= -1e-9 * (1 + np.abs(grad).max())
    phi = _objective(mm, x, g, eta)
    brute = _brute_l1(mm, x, g, eta, radius)
    assert phi(y) <= phi(brute) + 1e-9
    np.testing.assert_allclose(y, brute, atol=1e-4)


def test_l1_step_inactive_constraint_is_the_unconstrained_step():
    mm = L1Ball(10.0).mirror_map_for(5)
    x = np.array([0.1, -0.2, 0.0, 0.3, 0.05])
    g = np.array([0.01, 0.02, -0.03, 0.0, 0.01])
    y = mirror_step(L1Ball(10.0), mm, x, g, 1.0)
    np.testing.assert_allclose(y, mm.grad_conjugate(mm.grad(x) - g), rtol=1e-12)
    # A zero gradient is a fixed point, also on the boundary.
    xb = L1Ball(1.0).project(np.array([2.0, -1.0, 0.5, 0.0, 0.1]))
    np.testing.assert_allclose(mirror_step(L1Ball(1.0), mm, xb, np.zeros(5), 3.0), xb,
                               atol=1e-12)
    # The dimension-free map gives the same step.
    np.testing.assert_allclose(mirror_step(L1Ball(1.0), L1PNormMirrorMap(), xb, g, 2.0),
                               mirror_step(L1Ball(1.0), mm, xb, g, 2.0), rtol=1e-12)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("p", [1.3, 1.7, 2.0])
def test_lp_pnorm_step_is_optimal(seed, p):
    rng = np.random.default_rng(seed)
    d, radius = 6, 0.8
    ball = LpBall(radius, p)
    mm = ball.mirror_map_for(d)
    x = ball.project(rng.normal(size=d))
    g = rng.normal(size=d) * 2
    eta = 0.5
    y = mirror_step(ball, mm, x, g, eta)
    assert ball.norm(y) <= radius * (1 + 1e-12)
    # Active constraint: y is Hoelder-aligned with -grad phi, i.e. y = lmo(grad phi).
    grad = g + (mm.grad(y) - mm.grad(x)) / eta
    if ball.norm(y) > radius * (1 - 1e-9):
        np.testing.assert_allclose(y, ball.lmo(grad), atol=1e-8)
    else:
        assert np.abs(grad).max() < 1e-9
    phi = _objective(mm, x, g, eta)
    cons = [{"type": "ineq", "fun": lambda z: radius**p - np.sum(np.abs(z) ** p)}]
    brute = minimize(phi, x * 0.99, method="SLSQP", constraints=cons,
                     options={"ftol": 1e-14, "maxiter": 2000}).x
    assert phi(y) <= phi(brute) + 1e-9
    # The l2 ball with the p = 2 map and the Euclidean map agree with projected steps.
    if p == 2.0:
        np.testing.assert_allclose(mirror_step(L2Ball(radius), mm, x, g, eta), y, rtol=1e-12)
        np.testing.assert_allclose(
            mirror_step(L2Ball(radius), EuclideanMirrorMap(), x, g, eta),
            L2Ball(radius).project(x - eta * g), rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_entropy_simplex_step_is_optimal(seed):
    rng = np.random.default_rng(seed)
    d, total = 5, 2.0
    simplex = Simplex(total)
    mm = simplex.mirror_map_for(d)
    assert isinstance(mm, EntropyMirrorMap)
    x = simplex.project(rng.random(d))
    x = np.maximum(x, 0.05)
    x = total * x / x.sum()
    g, eta = rng.normal(size=d), 0.8
    y = mirror_step(simplex, mm, x, g, eta)
    assert y.sum() == pytest.approx(total) and np.all(y > 0)
    phi = _objective(mm, x, g, eta)
    cons = [{"type": "eq", "fun": lambda z: z.sum() - total}]
    brute = minimize(phi, x, method="SLSQP", constraints=cons, bounds=[(1e-12, None)] * d,
                     options={"ftol": 1e-14, "maxiter": 2000}).x
    assert phi(y) <= phi(brute) + 1e-9
    np.testing.assert_allclose(y, brute, atol=1e-5)


def test_unsupported_pairs_raise():
    x = np.zeros(4)
    with pytest.raises(IncompatibleSolverError, match="mirror map"):
        mirror_step(LpBall(1.0, 1.5), PNormMirrorMap(1.3), x, x, 1.0)
    with pytest.raises(IncompatibleSolverError, match="mirror map"):
        mirror_step(Simplex(1.0), PNormMirrorMap(1.5), x + 0.25, x, 1.0)
    with pytest.raises(IncompatibleSolverError):
        mirror_step(L1Ball(1.0), EntropyMirrorMap(), x + 0.25, x, 1.0)


# ---------------------------------------------------------------------------------------
# Sensitivity: brute force over neighbouring datasets and every batch
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("row_ord, constraint", [(2.0, L2Ball(1.0)), (math.inf, L1Ball(1.0))])
def test_batch_gradient_sensitivity_is_never_exceeded(row_ord, constraint):
    rng = np.random.default_rng(0)
    n, d, b = 6, 4, 3
    X = rng.uniform(-1, 1, size=(n, d))
    y = rng.uniform(-1, 1, size=n)
    base = _problem(X, y, SquaredLoss(1.0), constraint=constraint, row_ord=row_ord)
    solver = NoisyMirrorDescent(batch_size=b, n_iter=2)
    plan = solver.plan(base.spec, BUDGET, "rdp", "replace_one")
    declared, clip = plan.sensitivity, plan.clip_norm
    assert declared == pytest.approx(2 * clip / b)
    # Adversarial replacements: extreme rows (clipped to the bound) and labels.
    replacements = [(np.full(d, 1.0), 1.0), (np.full(d, -1.0), -1.0), (np.zeros(d), 1.0),
                    (np.array([5.0, -5.0, 5.0, 5.0]), -1.0)]
    worst = 0.0
    for W in (np.zeros((d, 1)), constraint.project(rng.normal(size=(d, 1))),
              constraint.lmo(rng.normal(size=(d, 1)))):
        for j, (xr, yr) in itertools.product(range(n), replacements):
            X2, y2 = X.copy(), y.copy()
            X2[j], y2[j] = xr, yr
            nb = _problem(X2, y2, SquaredLoss(1.0), constraint=constraint, row_ord=row_ord)
            for batch in itertools.combinations(range(n), b):
                idx = np.array(batch)
                diff = batch_gradient(base, W, idx, clip, b) - batch_gradient(nb, W, idx, clip, b)
                worst = max(worst, float(np.linalg.norm(diff)))
    assert worst <= declared * (1 + 1e-12)
    assert worst >= 0.5 * declared  # the bound is nearly attained (not vacuous)


def test_default_clip_is_the_recipe_or_tighter():
    problem = _problem(np.ones((4, 9)) * 0.5, np.zeros(4), SquaredLoss(1.0),
                       constraint=L1Ball(1.0), row_ord=math.inf)
    spec = problem.spec
    clip = NoisyMirrorDescent().gradient_clip(spec)
    recipe = math.sqrt(spec.dimension) * spec.gradient_bound_in(math.inf)
    assert clip == pytest.approx(min(recipe, spec.gradient_bound_in(2.0)))
    assert clip <= recipe
    assert NoisyMirrorDescent(clip_norm=0.1).gradient_clip(spec) == 0.1


# ---------------------------------------------------------------------------------------
# Ledger and calibration
# ---------------------------------------------------------------------------------------
def _spent(plan, budget, accounting):
    if plan.via_add_remove:
        inner = add_remove_budget(budget)
        half = epsilon_spent(plan.event, inner.delta, accounting=accounting,
                             relation="add_remove")
        assert (1 + math.exp(half)) * inner.delta <= budget.delta * (1 + 1e-12)
        return 2 * half
    return epsilon_spent(plan.event, budget.delta, accounting=accounting,
                         relation="replace_one")


@pytest.mark.parametrize("eps, sampling", [(0.3, "without_replacement"),
                                           (2.0, "without_replacement"), (2.0, "poisson")])
def test_calibration_round_trip(eps, sampling):
    problem = make_problem(n=300, constraint=L1Ball(1.0), alpha=0.0)
    budget = Budget(eps, 1e-5)
    for solver in (NoisyMirrorDescent(batch_size=20, n_iter=40, sampling=sampling),
                   LocalizedMirrorDescent(batch_size=20, n_phases=2, max_iter=30,
                                          sampling=sampling)):
        plan = solver.plan(problem.spec, budget, "rdp", "replace_one")
        assert plan.via_add_remove == (sampling == "poisson")
        assert 0.99 * eps <= _spent(plan, budget, "rdp") <= eps


@pytest.mark.slow
def test_calibration_round_trip_pld_poisson():
    problem = make_problem(n=300, constraint=L1Ball(1.0), alpha=0.0)
    solver = NoisyMirrorDescent(batch_size=20, n_iter=5, sampling="poisson")
    assert solver.resolve_accounting("auto") == "pld"
    plan = solver.plan(problem.spec, BUDGET, "pld", "replace_one")
    assert 0.99 <= _spent(plan, BUDGET, "pld") <= 1.0


def test_ledger_is_the_documented_event():
    problem = make_problem(n=300, constraint=L1Ball(1.0), alpha=0.0)
    plan = NoisyMirrorDescent(batch_size=20, n_iter=40).plan(problem.spec, BUDGET, "rdp",
                                                             "replace_one")
    s = plan
    ev = plan.event
    assert ev.count == 40
    assert ev.event.source_dataset_size == 300 and ev.event.sample_size == 20
    assert ev.event.event.noise_multiplier == pytest.approx(s.noise_multiplier)
    assert s.sigma == pytest.approx(s.noise_multiplier * 2 * s.clip_norm / 20)


@pytest.mark.parametrize("solver", [NoisyMirrorDescent(batch_size=10, n_iter=30),
                                    LocalizedMirrorDescent(batch_size=10, n_phases=2)])
def test_noise_non_increasing_in_epsilon(solver):
    problem = make_problem(n=200, constraint=L2Ball(1.0), alpha=0.0)
    previous = None
    for eps in (0.3, 3.0) if isinstance(solver, LocalizedMirrorDescent) else (0.1, 0.7, 5.0):
        sigma = np.asarray(solver.plan(problem.spec, Budget(eps, 1e-5), "rdp",
                                       "replace_one").sigma)
        if previous is not None:
            assert np.all(sigma <= previous)
        previous = sigma


def test_plan_is_public():
    a = make_problem(n=150, seed=1, constraint=L1Ball(1.0))
    b = make_problem(n=150, seed=2, constraint=L1Ball(1.0))
    for solver in (NoisyMirrorDescent(), LocalizedMirrorDescent(n_phases=2)):
        pa = solver.plan(a.spec, BUDGET, "rdp", "replace_one")
        pb = solver.plan(b.spec, BUDGET, "rdp", "replace_one")
        assert pa.constants() == pb.constants() and pa.n_iter == pb.n_iter


def test_step_scale_multiplies_the_automatic_step():
    problem = make_problem(n=300, constraint=L1Ball(1.0), alpha=0.0)
    plans = [solver.plan(problem.spec, BUDGET, "rdp", "replace_one")
             for solver in (NoisyMirrorDescent(batch_size=20, n_iter=40),
                            NoisyMirrorDescent(batch_size=20, n_iter=40, step_scale=7.0),
                            LocalizedMirrorDescent(batch_size=20, n_phases=2),
                            LocalizedMirrorDescent(batch_size=20, n_phases=2, step_scale=7.0))]
    assert plans[1].step_size == pytest.approx(7 * plans[0].step_size)
    np.testing.assert_allclose(plans[3].step_sizes,
                               7 * np.array(plans[2].step_sizes))
    assert plans[1].sigma == plans[0].sigma  # privacy unchanged


def test_automatic_schedule_is_capped():
    problem = make_problem(n=20000, d=3, constraint=L1Ball(1.0))
    plan = NoisyMirrorDescent(max_iter=500).plan(problem.spec, BUDGET, "rdp", "replace_one")
    b = plan.batch_size
    assert plan.n_iter <= 500
    assert plan.n_iter == math.ceil(20000**2 / b**2) or plan.n_iter == 500


# ---------------------------------------------------------------------------------------
# Localized: disjoint blocks, one phase's ledger
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("strongly_convex", [False, True])
def test_localized_blocks_are_disjoint_and_the_ledger_is_one_phase(strongly_convex):
    problem = make_problem(n=200, constraint=L1Ball(1.0), alpha=0.05)
    solver = LocalizedMirrorDescent(batch_size=8, max_iter=20, strongly_convex=strongly_convex)
    noise = PermutationRecorder(np.random.default_rng(3))
    res = solver.solve(problem, BUDGET, noise)
    s = res.plan
    starts, sizes = np.array(s.phase_starts), np.array(s.phase_sizes)
    assert np.all(starts[1:] == starts[:-1] + sizes[:-1])  # consecutive, disjoint
    assert starts[-1] + sizes[-1] <= 200
    # The permutation is drawn first; every batch lies in its phase's block.
    kinds = [k for k, _ in noise.draws]
    assert kinds[0] == "permutation" and kinds.count("permutation") == 1
    perm = noise.draws[0][1]
    batches = [v for k, v in noise.draws if k == "batch"]
    used = set()
    pos = 0
    for start, size, t in zip(starts, sizes, s.phase_iters, strict=True):
        pool = perm[start:start + size]
        block = set(pool.tolist())
        assert not block & used
        used |= block
        for batch in batches[pos:pos + t]:
            # Batches are drawn as positions in the phase's block.
            assert batch.max() < size and set(pool[batch].tolist()) <= block
        pos += t
    assert pos == len(batches) == res.n_iter
    # Ledger: exactly the worst phase's event (parallel composition), not a composition.
    spent = [epsilon_spent(calibrate_md_phase(n, b, t, s.clip_norm, BUDGET,
                                              sampling="without_replacement",
                                              accounting="rdp",
                                              relation="replace_one").event,
                           BUDGET.delta, accounting="rdp", relation="replace_one")
             for n, b, t in zip(sizes, s.batch_sizes, s.phase_iters, strict=True)]
    worst = s.worst_phase
    assert res.spent.epsilon == pytest.approx(max(spent)) == pytest.approx(spent[worst])
    assert res.spent.epsilon <= BUDGET.epsilon
    assert res.plan.event.count == s.phase_iters[worst]
    if strongly_convex:
        assert len(sizes) > math.ceil(math.log2(200)) - 1  # several rounds of phases


def test_localized_halving_schedule():
    problem = make_problem(n=200, constraint=L2Ball(1.0), alpha=0.0)
    plan = LocalizedMirrorDescent(batch_size=8, max_iter=20, n_phases=4,
                                  phase_budget="halving").plan(
        problem.spec, BUDGET, "rdp", "replace_one")
    eps = np.array(plan.phase_epsilons)
    np.testing.assert_allclose(eps, 2.0 ** (1 - np.arange(1, eps.size + 1)))
    assert plan.worst_phase == 0
    spent = epsilon_spent(plan.event, BUDGET.delta, accounting="rdp", relation="replace_one")
    assert 0.99 <= spent <= 1.0


# ---------------------------------------------------------------------------------------
# Plain-numpy references fed the same noise and batches
# ---------------------------------------------------------------------------------------
class _StepNoise:
    """The steps' Gaussian noise, drawn by the solver in blocks of steps (one draw of shape
    (steps, d, 1)) before those steps' batches: a step takes the next row, and a block is
    read when the previous one is used up (blocks never span two runs of the loop)."""

    def __init__(self, replay):
        self.replay = replay
        self.rows = []

    def next(self):
        if not self.rows:
            self.rows = list(self.replay.next("gaussian")[:, :, 0])
        return self.rows.pop(0)

    def used_up(self):
        return not self.rows


def reference_md(X, y, radius, plan, replay, n_iter, alpha):
    n, d = X.shape
    p = 1 + 1 / math.log(d)
    w = np.zeros(d)
    total = np.zeros(d)
    b, eta, clip = plan.batch_size, plan.step_size, plan.clip_norm
    step_noise = _StepNoise(replay)
    for _ in range(n_iter):
        z = step_noise.next()
        batch = replay.next("batch")
        g = sum(clipped_logistic_gradient(w, X[i], y[i], clip) for i in batch) / b
        g = g + z + alpha * w
        w = ref_l1_mirror_step(w, g, eta, p, radius)
        total += w
    assert step_noise.used_up()
    return total / n_iter


@pytest.mark.parametrize("clip", [None, 0.3])
@pytest.mark.parametrize("block_steps", [None, 4])
def test_mirror_descent_matches_reference(monkeypatch, clip, block_steps):
    if block_steps:  # noise blocks of 4 steps: the 25 steps end mid-block
        monkeypatch.setattr(md_module, "NOISE_BLOCK_ELEMENTS", 6 * block_steps)
    problem = make_problem(n=60, d=6, alpha=0.02, seed=3, constraint=L1Ball(0.5))
    solver = NoisyMirrorDescent(n_iter=25, batch_size=7, clip_norm=clip)
    noise = RecordingNoiseSource(np.random.default_rng(11))
    res = solver.solve(problem, Budget(2.0, 1e-5), noise)
    assert res.plan.schedule == "convex"
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_md(problem.design_matrix(), problem.Y[:, 0], 0.5, res.plan,
                       replay, 25, 0.02)
    assert replay.exhausted()
    np.testing.assert_allclose(res.coef[:, 0], ref, rtol=1e-8, atol=1e-11)


def reference_localized(X, y, plan, replay, alpha, radius_x):
    """Algorithm 2 with the p-norm map centred at the previous output (l1 geometry)."""
    n, d = X.shape
    p = 1 + 1 / math.log(d)
    perm = replay.next("permutation")
    w = np.zeros(d)
    step_noise = _StepNoise(replay)
    for j, start in enumerate(plan.phase_starts):
        size, t = plan.phase_sizes[j], plan.phase_iters[j]
        b, lam, r = plan.batch_sizes[j], plan.lambdas[j], plan.radii[j]
        c = w.copy()
        x = c.copy()
        avg = np.zeros(d)
        for k in range(1, t + 1):
            z = step_noise.next()
            batch = perm[start:start + size][replay.next("batch")]
            g = sum(clipped_logistic_gradient(x, X[i], y[i], plan.clip_norm) for i in batch) / b
            g = g + z + alpha * x + lam * grad_w(x - c, p)
            eta = 2.0 / (lam * (k + 1))
            z = grad_w_conj(grad_w(x - c, p) - eta * g, p)
            nrm = np.sum(np.abs(z) ** p) ** (1 / p)
            x = c + (z * r / nrm if nrm > r else z)
            avg += 2.0 * k / (t * (t + 1.0)) * x
        assert step_noise.used_up()
        w = L1Ball(radius_x).project(avg)
    return w


@pytest.mark.parametrize("block_steps", [None, 2])
def test_localized_matches_reference(monkeypatch, block_steps):
    if block_steps:  # noise blocks of 2 steps within each phase
        monkeypatch.setattr(md_module, "NOISE_BLOCK_ELEMENTS", 5 * block_steps)
    problem = make_problem(n=80, d=5, alpha=0.01, seed=4, constraint=L1Ball(0.7))
    solver = LocalizedMirrorDescent(n_phases=4, batch_size=5, max_iter=12, step_size=30.0)
    noise = PermutationRecorder(np.random.default_rng(2))
    res = solver.solve(problem, Budget(3.0, 1e-5), noise)
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_localized(problem.design_matrix(), problem.Y[:, 0], res.plan,
                              replay, 0.01, 0.7)
    assert replay.exhausted()
    np.testing.assert_allclose(res.coef[:, 0], ref, rtol=1e-8, atol=1e-11)
    assert not np.allclose(res.coef, 0)


# ---------------------------------------------------------------------------------------
# Convergence at epsilon = inf
# ---------------------------------------------------------------------------------------
def _lasso_problem(n=80, d=6, radius=0.6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    w = np.array([0.8, -0.5, 0.3, 0.0, 0.0, 0.1])[:d]
    y = np.clip(X @ w + 0.05 * rng.normal(size=n), -1, 1)
    return _problem(X, y, SquaredLoss(1.0), constraint=L1Ball(radius), row_ord=math.inf)


def _exact_constrained_optimum(problem):
    """FISTA with the exact l1 projection, run far past convergence (dense reference)."""
    A = problem.design_matrix()
    y = problem.Y[:, 0]
    n = A.shape[0]
    lip = np.linalg.eigvalsh(A.T @ A / n).max()
    w = z = np.zeros(A.shape[1])
    t = 1.0
    for _ in range(20000):
        w_new = problem.spec.constraint.project(z - A.T @ (A @ z - y) / (n * lip))
        t_new = 0.5 * (1 + math.sqrt(1 + 4 * t * t))
        z = w_new + (t - 1) / t_new * (w_new - w)
        w, t = w_new, t_new
    return w


def test_epsilon_inf_converges_to_the_l1_constrained_optimum():
    problem = _lasso_problem()
    w_star = _exact_constrained_optimum(problem)
    assert np.abs(w_star).sum() == pytest.approx(0.6)  # the constraint is active
    f_star = problem.objective(w_star[:, None])
    # Full batch, constant step, last iterate: deterministic mirror descent.
    res = NoisyMirrorDescent(batch_size=10**6, n_iter=3000, step_size=0.5,
                             iterate="last").solve(problem, INF, 0)
    assert problem.objective(res.coef) - f_star < 1e-9
    np.testing.assert_allclose(res.coef[:, 0], w_star, atol=1e-4)
    # The paper's schedule (mini-batches, theorem step, averaged iterates) gets close.
    res = NoisyMirrorDescent(batch_size=8, n_iter=1000).solve(problem, INF, 0)
    assert problem.objective(res.coef) - f_star < 2e-2
    assert np.abs(res.coef).sum() <= 0.6 * (1 + 1e-12)


def test_epsilon_inf_reaches_exact_optimum_unconstrained_strongly_convex():
    problem = make_problem(n=100, d=4, alpha=0.1)
    res = NoisyMirrorDescent(batch_size=10**6, n_iter=3000, step_size=1.0,
                             iterate="last").solve(problem, INF, 0)
    assert np.linalg.norm(problem.gradient(res.coef)) < 1e-8


def test_epsilon_inf_localized_improves_on_the_start():
    problem = _lasso_problem(n=400)
    w_star = _exact_constrained_optimum(problem)
    f0, f_star = problem.objective(np.zeros((6, 1))), problem.objective(w_star[:, None])
    res = LocalizedMirrorDescent(step_size=2.0).solve(problem, INF, 0)
    assert problem.objective(res.coef) - f_star < 0.5 * (f0 - f_star)


# ---------------------------------------------------------------------------------------
# Sparse input, API
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: NoisyMirrorDescent(batch_size=9, n_iter=20),
                                  lambda: LocalizedMirrorDescent(batch_size=9, n_phases=3,
                                                                 max_iter=10)])
def test_csr_equals_dense(make):
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(120, 15)) * (rng.random((120, 15)) < 0.3)
    y = rng.uniform(-1, 1, 120)
    dense = _problem(X, y, SquaredLoss(1.0), constraint=L1Ball(1.0), row_ord=math.inf)
    sparse = _problem(sp.csr_matrix(X), y, SquaredLoss(1.0), constraint=L1Ball(1.0),
                      row_ord=math.inf)
    a = make().solve(dense, BUDGET, 4).coef
    b = make().solve(sparse, BUDGET, 4).coef
    assert sp.issparse(sparse.X)
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_sparse_is_never_densified(monkeypatch):
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.uniform(-1, 1, size=(50, 8)) * (rng.random((50, 8)) < 0.3))
    problem = _problem(X, rng.uniform(-1, 1, 50), SquaredLoss(1.0), constraint=L1Ball(1.0),
                       row_ord=math.inf)

    def refuse(*args, **kwargs):
        raise AssertionError("toarray called on the design")

    monkeypatch.setattr(sp.csr_matrix, "toarray", refuse)
    monkeypatch.setattr(sp.csr_array, "toarray", refuse, raising=False)
    NoisyMirrorDescent(batch_size=5, n_iter=5).solve(problem, BUDGET, 0)
    LocalizedMirrorDescent(batch_size=5, n_phases=2, max_iter=5).solve(problem, BUDGET, 0)


@pytest.mark.parametrize("constraint", [None, L1Ball(0.3), L2Ball(0.3), LpBall(0.3, 1.5),
                                        LpBall(0.3, 3.0), Simplex(1.0)])
def test_mirror_descent_runs_on_every_constraint_and_stays_feasible(constraint):
    problem = make_problem(n=100, n_classes=3, constraint=constraint, alpha=0.01)
    res = NoisyMirrorDescent(batch_size=10, n_iter=15).solve(problem, BUDGET, 0)
    assert res.coef.shape == (5, 3) and np.all(np.isfinite(res.coef))
    if constraint is not None:
        assert constraint.contains(res.coef, tol=1e-9)


@pytest.mark.parametrize("constraint", [None, L1Ball(0.3), L2Ball(0.3), LpBall(0.3, 1.5)])
def test_localized_runs_and_stays_feasible(constraint):
    problem = make_problem(n=100, n_classes=3, constraint=constraint, alpha=0.01)
    res = LocalizedMirrorDescent(batch_size=10, n_phases=3, max_iter=10,
                                 step_size=1.0).solve(problem, BUDGET, 0)
    assert np.all(np.isfinite(res.coef))
    if constraint is not None:
        assert constraint.contains(res.coef, tol=1e-9)


def test_seeds_reproduce_and_differ():
    problem = make_problem(constraint=L1Ball(1.0))
    for make in (lambda: NoisyMirrorDescent(batch_size=10, n_iter=10),
                 lambda: LocalizedMirrorDescent(batch_size=10, n_phases=2, max_iter=10)):
        w1, w2, w3 = (make().solve(problem, BUDGET, s).coef for s in (7, 7, 8))
        np.testing.assert_array_equal(w1, w2)
        assert not np.allclose(w1, w3)


@pytest.mark.parametrize("params, name", [
    ({"n_iter": 0}, "n_iter"), ({"batch_size": 1.5}, "batch_size"),
    ({"step_size": -1.0}, "step_size"), ({"schedule": "fast"}, "schedule"),
    ({"iterate": "best"}, "iterate"), ({"sampling": "shuffle"}, "sampling"),
    ({"clip_norm": math.nan}, "clip_norm"), ({"max_iter": 0}, "max_iter"),
    ({"step_scale": 0.0}, "step_scale"), ({"step_scale": None}, "step_scale"),
    ({"n_iter": True}, "n_iter"), ({"step_size": math.inf}, "step_size"),
    ({"step_scale": np.float64(math.inf)}, "step_scale"), ({"clip_norm": False}, "clip_norm"),
])
def test_bad_parameters_raise(params, name):
    with pytest.raises(ValueError, match=name):
        NoisyMirrorDescent(**params).solve(make_problem(), BUDGET, 0)


@pytest.mark.parametrize("params, name", [
    ({"n_phases": 0}, "n_phases"), ({"phase_budget": "thirds"}, "phase_budget"),
    ({"strongly_convex": "yes"}, "strongly_convex"), ({"n_rounds": -2}, "n_rounds"),
    ({"step_scale": -1.0}, "step_scale"), ({"max_iter": False}, "max_iter"),
    ({"strongly_convex": 1}, "strongly_convex"), ({"step_size": math.inf}, "step_size"),
])
def test_localized_bad_parameters_raise(params, name):
    with pytest.raises(ValueError, match=name):
        LocalizedMirrorDescent(**params).solve(make_problem(constraint=L1Ball(1.0)), BUDGET, 0)


def test_incompatible_problems_raise():
    with pytest.raises(IncompatibleSolverError, match="step_size"):
        NoisyMirrorDescent().solve(make_problem(alpha=0.0), BUDGET, 0)
    with pytest.raises(IncompatibleSolverError, match="alpha"):
        NoisyMirrorDescent(schedule="strongly_convex").solve(
            make_problem(alpha=0.0, constraint=L2Ball(1.0)), BUDGET, 0)
    with pytest.raises(IncompatibleSolverError, match="convex"):
        NoisyMirrorDescent(schedule="strongly_convex").solve(
            make_problem(alpha=0.1, constraint=L1Ball(1.0)), BUDGET, 0)
    with pytest.raises(IncompatibleSolverError, match="PLD"):
        NoisyMirrorDescent().solve(make_problem(constraint=L1Ball(1.0)), BUDGET, 0,
                                   accounting="pld")
    with pytest.raises(IncompatibleSolverError, match="Simplex"):
        LocalizedMirrorDescent().solve(make_problem(constraint=Simplex(1.0)), BUDGET, 0)
    with pytest.raises(IncompatibleSolverError, match="alpha"):
        LocalizedMirrorDescent(strongly_convex=True).solve(
            make_problem(constraint=L1Ball(1.0), alpha=0.0), BUDGET, 0)
    with pytest.raises(IncompatibleSolverError, match="bounded"):
        LocalizedMirrorDescent().solve(make_problem(), BUDGET, 0)
    squared = _problem(np.ones((5, 2)), np.zeros(5), SquaredLoss(1.0))
    with pytest.raises(IncompatibleSolverError, match="clip_norm"):
        NoisyMirrorDescent(step_size=0.1).solve(squared, BUDGET, 0)


def test_poisson_sampling_runs_and_is_accounted_via_add_remove():
    problem = make_problem(n=200, constraint=L1Ball(1.0))
    res = NoisyMirrorDescent(batch_size=10, n_iter=3, sampling="poisson").solve(
        problem, BUDGET, 0, accounting="rdp")
    assert res.plan.via_add_remove
    assert res.plan.sensitivity == pytest.approx(res.plan.clip_norm / 10)
    assert res.spent.epsilon <= 1.0


def test_zero_signal_noise_level():
    """All-zero rows: one Euclidean step from 0 is -eta * N(0, sigma^2 I)."""
    from scipy.stats import chi2
    d = 2000
    problem = make_problem(n=50, d=d, zero=True, alpha=0.0)
    res = NoisyMirrorDescent(n_iter=1, batch_size=5, step_size=0.7).solve(problem, BUDGET, 5)
    var = (0.7 * res.plan.sigma) ** 2
    stat = float(np.sum(res.coef**2) / var)
    assert chi2.ppf(5e-7, d) < stat < chi2.ppf(1 - 5e-7, d)


def test_noise_source_is_the_only_randomness():
    """Numpy's global state is neither read nor advanced."""
    problem = make_problem(n=100, constraint=L1Ball(1.0))
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    for solver in (NoisyMirrorDescent(batch_size=6, n_iter=4),
                   LocalizedMirrorDescent(batch_size=6, n_phases=2, max_iter=4)):
        solver.solve(problem, BUDGET, NoiseSource(np.random.default_rng(1)))
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # noqa: NPY002


def test_logistic_l1_end_to_end_through_the_estimator():
    from skdp.linear_model import DPLogisticRegression
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 20))
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    for solver in (NoisyMirrorDescent(), LocalizedMirrorDescent()):
        reset_shown()  # the epsilon=inf notice is shown once per process
        with pytest.warns(Warning):
            clf = DPLogisticRegression(epsilon=math.inf, delta=0.0, solver=solver,
                                       constraint="l1", radius=5.0, alpha=0.0,
                                       fit_intercept=False, random_state=0).fit(X, y)
        assert np.abs(clf.coef_).sum() <= 5.0 * (1 + 1e-9)
        assert clf.score(X, y) > 0.7


def test_review_too_many_phases_is_a_clear_error():
    from skdp.exceptions import IncompatibleSolverError
    from skdp.geometry import L1Ball
    from skdp.privacy import Budget
    from tests.conftest import make_problem

    problem = make_problem(n=8, constraint=L1Ball(1.0))
    with pytest.raises(IncompatibleSolverError, match="n_phases=10"):
        LocalizedMirrorDescent(n_phases=10).solve(problem, Budget(1.0, 1e-5), 0)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("pooled", [False, True])
@pytest.mark.parametrize("unclipped", [False, True])
def test_batch_gradient_fn_is_batch_gradient(n_classes, intercept, pooled, unclipped):
    """The per-run gradient (packed per-record factors) is batch_gradient, bit for bit,
    including huge rows (clipped) and a non-finite score (dropped); ``unclipped``: no row
    was clipped, so the factors of 1 are skipped."""
    problem = make_problem(n=300, d=6, n_classes=n_classes, intercept=intercept, seed=3)
    if unclipped:
        problem = Problem.build(problem.X * 0.1, problem.Y, problem.spec,
                                intercept=problem.intercept)
    assert problem.unclipped == unclipped
    rng = np.random.default_rng(0)
    pool = rng.permutation(300)[:150] if pooled else None
    W = rng.normal(size=(problem.spec.n_params, problem.spec.n_outputs)) * 3.0
    for clip, b in [(1.0, 40), (0.05, 7), (10.0, 1)]:
        grad = md_module.batch_gradient_fn(problem, pool, clip, b)
        for _ in range(5):
            local = np.sort(rng.choice(150 if pooled else 300, b, replace=False))
            idx = local if pool is None else pool[local]
            np.testing.assert_array_equal(grad(W, local),
                                          batch_gradient(problem, W, idx, clip, b))
    W_bad = W.copy()
    W_bad[0, 0] = np.inf
    grad = md_module.batch_gradient_fn(problem, pool, 1.0, 10)
    local = np.arange(10)
    idx = local if pool is None else pool[local]
    np.testing.assert_array_equal(grad(W_bad, local),
                                  batch_gradient(problem, W_bad, idx, 1.0, 10))


def test_batch_gradient_fn_sparse_falls_back():
    problem = make_problem(n=120, d=5, seed=1)
    csr = Problem.build(sp.csr_matrix(problem.X), problem.Y, problem.spec, data_norm=1.0)
    W = np.full((5, 1), 0.3)
    grad = md_module.batch_gradient_fn(csr, None, 1.0, 9)
    idx = np.arange(0, 120, 13)[:9]
    np.testing.assert_array_equal(grad(W, idx), batch_gradient(csr, W, idx, 1.0, 9))


@pytest.mark.parametrize("name", ["mirror_descent", "localized_mirror_descent"])
@pytest.mark.parametrize("sparse", [False, True])
def test_lossless_clip_skip_changes_nothing(monkeypatch, name, sparse):
    """The batch gradient skips a clip that public facts prove lossless: the fit is the
    one that clips every batch (bit for bit)."""
    from skdp.solvers import SOLVERS

    problem = make_problem(n=600, d=4, intercept=True, constraint=L2Ball(2.0))
    if sparse:
        problem = Problem.build(sp.csr_matrix(problem.X), problem.Y, problem.spec,
                                data_norm=1.0, intercept=1.0)
    assert problem.clip_cannot_bind(SOLVERS[name]().gradient_clip(problem.spec))
    solver = SOLVERS[name]()
    plan = solver.plan(problem.spec, BUDGET, solver.resolve_accounting("auto"), "replace_one")
    skipped = solver._run(problem, plan, NoiseSource(np.random.default_rng(5)))
    monkeypatch.setattr(Problem, "clip_cannot_bind", lambda self, clip: False)
    clipped = solver._run(problem, plan, NoiseSource(np.random.default_rng(5)))
    np.testing.assert_array_equal(skipped, clipped)


@pytest.mark.parametrize("solver", [
    NoisyMirrorDescent(batch_size=8, n_iter=60, step_size=1e300, iterate="last"),
    LocalizedMirrorDescent(step_size=1e300, batch_size=8),
])
def test_an_overflowing_iterate_warns_nothing(solver, recwarn):
    # Whether scores or iterates overflow depends on the data: the loop must not say so
    # (before the loop ran under one np.errstate, these fits warned "overflow" and
    # "invalid value" from the scores and the steps).
    problem = make_problem(n=64, d=3, intercept=True)
    solver.solve(problem, Budget(1.0, 1e-5), 0)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# -- what the registry-wide suites need (tests/solvers/_cases.py) -------------------------
def solver_cases():
    from skdp.losses import LogisticLoss
    from skdp.solvers import NoisyMirrorDescent
    from tests.solvers._cases import AuditCase, SolverCases

    return {"mirror_descent": SolverCases(
        fast=lambda: NoisyMirrorDescent(n_iter=30, batch_size=10),
        converged=lambda: NoisyMirrorDescent(n_iter=3000, batch_size=10**6, step_size=1.0,
                                             iterate="last"),
        sensitivity=("test_mirror_descent.py",
                     "test_batch_gradient_sensitivity_is_never_exceeded"),
        audits=(AuditCase(lambda: NoisyMirrorDescent(n_iter=1, batch_size=10, clip_norm=0.25,
                                                     step_size=0.5, iterate="last"),
                          LogisticLoss, alpha=0.0, epsilon=2.0, delta=1e-5, n_trials=2000),),
        zero_signal=lambda: NoisyMirrorDescent(n_iter=1, batch_size=5, step_size=0.7),
        # One mirror step from 0 with the Euclidean map: -eta * noise.
        zero_signal_variance=lambda plan, spec: (plan.step_size * plan.sigma) ** 2,
    )}
