"""DP-AccMD (Wang, Ye & Xu 2017, Algorithm 3, one noisy gradient per iteration)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import brentq, linprog, minimize, minimize_scalar

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import (
    L1Ball,
    L2Ball,
    LpBall,
    MirrorGeometry,
    Simplex,
    Unconstrained,
)
from skdp.losses import LogisticLoss
from skdp.privacy import Budget, epsilon_spent
from skdp.privacy.accounting import analytic_gaussian_multiplier
from skdp.solvers import NoisyGD, Problem, ProblemSpec
from skdp.solvers import accelerated_mirror_descent as amd
from skdp.solvers.accelerated_mirror_descent import (
    DPAccMD,
    l1_ball_gradient_step,
    simplex_gradient_step,
)
from tests.conftest import (
    RecordingNoiseSource,
    ReplayNoiseSource,
    box_constraint,
    make_problem,
)
from tests.solvers._helpers import clipped_logistic_gradient, ref_l1_mirror_step

INF = Budget(math.inf, 0.0)
BUDGET = Budget(1.0, 1e-5)


# ---------------------------------------------------------------------------------------
# Plain-numpy reference (one example at a time, hand-written maps and projections:
# tests/solvers/_helpers.py)
# ---------------------------------------------------------------------------------------
def reference_accmd(X, y, alpha, plan, replay, n_iter, geometry, radius, intercept):
    """Algorithm 3 with the noisy y-step, for binary logistic regression."""
    n, m = X.shape
    d = m - 1 if intercept else m  # penalised / constrained coordinates
    L, mu, clip = plan.smoothness, plan.mirror_modulus, plan.clip_norm
    p = 1.0 + 1.0 / math.log(d) if geometry == "l1" else 2.0
    yk, zk = np.zeros(m), np.zeros(m)
    for k in range(n_iter):
        a = (k + 2) / (4.0 * L)
        r = 1.0 / (2.0 * a * L)
        xk = r * zk + (1 - r) * yk
        g = sum(clipped_logistic_gradient(xk, X[i], y[i], clip) for i in range(n)) / n
        g = g + replay.next("gaussian")[:, 0]
        g[:d] += alpha * xk[:d]
        z_new, y_new = np.empty(m), np.empty(m)
        if geometry == "l2":
            z_new[:d] = zk[:d] - a * g[:d]
            if np.linalg.norm(z_new[:d]) > radius:
                z_new[:d] *= radius / np.linalg.norm(z_new[:d])
            y_new[:d] = xk[:d] - g[:d] / L
            if np.linalg.norm(y_new[:d]) > radius:
                y_new[:d] *= radius / np.linalg.norm(y_new[:d])
        else:
            z_new[:d] = ref_l1_mirror_step(zk[:d], g[:d], mu * a, p, radius)
            y_new[:d] = l1_ball_gradient_step(xk[:d], g[:d], L, radius)  # checked by LP below
        z_new[d:] = zk[d:] - a * g[d:]
        y_new[d:] = xk[d:] - g[d:] / L
        yk, zk = y_new, z_new
    return yk


@pytest.mark.parametrize("geometry", ["l2", "l1"])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("clip", [None, 0.3])
def test_matches_numpy_reference(geometry, intercept, clip):
    radius = 0.4
    c = L2Ball(radius) if geometry == "l2" else L1Ball(radius)
    problem = make_problem(n=40, d=6, alpha=0.05, seed=3, constraint=c, intercept=intercept)
    solver = DPAccMD(n_iter=9, clip_norm=clip, restart_every=None)
    noise = RecordingNoiseSource(np.random.default_rng(0))
    res = solver.solve(problem, Budget(2.0, 1e-5), noise)
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_accmd(problem.design_matrix(), problem.Y[:, 0], 0.05, res.plan,
                          replay, 9, geometry, radius, intercept)
    assert replay.exhausted()
    np.testing.assert_allclose(res.coef[:, 0], ref, rtol=1e-10, atol=1e-12)
    # The smoothness in the geometry: 0.25 X^2 + alpha, X^2 bounding ||x_pen||_{s*}^2 + c^2
    # (||x'||_2 <= sqrt(2) with the intercept; c is not declared in the spec: 2^(1-2/s*)).
    row_sq = 1.0 if not intercept else (2.0 if geometry == "l2" else 4.0)
    assert res.plan.smoothness == pytest.approx(0.25 * row_sq + 0.05)


def test_restart_schedule_matches_reference_prefix():
    """A restart is exactly a fresh run started from y (same noise)."""
    problem = make_problem(n=40, d=4, alpha=0.2, seed=5, constraint=L2Ball(0.5))
    noise = RecordingNoiseSource(np.random.default_rng(3))
    res = DPAccMD(n_iter=7, restart_every=4).solve(problem, BUDGET, noise)
    draws = [v for _, v in noise.draws]
    X, Y = problem.design_matrix(), problem.Y[:, 0]
    s = res.plan
    first = reference_accmd(X, Y, 0.2, s, ReplayNoiseSource([("gaussian", v) for v in draws[:4]]),
                            4, "l2", 0.5, False)

    # Second block: the same algorithm from y_4 (the reference starts from 0: shift it).
    L = s.smoothness
    yk = zk = first.copy()
    for k, v in enumerate(draws[4:]):
        a, r = (k + 2) / (4 * L), 2.0 / (k + 2)
        xk = r * zk + (1 - r) * yk
        g = sum(clipped_logistic_gradient(xk, X[i], Y[i], s.clip_norm) for i in range(40)) / 40
        g = g + v[:, 0] + 0.2 * xk
        zk = zk - a * g
        zk *= min(1.0, 0.5 / np.linalg.norm(zk))
        yk = xk - g / L
        yk *= min(1.0, 0.5 / np.linalg.norm(yk))
    np.testing.assert_allclose(res.coef[:, 0], yk, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------
# The exact gradient steps of the non-Euclidean geometries, against an LP
# ---------------------------------------------------------------------------------------
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def _lp_model_value(x, g, t, R, simplex):
    """min <g, y - x> over {||y - x||_1 <= t} intersected with the set (HiGHS)."""
    m = x.size
    eye, zero = np.eye(m), np.zeros((m, m))
    if simplex:
        A = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, m)), np.ones((1, m))]])
        res = linprog(np.concatenate([g, np.zeros(m)]), A_ub=A,
                      b_ub=np.concatenate([x, -x, [t]]),
                      A_eq=np.concatenate([np.ones(m), np.zeros(m)])[None], b_eq=[R],
                      bounds=[(0, None)] * (2 * m), method="highs", options=_HIGHS)
    else:
        row0, row1 = np.zeros((1, m)), np.ones((1, m))
        A = np.block([[eye, -eye, zero], [-eye, -eye, zero], [eye, zero, -eye],
                      [-eye, zero, -eye], [row0, row1, row0], [row0, row0, row1]])
        res = linprog(np.concatenate([g, np.zeros(2 * m)]), A_ub=A,
                      b_ub=np.concatenate([x, -x, np.zeros(2 * m), [t, R]]),
                      bounds=[(None, None)] * m + [(0, None)] * (2 * m), method="highs",
                      options=_HIGHS)
    return res.fun - g @ x


def _brute_force(x, g, L, R, simplex):
    r = minimize_scalar(lambda t: 0.5 * L * t * t + _lp_model_value(x, g, t, R, simplex),
                        bounds=(0, 2 * R + 1), method="bounded", options={"xatol": 1e-12})
    return r.fun


@pytest.mark.parametrize("seed", range(40))
def test_l1_ball_gradient_step_is_the_exact_argmin(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 7))
    R = rng.uniform(0.2, 2.0)
    x = rng.normal(size=m) * (rng.random(m) < 0.7)
    x *= R / max(np.abs(x).sum(), 1e-12) * (1.0 if seed % 2 else rng.uniform(0.3, 1.0))
    g = rng.normal(size=m) * [0.1, 1.0, 10.0][seed % 3]
    if seed % 5 == 0:  # a tie at the top, with the sign of x
        g[0] = np.abs(g).max() * (np.sign(x[0]) or 1.0)
    L = rng.uniform(0.1, 5.0)
    y = l1_ball_gradient_step(x, g, L, R)
    assert np.abs(y).sum() <= R * (1 + 1e-12)
    value = 0.5 * L * np.abs(y - x).sum() ** 2 + g @ (y - x)
    assert value <= _brute_force(x, g, L, R, False) + 1e-8


@pytest.mark.parametrize("seed", range(20))
def test_simplex_gradient_step_is_the_exact_argmin(seed):
    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(1, 7))
    R = rng.uniform(0.2, 2.0)
    x = rng.random(m) * (rng.random(m) < 0.7) + 1e-3
    x *= R / x.sum()
    g = rng.normal(size=m) * [0.1, 1.0, 10.0][seed % 3]
    L = rng.uniform(0.1, 5.0)
    y = simplex_gradient_step(x, g, L)
    assert np.all(y >= 0) and y.sum() == pytest.approx(R, rel=1e-12)
    value = 0.5 * L * np.abs(y - x).sum() ** 2 + g @ (y - x)
    assert value <= _brute_force(x, g, L, R, True) + 1e-8


def test_lp_gradient_step_never_worse_than_the_coupling_point():
    """The property the proof uses: model value at y_{k+1} <= at v (supplement (54))."""
    rng = np.random.default_rng(4)
    ball = LpBall(1.0, 1.5)
    for _ in range(30):
        x = ball.project(rng.normal(size=8))
        v = ball.project(rng.normal(size=8))
        g = rng.normal(size=8) * 5
        y = amd._lp_gradient_step(x, g, 0.7, ball, v)
        assert ball.norm(y) <= 1.0 + 1e-10

        def model(u, x=x, g=g):
            return 0.5 * 0.7 * ball.norm(u - x) ** 2 + g @ (u - x)

        assert model(y) <= model(v) + 1e-12
        # The unconstrained step, when it is feasible, is returned exactly.
        small = g * 1e-4
        y = amd._lp_gradient_step(x * 0.5, small, 0.7, ball, v)
        free = x * 0.5 - amd._dual_grad(small, 3.0) / 0.7
        np.testing.assert_allclose(y, free)


# ---------------------------------------------------------------------------------------
# epsilon = inf: the exact optimum, and acceleration
# ---------------------------------------------------------------------------------------
def _l2_ball_optimum(problem, radius):
    """High precision: L-BFGS-B on F + (lam/2)||w||^2, lam the root of ||w(lam)|| = R.

    By KKT the constrained optimum is the penalised one whose norm is R (or the free one
    when it lies inside the ball).
    """
    m = problem.spec.n_params

    def solve(lam):
        def fg(w):
            W = w[:, None]
            return (problem.objective(W) + 0.5 * lam * w @ w,
                    problem.gradient(W)[:, 0] + lam * w)
        return minimize(fg, np.zeros(m), jac=True, method="L-BFGS-B",
                        options={"gtol": 1e-14, "ftol": 1e-16, "maxiter": 10000}).x

    w = solve(0.0)
    if np.linalg.norm(w) <= radius:
        return w
    lam = brentq(lambda lam: np.linalg.norm(solve(lam)) - radius, 0.0, 10.0, xtol=1e-14)
    return solve(lam)


def test_l2_ball_reaches_the_exact_optimum():
    radius = 0.3
    problem = make_problem(n=150, d=5, alpha=0.05, seed=11, constraint=L2Ball(radius))
    w_star = _l2_ball_optimum(problem, radius)
    assert np.linalg.norm(w_star) == pytest.approx(radius, rel=1e-9)  # the ball is active
    res = DPAccMD().solve(problem, INF, 0)
    np.testing.assert_allclose(res.coef[:, 0], w_star, atol=1e-7)
    assert problem.objective(res.coef) <= problem.objective(w_star[:, None]) + 1e-12


def _projected_gradient(problem, n_iter):
    """A long plain projected-gradient run (step 1/beta): the reference optimum."""
    spec = problem.spec
    W = np.zeros((spec.n_params, spec.n_outputs))
    p = spec.n_penalized
    for _ in range(n_iter):
        W = W - problem.gradient(W) / spec.smoothness
        W[:p] = spec.constraint.project(W[:p])
    return W


@pytest.mark.parametrize("intercept", [False, True])
def test_l1_ball_reaches_the_exact_optimum(intercept):
    problem = make_problem(n=150, d=8, alpha=0.0, seed=12, constraint=L1Ball(0.6),
                           intercept=intercept)
    W_star = _projected_gradient(problem, 6000)
    f_star = problem.objective(W_star)
    res = DPAccMD(n_iter=1500).solve(problem, INF, 0)
    assert np.abs(res.coef[:8]).sum() <= 0.6 + 1e-12
    assert np.abs(W_star[:8]).sum() == pytest.approx(0.6)  # the constraint is active
    gap = problem.objective(res.coef) - f_star
    assert -1e-12 < gap < 1e-9
    np.testing.assert_allclose(res.coef, W_star, atol=2e-4)


def _slsqp_optimum(problem):
    """SLSQP on the flat parameter with the set as a smooth constraint (reference)."""
    c, m = problem.spec.constraint, problem.spec.n_params
    if isinstance(c, Simplex):
        cons = [{"type": "eq", "fun": lambda w: np.sum(w) - c.radius,
                 "jac": lambda w: np.ones_like(w)}]
        bounds, w0 = [(0, None)] * m, np.full(m, c.radius / m)
    else:
        cons = [{"type": "ineq", "fun": lambda w: c.radius**c.p - np.sum(np.abs(w) ** c.p),
                 "jac": lambda w: -c.p * np.sign(w) * np.abs(w) ** (c.p - 1)}]
        bounds, w0 = None, np.zeros(m)

    def fg(w):
        return problem.objective(w[:, None]), problem.gradient(w[:, None])[:, 0]

    res = minimize(fg, w0, jac=True, method="SLSQP", bounds=bounds, constraints=cons,
                   options={"ftol": 1e-15, "maxiter": 1000})
    return problem.objective(c.project(res.x)[:, None])


@pytest.mark.parametrize("c", [Simplex(1.0), LpBall(0.5, 1.5), LpBall(0.5, 3.0)])
def test_simplex_and_lp_reach_the_optimum(c):
    problem = make_problem(n=120, d=6, alpha=0.0, seed=13, constraint=c)
    f_star = _slsqp_optimum(problem)
    res = DPAccMD(n_iter=800).solve(problem, INF, 0)
    assert c.contains(res.coef, tol=1e-10)
    assert abs(problem.objective(res.coef) - f_star) < 1e-8


def _ill_conditioned(seed=0):
    rng = np.random.default_rng(seed)
    n, d = 300, 20
    X = rng.normal(size=(n, d)) * np.logspace(0, -2, d)
    X /= np.linalg.norm(X, axis=1).max()
    w = rng.normal(size=d) * 5
    Y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ w)), 1.0, -1.0)[:, None]
    spec = ProblemSpec(n_samples=n, n_params=d, n_outputs=1, n_penalized=d, row_norm_bound=1.0,
                       loss=LogisticLoss(), constraint=L2Ball(100.0), alpha=1e-4)
    return Problem.build(X, Y, spec, data_norm=1.0)


def test_faster_than_gradient_descent_on_an_ill_conditioned_problem():
    """Same smoothness constant, same number of gradient evaluations: the coupling wins
    over the paper's plain DP-GD (``momentum="none"``; DP-GD's default Nesterov momentum
    is itself an accelerated method, for strongly convex objectives).

    Measured (seed 0): T = 100: AccMD gap 1.3e-3 vs DP-GD 2.6e-2; T = 200: 6.5e-5 vs 1.2e-2;
    DP-GD after 4 T = 400 iterations: 4.6e-3 (worse than AccMD after 100).
    """
    problem = _ill_conditioned()
    f_star = problem.objective(_l2_ball_optimum(problem, 100.0)[:, None])

    def gap(solver):
        return problem.objective(solver.solve(problem, INF, 0).coef) - f_star

    for T in (100, 200):
        acc = gap(DPAccMD(n_iter=T, restart_every=None))
        assert 0 <= acc < gap(NoisyGD(n_iter=T, momentum="none")) / 10
        assert acc < gap(NoisyGD(n_iter=4 * T, momentum="none"))


# ---------------------------------------------------------------------------------------
# Data access, feasibility, sparse input
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("c", [L2Ball(0.2), L1Ball(0.3), LpBall(0.3, 1.5), Simplex(1.0),
                               Unconstrained()])
def test_one_clipped_gradient_per_iteration_and_feasible_iterates(monkeypatch, c):
    problem = make_problem(n=60, d=5, alpha=0.01, seed=2, constraint=c, n_classes=3)
    calls, points = [], []
    original = Problem.clipped_gradient

    def counting(self, W, clip_norm, out_coefficients=None, *, passes=1):
        calls.append(W.copy())
        inside.append(1)
        try:
            return original(self, W, clip_norm, out_coefficients, passes=passes)
        finally:
            inside.pop()

    inside = []

    def guard(name):
        method = getattr(Problem, name)

        def guarded(self, *args, **kwargs):
            if not inside:
                raise AssertionError("the solver reads the data through clipped_gradient only")
            return method(self, *args, **kwargs)

        return guarded

    original_step = MirrorGeometry.gradient_step

    def recording_step(geom, x, g, L, v):
        out = original_step(geom, x, g, L, v)
        points.append(("y", out.copy()))
        return out

    original_mirror = MirrorGeometry.mirror_step

    def recording_mirror(geom, x, g, eta):
        out = original_mirror(geom, x, g, eta)
        points.append(("z", out.copy()))
        return out

    monkeypatch.setattr(Problem, "clipped_gradient", counting)
    for name in ("objective", "gradient", "scores", "gradient_sum", "rows", "design_matrix",
                 "row_norms_in"):
        monkeypatch.setattr(Problem, name, guard(name))
    monkeypatch.setattr(MirrorGeometry, "gradient_step", recording_step)
    monkeypatch.setattr(MirrorGeometry, "mirror_step", recording_mirror)
    res = DPAccMD(n_iter=15).solve(problem, Budget(0.5, 1e-5), 0)
    monkeypatch.undo()
    assert len(calls) == res.n_iter == 15
    assert len(points) == 30
    p = problem.spec.n_penalized
    for _, u in points:
        assert c.contains(u, tol=1e-10)
    for x in calls:  # the query points are convex combinations of feasible points
        assert c.contains(x[:p], tol=1e-10)
    assert c.contains(res.coef[:p], tol=1e-10)


@pytest.mark.parametrize("c", [L2Ball(0.5), L1Ball(0.5)])
def test_csr_equals_dense(c):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 12)) * (rng.random((80, 12)) < 0.3)
    Y = np.where(rng.random(80) < 0.5, 1.0, -1.0)[:, None]
    spec = ProblemSpec(n_samples=80, n_params=13, n_outputs=1, n_penalized=12,
                       row_norm_bound=math.sqrt(2.0), loss=LogisticLoss(), constraint=c,
                       alpha=0.01)
    dense = Problem.build(X, Y, spec, data_norm=1.0, intercept=1.0)
    csr = Problem.build(sp.csr_matrix(X), Y, spec, data_norm=1.0, intercept=1.0)
    a = DPAccMD(n_iter=20).solve(dense, BUDGET, 4).coef
    b = DPAccMD(n_iter=20).solve(csr, BUDGET, 4).coef
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)


# ---------------------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("accounting", ["gaussian", "rdp", "pld"])
@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_ledger_reaccounts_within_budget(accounting, eps):
    problem = make_problem(constraint=L1Ball(1.0))
    budget = Budget(eps, 1e-5)
    plan = DPAccMD(n_iter=25).plan(problem.spec, budget, accounting, "replace_one")
    spent = epsilon_spent(plan.event, 1e-5, accounting=accounting, relation="replace_one")
    assert 0.99 * eps <= spent <= eps
    s = plan
    assert s.sensitivity == pytest.approx(2 * s.clip_norm / 200)
    assert s.clip_norm == pytest.approx(problem.spec.gradient_bound)


def test_closed_form_and_accounting_method_calibrations():
    problem = make_problem(constraint=L2Ball(1.0))
    for eps in (0.3, 3.0):
        budget = Budget(eps, 1e-5)
        sig = {a: DPAccMD(n_iter=40).plan(problem.spec, budget, a, "replace_one")
               .sigma for a in ("gaussian", "rdp", "pld")}
        s = DPAccMD(n_iter=40).plan(problem.spec, budget, "gaussian", "replace_one")
        # Exact closed form: sigma = sqrt(T) (2G/n) sigma_B1(eps, delta).
        assert sig["gaussian"] == pytest.approx(
            analytic_gaussian_multiplier(budget, 1) * math.sqrt(40) * s.sensitivity, rel=1e-9)
        # RDP and PLD are upper bounds: never less noise, and not grossly more.
        assert sig["gaussian"] <= sig["rdp"] <= 1.35 * sig["gaussian"]
        assert sig["gaussian"] <= sig["pld"] * (1 + 1e-6) and sig["pld"] <= 1.05 * sig["gaussian"]


@pytest.mark.parametrize("accounting", ["gaussian", "rdp"])
def test_noise_non_increasing_in_epsilon(accounting):
    problem = make_problem(n=500, d=10, constraint=L1Ball(1.0))
    previous = math.inf
    for eps in (0.1, 0.3, 1.0, 3.0, 10.0):
        plan = DPAccMD().plan(problem.spec, Budget(eps, 1e-5), accounting, "replace_one")
        sigma = plan.sigma
        assert sigma <= previous
        previous = sigma


def test_auto_iterations_are_public_and_grow_with_epsilon():
    spec = make_problem(n=5000, d=20, alpha=0.0, constraint=L1Ball(1.0)).spec
    counts = [DPAccMD().plan(spec, Budget(e, 1e-5), "gaussian", "replace_one").n_iter
              for e in (0.1, 1.0, 10.0)]
    assert counts == sorted(counts) and counts[0] >= 1 and counts[-1] <= amd.MAX_AUTO_ITER
    other = make_problem(n=5000, d=20, alpha=0.0, constraint=L1Ball(1.0), seed=9).spec
    assert DPAccMD().plan(other, BUDGET, "gaussian", "replace_one").constants() == DPAccMD().plan(
        spec, BUDGET, "gaussian", "replace_one").constants()


def test_private_fit_is_close_at_large_n():
    problem = make_problem(n=20000, d=10, alpha=0.0, constraint=L1Ball(1.0), seed=4)
    f_star = problem.objective(_projected_gradient(problem, 3000))
    res = DPAccMD().solve(problem, Budget(1.0, 1e-5), 0)
    assert problem.objective(res.coef) - f_star < 5e-3
    assert problem.objective(res.coef) - f_star > 0


# ---------------------------------------------------------------------------------------
# Parameters and compatibility
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("params", [{"n_iter": 0}, {"n_iter": 2.5}, {"clip_norm": -1.0},
                                    {"restart_every": 0}, {"restart_every": "never"},
                                    {"restart_every": True}, {"n_iter": True},
                                    {"clip_norm": math.inf}, {"clip_norm": math.nan}])
def test_bad_parameters_raise(params):
    name = next(iter(params))
    with pytest.raises(ValueError, match=name):
        DPAccMD(**params).solve(make_problem(), BUDGET, 0)


def test_unknown_constraint_is_incompatible():
    with pytest.raises(IncompatibleSolverError, match="constraint"):
        DPAccMD(n_iter=2).solve(make_problem(constraint=box_constraint()), BUDGET, 0)


def test_estimator_end_to_end_l1():
    from skdp import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 30))
    w = np.zeros(30)
    w[:3] = 2.0
    y = (X @ w + rng.logistic(size=3000) > 0).astype(int)
    clf = DPLogisticRegression(solver=DPAccMD(), constraint="l1", radius=5.0, data_norm=3.0,
                               epsilon=2.0, delta=1e-5, random_state=0).fit(X, y)
    assert np.abs(clf.coef_).sum() <= 5.0 + 1e-9
    assert clf.score(X, y) > 0.75


# -- what the registry-wide suites need (tests/solvers/_cases.py) -------------------------
def solver_cases():
    from skdp.losses import LogisticLoss
    from skdp.solvers import DPAccMD
    from tests.solvers._cases import AuditCase, SolverCases

    return {"accelerated_mirror_descent": SolverCases(
        fast=lambda: DPAccMD(n_iter=30),
        converged=DPAccMD,
        sensitivity=("test_sensitivity.py", "test_full_batch_gradient_sensitivity"),
        audits=(AuditCase(lambda: DPAccMD(n_iter=5, clip_norm=0.25), LogisticLoss, alpha=0.0,
                          epsilon=2.0, delta=1e-5, n_trials=2000),),
        zero_signal=lambda: DPAccMD(n_iter=1),
        # x_1 = z_0 = 0, so the output is y_1 = -g / L.
        zero_signal_variance=lambda plan, spec: (plan.sigma / plan.smoothness) ** 2,
    )}
