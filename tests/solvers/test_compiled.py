"""Compiled kernels (numba, optional): the scalar primitives equal their numpy versions,
the compiled truncated mirror descent equals the numpy path and the plain-numpy reference
fed the same noise, and the decision to compile reads public facts only."""

import math
import sys
import warnings

import numpy as np
import pytest

from skdp.geometry import L2Ball, LpBall, Unconstrained
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


def _compiled_helpers():
    numba_kernels = pytest.importorskip("skdp.solvers._numba_kernels")
    return numba_kernels._derivative, numba_kernels._mirror_step


# The plain-Python helpers, and (with numba) their compiled forms, on the same grids.
DERIVATIVES = [pytest.param(lambda: scalar_derivative, id="python"),
               pytest.param(lambda: _compiled_helpers()[0], id="compiled")]
STEPS = [pytest.param(lambda: lp_dual_step_vector, id="python"),
         pytest.param(lambda: _compiled_helpers()[1], id="compiled")]


@pytest.mark.parametrize("implementation", DERIVATIVES)
@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: type(loss).__name__)
def test_scalar_derivative_is_the_loss_derivative(loss, implementation):
    derivative = implementation()
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
    got = np.array([derivative(code, parameter, z, y) for z, y in zip(Z, Y, strict=True)])
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-300, equal_nan=True)


def test_scalar_kernel_knows_exact_classes_only():
    class Custom(LogisticLoss):
        def derivative(self, Z, Y):
            return 2.0 * super().derivative(Z, Y)

    assert scalar_kernel(Custom()) is None
    from skdp.losses import HingeLoss, MultinomialLogisticLoss
    assert scalar_kernel(HingeLoss()) is None
    assert scalar_kernel(MultinomialLogisticLoss(3)) is None


@pytest.mark.parametrize("implementation", STEPS)
@pytest.mark.parametrize("p", [2.0, 1.3, 1.05])
@pytest.mark.parametrize("radius", [None, 0.7])
@pytest.mark.parametrize("k", [4, 3, 0])
def test_scalar_mirror_step_is_the_dual_iterate_step(p, radius, k, implementation):
    step = implementation()
    geo = LpGeometry(p, k, radius)
    it = geo.dual_iterate((4, 1))
    theta, W = np.zeros(4), np.zeros(4)
    rng = np.random.default_rng(1)
    for scale in [1.0, 1e-3, 30.0, 1e-200, 1e200, 2.0, 1e-310, math.nan]:
        g = scale * rng.standard_normal(4)
        expected = it.step(g[:, None])[:, 0]
        step(theta, W, g, k, p, geo.q, math.inf if radius is None else radius)
        np.testing.assert_allclose(W, expected, rtol=1e-12, atol=1e-300, equal_nan=True)
        np.testing.assert_allclose(theta, it.theta[:, 0], rtol=1e-12, atol=1e-300,
                                   equal_nan=True)


# -- the compiled path (needs numba) -------------------------------------------------------
def _problem(loss, radius, alpha, seed=4, n=2000, d=3, p=1.5, penalized=True):
    from skdp.losses import HingeLoss

    rng = np.random.default_rng(seed)
    X = rng.standard_t(2.5, size=(n, d))
    if isinstance(loss, LogisticLoss | HingeLoss):  # labels in {-1, +1}
        Y = np.where(X @ np.linspace(0.3, -0.2, d) + rng.normal(size=n) > 0, 1.0, -1.0)
    else:
        Y = np.clip(X @ np.linspace(0.3, -0.2, d) + rng.standard_t(2.5, size=n), -50, 50)
    ball = None if radius is None else L2Ball(radius) if p == 2.0 else LpBall(radius, p)
    spec = ProblemSpec(n_samples=n, n_params=d + 1, n_outputs=1,
                       n_penalized=d if penalized else 0, row_norm_bound=2e3, loss=loss,
                       constraint=ball if radius else Unconstrained(),
                       alpha=alpha if penalized else 0.0, row_norm_ord=p / (p - 1.0))
    return Problem.build(X, Y[:, None], spec, data_norm=1e3, intercept=1.0)


