"""DP Newton: a plain-numpy reference fed the same noise, brute-force sensitivities of
both releases, epsilon=inf parity with the non-private optimum, the noise against the
ledger, and the registry-wide test data (``solver_cases``)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from scipy.optimize import brentq, minimize
from scipy.special import expit, softmax
from scipy.stats import chi2

from skdp.audit import audit_scores
from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import L1Ball, L2Ball, Unconstrained
from skdp.losses import HuberLoss, LogisticLoss, SmoothedHingeLoss, SquaredLoss
from skdp.privacy import Budget
from skdp.privacy.accounting import analytic_gaussian_multiplier, gaussian_log_delta
from skdp.solvers import DPNewton, NoisyGD, Problem, ProblemSpec
from skdp.solvers.newton import (
    DISPERSION_SHARE,
    MAX_DIMENSION,
    _dispersion_block,
    gradient_and_hessian_sums,
    hessian_frobenius_bound,
    hessian_schedule,
    hessian_sum,
    svec_indices,
    symmetric_noise,
)
from tests.conftest import RecordingNoiseSource, ReplayNoiseSource, make_problem
from tests.solvers.test_sensitivity import _neighbours


# ---------------------------------------------------------------------------------------
# Problems of every supported loss
# ---------------------------------------------------------------------------------------
def _glm_problem(loss, n=120, d=4, alpha=0.05, seed=0, intercept=False, constraint=None,
                 inference=True):
    """A one-output problem of ``loss`` with rows of norm <= 1 (labels in its domain)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    score = X @ rng.normal(size=d)
    if isinstance(loss, LogisticLoss | SmoothedHingeLoss):
        Y = np.where(score + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)[:, None]
    else:
        Y = np.clip(score + 0.3 * rng.normal(size=n), -1, 1)[:, None]
    c = 1.0 if intercept else 0.0
    spec = ProblemSpec(
        n_samples=n, n_params=d + (1 if intercept else 0), n_outputs=1, n_penalized=d,
        row_norm_bound=math.hypot(1.0, c), loss=loss,
        constraint=constraint or Unconstrained(), alpha=alpha, intercept_feature=c,
        inference=inference,
    )
    return Problem.build(X, Y, spec, data_norm=1.0, intercept=c)


LOSSES = {
    "logistic": LogisticLoss,
    "huber": lambda: HuberLoss(0.5, label_bound=1.0),
    "smoothed_hinge": lambda: SmoothedHingeLoss(smoothing=0.5),
    "squared": lambda: SquaredLoss(1.0),
}


def _solver(loss_name, **params):
    # The squared loss needs a public gradient clip (its derivative is unbounded).
    if loss_name == "squared":
        params.setdefault("clip_norm", 50.0)
    return DPNewton(**params)


# ---------------------------------------------------------------------------------------
# Plain-numpy reference fed the same noise
# ---------------------------------------------------------------------------------------
def _example_curvature(loss, z, y):
    """The K x K Hessian of phi in the score for ONE example (plain formulas)."""
    if isinstance(loss, LogisticLoss):
        s = 1.0 / (1.0 + math.exp(-z[0]))
        return np.array([[s * (1.0 - s)]])
    if isinstance(loss, SmoothedHingeLoss):
        gap = 1.0 - y[0] * z[0]
        return np.array([[1.0 / loss.smoothing if 0 < gap < loss.smoothing else 0.0]])
    if isinstance(loss, HuberLoss):
        return np.array([[1.0 if abs(z[0] - y[0]) < loss.huber_delta else 0.0]])
    if isinstance(loss, SquaredLoss):
        return np.array([[1.0]])
    p = softmax(z)
    return np.diag(p) - np.outer(p, p)


def _example_gradient(loss, w, x, y, clip):
    """Clipped gradient ``x phi'(x^T W, y)^T`` of ONE example, flattened row-major."""
    z = x @ w
    g = np.outer(x, loss.derivative(z[None, :], y[None, :])[0])
    norm = np.linalg.norm(g)
    return (g if norm <= clip else g * (clip / norm)).ravel()


def _ball_point(vectors, values, w, g, radius):
    """argmin of ``<g, u - w> + (u - w)^T A (u - w) / 2`` over ``||u|| <= radius``, ``A =
    V diag(values) V^T``: ``u(mu) = (A + mu I)^{-1} (A w - g)`` with ``||u(mu)|| = radius``
    (or ``mu = 0`` inside)."""
    target = (vectors * values) @ (vectors.T @ w) - g

    def point(mu):
        return vectors @ ((vectors.T @ target) / (values + mu))

    u = point(0.0)
    if np.linalg.norm(u) <= radius:
        return u
    mu = brentq(lambda s: np.linalg.norm(point(s)) - radius, 0.0,
                np.linalg.norm(target) / radius, xtol=1e-15, rtol=1e-15)
    return point(mu)


