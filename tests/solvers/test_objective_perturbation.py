"""Objective perturbation (exact and approximate): privacy profile, calibration,
certificates, sensitivity of the Gaussian step, parity, rejections and the ledger."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import L1Ball, L2Ball, LpBall, Simplex, Unconstrained
from skdp.losses import (
    HingeLoss,
    LogisticLoss,
    MultinomialLogisticLoss,
    SmoothedHingeLoss,
    SquaredLoss,
)
from skdp.privacy import Budget, PrivacyLedger, epsilon_spent
from skdp.solvers import Problem, ProblemSpec
from skdp.solvers.approx_objective_perturbation import ApproxObjectivePerturbation
from skdp.solvers.objective_perturbation import (
    CertificateError,
    ObjectivePerturbation,
    PerturbedObjective,
    calibrate_objective_perturbation,
    certified_argmin,
    objective_perturbation_delta,
    objective_perturbation_delta_add_remove_closed_form,
    privacy_loss_delta,
)
from tests.conftest import make_problem

SOLVERS = (ObjectivePerturbation, ApproxObjectivePerturbation)
BUDGET = Budget(1.0, 1e-5)


def _problem(X, Y, loss, alpha=0.01, intercept=0.0, constraint=None, n_penalized=None):
    n, d = X.shape
    p = d + (1 if intercept else 0)
    spec = ProblemSpec(
        n_samples=n, n_params=p, n_outputs=Y.shape[1],
        n_penalized=d if n_penalized is None else n_penalized,
        row_norm_bound=math.sqrt(1.0 + intercept**2), loss=loss,
        constraint=constraint or Unconstrained(), alpha=alpha, intercept_feature=intercept,
    )
    return Problem.build(X, Y, spec, data_norm=1.0, intercept=intercept)


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.normal(size=d)
    Y = np.where(rng.random(n) < expit(3 * X @ w), 1.0, -1.0)[:, None]
    return X, Y


# -- the privacy profile -------------------------------------------------------------------
def _mp_replace_delta(eps_tilde, ell, rank=1):
    """Independent mpmath evaluation of E[(1 - e^(eps - 2 ell^2 - 2 ell M))_+] where M has
    survival min(1, 2 P(chi_k > m)): integrated against the law of M (density 2 f_chi_k
    above m1, where 2 P(chi_k > m1) = 1), not by parts as in the library."""
    with mpmath.workdps(30):
        et, l_, k = mpmath.mpf(eps_tilde), mpmath.mpf(ell), mpmath.mpf(rank)

        def sf2(m):  # 2 P(chi_k > m)
            return 2 * mpmath.gammainc(k / 2, m * m / 2, mpmath.inf, regularized=True)

        def density(m):  # -d/dm sf2 = 2 chi_k pdf
            return 2 * m ** (k - 1) * mpmath.exp(-m * m / 2) / (
                2 ** (k / 2 - 1) * mpmath.gamma(k / 2))

        def h(m):
            return max(mpmath.mpf(0), 1 - mpmath.exp(et - 2 * l_**2 - 2 * l_ * m))

        m1 = mpmath.findroot(lambda m: sf2(m) - 1, 0.7)
        m0 = max(m1, (et - 2 * l_**2) / (2 * l_))  # h vanishes below m0: split there
        pts = sorted({m1, m0, m0 + 1, m0 + 4, m0 + 40})
        return float(mpmath.quad(lambda m: h(m) * density(m), pts))


@pytest.mark.parametrize("eps_tilde, ell", [(0.5, 0.3), (1.0, 0.2), (2.0, 0.5), (0.9, 1.0),
                                            (5.0, 0.8), (0.1, 0.05), (3.0, 0.15)])
def test_replace_profile_matches_mpmath(eps_tilde, ell):
    ours = privacy_loss_delta(eps_tilde, ell)
    ref = _mp_replace_delta(eps_tilde, ell)
    assert ours == pytest.approx(ref, rel=1e-6, abs=1e-15)


def test_replace_profile_rank3_matches_mpmath():
    for et, ell in [(1.0, 0.3), (2.0, 0.4)]:
        assert privacy_loss_delta(et, ell, rank=3) == pytest.approx(
            _mp_replace_delta(et, ell, rank=3), rel=1e-6)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0, 10.0])
def test_add_remove_profile_matches_closed_form(eps, sigma):
    kw = dict(lipschitz=1.0, smoothness=0.25, regularization=50.0)
    ours = objective_perturbation_delta(eps, sigma, relation="add_remove", **kw)
    closed = objective_perturbation_delta_add_remove_closed_form(eps, sigma, **kw)
    assert ours == pytest.approx(closed, rel=1e-7, abs=1e-14)


def test_recipe_numbers():
    """privacy-calibration.md 6.4: X = 1, Lambda = 2000, delta = 1e-3."""
    from scipy.optimize import brentq

    kw = dict(lipschitz=1.0, smoothness=0.25, regularization=2000.0)
    for eps, rep, ar in [(0.2, 24.0, 10.98), (0.5, 10.8, 5.02), (1.0, 5.90, 2.77)]:
        s_rep = brentq(lambda s, e=eps: objective_perturbation_delta(e, s, **kw) - 1e-3,
                       0.5, 100)
        s_ar = brentq(lambda s, e=eps: objective_perturbation_delta(
            e, s, relation="add_remove", **kw) - 1e-3, 0.5, 100)
        assert s_rep == pytest.approx(rep, rel=3e-3) and s_ar == pytest.approx(ar, rel=3e-3)


def test_monte_carlo_of_the_loss_bound_is_below_the_profile():
    """Monte Carlo of the privacy-loss BOUND eps_J + 2 ell^2 + ell (|<b,x>| + |<b,x'>|)/sigma
    for b ~ N(0, sigma^2 I_d) and several pairs (x, x'): below the closed-form delta."""
    rng = np.random.default_rng(0)
    d, sigma, L, beta, lam = 5, 1.5, 1.0, 0.25, 1.0
    eps_j = math.log1p(beta / lam)
    b = rng.normal(size=(400_000, d)) * sigma
    for cos in (1.0, 0.5, 0.0, -1.0):
        x = np.eye(d)[0]
        xp = cos * x + math.sqrt(1 - cos * cos) * np.eye(d)[1]
        ell = L / sigma
        bound = eps_j + 2 * ell**2 + ell * (np.abs(b @ x) + np.abs(b @ xp)) / sigma
        for eps in (0.5, 1.0, 2.0, 3.0):
            mc = np.mean(np.maximum(0.0, 1 - np.exp(eps - bound)))
            se = np.std(np.maximum(0.0, 1 - np.exp(eps - bound))) / math.sqrt(len(b))
            ours = objective_perturbation_delta(eps, sigma, lipschitz=L, smoothness=beta,
                                                regularization=lam)
            assert mc <= ours + 4 * se
    # add/remove: the bound eps_J + ell^2/2 + ell |<b,x>|/sigma is attained in law.
    ell = L / sigma
    bound = eps_j + ell**2 / 2 + ell * np.abs(b[:, 0]) / sigma
    for eps in (0.5, 1.0, 2.0):
        vals = np.maximum(0.0, 1 - np.exp(eps - bound))
        ours = objective_perturbation_delta(eps, sigma, lipschitz=L, smoothness=beta,
                                            regularization=lam, relation="add_remove")
        assert np.mean(vals) == pytest.approx(ours, abs=4 * np.std(vals) / math.sqrt(len(b)))


def _exact_1d_densities(data, z, zp, lam, sigma):
    """Densities of the 1-d logistic ObjPert minimiser for D + z and D + z' on a grid, by
    the change of variables theta -> b(theta) = -(sum_i phi'_i x_i + lam theta)."""
    half = (14.0 * sigma + 4.0) / lam
    theta = np.linspace(-half, half, 200_001)

    def density(records):
        grad = sum(-y * expit(-y * x * theta) * x for x, y in records)
        curv = sum(expit(x * theta) * expit(-x * theta) * x * x for x, _ in records)
        b = -(grad + lam * theta)
        return stats.norm.pdf(b, scale=sigma) * (curv + lam)

    p, q = density(data + [z]), density(data + [zp])
    step = theta[1] - theta[0]
    assert abs(np.sum(p) * step - 1) < 1e-6 and abs(np.sum(q) * step - 1) < 1e-6
    return p, q, step


def _hockey_stick(p, q, step, eps):
    return max(np.sum(np.maximum(0, p - math.exp(eps) * q)) * step,
               np.sum(np.maximum(0, q - math.exp(eps) * p)) * step)


@pytest.mark.parametrize("lam, sigma", [(0.3, 1.0), (1.0, 0.6), (0.05, 2.0)])
def test_exact_one_dimensional_mechanism_is_within_the_profile(lam, sigma):
    """End to end: the true privacy profile of the mechanism (d = 1, logistic) never
    exceeds the closed-form bound, for replace-one and add/remove neighbours."""
    data = [(0.4, 1.0), (-0.7, 1.0), (0.9, -1.0)]
    pairs = [((1.0, 1.0), (1.0, -1.0)), ((1.0, 1.0), (-1.0, 1.0)), ((1.0, -1.0), (0.0, 1.0))]
    kw = dict(lipschitz=1.0, smoothness=0.25, regularization=lam)
    epsilons = (0.3, 1.0, 2.0, 4.0)
    for z, zp in pairs:
        dens = _exact_1d_densities(data, z, zp, lam, sigma)
        for eps in epsilons:
            assert _hockey_stick(*dens, eps) <= objective_perturbation_delta(
                eps, sigma, **kw) + 1e-7
    # add/remove: a zero row is the same as removing the record.
    dens = _exact_1d_densities(data, (1.0, 1.0), (0.0, 1.0), lam, sigma)
    for eps in epsilons:
        assert _hockey_stick(*dens, eps) <= objective_perturbation_delta(
            eps, sigma, relation="add_remove", **kw) + 1e-7


# -- calibration -----------------------------------------------------------------------------
def _peer_epsilon_prime(eps, n, alpha, data_norm=1.0):
    """diffprivlib 0.6.6's noise scale 2 sqrt(X^2+1)/eps' (objective perturbation)."""
    c = 0.25 * math.sqrt(data_norm**2 + 1)
    C = 1.0 / (n * alpha)
    e = eps - 2 * math.log(1 + c * C)
    return e if e > 0 else eps / 2


@pytest.mark.parametrize("cls", SOLVERS)
@pytest.mark.parametrize("kind", ["intercept", "plain", "alpha0", "multinomial", "large_alpha"])
def test_noise_non_increasing_on_a_fine_epsilon_grid(cls, kind):
    """Regression test for diffprivlib's collapse near eps = 1.75 (its eps' jumps from
    eps - 2 ln(1 + c C) to eps/2): both noise levels are non-increasing on 0.05..20."""
    problem = {
        "intercept": lambda: make_problem(n=500, d=5, intercept=True, alpha=0.01),
        "plain": lambda: make_problem(n=500, d=5, alpha=0.01),
        "alpha0": lambda: make_problem(n=500, d=5, alpha=0.0),
        "multinomial": lambda: make_problem(n=500, d=5, n_classes=4),
        "large_alpha": lambda: make_problem(n=500, d=5, alpha=1.0),
    }[kind]()
    solver = cls()
    grid = np.concatenate([np.linspace(0.05, 3.0, 120), np.linspace(3.0, 20.0, 60)])
    prev = None
    for eps in grid:
        s = solver.plan(problem.spec, Budget(float(eps), 1e-5), "basic", "replace_one").settings
        cur = np.array([s["sigma"], s["sigma_output"], s["certified_radius"]])
        if prev is not None:
            assert np.all(cur <= prev), (eps, cur, prev)
        prev = cur
    # The peer's scale is NOT monotone on this grid (what the test guards against).
    peer = [2 * math.sqrt(2) / _peer_epsilon_prime(float(e), 569, 0.01) for e in grid]
    assert np.any(np.diff(peer) > 0)


def test_calibration_meets_delta_and_is_tight():
    problem = make_problem(n=1000, d=5, intercept=True, alpha=0.0)
    for eps in (0.1, 0.5, 1.0, 3.0, 10.0):
        cal = calibrate_objective_perturbation(problem.spec, eps, 1e-6, noise_radius=None)
        kw = dict(lipschitz=cal.lipschitz, smoothness=cal.smoothness,
                  regularization=min(cal.regularization, cal.intercept_regularization))
        assert objective_perturbation_delta(eps, cal.sigma, **kw) <= 1e-6
        assert objective_perturbation_delta(eps, cal.sigma * (1 - 1e-6), **kw) > 0.999e-6
        assert cal.jacobian_epsilon == pytest.approx(min(0.1 * eps, 1.0))


def test_user_alpha_counts_toward_lambda():
    spec = make_problem(n=1000, d=5, alpha=0.5).spec  # n alpha = 500 >> Lambda_req
    cal = calibrate_objective_perturbation(spec, 1.0, 1e-5, noise_radius=None)
    assert cal.regularization == 500.0
    assert cal.jacobian_epsilon == pytest.approx(math.log1p(cal.smoothness / 500.0))
    spec0 = make_problem(n=1000, d=5, alpha=0.0).spec
    cal0 = calibrate_objective_perturbation(spec0, 1.0, 1e-5, noise_radius=None)
    assert cal0.regularization == pytest.approx(0.25 / math.expm1(0.1))
    assert cal.sigma < cal0.sigma  # a smaller epsilon_J leaves more for the noise


def test_noise_radius_rule():
    """Lambda >= sigma sqrt(p K) / noise_radius, solved jointly with sigma (the
    calibration is still exact), and the displacement scale sigma / Lambda never grows
    with epsilon on a small data set (without the rule it does)."""
    spec = make_problem(n=300, d=6, intercept=True, alpha=0.01).spec
    width = math.sqrt(spec.n_params)
    prev = {}
    for eps in np.linspace(0.05, 10.0, 80):
        for rho in (0.5, 1.0, None):
            cal = calibrate_objective_perturbation(spec, float(eps), 1e-5, noise_radius=rho)
            lam = min(cal.regularization, cal.intercept_regularization)
            if rho is not None:
                assert lam >= cal.sigma * width / rho * (1 - 1e-12)
            assert objective_perturbation_delta(
                float(eps), cal.sigma, lipschitz=cal.lipschitz, smoothness=cal.smoothness,
                regularization=lam) <= 1e-5
            scale = cal.sigma / cal.intercept_regularization
            if rho is not None and rho in prev:
                assert scale <= prev[rho] * (1 + 1e-9)
            prev[rho] = scale
    # without the rule, the displacement scale grows with epsilon here
    lo = calibrate_objective_perturbation(spec, 0.1, 1e-5, noise_radius=None)
    hi = calibrate_objective_perturbation(spec, 1.0, 1e-5, noise_radius=None)
    assert hi.sigma / hi.intercept_regularization > lo.sigma / lo.intercept_regularization


# -- certificates ----------------------------------------------------------------------------
def _reference_minimiser(objective, W0):
    """Full Newton with dense Hessian (float64, to convergence): the exact optimum."""
    W = W0.copy()
    shape = W.shape
    size = W.size
    for _ in range(100):
        g = objective.gradient(W).ravel()
        H = np.column_stack([objective.hessian_vector(W, e.reshape(shape)).ravel()
                             for e in np.eye(size)])
        W = W - np.linalg.solve(H, g).reshape(shape)
        if np.linalg.norm(g) < 1e-14 * objective.problem.spec.n_samples:
            break
    return W


@pytest.mark.parametrize("loss, k", [(LogisticLoss(), 1), (MultinomialLogisticLoss(3), 3),
                                     (SmoothedHingeLoss(1, 0.5), 1)])
@pytest.mark.parametrize("radius", [1e-2, 1e-5])
def test_certified_radius_bounds_the_distance_to_the_exact_optimum(loss, k, radius):
    rng = np.random.default_rng(1)
    X, _ = _data(n=80, d=4)
    labels = rng.integers(0, max(k, 2), size=80)
    Y = np.eye(k)[labels] if k > 1 else np.where(labels == 1, 1.0, -1.0)[:, None]
    problem = _problem(X, Y, loss, intercept=1.0)
    lam = np.array([0.8, 0.8, 0.8, 0.8, 0.3])
    B = rng.normal(size=(5, k)) * 2.0
    obj = PerturbedObjective(problem, lam, B)
    W, cert = certified_argmin(obj, 0.3, 80 * 1.0 * 2 + 0.8, radius, 100000)
    ref = _reference_minimiser(obj, W)
    dist = np.linalg.norm(W - ref)
    assert cert <= 0.5 * radius
    assert dist <= cert * (1 + 1e-6) + 1e-13
    assert dist <= radius


def test_fallback_gradient_descent_certifies(monkeypatch):
    """If the fast optimisers return a poor point, the sure GD count certifies it."""
    import skdp.solvers.objective_perturbation as op

    X, Y = _data(n=40, d=3)
    problem = _problem(X, Y, LogisticLoss())
    obj = PerturbedObjective(problem, np.full(3, 5.0), np.ones((3, 1)))
    monkeypatch.setattr(op, "_lbfgs", lambda o, W0, g: W0 + 0.5)
    monkeypatch.setattr(op, "_newton", lambda o, W0, g, m: W0)
    beta = 40 * 0.25 + 5.0
    W, cert = op.certified_argmin(obj, 5.0, beta, 1e-6, 100000)
    ref = _reference_minimiser(obj, W)
    assert np.linalg.norm(W - ref) <= cert + 1e-14 <= 1e-6
    with pytest.raises(CertificateError, match="max_iter"):
        op.certified_argmin(obj, 5.0, beta, 1e-6, 3)


@pytest.mark.parametrize("cls", SOLVERS)
def test_gaussian_step_sensitivity_brute_force(cls):
    """||theta_2 - theta_1|| <= r_max on every neighbour of a data set (same noise B)."""
    X, Y = _data(n=50, d=3, seed=3)
    base = _problem(X, Y, LogisticLoss(), intercept=1.0)
    solver = cls()
    plan = solver.plan(base.spec, BUDGET, "basic", "replace_one")
    s = plan.settings
    rng = np.random.default_rng(5)
    B = rng.normal(size=(4, 1)) * s["sigma"]
    lam = solver._regularization_vector(base.spec, s)
    for i in range(0, 50, 7):
        for xr, yr in ((np.array([1.0, 0, 0]), 1.0), (-X[i], -Y[i, 0]), (np.zeros(3), 1.0)):
            Xn, Yn = X.copy(), Y.copy()
            Xn[i], Yn[i] = xr, yr
            obj = PerturbedObjective(_problem(Xn, Yn, LogisticLoss(), intercept=1.0), lam, B)
            W, _ = certified_argmin(obj, s["strong_convexity"], s["smoothness"],
                                    s["certified_radius"], solver.max_iter)
            assert np.linalg.norm(W - _reference_minimiser(obj, W)) <= s["certified_radius"]


# -- parity, behaviour -------------------------------------------------------------------
@pytest.mark.parametrize("cls", SOLVERS)
def test_epsilon_inf_matches_sklearn(cls):
    X, Y = _data(n=120, d=4, seed=2)
    alpha = 0.05
    problem = _problem(X, Y, LogisticLoss(), alpha=alpha, intercept=1.0)
    res = cls().solve(problem, Budget(math.inf, 0.0), 0)
    ref = LogisticRegression(C=1.0 / (120 * alpha), tol=1e-12, max_iter=10000).fit(X, Y[:, 0])
    np.testing.assert_allclose(res.coef[:4, 0], ref.coef_[0], atol=1e-7)
    np.testing.assert_allclose(res.coef[4, 0], ref.intercept_[0], atol=1e-7)


@pytest.mark.parametrize("cls", SOLVERS)
def test_zero_signal_output_is_the_stated_noise(cls):
    """Zero rows, no intercept: J = const + Lambda/2 ||W||^2 + <B, W>, minimiser -B/Lambda;
    the output -B/Lambda + H has per-coordinate variance (sigma/Lambda)^2 + sigma_2^2."""
    d = 2000
    problem = make_problem(n=50, d=d, zero=True, alpha=0.0)
    res = cls().solve(problem, BUDGET, 11)
    s = res.plan.settings
    var = (s["sigma"] / s["regularization"]) ** 2 + s["sigma_output"] ** 2
    stat = float(np.sum(res.coef**2) / var)
    lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], d)
    assert lo < stat < hi