def _forced(monkeypatch, threshold: str, loader: str, count) -> list:
    """The kernel ``loader`` of ``_compiled`` forced on (its ``threshold`` set to 0), with
    ``count(args)`` of each of its runs recorded in the returned list."""
    pytest.importorskip("numba")
    monkeypatch.setenv("SKDP_NUMBA", "1")
    monkeypatch.setattr(_compiled, threshold, 0)
    calls = []
    build = getattr(_compiled, loader)

    def counted():
        kernel = build()

        def run(*args):
            calls.append(count(args))
            return kernel(*args)
        return run

    monkeypatch.setattr(_compiled, loader, counted)
    return calls


@pytest.fixture
def compiled(monkeypatch):
    """The chunk kernel forced on for small fits, with the steps of each of its runs."""
    return _forced(monkeypatch, "KERNEL_MIN_STEPS", "truncated_chunk",
                   lambda args: len(args[3]) - 1)


BUDGET = Budget(1.0, 1e-5)


def _run(solver, problem, seed=9):
    plan = solver.plan(problem.spec, BUDGET, solver.resolve_accounting("auto"), "replace_one")
    return solver._run(problem, plan, NoiseSource(np.random.default_rng(seed))), plan


@pytest.mark.parametrize("cls", SOLVERS)
@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: type(loss).__name__)
@pytest.mark.parametrize("radius, alpha, p, penalized", [
    (0.5, 0.0, 1.5, True), (None, 0.05, 1.5, True), (1e-4, 0.0, 1.5, True),
    (1e-4, 0.01, 2.0, True), (None, 0.0, 2.0, True), (None, 0.0, 1.5, False)])
def test_compiled_steps_equal_the_numpy_steps(compiled, monkeypatch, cls, loss, radius,
                                              alpha, p, penalized):
    problem = _problem(loss, radius, alpha, p=p, penalized=penalized)
    solver = cls(n_iter=700, truncation=4.0, p=p, iterate="tail", step_size=0.5)
    fast, plan = _run(solver, problem)
    assert sum(compiled) == 700  # every step of the fit ran compiled
    monkeypatch.setenv("SKDP_NUMBA", "0")
    slow, plan_again = _run(solver, problem)
    assert sum(compiled) == 700  # the numpy path did not call it
    assert plan_again == plan
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-13)
    if radius == 1e-4:
        # The tiny ball binds (the same fit without it ends far outside): the compiled
        # path projected, as the numpy path did.
        free, _ = _run(solver, _problem(loss, None, alpha, p=p, penalized=penalized))
        assert np.sum(np.abs(free[:-1, 0]) ** p) ** (1 / p) > 10 * radius
        assert np.sum(np.abs(fast[:-1, 0]) ** p) ** (1 / p) <= radius * (1 + 1e-12)


@pytest.mark.parametrize("cls", SOLVERS)
@pytest.mark.parametrize("radius", [0.5, None])
def test_compiled_steps_match_the_reference_fed_the_same_noise(compiled, cls, radius):
    problem = _heavy_problem(n=2000, d=3, radius=radius, seed=4)
    solver = cls(n_iter=700, truncation=4.0, p=None if radius else 1.5)
    plan = solver.plan(problem.spec, BUDGET, solver.resolve_accounting("auto"), "replace_one")
    rec = Recorder(np.random.default_rng(9))
    coef = solver._run(problem, plan, rec)
    assert sum(compiled) == 700
    expected = _reference(problem, plan, rec.draws, cls is ShuffledTruncatedMirrorDescent)
    np.testing.assert_allclose(coef, expected, rtol=1e-9, atol=1e-12)


