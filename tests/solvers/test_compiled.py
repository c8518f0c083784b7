"""Compiled kernels (numba, optional): the scalar primitives equal their numpy versions,
the compiled truncated mirror descent equals the numpy path and the plain-numpy reference
fed the same noise, and the decision to compile reads public facts only."""

import math

import numpy as np
import pytest

from skdp.geometry import LpBall, Unconstrained
from skdp.geometry._lp import LpGeometry, lp_dual_step_vector
from skdp.losses import HuberLoss, LogisticLoss, SquaredLoss, scalar_derivative, scalar_kernel
from skdp.privacy import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers import Problem, ProblemSpec, _compiled
from skdp.solvers.truncated_mirror_descent import (
    ShuffledTruncatedMirrorDescent,
    TruncatedMirrorDescent,
)
from tests.solvers.test_truncated_mirror_descent import Recorder, _heavy_problem, _reference

LOSSES = [LogisticLoss(), SquaredLoss(50.0), HuberLoss(1.5, label_bound=50.0)]
SOLVERS = [TruncatedMirrorDescent, ShuffledTruncatedMirrorDescent]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: type(loss).__name__)
def test_scalar_derivative_is_the_loss_derivative(loss):
    rng = np.random.default_rng(0)
    Z = np.concatenate([rng.normal(scale=5, size=400), [0.0, 700.0, -800.0, 1e300, -1e300,
                                                         math.inf, -math.inf, math.nan]])
    if isinstance(loss, LogisticLoss):
        Y = np.where(rng.random(Z.size) < 0.5, -1.0, 1.0)
    else:
        Y = rng.normal(scale=3, size=Z.size)
    code, parameter = scalar_kernel(loss)
    with np.errstate(all="ignore"):
        expected = loss.derivative(Z[:, None], Y[:, None])[:, 0]
    got = np.array([scalar_derivative(code, parameter, z, y) for z, y in zip(Z, Y, strict=True)])
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-300, equal_nan=True)


def test_scalar_kernel_knows_exact_classes_only():
    class Custom(LogisticLoss):
        def derivative(self, Z, Y):
            return 2.0 * super().derivative(Z, Y)

    assert scalar_kernel(Custom()) is None
    from skdp.losses import HingeLoss, MultinomialLogisticLoss
    assert scalar_kernel(HingeLoss()) is None
    assert scalar_kernel(MultinomialLogisticLoss(3)) is None


@pytest.mark.parametrize("p", [2.0, 1.3, 1.05])
@pytest.mark.parametrize("radius", [None, 0.7])
@pytest.mark.parametrize("k", [4, 3, 0])
def test_scalar_mirror_step_is_the_dual_iterate_step(p, radius, k):
    geo = LpGeometry(p, k, radius)
    it = geo.dual_iterate((4, 1))
    theta, W = np.zeros(4), np.zeros(4)
    rng = np.random.default_rng(1)
    for scale in [1.0, 1e-3, 30.0, 1e-200, 1e200, 2.0, math.nan]:
        g = scale * rng.standard_normal(4)
        expected = it.step(g[:, None])[:, 0]
        lp_dual_step_vector(theta, W, g, k, p, geo.q, math.inf if radius is None else radius)
        np.testing.assert_allclose(W, expected, rtol=1e-12, atol=1e-300, equal_nan=True)
        np.testing.assert_allclose(theta, it.theta[:, 0], rtol=1e-12, atol=1e-300,
                                   equal_nan=True)