def test_sparse_input_stays_sparse_and_matches_dense():
    X, Y = _data(n=60, d=5, seed=4)
    X[np.abs(X) < 0.3] = 0.0
    dense = _problem(X, Y, LogisticLoss(), intercept=1.0)
    sparse = _problem(sp.csr_matrix(X), Y, LogisticLoss(), intercept=1.0)
    w_d = ObjectivePerturbation().solve(dense, BUDGET, 3).coef
    w_s = ObjectivePerturbation().solve(sparse, BUDGET, 3).coef
    assert sp.issparse(sparse.X)
    np.testing.assert_allclose(w_d, w_s, atol=1e-8)


@pytest.mark.parametrize("constraint", [L2Ball(0.3), L1Ball(0.5), LpBall(0.4, 1.5),
                                        Simplex(1.0)])
def test_approx_projects_onto_any_constraint(constraint):
    problem = make_problem(n=100, d=4, alpha=0.01, constraint=constraint)
    res = ApproxObjectivePerturbation().solve(problem, Budget(0.5, 1e-5), 0)
    W = res.coef[: problem.spec.n_penalized]
    np.testing.assert_allclose(constraint.project(W), W, atol=1e-12)


def test_seeds_reproduce_and_differ():
    problem = make_problem(n=100, d=4)
    a = ObjectivePerturbation().solve(problem, BUDGET, 7).coef
    b = ObjectivePerturbation().solve(problem, BUDGET, 7).coef
    c = ObjectivePerturbation().solve(problem, BUDGET, 8).coef
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_multinomial_runs_with_rank_k_calibration():
    problem = make_problem(n=200, d=4, n_classes=3, alpha=0.0)
    res = ObjectivePerturbation(noise_radius=None).solve(problem, BUDGET, 0)
    s = res.plan.settings
    assert res.coef.shape == (4, 3) and s["rank"] == 3
    assert s["jacobian_epsilon"] == pytest.approx(0.099)  # 0.1 * eps_1 = 0.1 * 0.99