def reference_newton(problem, plan, replay, average=True):
    """One example at a time: the releases, the eigenvalue floor, the damped step and the
    output rule."""
    spec, loss = problem.spec, problem.spec.loss
    X, Y = problem.design_matrix(), problem.Y
    n, m = X.shape
    k = spec.n_outputs
    D = m * k
    w = np.zeros((m, k))
    pen = np.zeros(D)
    pen[: spec.n_penalized * k] = 1.0
    kept = []
    schedule = [t in {(j * plan.n_iter) // plan.n_hessian for j in range(plan.n_hessian)}
                for t in range(plan.n_iter)]
    for t in range(plan.n_iter):
        g = sum(_example_gradient(loss, w, X[i], Y[i], plan.clip_norm) for i in range(n)) / n
        # After the first release the intercept row's noise is drawn on its own (the
        # feature rows first): the same row-major order.
        shaped = bool(plan.intercept_candidates) and t > 0
        xi = (np.concatenate([replay.next("gaussian"), replay.next("gaussian")]) if shaped
              else replay.next("gaussian"))
        g = g + xi.ravel() + spec.alpha * pen * w.ravel()
        if schedule[t]:  # a fresh Hessian release; in between the last one again
            H = sum(np.kron(np.outer(X[i], X[i]), _example_curvature(loss, X[i] @ w, Y[i]))
                    for i in range(n)) / n
            # The symmetric noise: svec entries on the upper triangle, off-diagonals / sqrt 2.
            unit = replay.next("gaussian")
            E = np.zeros((D, D))
            pos = 0
            for a in range(D):
                for b in range(a, D):
                    E[a, b] = E[b, a] = unit[pos] / (1.0 if a == b else math.sqrt(2.0))
                    pos += 1
        values, vectors = np.linalg.eigh(H + E + np.diag(spec.alpha * pen))
        values = np.maximum(values, plan.hessian_floor)
        if isinstance(spec.constraint, Unconstrained):
            step = vectors @ ((vectors.T @ g) / values)
        else:  # the l2 ball: the trust-region subproblem, by its secular equation
            u = _ball_point(vectors, values, w.ravel(), g, spec.constraint.radius)
            step = w.ravel() - u
        size = plan.row_bound * np.linalg.norm(step)
        damped = size > plan.max_score_step
        w = (w.ravel() - (plan.max_score_step / size if damped else 1.0) * step).reshape(m, k)
        # The average of the undamped iterates since the last damped step, without the
        # first of them unless it is alone.
        kept = [] if damped else kept + [w]
    kept = kept[1:] if len(kept) > 1 else kept
    return sum(kept) / len(kept) if average and kept else w


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("iterate, step, hessians", [("auto", "auto", None),
                                                     ("last", 0.3, None),
                                                     ("auto", 0.3, 5)])
def test_newton_matches_the_reference(loss_name, intercept, iterate, step, hessians):
    """Both output rules; a small trust radius (0.3) makes some steps damped; the default
    schedule (two Hessians, at steps 0 and 2 of the 5, for the losses of positive
    curvature; one per step for the piecewise-quadratic ones) and a Hessian at every
    step."""
    problem = _glm_problem(LOSSES[loss_name](), n=60, d=3, intercept=intercept, seed=4)
    noise = RecordingNoiseSource(np.random.default_rng(0))
    res = _solver(loss_name, n_iter=5, iterate=iterate, max_score_step=step,
                  hessian_steps=hessians).solve(problem, Budget(2.0, 1e-5), noise)
    default = 5 if loss_name in ("huber", "smoothed_hinge") else 2
    assert res.plan.n_hessian == (default if hessians is None else hessians)
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_newton(problem, res.plan, replay, average=iterate == "auto")
    if res.plan.dispersion_share:  # then the dispersion's draw (its own test below)
        assert replay.next("gaussian").shape == (2,)
    assert replay.exhausted()
    np.testing.assert_allclose(res.coef, ref, rtol=1e-10, atol=1e-12)


def test_multinomial_matches_the_reference():
    problem = make_problem(n=60, d=3, n_classes=3, alpha=0.05, seed=1, intercept=True)
    noise = RecordingNoiseSource(np.random.default_rng(2))
    res = DPNewton(n_iter=4).solve(problem, Budget(3.0, 1e-5), noise)
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_newton(problem, res.plan, replay)
    assert replay.exhausted()
    np.testing.assert_allclose(res.coef, ref, rtol=1e-10, atol=1e-12)


def test_l2_constrained_step_matches_the_reference():
    """The constrained Newton point (projected solve of the quadratic model) against the
    exact trust-region solution of the secular equation."""
    problem = make_problem(n=80, d=4, alpha=0.05, seed=3, constraint=L2Ball(0.3))
    noise = RecordingNoiseSource(np.random.default_rng(1))
    res = DPNewton(n_iter=4, max_inner=20_000).solve(problem, Budget(2.0, 1e-5), noise)
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_newton(problem, res.plan, replay)
    assert replay.exhausted()
    assert np.linalg.norm(res.coef) <= 0.3 + 1e-12
    np.testing.assert_allclose(res.coef, ref, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("n_classes, intercept, clip", [(2, False, None), (2, True, 0.05),
                                                        (3, True, None), (3, False, 0.05)])
def test_fused_pass_is_the_gradient_and_hessian_passes(n_classes, intercept, clip):
    """The one-pass ``(gradient, Hessian)`` sums equal ``n`` times the clipped mean gradient
    (a binding clip included) and :func:`hessian_sum`, over several row blocks."""
    problem = make_problem(n=20_000, d=6, n_classes=n_classes, seed=5, intercept=intercept)
    W = np.random.default_rng(1).normal(size=(problem.spec.n_params, problem.spec.n_outputs))
    clip = DPNewton().gradient_clip(problem.spec) if clip is None else clip
    grad, hess = gradient_and_hessian_sums(problem, W, clip)
    n = problem.spec.n_samples
    np.testing.assert_allclose(grad, n * problem.clipped_gradient(W, clip), rtol=1e-10,
                               atol=1e-9)
    np.testing.assert_allclose(hess, hessian_sum(problem, W), rtol=1e-10, atol=1e-9)


def test_symmetric_noise_is_the_svec_isometry():
    rng = np.random.default_rng(0)
    unit = rng.normal(size=10)
    E = symmetric_noise(unit, 4)
    rows, cols, weights = svec_indices(4)
    assert np.array_equal(E, E.T)
    np.testing.assert_allclose(E[rows, cols] * weights, unit, rtol=1e-15)
    assert np.linalg.norm(E) == pytest.approx(np.linalg.norm(unit), rel=1e-14)


# ---------------------------------------------------------------------------------------
# Brute-force replace-one sensitivities of both releases
# ---------------------------------------------------------------------------------------
def _svec(H):
    rows, cols, weights = svec_indices(H.shape[0])
    return H[rows, cols] * weights


def _hessian_mean(problem, W):
    return hessian_sum(problem, W) / problem.spec.n_samples


@pytest.mark.parametrize("case", ["logistic", "multinomial", "huber", "smoothed_hinge",
                                  "smoothed_hinge_ovr", "squared", "gradient_clip"])
def test_brute_force_release_sensitivities(case):
    """Over random and adversarial neighbours (rows on the sphere, opposite rows, far-out
    rows clipped to the bound; labels flipped) and points ``W`` (small ones, where the
    logistic curvature is largest), the change of the gradient and of ``svec`` of the
    Hessian never exceeds the declared sensitivities, and adversarial pairs come close."""
    if case in ("logistic", "gradient_clip", "multinomial"):
        problem = make_problem(n=40, d=4, n_classes=3 if case == "multinomial" else 2,
                               seed=3, intercept=True)
    else:
        k = 3 if case == "smoothed_hinge_ovr" else 1
        loss = SmoothedHingeLoss(k, smoothing=0.5) if k == 3 else LOSSES[case]()
        rng = np.random.default_rng(3)
        X = rng.normal(size=(40, 4)) / 2.0
        Y = np.clip(rng.normal(size=(40, k)), -1, 1)
        if case.startswith("smoothed_hinge"):
            Y = np.where(Y > 0, 1.0, -1.0)
        spec = ProblemSpec(n_samples=40, n_params=5, n_outputs=k, n_penalized=4,
                           row_norm_bound=math.sqrt(2.0), loss=loss,
                           constraint=Unconstrained(), alpha=0.1, intercept_feature=1.0)
        problem = Problem.build(X, Y, spec, data_norm=1.0, intercept=1.0)
    solver = DPNewton(n_iter=3, clip_norm=0.05 if case == "gradient_clip" else
                      (5.0 if case == "squared" else None))
    plan = solver.plan(problem.spec, Budget(1.0, 1e-5), "gaussian", "replace_one")
    rng = np.random.default_rng(0)
    worst_g = worst_h = 0.0
    shape = (problem.spec.n_params, problem.spec.n_outputs)
    for _, other in _neighbours(problem, rng, 60):
        # Smoothed hinge: W = 0 puts every margin at 1, outside the quadratic zone; the
        # scales 0.05-0.5 put the margins into it.
        for scale in (0.0, 0.05, 0.2, 0.5, 1.0, 3.0):
            W = rng.normal(size=shape) * scale
            change_g = np.linalg.norm(problem.clipped_gradient(W, plan.clip_norm)
                                      - other.clipped_gradient(W, plan.clip_norm))
            change_h = np.linalg.norm(_svec(_hessian_mean(problem, W))
                                      - _svec(_hessian_mean(other, W)))
            worst_g = max(worst_g, change_g / plan.gradient_sensitivity)
            worst_h = max(worst_h, change_h / plan.hessian_sensitivity)
    assert worst_g <= 1 + 1e-12 and worst_h <= 1 + 1e-12
    assert worst_g > 0.5  # adversarial neighbours reach the bounds' order
    # One-vs-rest: above 1/sqrt(3), so the bound c R^2 without the sqrt(K) would be
    # exceeded.
    assert worst_h > (0.3 if case == "multinomial" else 0.6)


def test_hessian_bound_is_attained_by_orthogonal_rows():
    """Two orthogonal rows of norm R at the largest curvature: ``||D||_F = sqrt(2) c R^2``
    exactly (the declared sensitivity is tight)."""
    n = 5
    X = np.zeros((n, 3))
    X[0, 0] = 1.0
    X2 = X.copy()
    X2[0] = [0.0, 1.0, 0.0]
    Y = np.ones((n, 1))
    spec = ProblemSpec(n_samples=n, n_params=3, n_outputs=1, n_penalized=3,
                       row_norm_bound=1.0, loss=LogisticLoss(), constraint=Unconstrained(),
                       alpha=0.0)
    a, b = (Problem.build(Z, Y, spec, data_norm=1.0) for Z in (X, X2))
    plan = DPNewton(n_iter=1).plan(spec, Budget(1.0, 1e-5), "gaussian", "replace_one")
    W = np.zeros((3, 1))  # phi'' = 1/4 = c
    change = np.linalg.norm(_svec(_hessian_mean(a, W)) - _svec(_hessian_mean(b, W)))
    assert change == pytest.approx(plan.hessian_sensitivity, rel=1e-8)
    assert plan.hessian_sensitivity == pytest.approx(math.sqrt(2) * 0.25 / n, rel=1e-8)


def test_multinomial_frobenius_bound():
    """``||diag(p) - p p^T||_F <= 1/2`` over random and extreme ``p``, attained at
    ``p = (1/2, 1/2, 0, ...)`` for every ``K``."""
    rng = np.random.default_rng(0)
    from skdp.losses import MultinomialLogisticLoss
    for k in (2, 3, 5, 10):
        bound = hessian_frobenius_bound(MultinomialLogisticLoss(k), k)
        worst = 0.0
        extreme = [np.zeros(k), np.r_[0, 0, -50 * np.ones(k - 2)],
                   np.r_[0, -50 * np.ones(k - 1)]]
        for z in list(rng.normal(size=(2000, k)) * 3) + extreme:
            p = softmax(z)
            worst = max(worst, np.linalg.norm(np.diag(p) - np.outer(p, p)))
        assert worst <= bound * (1 + 1e-12)
        assert bound == 0.5
        assert worst == pytest.approx(bound, rel=1e-9)  # attained at p = (1/2, 1/2, 0...)


# ---------------------------------------------------------------------------------------
# epsilon = inf: the non-private optimum
# ---------------------------------------------------------------------------------------
def _optimum(problem):
    shape = (problem.spec.n_params, problem.spec.n_outputs)
    result = minimize(lambda w: problem.objective(w.reshape(shape)), np.zeros(np.prod(shape)),
                      jac=lambda w: problem.gradient(w.reshape(shape)).ravel(),
                      method="L-BFGS-B",
                      options={"gtol": 1e-14, "ftol": 0.0, "maxiter": 20_000})
    return result.x.reshape(shape)


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
@pytest.mark.parametrize("intercept", [False, True])
def test_epsilon_inf_reaches_the_non_private_optimum(loss_name, intercept):
    problem = _glm_problem(LOSSES[loss_name](), n=300, d=5, alpha=0.01, seed=1,
                           intercept=intercept)
    res = _solver(loss_name).solve(problem, Budget(math.inf, 0.0), 0)
    assert res.plan.n_iter == 100 and res.plan.sigma_gradient == res.plan.sigma_hessian == 0
    # Strongly convex in the penalised rows: ||w - w*|| <= ||grad F|| / alpha there.
    assert np.linalg.norm(problem.gradient(res.coef)) < 1e-10
    np.testing.assert_allclose(res.coef, _optimum(problem), atol=1e-8)


def test_epsilon_inf_matches_scikit_learn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)) / 2.0
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X @ np.array([2.0, -1.0, 0.5, 0.0]) + 0.3 * rng.logistic(size=500) > 0)
    n, alpha = len(y), 0.01
    spec = ProblemSpec(n_samples=n, n_params=5, n_outputs=1, n_penalized=4,
                       row_norm_bound=math.sqrt(2.0), loss=LogisticLoss(),
                       constraint=Unconstrained(), alpha=alpha, intercept_feature=1.0)
    problem = Problem.build(X, np.where(y, 1.0, -1.0)[:, None], spec, data_norm=1.0,
                            intercept=1.0)
    coef = DPNewton().solve(problem, Budget(math.inf, 0.0), 0).coef[:, 0]
    # sklearn: C sum_i loss + ||w||^2 / 2, i.e. C = 1 / (n alpha).
    sk = LogisticRegression(C=1.0 / (n * alpha), tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(coef, np.r_[sk.coef_[0], sk.intercept_], atol=1e-7)


def test_epsilon_inf_l1_constrained_optimum():
    problem = make_problem(n=200, d=5, alpha=0.01, seed=2, constraint=L1Ball(0.5))
    res = DPNewton().solve(problem, Budget(math.inf, 0.0), 0)
    assert np.abs(res.coef).sum() <= 0.5 + 1e-12
    ball = {"type": "ineq", "fun": lambda w: 0.5 - np.abs(w).sum()}
    best = minimize(lambda w: problem.objective(w[:, None]), np.full(5, 0.01),
                    method="SLSQP", constraints=[ball], options={"ftol": 1e-15,
                                                                 "maxiter": 1000})
    assert problem.objective(res.coef) <= best.fun + 1e-10


# ---------------------------------------------------------------------------------------
# The noise against the ledger
# ---------------------------------------------------------------------------------------
def _gradient_draws(plan):
    """The gradient noise's draws: one per step, and one more for the intercept row of
    every step after the first where the noise is shaped (``intercept_candidates``)."""
    return plan.n_iter + (plan.n_iter - 1 if plan.intercept_candidates else 0)


def _gradients_mu2(plan):
    """GDP ``mu^2`` of the ``T`` gradient releases from their noise scales alone: the
    first one's and the ``T - 1`` others'."""
    return ((plan.gradient_sensitivity / plan.sigma_first_gradient) ** 2
            + (plan.n_iter - 1) * (plan.gradient_sensitivity / plan.sigma_gradient) ** 2)


@pytest.mark.parametrize("accounting", ["gaussian", "rdp", "pld"])
@pytest.mark.parametrize("hessians", [4, 2])
@pytest.mark.parametrize("weight", [1.0, 0.25])
def test_noise_matches_the_ledger(accounting, hessians, weight):
    """T gradient draws and k draws of svec of the Hessian (at steps floor(j T / k)) of
    the planned scales; the ledger: k = T and an even split (``first_step_weight=1``), T
    Gaussians of the sensitivity-1 joint release with noise z; otherwise T gradient
    Gaussians (multiplier z / sqrt(rho) each at an even split; z / sqrt(rho beta) for the
    first and z sqrt((T - 1) / (T - beta)) / sqrt(rho) for the others at weight beta)
    composed with k Hessian ones of multiplier z sqrt(k / T) / sqrt(1 - rho) (mu^2 = T /
    z^2 in every case)."""
    problem = make_problem(n=80, d=30, alpha=0.05)
    noise = RecordingNoiseSource(np.random.default_rng(0))
    budget = Budget(1.0, 1e-5)
    T, k = 4, hessians
    res = DPNewton(n_iter=T, hessian_steps=k, first_step_weight=weight).solve(
        problem, budget, noise, accounting=accounting)
    s = res.plan
    assert s.n_hessian == k and s.first_step_weight == weight
    rho = s.gradient_share
    z_first = s.noise_multiplier / math.sqrt(rho * weight)
    z_later = s.noise_multiplier * math.sqrt((T - 1) / (T - weight)) / math.sqrt(rho)
    factor = 2.0 if accounting == "pld" else 1.0  # PLD replace-one convention

    def multiplier(event):
        return event.noise_multiplier / factor

    event = res.ledger.event
    if k == T and weight == 1.0:
        assert isinstance(event, dpe.SelfComposedDpEvent) and event.count == T
        assert multiplier(event.event) == pytest.approx(s.noise_multiplier, rel=1e-12)
    else:
        assert isinstance(event, dpe.ComposedDpEvent) and len(event.events) == 2
        grad_event, hess_event = event.events
        if weight == 1.0:
            assert grad_event.count == T
            assert multiplier(grad_event.event) == pytest.approx(z_later, rel=1e-12)
        else:
            first, later = grad_event.events
            assert first.count == 1 and later.count == T - 1
            assert multiplier(first.event) == pytest.approx(z_first, rel=1e-12)
            assert multiplier(later.event) == pytest.approx(z_later, rel=1e-12)
        assert hess_event.count == k
        assert multiplier(hess_event.event) == pytest.approx(
            s.noise_multiplier * math.sqrt(k / T) / math.sqrt(1 - rho), rel=1e-12)
    assert s.sigma_first_gradient == pytest.approx(z_first * s.gradient_sensitivity,
                                                   rel=1e-12)
    assert s.sigma_gradient == pytest.approx(z_later * s.gradient_sensitivity, rel=1e-12)
    assert s.sigma_hessian == pytest.approx(
        s.noise_multiplier * s.hessian_sensitivity * math.sqrt(k / T) / math.sqrt(1 - rho),
        rel=1e-12)
    draws = [v for kind, v in noise.draws if kind == "gaussian"]
    assert len(draws) == T + k
    D = problem.spec.dimension
    position = 0
    for step, fresh in enumerate(hessian_schedule(T, k)):
        # The scale asked of each draw, against the multipliers computed here (the
        # first one sqrt(5) = 2.24 times the others' at weight 1/4 and T = 4).
        expected = (z_first if step == 0 else z_later) * s.gradient_sensitivity
        assert noise.scales[position] == pytest.approx(expected, rel=1e-12)
        grad = draws[position]
        assert grad.shape == (D, 1)
        assert np.std(grad) == pytest.approx(expected, rel=0.4)  # 30 coordinates
        position += 1
        if fresh:
            assert noise.scales[position] == pytest.approx(
                s.noise_multiplier * s.hessian_sensitivity * math.sqrt(k / T)
                / math.sqrt(1 - rho), rel=1e-12)
            hess = draws[position]
            assert hess.shape == (D * (D + 1) // 2,)
            # 465 Hessian coordinates (10% is > 3 sd).
            assert np.std(hess) == pytest.approx(s.sigma_hessian, rel=0.1)
            position += 1
    # Independent re-accounting from the noise scales alone (GDP): mu^2 = Dg^2 / sg1^2 +
    # (T - 1) Dg^2 / sg^2 + k DH^2 / sH^2, and the analytic Gaussian delta at epsilon.
    mu = math.sqrt(_gradients_mu2(s) + k * (s.hessian_sensitivity / s.sigma_hessian) ** 2)
    assert math.exp(gaussian_log_delta(mu, 1.0)) <= 1e-5 * (1 + 1e-9)
    if accounting == "gaussian":  # exact: the whole budget
        assert math.exp(gaussian_log_delta(mu, 1.0)) == pytest.approx(1e-5, rel=1e-6)
        assert s.noise_multiplier == pytest.approx(analytic_gaussian_multiplier(budget, T))
    assert res.spent.epsilon <= 1.0


def test_ledger_is_gd_with_unit_sensitivity():
    """The same ledger as DP-GD's T releases (the per-iteration vector has sensitivity 1)."""
    problem = make_problem(n=100, d=3)
    budget = Budget(0.7, 1e-6)
    for accounting in ("gaussian", "rdp"):
        newton = DPNewton(n_iter=6, hessian_steps=6).plan(problem.spec, budget, accounting,
                                                          "replace_one")
        gd = NoisyGD(n_iter=6).plan(problem.spec, budget, accounting, "replace_one")
        assert newton.noise_multiplier == gd.noise_multiplier
        # The default schedule (two Hessians, at steps 0 and 3): the composed ledger has
        # the same mu^2 = T / z^2, exactly the same z with "gaussian"; its RDP curve is
        # the same, so "rdp" calibrates it to the same z (to its search's tolerance).
        scheduled = DPNewton(n_iter=6).plan(problem.spec, budget, accounting, "replace_one")
        assert scheduled.n_hessian == 2
        assert scheduled.noise_multiplier == pytest.approx(gd.noise_multiplier, rel=1e-3)


def test_zero_signal_output_is_the_scaled_gradient_noise():
    """All-zero rows: the gradient and loss Hessian vanish; with a floor far above the
    Hessian noise every eigenvalue is floored, so one step is ``-noise / lambda_0``:
    a chi-square test of its variance ``(sigma_g / lambda_0)^2`` (failure prob. 1e-6)."""
    d = 400
    problem = make_problem(n=50, d=d, zero=True, alpha=0.01)
    solver = DPNewton(n_iter=1, floor_margin=10.0, max_score_step=None)
    res = solver.solve(problem, Budget(1.0, 1e-5), 123)
    var = (res.plan.sigma_gradient / res.plan.hessian_floor) ** 2
    stat = float(np.sum(res.coef**2) / var)
    assert chi2.ppf(5e-7, d) < stat < chi2.ppf(1 - 5e-7, d)


# ---------------------------------------------------------------------------------------
# Public plan, parameters, refusals
# ---------------------------------------------------------------------------------------
def test_defaults_and_budget_split():
    problem = make_problem(n=1000, d=5, alpha=0.01)
    plan = DPNewton().plan(problem.spec, Budget(1.0, 1e-5), "gaussian", "replace_one")
    assert plan.n_iter == 10 and plan.gradient_share == 0.95 and plan.max_score_step == 4.0
    # A quarter of an even split for the first gradient, the rest evenly to the others.
    assert plan.first_step_weight == 0.25
    assert plan.sigma_first_gradient == pytest.approx(
        plan.sigma_gradient * math.sqrt((10 - 0.25) / (9 * 0.25)), rel=1e-12)
    # The floor: alpha plus the typical operator norm of the Hessian noise.
    assert plan.hessian_floor == pytest.approx(
        0.01 + math.sqrt(2 * 5) * plan.sigma_hessian, rel=1e-12)
    squared = DPNewton(clip_norm=1.0).plan(make_problem(loss="squared").spec,
                                           Budget(1.0, 1e-5), "gaussian", "replace_one")
    assert squared.max_score_step == math.inf
    # The piecewise-quadratic losses: twice the width of the quadratic zone.
    for loss, radius in ((HuberLoss(0.3, label_bound=1.0), 0.6),
                         (SmoothedHingeLoss(smoothing=0.2), 0.4)):
        spec = _glm_problem(loss).spec
        plan = DPNewton().plan(spec, Budget(1.0, 1e-5), "gaussian", "replace_one")
        assert plan.max_score_step == pytest.approx(radius)
        # Their curvature jumps: a Hessian at each of the 10 steps.
        assert plan.n_iter == plan.n_hessian == 10
    assert DPNewton(max_score_step=None).plan(
        problem.spec, Budget(1.0, 1e-5), "gaussian", "replace_one").max_score_step == math.inf


def test_average_restarts_after_a_damped_step():
    """``iterate="average"`` equals the mean of the undamped iterates after the last
    damped step but the first, recomputed from the solver's own steps (post-processing
    of the releases)."""
    problem = make_problem(n=100, d=4, alpha=0.01, seed=6, intercept=True)
    solver = DPNewton(n_iter=6, max_score_step=1.5, iterate="average", hessian_steps=6,
                      intercept_scale=None)
    # With these seeds the steps run full, damped, full, full, full, full.
    noise = RecordingNoiseSource(np.random.default_rng(1))
    res = solver.solve(problem, Budget(1.0, 1e-5), noise)
    replay = ReplayNoiseSource(noise.draws)
    W, kept, damped_any = np.zeros((5, 1)), [], False
    for _ in range(6):
        grad = problem.clipped_gradient(W, res.plan.clip_norm) + replay.next("gaussian")
        hess = hessian_sum(problem, W) / 100 + symmetric_noise(replay.next("gaussian"), 5)
        W, damped = solver.newton_step(W, grad, hess, res.plan, problem.spec)
        damped_any |= damped
        kept = [] if damped else kept + [W]
    assert damped_any and len(kept) >= 3, len(kept)  # both branches ran; one left out
    np.testing.assert_allclose(res.coef, sum(kept[1:]) / len(kept[1:]), rtol=1e-12,
                               atol=1e-15)


def test_standard_errors_carry_the_averaged_steps_own_noise():
    """``Inference.noise_covariance`` is ``sum_t sigma_t^2 / m^2`` over the ``m`` averaged
    steps (the first step, of its own larger scale, is left out of the average), the last
    step's ``sigma^2`` for ``iterate="last"``, and the first step's at ``T = 1`` (where
    there is no split: its weight is 1 and the ledger one joint release). Isotropic noise
    (``intercept_scale=None``; the intercept's own share is tested below)."""
    problem = make_problem(n=400, d=3, alpha=0.05, seed=2, intercept=True)
    budget = Budget(1.0, 1e-5)
    for iterate in ("average", "last"):
        res = DPNewton(n_iter=5, max_score_step=None, iterate=iterate,
                       intercept_scale=None).solve(problem, budget, 0)
        plan, D = res.plan, problem.spec.dimension
        assert plan.first_step_weight == 0.25
        assert plan.sigma_first_gradient > 2 * plan.sigma_gradient
        # No step is damped (no trust radius): steps 1-4 averaged, step 0 left out.
        variance = plan.sigma_gradient**2 / 4 if iterate == "average" else (
            plan.sigma_gradient**2)
        np.testing.assert_allclose(res.inference.noise_covariance, variance * np.eye(D),
                                   rtol=1e-12)
    one = DPNewton(n_iter=1, first_step_weight=0.25).solve(problem, budget, 0)
    assert one.plan.first_step_weight == 1.0
    assert one.plan.sigma_first_gradient == one.plan.sigma_gradient
    assert isinstance(one.ledger.event, dpe.SelfComposedDpEvent)  # k = T = 1: joint
    np.testing.assert_allclose(one.inference.noise_covariance,
                               one.plan.sigma_gradient**2 * np.eye(D), rtol=1e-12)
    # A damped step restarts the average: the steps after it but the first, each of the
    # later steps' scale.
    solver = DPNewton(n_iter=6, max_score_step=1.5, iterate="average", hessian_steps=6,
                      intercept_scale=None)
    small = make_problem(n=100, d=4, alpha=0.01, seed=6, intercept=True)
    noise = RecordingNoiseSource(np.random.default_rng(1))
    res = solver.solve(small, budget, noise)
    replay = ReplayNoiseSource(noise.draws)
    W, kept = np.zeros((5, 1)), []
    for _ in range(6):
        grad = small.clipped_gradient(W, res.plan.clip_norm) + replay.next("gaussian")
        hess = hessian_sum(small, W) / 100 + symmetric_noise(replay.next("gaussian"), 5)
        W, damped = solver.newton_step(W, grad, hess, res.plan, small.spec)
        kept = [] if damped else kept + [W]
    m = len(kept) - 1
    assert m >= 2
    np.testing.assert_allclose(res.inference.noise_covariance,
                               res.plan.sigma_gradient**2 / m * np.eye(5), rtol=1e-12)


def test_refuses_hinge_and_huge_dimensions():
    from skdp.losses import HingeLoss

    problem = _glm_problem(LogisticLoss())
    spec = problem.spec
    from dataclasses import replace
    with pytest.raises(IncompatibleSolverError):
        DPNewton().check(replace(spec, loss=HingeLoss()), Budget(1.0, 1e-5))
    with pytest.raises(IncompatibleSolverError, match="Hessian"):
        DPNewton().check(replace(spec, n_params=MAX_DIMENSION // 2 + 1, n_outputs=3,
                                 n_penalized=MAX_DIMENSION // 2 + 1,
                                 loss=__import__("skdp").losses.MultinomialLogisticLoss(3)),
                         Budget(1.0, 1e-5))
    with pytest.raises(ValueError):
        DPNewton(gradient_share=1.0).check(spec, Budget(1.0, 1e-5))
    with pytest.raises(ValueError):
        DPNewton(floor_margin=math.inf).check(spec, Budget(1.0, 1e-5))


def test_curvature_is_clipped_to_the_declared_bound():
    from skdp.solvers.newton import curvature

    class Wild(LogisticLoss):
        curvature_bound = 0.1  # tighter than the truth: the weights obey it anyway

    Z = np.linspace(-3, 3, 13)[:, None]
    c = curvature(Wild(), Z, np.ones_like(Z))
    assert np.all(c <= 0.1) and np.all(c >= 0)
    np.testing.assert_allclose(curvature(LogisticLoss(), Z, np.ones_like(Z)),
                               expit(Z) * expit(-Z))


def solver_cases():
    from skdp.losses import LogisticLoss
    from skdp.solvers import DPNewton
    from tests.solvers._cases import AuditCase, SolverCases

    return {"newton": SolverCases(
        fast=lambda: DPNewton(n_iter=4),
        converged=lambda: DPNewton(n_iter=50),
        sensitivity=("test_newton.py", "test_brute_force_release_sensitivities"),
        # One step with every eigenvalue floored (margin 10 above the Hessian noise's
        # operator norm) and no trust cap: the output is -g~ / lambda_0, a Gaussian
        # mechanism on the gradient. The label flip leaves the logistic Hessian unchanged
        # (phi'' is even in the label), and clip_norm = data_norm / 4 keeps the canary's
        # gradient at +-C on both sides (2C apart, the gradient sensitivity). The gradient
        # gets rho = 0.95 of mu^2. Measured (seeds 0-3, confidence 0.99): real <= 0.48,
        # twin (noise / 5) bound in [3.11, 3.55].
        audits=(AuditCase(lambda: DPNewton(n_iter=1, clip_norm=0.25, gradient_share=0.95,
                                           floor_margin=10.0, max_score_step=None),
                          LogisticLoss, alpha=0.0, epsilon=2.0, delta=1e-5, n_trials=2000),),
        zero_signal_elsewhere="the output is -noise / lambda_0 only when the floor "
                              "dominates the Hessian noise (d = 3000 exceeds the solver's "
                              "2048 Hessian dimensions): test_newton.py tests it at d = 400",
    )}


@pytest.mark.parametrize("kind", ["dask", "sparse"])
@pytest.mark.parametrize("classes", [[0, 1], [0, 1, 2]])
def test_dask_and_sparse_inputs_fit_like_the_dense_array(kind, classes):
    """Same seed, same plan: a dask array (chunks summed in another order) and a CSR
    matrix give the dense fit's coefficients to relative 1e-10."""
    import warnings

    from skdp.linear_model import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 6)) / np.sqrt(6) * rng.uniform(0.3, 2.0, size=(3000, 1))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = np.digitize(X[:, 1] + 0.3 * rng.standard_normal(3000), [-0.3, 0.3])
    y = y if len(classes) == 3 else (y > 0).astype(int)
    if kind == "dask":
        da = pytest.importorskip("dask.array")
        other = da.from_array(X, chunks=(700, 6))
    else:
        import scipy.sparse as sp
        other = sp.csr_matrix(X)

    def fit(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DPLogisticRegression(solver="newton", alpha=0.01, classes=classes,
                                        epsilon=1.0, delta=1e-5, data_norm=1.0,
                                        random_state=0).fit(data, y)

    dense, out = fit(X), fit(other)
    np.testing.assert_allclose(out.coef_, dense.coef_, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(out.intercept_, dense.intercept_, rtol=1e-10, atol=1e-13)


# ---------------------------------------------------------------------------------------
# The dispersion release (squared and Huber losses: their standard errors)
# ---------------------------------------------------------------------------------------
def _dispersion_terms_reference(problem, W, bound):
    """Per row ``[min(psi^2, B^2) / B^2, min(phi'', c) / c]`` from the plain formulas."""
    loss, c = problem.spec.loss, float(problem.spec.loss.curvature_bound)
    X, Y = problem.X, problem.Y
    rows = np.hstack([X, np.full((len(X), 1), problem.intercept)]) if problem.intercept \
        else X
    scale = np.minimum(1.0, 1.0 / np.maximum(np.linalg.norm(X, axis=1), 1e-300))
    out = []
    for i in range(len(X)):
        x = rows[i].copy()
        x[:X.shape[1]] *= scale[i]
        z = float(x @ W[:, 0])
        psi = float(loss.derivative(np.array([[z]]), Y[i:i + 1])[0, 0])
        curv = _example_curvature(loss, np.array([z]), Y[i])[0, 0]
        out.append([min(psi * psi, bound * bound) / bound**2, min(max(curv, 0.0), c) / c])
    return np.array(out)


@pytest.mark.parametrize("loss_name", ["huber", "squared"])
@pytest.mark.parametrize("accounting", ["gaussian", "rdp", "pld"])
def test_dispersion_release_matches_its_ledger_and_a_reference(loss_name, accounting):
    """The squared and Huber losses release one more vector, after the iterations: the
    mean of ``[psi^2 / B^2, phi'' / c]`` at the output plus ``N(0, sigma_d^2)`` per
    coordinate, ``sigma_d = z sqrt(2) / (n sqrt(s T))``; the ledger composes it in
    (multiplier ``z / sqrt(s T)``) and the iterations' multipliers shrink by ``sqrt(1 -
    s)``, so ``mu^2 = T / z^2`` still. The dispersion equals a plain reference fed the
    same draw; the logistic loss releases none."""
    problem = _glm_problem(LOSSES[loss_name](), n=200, intercept=True)
    budget = Budget(1.0, 1e-5)
    noise = RecordingNoiseSource(np.random.default_rng(3))
    res = _solver(loss_name).solve(problem, budget, noise, accounting=accounting)
    s, plan = DISPERSION_SHARE, res.plan
    T, k = plan.n_iter, plan.n_hessian
    assert plan.dispersion_share == s
    z = plan.noise_multiplier
    assert plan.sigma_dispersion == pytest.approx(
        z * math.sqrt(2.0) / (200 * math.sqrt(s * T)), rel=1e-12)
    beta, rho = plan.first_step_weight, plan.gradient_share
    assert plan.sigma_gradient == pytest.approx(
        z * plan.gradient_sensitivity * math.sqrt((T - 1) / (T - beta))
        / math.sqrt(rho * (1 - s)), rel=1e-12)
    assert plan.sigma_first_gradient == pytest.approx(
        z * plan.gradient_sensitivity / math.sqrt(beta * rho * (1 - s)), rel=1e-12)
    factor = 2.0 if accounting == "pld" else 1.0  # PLD replace-one convention
    events = res.ledger.event.events
    assert events[-1].noise_multiplier / factor == pytest.approx(z / math.sqrt(s * T),
                                                                 rel=1e-12)
    draws = [v for kind, v in noise.draws if kind == "gaussian"]
    assert len(draws) == _gradient_draws(plan) + k + 1 and draws[-1].shape == (2,)
    # Independent re-accounting from the noise scales alone (GDP).
    mu = math.sqrt(_gradients_mu2(plan)
                   + k * (plan.hessian_sensitivity / plan.sigma_hessian) ** 2
                   + (math.sqrt(2.0) / 200 / plan.sigma_dispersion) ** 2)
    assert math.exp(gaussian_log_delta(mu, 1.0)) <= 1e-5 * (1 + 1e-9)
    assert res.spent.epsilon <= 1.0
    # The reference, fed the recorded draw.
    bound, c = plan.dispersion_bound, float(problem.spec.loss.curvature_bound)
    means = _dispersion_terms_reference(problem, res.coef, bound).mean(axis=0) + draws[-1]
    floor = max(plan.sigma_dispersion, 1 / 200)
    first = min(max(means[0], floor), 1.0)
    second = min(max(means[1], floor), 1.0)
    assert res.inference.dispersion == pytest.approx(bound**2 * first / (c * second),
                                                     rel=1e-9)
    logistic = _solver("logistic").solve(_glm_problem(LogisticLoss()), budget, 0)
    assert logistic.plan.dispersion_share == 0.0 and logistic.inference.dispersion == 1.0


@pytest.mark.parametrize("loss_name", ["logistic", "squared", "huber"])
def test_a_fit_without_standard_errors_skips_what_only_they_read(loss_name):
    """``spec.inference`` false: no Hessian near the output (one release, at step 0, for
    the losses of positive curvature; the Huber loss keeps one per step) and no dispersion
    release; no ``Inference`` comes back; the draws are the ledger's (T gradients, k
    Hessians) and it re-accounts within the budget; the coefficients equal a plan with
    the same schedule set by hand (``hessian_steps``), fed the same seed."""
    budget = Budget(1.0, 1e-5)
    problem = _glm_problem(LOSSES[loss_name](), n=200, intercept=True, inference=False)
    noise = RecordingNoiseSource(np.random.default_rng(5))
    res = _solver(loss_name).solve(problem, budget, noise)
    plan = res.plan
    T, k = plan.n_iter, plan.n_hessian
    assert k == (T if loss_name == "huber" else 1)
    assert plan.dispersion_share == 0.0 and res.inference is None and not plan.inference
    draws = [v for kind, v in noise.draws if kind == "gaussian"]
    assert len(draws) == _gradient_draws(plan) + k
    mu = math.sqrt(_gradients_mu2(plan)
                   + k * (plan.hessian_sensitivity / plan.sigma_hessian) ** 2)
    assert math.exp(gaussian_log_delta(mu, 1.0)) <= 1e-5 * (1 + 1e-9)
    assert res.spent.within(budget)
    # The same schedule asked for by hand, with standard errors: the dispersion then
    # takes its share, so compare where there is none (logistic).
    if loss_name == "logistic":
        by_hand = _solver(loss_name, hessian_steps=1).solve(
            _glm_problem(LOSSES[loss_name](), n=200, intercept=True), budget, 5)
        np.testing.assert_array_equal(by_hand.coef, _solver(loss_name).solve(
            problem, budget, 5).coef)
        assert by_hand.inference is not None
    # A constraint rules standard errors out whatever the flag (spec.standard_errors):
    # the same one-Hessian, no-dispersion plan.
    constrained = _glm_problem(LOSSES[loss_name](), n=200, intercept=True,
                               constraint=L2Ball(5.0)).spec
    assert constrained.inference and not constrained.standard_errors
    plan_c = _solver(loss_name).plan(constrained, budget, "gaussian", "replace_one")
    assert (plan_c.n_hessian, plan_c.dispersion_share, plan_c.inference) == (k, 0.0, False)
    with_se = _solver(loss_name).plan(
        _glm_problem(LOSSES[loss_name](), n=200, intercept=True).spec, budget, "gaussian",
        "replace_one")
    assert with_se.n_hessian == (T if loss_name == "huber" else 2)
    assert (with_se.dispersion_share > 0) == (loss_name != "logistic")


@pytest.mark.parametrize("loss_name", ["huber", "squared"])
def test_dispersion_terms_have_sensitivity_sqrt2_over_n(loss_name):
    """Brute force over random and adversarial replacements of one record: the released
    mean moves by at most ``sqrt(2) / n`` (each row's vector lies in ``[0, 1]^2``)."""
    problem = _glm_problem(LOSSES[loss_name](), n=60, intercept=True)
    plan = _solver(loss_name).plan(problem.spec, Budget(1.0, 1e-5), "gaussian",
                                   "replace_one")
    c = float(problem.spec.loss.curvature_bound)
    rng = np.random.default_rng(0)
    W = rng.normal(size=(problem.spec.n_params, 1)) * 3
    args = (W, problem.spec.loss, plan.dispersion_bound, c)
    base = problem.block_sum(_dispersion_block, (2,), *args) / 60
    worst = 0.0
    for _, other in _neighbours(problem, rng, 60):
        moved = other.block_sum(_dispersion_block, (2,), *args) / 60
        worst = max(worst, float(np.linalg.norm(moved - base)))
    assert 0 < worst <= math.sqrt(2.0) / 60 * (1 + 1e-12)


def test_dispersion_release_audit_on_neighbouring_data_sets():
    """DP Newton's own release (``noisy_dispersion`` at its plan's noise) on two
    neighbouring data sets of 50 Huber rows at ``W = 0``: one record inside the quadratic
    zone (``psi^2 = 0``, ``phi'' = 1``) replaced by one beyond it (``psi^2 = B^2``,
    ``phi'' = 0``), both terms moving by their whole range; the other rows half inside,
    half beyond (no clip of the means binds). 20000 releases each; the fit's budget is
    epsilon 10, so that the release alone (``mu_d^2 = s T / z^2``) is worth an epsilon
    the audit resolves (about 1.06 at delta 1e-5). The released dispersion is not
    flagged at that epsilon; the plan with a fifth of the noise is."""
    from dataclasses import replace

    from skdp.privacy.noise import NoiseSource

    n, budget = 50, Budget(10.0, 1e-5)
    loss = HuberLoss(0.5, label_bound=1.0)
    X = np.zeros((n, 2))
    X[:, 0] = 1.0
    Y = np.where(np.arange(n) % 2 == 0, 0.25, 1.0)[:, None]  # inside / beyond the zone
    spec = ProblemSpec(n_samples=n, n_params=2, n_outputs=1, n_penalized=2,
                       row_norm_bound=1.0, loss=loss, constraint=Unconstrained(),
                       alpha=0.05)
    solver = DPNewton()
    plan = solver.plan(spec, budget, "gaussian", "replace_one")
    W = np.zeros((2, 1))
    worlds = []
    for label in (0.0, 1.0):  # the record: psi = 0 inside the zone, psi = -0.5 beyond
        Y2 = Y.copy()
        Y2[0] = label
        worlds.append(Problem.build(X, Y2, spec, data_norm=1.0, intercept=0.0))
    mu = math.sqrt(DISPERSION_SHARE * plan.n_iter) / plan.noise_multiplier
    eps = brentq(lambda e: gaussian_log_delta(mu, e) - math.log(1e-5), 1e-6, 50)

    def runs(p, seed):
        noise = NoiseSource(np.random.default_rng(seed))
        return [np.array([solver.noisy_dispersion(problem, p, W, noise)
                          for _ in range(20000)]) for problem in worlds]

    s0, s1 = runs(plan, 0)
    assert not audit_scores(s0, s1, epsilon=eps, delta=1e-5).violated
    twin = replace(plan, sigma_dispersion=plan.sigma_dispersion / 5)
    s0, s1 = runs(twin, 1)
    assert audit_scores(s0, s1, epsilon=eps, delta=1e-5).violated


# ---------------------------------------------------------------------------------------
# The intercept's share of the gradient noise (intercept_scale)
# ---------------------------------------------------------------------------------------
def _weighted_gradient(x, residual, c0, c, clip):
    """One clipped per-example gradient ``clip_C(r (x, c0))`` with its intercept entry
    divided by ``c0 / c`` (the metric of the shaped noise), plain numpy."""
    row = np.append(x, c0) * residual
    norm = np.linalg.norm(row)
    if norm > clip:
        row = row * (clip / norm)
    row[-1] *= c / c0
    return row


@pytest.mark.parametrize("clip", [0.3, 10.0])
@pytest.mark.parametrize("c", [0.1, 0.5, 1.0, 2.0])
def test_intercept_noise_bound_holds_and_is_attained(c, clip):
    """Brute force over rows of norm up to ``B = 1`` (``c0 = 1/2``) and residuals up to
    ``G = 1``: two per-example gradients differ by at most ``2 U(c)`` in the weighted
    metric, and the worst pair reaches it to 1e-9 (a binding clip: ``clip = 0.3``, or
    none: ``10``)."""
    from skdp.solvers.newton import intercept_noise_bound

    c0, B, G = 0.5, 1.0, 1.0
    U = intercept_noise_bound(c, clip=clip, feature_bound=B, intercept=c0,
                              derivative_bound=G)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(4000):
        x1, x2 = (rng.normal(size=3) for _ in range(2))
        x1 *= rng.choice([0.0, rng.uniform(), 1.0]) / np.linalg.norm(x1)
        x2 *= rng.choice([0.0, rng.uniform(), 1.0]) / np.linalg.norm(x2)
        r1, r2 = rng.choice([-G, G, rng.uniform(-G, G)], size=2)
        gap = np.linalg.norm(_weighted_gradient(x1, r1, c0, c, clip)
                             - _weighted_gradient(x2, r2, c0, c, clip))
        worst = max(worst, float(gap))
    assert worst <= 2 * U * (1 + 1e-12)
    # The extreme pair: the same row at residuals +G and -G, of norm B or 0 (the first
    # where the weighted metric shrinks the intercept or the clip does not bind).
    pair = max(np.linalg.norm(_weighted_gradient(x, G, c0, c, clip)
                              - _weighted_gradient(x, -G, c0, c, clip))
               for x in (np.array([B, 0.0, 0.0]), np.zeros(3)))
    assert pair == pytest.approx(2 * U, rel=1e-9)


def _choice_reference(problem, plan, unit):
    """``intercept_scale="auto"``'s choice from the first released Hessian, plain numpy:
    ``A = H~_0 + alpha I_pen`` floored, then the grid's ``c`` minimising ``U(c)^2 (t_w +
    (c0 / c)^2 t_b)``, ``U`` from its closed form."""
    from skdp.solvers.newton import INTERCEPT_SCALES

    spec = problem.spec
    D, K = spec.dimension, spec.n_outputs
    H = hessian_sum(problem, np.zeros((spec.n_params, K))) / spec.n_samples
    H = H + symmetric_noise(unit, D)
    H[np.arange(spec.n_penalized * K), np.arange(spec.n_penalized * K)] += spec.alpha
    values, vectors = np.linalg.eigh(H)
    inverse = (vectors * (1 / np.maximum(values, plan.hessian_floor))) @ vectors.T
    t_w, t_b = np.trace(inverse[:-K, :-K]), np.trace(inverse[-K:, -K:])
    B, c0, C = plan.feature_bound, plan.intercept_feature, plan.clip_norm
    G = plan.derivative_bound

    def risk(c):
        U = min(C * max(math.sqrt((B * B + c * c) / (B * B + c0 * c0)), c / c0),
                G * math.sqrt(B * B + c * c))
        return U * U * (t_w + (c0 / c) ** 2 * t_b)

    return min((s * B for s in INTERCEPT_SCALES), key=risk)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_shaped_noise_matches_the_ledger_and_the_choice(n_classes):
    """``intercept_scale="auto"``: the first step's gradient noise is isotropic; after it
    each gradient release draws the feature rows at ``s U(c) / C`` and the intercept row
    at ``c0 / c`` times that (``s`` the plan's scale), ``c`` the grid's value a plain
    reference picks from the first released Hessian. The ledger is the one of
    ``intercept_scale=None`` and re-accounts from the scales: each release's noise over
    its weighted sensitivity ``2 U(c) / n`` is the planned multiplier."""
    problem = make_problem(n=300, d=6, n_classes=n_classes, alpha=0.05, seed=3,
                           intercept=True, declare_intercept=True)
    spec = problem.spec
    budget = Budget(1.0, 1e-5)
    noise = RecordingNoiseSource(np.random.default_rng(4))
    res = DPNewton(n_iter=4).solve(problem, budget, noise)
    plan = res.plan
    flat = DPNewton(n_iter=4, intercept_scale=None).solve(problem, budget, 0)
    assert res.ledger.event == flat.ledger.event
    assert not flat.plan.intercept_candidates and len(plan.intercept_candidates) == 17
    K, n = spec.n_outputs, spec.n_samples
    draws = [v for kind, v in noise.draws if kind == "gaussian"]
    assert len(draws) == 1 + 1 + 2 * 3 + 1  # step 0: gradient, Hessian; 3 shaped steps
    assert noise.scales[0] == pytest.approx(plan.sigma_first_gradient, rel=1e-12)
    c = _choice_reference(problem, plan, draws[1])
    assert c in plan.intercept_candidates
    B, c0 = plan.feature_bound, plan.intercept_feature
    U = min(plan.clip_norm * max(math.sqrt((B * B + c * c) / (B * B + c0 * c0)), c / c0),
            plan.derivative_bound * math.sqrt(B * B + c * c))
    position = 2
    for step in range(1, 4):
        features, intercept = noise.scales[position:position + 2]
        assert draws[position].shape == (spec.n_params - 1, K)
        assert draws[position + 1].shape == (1, K)
        # The multiplier over the weighted sensitivity is the plan's.
        assert features / (2 * U / n) == pytest.approx(
            plan.sigma_gradient / plan.gradient_sensitivity, rel=1e-12)
        assert intercept == pytest.approx(features * c0 / c, rel=1e-12)
        position += 2 + (1 if step == 2 else 0)  # the second Hessian at step 2
    # GDP re-accounting from the scales: the same mu^2 as the isotropic plan.
    mu = math.sqrt(_gradients_mu2(plan) + 2 * (plan.hessian_sensitivity
                                               / plan.sigma_hessian) ** 2)
    assert math.exp(gaussian_log_delta(mu, 1.0)) == pytest.approx(1e-5, rel=1e-6)


def test_shaped_noise_standard_errors_and_settings():
    """The standard errors' noise covariance is diagonal, the intercept row's entries
    ``(c0 / c)^2`` times the others'; ``intercept_scale`` as a number fixes ``c``;
    nothing is shaped without an intercept, at ``epsilon = inf`` or with ``None``; a
    non-finite value is refused."""
    problem = make_problem(n=400, d=3, alpha=0.05, seed=2, intercept=True,
                           declare_intercept=True)
    budget = Budget(1.0, 1e-5)
    noise = RecordingNoiseSource(np.random.default_rng(0))
    res = DPNewton(n_iter=5, max_score_step=None, intercept_scale=0.25).solve(
        problem, budget, noise)
    plan = res.plan
    assert plan.intercept_candidates == (0.25 * plan.feature_bound,)
    features, intercept = noise.scales[2:4]  # step 1's two draws
    cov = np.diag(res.inference.noise_covariance)
    # Steps 1-4 averaged (no damping), each of the later steps' scales.
    np.testing.assert_allclose(cov, np.r_[[features**2 / 4] * 3, intercept**2 / 4],
                               rtol=1e-12)
    assert intercept / features == pytest.approx(
        plan.intercept_feature / (0.25 * plan.feature_bound), rel=1e-12)
    assert np.count_nonzero(res.inference.noise_covariance - np.diag(cov)) == 0
    spec = problem.spec
    for solver, budget_ in ((DPNewton(intercept_scale=None), budget),
                            (DPNewton(), Budget(math.inf, 0.0))):
        assert solver.plan(spec, budget_, "gaussian", "replace_one"
                           ).intercept_candidates == ()
    no_intercept = make_problem(n=400, d=3, alpha=0.05).spec
    assert DPNewton().plan(no_intercept, budget, "gaussian", "replace_one"
                           ).intercept_candidates == ()
    with pytest.raises(ValueError, match="intercept_scale"):
        DPNewton(intercept_scale=math.inf).check(spec, budget)


def test_shaped_gradient_release_audit_on_neighbouring_data_sets():
    """The shaped release (``noisy_gradient`` after the first step, ``c = c0 / 4``) on two
    neighbouring data sets of 40 squared-loss rows at ``W = 0``: one record of norm ``B``
    at label ``+5`` replaced by itself at ``-5`` (the clip binds: the weighted gradient
    moves by ``2 U(c) / n``, the worst case). Scores: the likelihood-ratio statistic of
    the two worlds' means (post-processing). 20000 releases each at the plan's noise for
    epsilon 30 over ``T = 10`` steps, so that one release is worth an epsilon the audit
    resolves; not flagged at that epsilon, flagged with a fifth of the noise."""
    from dataclasses import replace

    from skdp.privacy.noise import NoiseSource

    n, c0 = 40, 0.5
    X = np.zeros((n, 3))
    X[:, 0] = 1.0
    Y = np.where(np.arange(n) % 2 == 0, 0.5, -0.5)[:, None]
    spec = ProblemSpec(n_samples=n, n_params=4, n_outputs=1, n_penalized=3,
                       row_norm_bound=math.hypot(1.0, c0), loss=SquaredLoss(5.0),
                       constraint=Unconstrained(), alpha=0.05, intercept_feature=c0,
                       inference=False)
    solver = DPNewton(clip_norm=0.5, intercept_scale=0.125)
    plan = solver.plan(spec, Budget(30.0, 1e-5), "gaussian", "replace_one")
    c = plan.intercept_candidates[0]
    assert c == pytest.approx(0.125 * plan.feature_bound)
    worlds = []
    for label in (5.0, -5.0):
        Y2 = Y.copy()
        Y2[0] = label
        worlds.append(Problem.build(X, Y2, spec, data_norm=1.0, intercept=c0))
    W = np.zeros((4, 1))
    means = [p.clipped_gradient(W, plan.clip_norm) for p in worlds]
    features, intercept = plan.gradient_scales(1, c)
    scale = np.array([features] * 3 + [intercept])[:, None]
    direction = (means[1] - means[0]) / scale**2
    # The release's mu: its noise over the weighted sensitivity, which the pair attains.
    mu = float(np.linalg.norm((means[1] - means[0]) / scale))
    assert mu == pytest.approx(plan.gradient_sensitivity / plan.sigma_gradient, rel=1e-6)
    eps = brentq(lambda e: gaussian_log_delta(mu, e) - math.log(1e-5), 1e-6, 50)

    def runs(p, seed):
        noise = NoiseSource(np.random.default_rng(seed))
        return [np.array([float(np.sum(solver.noisy_gradient(problem, p, W, noise, 1, c)
                                       * direction)) for _ in range(20000)])
                for problem in worlds]

    s0, s1 = runs(plan, 0)
    assert not audit_scores(s0, s1, epsilon=eps, delta=1e-5).violated
    twin = replace(plan, sigma_gradient=plan.sigma_gradient / 5)
    s0, s1 = runs(twin, 1)
    assert audit_scores(s0, s1, epsilon=eps, delta=1e-5).violated


def replace_loss(spec, loss):
    """``spec`` with another loss."""
    from dataclasses import replace

    return replace(spec, loss=loss)


def test_shaped_noise_trusts_only_an_enforced_derivative_bound():
    """A subclass of a built-in loss may compute a derivative above its declared bound
    (here three times the logistic one): the clip still bounds the isotropic release,
    and the shaped one must rely on the clip alone (``G = inf``), so that a zero-feature
    row at labels +1 and -1 moves the weighted mean gradient by at most ``2 U(c) / n``
    also above ``c0`` (found by the review of the change)."""

    class Steep(LogisticLoss):
        def derivative(self, Z, Y):
            return 3.0 * super().derivative(Z, Y)

        def derivative_inplace(self, Z, Y):
            return 3.0 * super().derivative_inplace(Z, Y)

    n, c0 = 10, 1.0
    spec = ProblemSpec(n_samples=n, n_params=3, n_outputs=1, n_penalized=2,
                       row_norm_bound=math.hypot(1.0, c0), loss=Steep(),
                       constraint=Unconstrained(), alpha=0.05, intercept_feature=c0)
    solver = DPNewton(intercept_scale=2.0)
    plan = solver.plan(spec, Budget(1.0, 1e-5), "gaussian", "replace_one")
    assert plan.derivative_bound == math.inf
    builtin = solver.plan(replace_loss(spec, LogisticLoss()), Budget(1.0, 1e-5), "gaussian",
                          "replace_one")
    assert builtin.derivative_bound == 1.0
    c = plan.intercept_candidates[0]
    U, weight = plan.intercept_bound(c)
    X = np.zeros((n, 2))
    means = []
    for label in (1.0, -1.0):
        Y = np.ones((n, 1))
        Y[0] = label
        problem = Problem.build(X, Y, spec, data_norm=1.0, intercept=c0)
        means.append(problem.clipped_gradient(np.zeros((3, 1)), plan.clip_norm))
    gap = (means[1] - means[0]).ravel()
    gap[-1] /= weight  # the weighted metric
    assert np.linalg.norm(gap) <= 2 * U / n * (1 + 1e-12)


def test_one_output_losses_refuse_several_outputs():
    """A loss acting on one score (logistic, squared, Huber) declares the derivative
    bound of one output; with K outputs ``||phi'||_2`` could reach ``sqrt(K)`` times it,
    so a problem of several outputs is refused before any data is read."""
    problem = make_problem(n=50, d=3, n_classes=3)
    for loss in (LogisticLoss(), HuberLoss(0.5, label_bound=1.0)):
        spec = replace_loss(problem.spec, loss)
        with pytest.raises(IncompatibleSolverError, match="several outputs"):
            DPNewton().check(spec, Budget(1.0, 1e-5))
        with pytest.raises(IncompatibleSolverError, match="several outputs"):
            NoisyGD().check(spec, Budget(1.0, 1e-5))


def _public_epsilon_score(estimator, X, y):
    """A scorer that reads no data: the pipeline's last step's epsilon (picklable for
    process workers)."""
    return estimator[-1].epsilon


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_shaped_fits_spend_what_was_priced_through_searches(n_jobs, tmp_path):
    """Through the public API: DP Newton with the intercept's noise share (the default)
    and without it, in a Pipeline inside GridSearchCV (process workers on a file-backed
    accountant at n_jobs=2): the accountant reads what privacy_cost priced, and the
    shaped fits spend exactly what the isotropic ones do (the ledger does not read c)."""
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from skdp import BudgetAccountant, DPLogisticRegression
    from skdp.model_selection import privacy_cost

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4)) / 2
    y = (X @ np.ones(4) + 0.5 * rng.normal(size=600) > 0).astype(int)
    spent = {}
    for scale in ("auto", None):
        acc = BudgetAccountant(100.0, 1e-3,
                               path=tmp_path / f"{scale}.sqlite" if n_jobs > 1 else None)
        pipe = make_pipeline(FunctionTransformer(), DPLogisticRegression(
            epsilon=1.0, data_norm=2.0, classes=[0, 1], threshold_fraction=0.0,
            solver=DPNewton(intercept_scale=scale), accountant=acc))
        # The score is the candidate's (public) epsilon: the refit is always the top
        # candidate's, whose cost privacy_cost prices (it prices the costliest refit; an
        # exact score let the noisy fits choose epsilon 0.5 in some runs).
        search = GridSearchCV(pipe, {"dplogisticregression__epsilon": [0.5, 2.0]},
                              scoring=_public_epsilon_score,
                              cv=KFold(3, shuffle=True, random_state=0), n_jobs=n_jobs)
        price = privacy_cost(search, X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            search.fit(X, y)
        assert len(acc) == 7  # 6 fold fits and the refit
        assert acc.spent().epsilon == pytest.approx(price.epsilon, rel=1e-12)
        spent[scale] = acc.spent()
    assert spent["auto"].epsilon == pytest.approx(spent[None].epsilon, rel=1e-12)
    assert spent["auto"].delta == pytest.approx(spent[None].delta, rel=1e-12)