# -- the compiled path (needs numba) -------------------------------------------------------
def _problem(loss, radius, alpha, seed=4, n=2000, d=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(2.5, size=(n, d))
    if isinstance(loss, LogisticLoss):
        Y = np.where(X @ np.linspace(0.3, -0.2, d) + rng.normal(size=n) > 0, 1.0, -1.0)
    else:
        Y = np.clip(X @ np.linspace(0.3, -0.2, d) + rng.standard_t(2.5, size=n), -50, 50)
    spec = ProblemSpec(n_samples=n, n_params=d + 1, n_outputs=1, n_penalized=d,
                       row_norm_bound=1e3, loss=loss,
                       constraint=LpBall(radius, 1.5) if radius else Unconstrained(),
                       alpha=alpha, row_norm_ord=3.0)
    return Problem.build(X, Y[:, None], spec, data_norm=1e3, intercept=1.0)


@pytest.fixture
def compiled(monkeypatch):
    """The kernel forced on for small fits, with a count of its runs."""
    pytest.importorskip("numba")
    monkeypatch.setenv("SKDP_NUMBA", "1")
    monkeypatch.setattr(_compiled, "KERNEL_MIN_STEPS", 0)
    calls = []
    build = _compiled.truncated_chunk

    def counted():
        kernel = build()

        def run(*args):
            calls.append(len(args[3]) - 1)
            return kernel(*args)
        return run

    monkeypatch.setattr(_compiled, "truncated_chunk", counted)
    return calls


BUDGET = Budget(1.0, 1e-5)


def _run(solver, problem, seed=9):
    plan = solver.plan(problem.spec, BUDGET, solver.resolve_accountant("auto"), "replace_one")
    return solver._run(problem, plan, NoiseSource(np.random.default_rng(seed))), plan


@pytest.mark.parametrize("cls", SOLVERS)
@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: type(loss).__name__)
@pytest.mark.parametrize("radius, alpha", [(0.5, 0.0), (None, 0.05)])
def test_compiled_steps_equal_the_numpy_steps(compiled, monkeypatch, cls, loss, radius,
                                              alpha):
    problem = _problem(loss, radius, alpha)
    solver = cls(n_iter=700, truncation=4.0, p=None if radius else 1.5, iterate="tail")
    fast, plan = _run(solver, problem)
    assert sum(compiled) == 700  # every step of the fit ran compiled
    monkeypatch.setenv("SKDP_NUMBA", "0")
    slow, plan_again = _run(solver, problem)
    assert sum(compiled) == 700  # the numpy path did not call it
    assert plan_again == plan
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("cls", SOLVERS)
@pytest.mark.parametrize("radius", [0.5, None])
def test_compiled_steps_match_the_reference_fed_the_same_noise(compiled, cls, radius):
    problem = _heavy_problem(n=2000, d=3, radius=radius, seed=4)
    solver = cls(n_iter=700, truncation=4.0, p=None if radius else 1.5)
    plan = solver.plan(problem.spec, BUDGET, solver.resolve_accountant("auto"), "replace_one")
    rec = Recorder(np.random.default_rng(9))
    coef = solver._run(problem, plan, rec)
    assert sum(compiled) == 700
    expected = _reference(problem, plan, rec.draws, cls is ShuffledTruncatedMirrorDescent)
    np.testing.assert_allclose(coef, expected, rtol=1e-9, atol=1e-12)


def test_the_decision_reads_public_facts_only(monkeypatch):
    """Below KERNEL_MIN_STEPS planned steps, with SKDP_NUMBA=0, without numba or for a loss
    without a scalar form, the numpy path runs (no kernel is built)."""
    monkeypatch.setattr(_compiled, "truncated_chunk",
                        lambda: pytest.fail("the kernel must not be built"))
    problem = _problem(LogisticLoss(), None, 0.05)
    solver = TruncatedMirrorDescent(n_iter=700, truncation=4.0, p=1.5)
    monkeypatch.setenv("SKDP_NUMBA", "1")
    monkeypatch.setattr(_compiled, "KERNEL_MIN_STEPS", 701)
    _run(solver, problem)
    monkeypatch.setattr(_compiled, "KERNEL_MIN_STEPS", 0)
    monkeypatch.setenv("SKDP_NUMBA", "0")
    assert not _compiled.enabled()
    _run(solver, problem)
    monkeypatch.setenv("SKDP_NUMBA", "1")
    monkeypatch.setattr(_compiled.importlib.util, "find_spec", lambda name: None)
    assert not _compiled.enabled()
    _run(solver, problem)