def test_huber_regression_if_available():
    """Huber loss (robust regression): bounded phi', phi'' <= 1, so it is covered."""
    import skdp.losses

    huber = getattr(skdp.losses, "HuberLoss", None)
    if huber is None:
        pytest.skip("skdp.losses.HuberLoss is not available")
    rng = np.random.default_rng(7)
    X, _ = _data(n=80, d=3)
    Y = np.clip(X @ np.array([0.5, -1.0, 0.3]) + 0.3 * rng.normal(size=80), -1, 1)[:, None]
    problem = _problem(X, Y, huber(0.5), intercept=1.0)
    res = ObjectivePerturbation().solve(problem, BUDGET, 0)
    assert res.plan.settings["lipschitz"] == pytest.approx(0.5 * math.sqrt(2.0))
    obj = PerturbedObjective(problem, np.array([2.0, 2.0, 2.0, 0.7]), rng.normal(size=(4, 1)))
    W, cert = certified_argmin(obj, 0.7, 80 * 2.0 + 2.0, 1e-6, 100000)
    assert np.linalg.norm(W - _reference_minimiser(obj, W)) <= cert + 1e-13


# -- rejections --------------------------------------------------------------------------
@pytest.mark.parametrize("loss, match", [(SquaredLoss(1.0), "unbounded"),
                                         (HingeLoss(), "smooth loss")])