def test_the_decision_reads_public_facts_only(monkeypatch):
    """Below KERNEL_MIN_STEPS planned steps, with SKDP_NUMBA off, without numba, for a loss
    without a scalar form or for sparse rows, the numpy path runs (no kernel is built)."""
    monkeypatch.setattr(_compiled, "truncated_chunk",
                        lambda: pytest.fail("the kernel must not be built"))
    problem = _problem(LogisticLoss(), None, 0.05)
    solver = TruncatedMirrorDescent(n_iter=700, truncation=4.0, p=1.5)
    monkeypatch.setenv("SKDP_NUMBA", "1")
    monkeypatch.setattr(_compiled, "KERNEL_MIN_STEPS", 701)
    _run(solver, problem)
    monkeypatch.setenv("SKDP_NUMBA", "always")  # every size: the kernel is asked for
    with pytest.raises(pytest.fail.Exception, match="must not be built"):
        _run(solver, problem)
    monkeypatch.setenv("SKDP_NUMBA", "1")
    monkeypatch.setattr(_compiled, "KERNEL_MIN_STEPS", 0)
    monkeypatch.setenv("SKDP_NUMBA", "0")
    assert not _compiled.enabled()
    _run(solver, problem)
    monkeypatch.setenv("SKDP_NUMBA", "1")
    for off in ("false", "OFF", " no "):
        monkeypatch.setenv("SKDP_NUMBA", off)
        assert not _compiled.enabled()
    monkeypatch.setenv("SKDP_NUMBA", "1")
    # A loss without a scalar form, sparse rows, several outputs: the numpy loop.
    from skdp.losses import SmoothedHingeLoss
    _run(solver, _problem(SmoothedHingeLoss(), None, 0.05))
    sparse = _problem(LogisticLoss(), None, 0.05)
    import scipy.sparse as sp
    _run(solver, Problem.build(sp.csr_matrix(sparse.X), sparse.Y, sparse.spec,
                               data_norm=1e3, intercept=1.0))
    monkeypatch.setattr(_compiled.importlib.util, "find_spec", lambda name: None)
    assert not _compiled.enabled()
    _run(solver, problem)


@pytest.mark.parametrize("intercept", [1.0, 0.0])
def test_compiled_epochs_and_no_intercept(compiled, monkeypatch, intercept):
    """Several passes (the averaged tail starts inside a later epoch) and rows gathered
    without an intercept column: equal to the numpy path."""
    rng = np.random.default_rng(7)
    X = rng.standard_t(2.5, size=(1500, 3))
    Y = np.clip(X @ np.array([0.3, -0.2, 0.1]) + rng.standard_t(2.5, size=1500), -50, 50)
    d = 3 + (intercept > 0)
    spec = ProblemSpec(n_samples=1500, n_params=d, n_outputs=1, n_penalized=3,
                       row_norm_bound=2e3, loss=SquaredLoss(50.0), constraint=Unconstrained(),
                       alpha=0.01, row_norm_ord=3.0)
    problem = Problem.build(X, Y[:, None], spec, data_norm=1e3, intercept=intercept)
    solver = TruncatedMirrorDescent(n_iter=300, n_epochs=3, truncation=4.0, p=1.5,
                                    iterate="tail")
    fast, _ = _run(solver, problem)
    assert sum(compiled) == 900
    monkeypatch.setenv("SKDP_NUMBA", "0")
    slow, _ = _run(solver, problem)
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-13)


def test_helpers_hash_is_recorded_in_the_kernel_file():
    """numba caches a kernel by its own file: a helper's change must edit that file."""
    numba_kernels = pytest.importorskip("skdp.solvers._numba_kernels")
    assert numba_kernels.helpers_sha256() == numba_kernels.HELPERS_SHA256, (
        "a helper compiled into skdp/solvers/_numba_kernels.py changed: set its "
        "HELPERS_SHA256 to helpers_sha256() (this also invalidates numba's cache)")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [54, 4, 3, 9, 1])