def test_unsupported_losses_are_rejected(loss, match):
    X, Y = _data(n=30)
    problem = _problem(X, Y, loss)
    for cls in SOLVERS:
        with pytest.raises(IncompatibleSolverError, match=match):
            cls().solve(problem, BUDGET, 0)


def test_exact_rejects_constraints_and_approx_accepts():
    problem = make_problem(n=50, d=3, constraint=L2Ball(1.0))
    with pytest.raises(IncompatibleSolverError, match="UNCONSTRAINED"):
        ObjectivePerturbation().solve(problem, BUDGET, 0)
    ApproxObjectivePerturbation().solve(problem, BUDGET, 0)


def test_non_erm_and_loss_mismatch_are_rejected():
    X, Y = _data(n=30)
    spec = _problem(X, Y, LogisticLoss()).spec
    from dataclasses import replace

    tilted = Problem.build(X, Y, replace(spec, tilt=1.0), data_norm=1.0)
    with pytest.raises(IncompatibleSolverError, match="tilted"):
        ObjectivePerturbation().solve(tilted, BUDGET, 0)
    problem = make_problem(n=50, d=3, n_classes=3)
    bad = Problem.build(problem.X, problem.Y,
                        replace(problem.spec, loss=MultinomialLogisticLoss(4)), data_norm=1.0)
    with pytest.raises(IncompatibleSolverError, match="outputs"):
        ObjectivePerturbation().solve(bad, BUDGET, 0)


@pytest.mark.parametrize("param, value", [("jacobian_share", 0.0), ("jacobian_share", 1.5),
                                          ("objective_share", 1.0), ("radius_fraction", -1.0),
                                          ("certified_radius", 0.0), ("max_iter", 0),
                                          ("objective_share", True)])
def test_bad_parameters_name_themselves(param, value):
    with pytest.raises(ValueError, match=param):
        ObjectivePerturbation(**{param: value}).solve(make_problem(), BUDGET, 0)


def test_only_the_basic_accountant_and_delta_positive():
    problem = make_problem()
    for acc in ("gaussian", "rdp", "pld", "pure"):
        with pytest.raises(IncompatibleSolverError):
            ObjectivePerturbation().solve(problem, BUDGET, 0, accountant=acc)
    assert ObjectivePerturbation.needs_delta


# -- ledger --------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", SOLVERS)
@pytest.mark.parametrize("eps, delta", [(0.1, 1e-5), (1.0, 1e-6), (7.0, 1e-8)])
def test_ledger_reaccounts_within_budget(cls, eps, delta):
    problem = make_problem(n=200, d=4, intercept=True)
    res = cls().solve(problem, Budget(eps, delta), 0)
    spent = epsilon_spent(res.ledger.event, delta, accountant="basic", relation="replace_one")
    assert 0.999 * eps <= spent <= eps
    assert PrivacyLedger(res.ledger.event, "basic", "replace_one",
                         Budget(eps, delta)).spent().epsilon <= eps
    # a smaller delta is not covered by the recorded guarantees
    assert math.isinf(epsilon_spent(res.ledger.event, 0.5 * delta, accountant="basic",
                                    relation="replace_one"))
    s = res.plan.settings
    assert s["epsilon_objective"] + s["epsilon_output"] <= eps
    assert s["delta_objective"] + s["delta_output"] <= delta * (1 + 1e-12)
    # the recorded objective-perturbation guarantee is the calibrated one
    lam = min(s["regularization"], s["intercept_regularization"])
    assert objective_perturbation_delta(
        s["epsilon_objective"], s["sigma"], lipschitz=s["lipschitz"],
        smoothness=s["curvature"], regularization=lam) <= s["delta_objective"]