def test_pair_dots_are_the_scalar_partial_sums_bit_for_bit(dtype, d):
    """The vector dot products of the kernels round as the scalar sums they replace: four
    lanes (one multiply, one add per term, in increasing j), the last d mod 4 terms added
    to lane 0, then (l0 + l1) + (l2 + l3); so the pass is unchanged."""
    numba_kernels = pytest.importorskip("skdp.solvers._numba_kernels")
    import numba

    dots = numba.njit(lambda X, a, b, w: numba_kernels._pair_dots(X, a, b, w))
    rng = np.random.default_rng(d)
    X = (rng.standard_normal((5, d)) * np.exp(rng.uniform(-20, 20, (5, d)))).astype(dtype)
    w = rng.standard_normal(d + 1) * np.exp(rng.uniform(-20, 20, d + 1))  # w[d]: ignored
    stop = d - d % 4
    for a, b in [(0, 1), (3, 3), (4, 2)]:
        expected = []
        for row in (a, b):
            lanes = [0.0] * 4
            for j in range(d):
                lanes[j % 4 if j < stop else 0] += float(X[row, j]) * float(w[j])
            expected.append((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
        got = dots(X, a, b, w)
        assert [v.hex() for v in got] == [v.hex() for v in expected]


def test_a_broken_numba_falls_back_to_numpy(monkeypatch):
    """numba installed but its kernels fail to load: a RuntimeWarning, then the numpy
    code (the same fit as with SKDP_NUMBA=0)."""
    monkeypatch.setenv("SKDP_NUMBA", "1")
    monkeypatch.setattr(_compiled, "KERNEL_MIN_STEPS", 0)
    monkeypatch.setattr(_compiled.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(_compiled, "_LOADED", {})
    monkeypatch.setitem(sys.modules, "skdp.solvers._numba_kernels", None)  # import fails
    problem = _problem(LogisticLoss(), None, 0.05)
    solver = TruncatedMirrorDescent(n_iter=700, truncation=4.0, p=1.5)
    with pytest.warns(RuntimeWarning, match="compiled kernels are unavailable"):
        broken, _ = _run(solver, problem)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process
        _run(solver, problem)
    monkeypatch.setenv("SKDP_NUMBA", "0")
    reference, _ = _run(solver, problem)
    np.testing.assert_array_equal(broken, reference)


# -- the compiled full pass (Problem.clipped_gradient) ------------------------------------
@pytest.fixture
def compiled_pass(monkeypatch):
    """The compiled full pass forced on for small problems, with the rows of each run."""
    return _forced(monkeypatch, "FULL_PASS_MIN_WORK", "clipped_gradient_pass",
                   lambda args: args[0].shape[0])


def _pass_problem(loss, *, n=301, d=6, intercept=1.0, data_norm=None, dtype=np.float64,
                  seed=3):
    """Rows of norms up to ~3 (clipped when ``data_norm`` is below that), ``n`` odd."""
    rng = np.random.default_rng(seed)
    X = (rng.standard_t(3.0, size=(n, d)) / 3.0).astype(dtype)
    if isinstance(loss, SquaredLoss | HuberLoss):
        Y = np.clip(X @ rng.normal(size=d) + rng.normal(size=n), -5.0, 5.0)
    else:  # labels in {-1, +1}
        Y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    spec = ProblemSpec(n_samples=n, n_params=d + (intercept != 0), n_outputs=1,
                       n_penalized=d, row_norm_bound=1e3, loss=loss,
                       constraint=Unconstrained(), alpha=0.1)
    return Problem.build(X, Y[:, None], spec, data_norm=data_norm, intercept=intercept)


PASS_LOSSES = [LogisticLoss(), SquaredLoss(5.0), HuberLoss(0.5, label_bound=5.0)]


@pytest.mark.parametrize("loss", PASS_LOSSES, ids=lambda loss: type(loss).__name__)
@pytest.mark.parametrize("intercept", [1.0, 0.0, 0.5])
@pytest.mark.parametrize("data_norm", [None, 0.5])
@pytest.mark.parametrize("clip_norm", [1e3, 0.05])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_pass_equals_the_numpy_pass(compiled_pass, monkeypatch, loss, intercept,
                                             data_norm, clip_norm, dtype):
    """Scores, derivatives, clipping (binding or proven lossless), clipped rows, the
    intercept feature, float32 rows, an odd number of rows, the stored derivatives of an
    SVRG snapshot: the compiled pass equals the numpy pass to rounding."""
    problem = _pass_problem(loss, intercept=intercept, data_norm=data_norm, dtype=dtype)
    W = np.random.default_rng(5).normal(size=(problem.spec.n_params, 1))
    n = problem.spec.n_samples
    fast_coef, slow_coef = np.empty((n, 1)), np.empty((n, 1))
    fast = problem.clipped_gradient(W, clip_norm)
    fast_stored = problem.clipped_gradient(W, clip_norm, out_coefficients=fast_coef)
    assert compiled_pass == [n, n]
    monkeypatch.setenv("SKDP_NUMBA", "0")
    slow = problem.clipped_gradient(W, clip_norm)
    slow_stored = problem.clipped_gradient(W, clip_norm, out_coefficients=slow_coef)
    assert compiled_pass == [n, n]
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(fast_stored, slow_stored, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(fast_coef, slow_coef, rtol=1e-12, atol=1e-15)
    if clip_norm < 1.0:  # the clip binds: every per-example gradient is within it
        per_example = problem.norms * np.abs(fast_coef[:, 0])
        assert per_example.max() <= clip_norm and per_example.max() > 0.9 * clip_norm


def test_compiled_pass_drops_overflowing_records(compiled_pass, monkeypatch):
    """A record whose score or gradient overflows is dropped by both paths (never passed
    on); the others are clipped. (One huge coordinate, so that which scores overflow does
    not depend on the order of the sums.)"""
    problem = _pass_problem(SquaredLoss(5.0), intercept=0.0)
    W = np.zeros((problem.spec.n_params, 1))
    W[0] = 1e308
    n = problem.spec.n_samples
    assert 0 < np.sum(np.abs(problem.X[:, 0]) > 1.0) < n  # some scores overflow, some not
    fast = problem.clipped_gradient(W, 1.0)
    monkeypatch.setenv("SKDP_NUMBA", "0")
    slow = problem.clipped_gradient(W, 1.0)
    assert compiled_pass and np.all(np.isfinite(fast))
    np.testing.assert_allclose(fast, slow, rtol=1e-12)


def test_compiled_pass_reads_a_memmap_in_place(compiled_pass, monkeypatch, tmp_path):
    problem = _pass_problem(LogisticLoss())
    path = tmp_path / "X.npy"
    np.save(path, problem.X)
    mapped = Problem.build(np.load(path, mmap_mode="r"), problem.Y, problem.spec,
                           intercept=1.0)
    W = np.random.default_rng(5).normal(size=(problem.spec.n_params, 1))
    fast = mapped.clipped_gradient(W, 1e3)
    assert compiled_pass == [problem.spec.n_samples]
    monkeypatch.setenv("SKDP_NUMBA", "0")
    np.testing.assert_allclose(fast, problem.clipped_gradient(W, 1e3), rtol=1e-12)


def test_the_full_pass_decision_reads_public_facts_only(monkeypatch):
    """Below FULL_PASS_MIN_WORK planned products, with SKDP_NUMBA off, for several
    outputs, a loss without a scalar form, Fortran-ordered, integer or sparse rows: the
    numpy pass runs and no kernel is built. At the threshold the kernel is asked for."""
    import scipy.sparse as sp

    from skdp.losses import MultinomialLogisticLoss, SmoothedHingeLoss

    asked = []
    monkeypatch.setenv("SKDP_NUMBA", "1")
    monkeypatch.setattr(_compiled, "clipped_gradient_pass", lambda: asked.append(1))
    monkeypatch.setattr(_compiled, "enabled", lambda: True)
    problem = _pass_problem(LogisticLoss())
    n, d = problem.X.shape
    W = np.zeros((problem.spec.n_params, 1))
    monkeypatch.setattr(_compiled, "FULL_PASS_MIN_WORK", 10 * n * d + 1)
    problem.clipped_gradient(W, 1.0, passes=10)
    assert not asked
    problem.clipped_gradient(W, 1.0, passes=11)  # the kernel was asked for (None: numpy)
    assert asked == [1]
    monkeypatch.setenv("SKDP_NUMBA", " Always ")  # every size
    problem.clipped_gradient(W, 1.0)
    assert asked == [1, 1]
    asked.pop()
    monkeypatch.setenv("SKDP_NUMBA", "1")
    monkeypatch.setattr(_compiled, "FULL_PASS_MIN_WORK", 0)
    other = [_pass_problem(SmoothedHingeLoss()),
             Problem.build(np.asfortranarray(problem.X), problem.Y, problem.spec,
                           intercept=1.0),
             Problem.build(np.rint(problem.X * 10).astype(np.int64), problem.Y,
                           problem.spec, intercept=1.0),
             Problem.build(sp.csr_matrix(problem.X), problem.Y, problem.spec, intercept=1.0)]
    for each in other:
        each.clipped_gradient(W, 1.0)
    assert asked == [1]
    multi = make_multinomial = ProblemSpec(
        n_samples=n, n_params=d, n_outputs=3, n_penalized=d, row_norm_bound=1e3,
        loss=MultinomialLogisticLoss(3), constraint=Unconstrained(), alpha=0.1)
    labels = np.eye(3)[np.arange(n) % 3]
    Problem.build(problem.X, labels, make_multinomial).clipped_gradient(
        np.zeros((d, 3)), 1.0)
    assert asked == [1] and multi is make_multinomial
    monkeypatch.setattr(_compiled, "enabled", lambda: False)
    problem.clipped_gradient(W, 1.0, passes=10**9)
    assert asked == [1]


@pytest.mark.parametrize("radius", [None, 0.2])
@pytest.mark.parametrize("clip", [None, 0.2])
def test_compiled_gd_matches_the_reference_fed_the_same_noise(compiled_pass, radius, clip):
    from skdp.geometry import L2Ball
    from skdp.solvers import NoisyGD
    from tests.conftest import RecordingNoiseSource, ReplayNoiseSource, make_problem
    from tests.solvers.test_gd import reference_nesterov_gd

    problem = make_problem(n=51, d=3, alpha=0.1, seed=2,
                           constraint=L2Ball(radius) if radius else None)
    solver = NoisyGD(n_iter=15, clip_norm=clip, momentum="nesterov")
    noise = RecordingNoiseSource(np.random.default_rng(0))
    res = solver.solve(problem, Budget(0.5, 1e-6), noise)
    assert compiled_pass == [51] * 15
    replay = ReplayNoiseSource(noise.draws)
    ref = reference_nesterov_gd(problem.design_matrix(), problem.Y[:, 0], 0.1, radius,
                                res.plan, replay)
    assert replay.exhausted()
    np.testing.assert_allclose(res.coef[:, 0], ref, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("solver", ["gd", "accelerated_mirror_descent", "svrg",
                                    "regularized_mirror_descent"])
def test_compiled_fits_equal_numpy_fits_with_the_same_ledger(compiled_pass, monkeypatch,
                                                             solver):
    """Through the public API: the same coefficients to rounding, the same ledger and
    noise draws (the kernel replaces the data products only)."""
    from skdp import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(401, 5)) / 3.0
    y = (X @ np.arange(5.0) + rng.normal(size=401) > 0).astype(int)
    params = dict(solver=solver, epsilon=1.0, delta=1e-5, data_norm=1.5, classes=[0, 1],
                  random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = DPLogisticRegression(**params).fit(X, y)
        assert compiled_pass
        monkeypatch.setenv("SKDP_NUMBA", "0")
        count = len(compiled_pass)
        slow = DPLogisticRegression(**params).fit(X, y)
    assert len(compiled_pass) == count
    np.testing.assert_allclose(fast.coef_, slow.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fast.intercept_, slow.intercept_, rtol=1e-9, atol=1e-12)
    assert fast.privacy_plan_ == slow.privacy_plan_


def test_the_full_pass_decision_reads_the_callers_layout(compiled_pass, monkeypatch):
    """A row so large that products could overflow is scaled in a dense float64 copy at
    build; whether one exists depends on the data, so the decision reads the layout of
    the caller's X: a strided X runs numpy with or without a huge row, a C-ordered one
    runs compiled with or without it (and equals numpy)."""
    problem = _pass_problem(LogisticLoss(), data_norm=1.0)
    X = problem.X.copy()
    X[7] *= 1e120  # a huge row: clipped to data_norm through the copy
    W = np.random.default_rng(5).normal(size=(problem.spec.n_params, 1))
    wide = np.zeros((X.shape[0], 2 * X.shape[1]))
    wide[:, ::2] = X
    strided = Problem.build(wide[:, ::2], problem.Y, problem.spec, data_norm=1.0,
                            intercept=1.0)
    assert strided.X.flags.c_contiguous  # the copy, which must not decide
    strided.clipped_gradient(W, 1e3)
    assert compiled_pass == []
    huge = Problem.build(X, problem.Y, problem.spec, data_norm=1.0, intercept=1.0)
    fast = huge.clipped_gradient(W, 1e3)
    assert compiled_pass == [X.shape[0]]
    monkeypatch.setenv("SKDP_NUMBA", "0")
    np.testing.assert_allclose(fast, huge.clipped_gradient(W, 1e3), rtol=1e-12)


def test_compiled_pass_edge_inputs(compiled_pass, monkeypatch):
    """A NaN clip gives NaN as in numpy (never the unclipped sum); float16 targets are
    read as float64; wrong shapes are refused before the kernel (it checks no bounds)."""
    problem = _pass_problem(SquaredLoss(5.0))
    W = np.random.default_rng(5).normal(size=(problem.spec.n_params, 1))
    assert np.all(np.isnan(problem.clipped_gradient(W, math.nan)))
    half = Problem.build(problem.X, problem.Y.astype(np.float16), problem.spec,
                         intercept=1.0)
    fast = half.clipped_gradient(W, 0.5)
    with pytest.raises(ValueError, match="rows for"):
        problem.clipped_gradient(W[:-1], 1.0)
    with pytest.raises(ValueError, match="out_coefficients"):
        problem.clipped_gradient(W, 1.0, out_coefficients=np.empty((3, 1)))
    monkeypatch.setenv("SKDP_NUMBA", "0")
    assert np.all(np.isnan(problem.clipped_gradient(W, math.nan)))
    np.testing.assert_allclose(fast, half.clipped_gradient(W, 0.5), rtol=1e-12)


@pytest.mark.parametrize("loss", PASS_LOSSES, ids=lambda loss: type(loss).__name__)
@pytest.mark.parametrize("clip_norm", [1e3, 0.05])
@pytest.mark.parametrize("q", [5.0, 1.5])
def test_compiled_pass_clips_in_another_norm(compiled_pass, monkeypatch, loss, clip_norm, q):
    """Regularized mirror descent's clip in the entrywise l_q norm (its rows' l_q norms
    passed in): for one output only the norms differ, and the compiled pass equals the
    numpy pass, binding or not; a binding l_q clip is not the l2 clip."""
    problem = _pass_problem(loss, data_norm=0.5)
    norms = problem.row_norms_in(q)
    W = np.random.default_rng(5).normal(size=(problem.spec.n_params, 1))
    fast = problem.clipped_gradient(W, clip_norm, norms=norms, ord=q)
    assert compiled_pass == [problem.spec.n_samples]
    monkeypatch.setenv("SKDP_NUMBA", "0")
    slow = problem.clipped_gradient(W, clip_norm, norms=norms, ord=q)
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-15)
    if clip_norm < 1:
        assert not np.allclose(slow, problem.clipped_gradient(W, clip_norm), rtol=1e-6)
    with pytest.raises(ValueError, match="row norms"):
        problem.clipped_gradient(W, clip_norm, norms=norms[:-1], ord=q)