def test_plan_uses_public_quantities_only():
    a, b = make_problem(seed=1), make_problem(seed=2)
    for cls in SOLVERS:
        pa = cls().plan(a.spec, BUDGET, "basic", "replace_one")
        pb = cls().plan(b.spec, BUDGET, "basic", "replace_one")
        assert pa.settings == pb.settings


def test_review_user_radius_below_the_float_floor_is_refused():
    # Review regression: a user certified_radius below the float floor made the certified
    # solve fail on one dataset and succeed on its neighbour (the abort revealed a record).
    problem = make_problem(n=300, d=5)
    with pytest.raises(IncompatibleSolverError, match="floating-point floor"):
        ObjectivePerturbation(certified_radius=5e-17).solve(problem, Budget(1.0, 1e-5), 0)


def test_review_sure_method_length_is_fixed_before_the_data():
    # With a max_iter too small for the data-free start bound, EVERY dataset fails the
    # same way, before any data is read (the outcome depends on the noise only).
    import skdp.solvers.objective_perturbation as op

    for seed in (1, 2):
        problem = make_problem(n=300, d=5, seed=seed)
        with pytest.raises(op.CertificateError, match="max_iter"):
            ObjectivePerturbation(max_iter=3).solve(problem, Budget(1.0, 1e-5), 0)
