"""Row clipping in any norm, lazy clipping factors and the public Hoelder bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from skdp.geometry import L1Ball, L2Ball, LpBall, Unconstrained
from skdp.losses import (
    HingeLoss,
    HuberLoss,
    LogisticLoss,
    MultinomialLogisticLoss,
    SmoothedHingeLoss,
    SquaredLoss,
    row_norms,
    vector_norms,
)
from skdp.solvers import Problem, ProblemSpec
from tests.conftest import make_problem

ORDS = [1.0, 1.5, 2.0, 3.0, math.inf]


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("sparse", [False, True])
def test_row_norms_match_numpy(ord, sparse):
    X = np.random.default_rng(0).standard_normal((20, 7)) * 3
    X[3] = 0.0
    X[5, :] = 1e200  # overflow-safe
    got = row_norms(sp.csr_matrix(X) if sparse else X, ord)
    want = np.array([np.linalg.norm(r / 1e200, ord) * 1e200 if i == 5
                     else np.linalg.norm(r, ord) for i, r in enumerate(X)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _spec(ord, d, intercept, constraint=None, loss=None, bound=1.0):
    constraint = Unconstrained() if constraint is None else constraint
    loss = LogisticLoss() if loss is None else loss
    n_params = d + (1 if intercept else 0)
    return ProblemSpec(
        n_samples=30, n_params=n_params, n_outputs=1, n_penalized=n_params,
        row_norm_bound=bound, loss=loss, constraint=constraint, alpha=0.1,
        intercept_feature=intercept, row_norm_ord=ord,
    )


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("sparse", [False, True])
def test_rows_are_clipped_in_the_declared_norm(ord, sparse):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 5)) * rng.uniform(0.01, 5, size=(30, 1))
    X[0] = 1e250  # pre-scaled in a copy
    data_norm, c = 0.7, 0.7
    bound = data_norm * (1.0 if ord == math.inf else 2 ** (1 / ord))
    spec = _spec(ord, 5, c, bound=bound)
    Xin = sp.csr_matrix(X) if sparse else X.copy()
    problem = Problem.build(Xin, np.ones((30, 1)), spec, data_norm=data_norm, intercept=c)
    design = problem.design_matrix()
    norms = np.linalg.norm(design, ord=ord, axis=1)
    assert np.all(norms <= bound * (1 + 1e-12))
    np.testing.assert_allclose(problem.row_norms_in(ord), norms, rtol=1e-12)
    np.testing.assert_allclose(problem.norms, np.linalg.norm(design, axis=1), rtol=1e-12)
    # Rows inside the ball are untouched; the others keep their direction.
    raw = np.linalg.norm(X[1:], ord=ord, axis=1)
    inside = raw <= data_norm * (1 - 1e-12)
    np.testing.assert_allclose(design[1:][inside, :5], X[1:][inside], rtol=1e-12)
    # The lazy products equal the products with the explicit design.
    W = rng.standard_normal((6, 1))
    np.testing.assert_allclose(problem.scores(W), design @ W, rtol=1e-10)
    D = rng.standard_normal((30, 1))
    np.testing.assert_allclose(problem.gradient_sum(D), design.T @ D, rtol=1e-10, atol=1e-12)
    block = problem.rows(np.array([4, 2, 9]))
    np.testing.assert_allclose(problem.scores(W, block), design[[4, 2, 9]] @ W, rtol=1e-10)
    # The user's X is never modified.
    got = Xin.toarray() if sparse else Xin
    np.testing.assert_array_equal(got, X)


@pytest.mark.parametrize("ord_from", ORDS)
@pytest.mark.parametrize("ord_to", ORDS)
def test_row_bound_converts_between_norms(ord_from, ord_to):
    # The converted bound holds for random and extreme (spread, spike) rows.
    spec = _spec(ord_from, 9, 0.0)
    rng = np.random.default_rng(2)
    rows = np.vstack([rng.standard_normal((200, 9)), np.ones((1, 9)), np.eye(9)[:1]])
    rows /= np.linalg.norm(rows, ord=ord_from, axis=1)[:, None]
    worst = np.linalg.norm(rows, ord=ord_to, axis=1).max()
    assert worst <= spec.row_bound(ord_to) * (1 + 1e-12)
    # ... and it is attained (spread rows for ord_to < ord_from, spikes otherwise).
    assert worst >= spec.row_bound(ord_to) * (1 - 1e-12)


@pytest.mark.parametrize(
    "constraint, ord",
    [(L2Ball(0.8), 2.0), (L1Ball(0.8), math.inf), (LpBall(0.8, 1.5), 3.0),
     (LpBall(0.8, 3.0), 1.5)],
)
def test_score_and_gradient_bounds_hold_on_the_feasible_set(constraint, ord):
    rng = np.random.default_rng(3)
    spec = _spec(ord, 6, 0.0, constraint=constraint, loss=SquaredLoss(2.0), bound=1.3)
    X = rng.standard_normal((500, 6))
    X[:6] = np.eye(6)
    X[6] = 1.0
    X *= 1.3 / np.linalg.norm(X, ord=ord, axis=1)[:, None]
    W = constraint.project(rng.standard_normal((6, 400)) * 5)
    W = np.hstack([W, constraint.lmo(-X[:50].T)])  # extreme points aligned with rows
    scores = np.abs(X @ W).max()
    assert scores <= spec.score_bound * (1 + 1e-9)
    # Per-example gradient (z - y) x with |y| <= 2, in l2 and in the dual norm.
    for norm_ord in (2.0, ord):
        worst = (scores + 2.0) * np.linalg.norm(X, ord=norm_ord, axis=1).max()
        assert worst <= spec.gradient_bound_in(norm_ord) * (1 + 1e-9)


def test_large_order_norms_do_not_underflow():
    # Review regression: sum(|x|^q)^(1/q) underflows to 0 for q ~ 1000 and entries below
    # ~0.49, which left rows unclipped and gradients unclipped/untruncated.
    from skdp.losses import clip_coefficients, vector_norms
    from skdp.solvers.truncated_mirror_descent import truncated_coefficients

    q = 1001.0
    rng = np.random.default_rng(5)
    X = rng.uniform(0.1, 0.4, size=(6, 8))
    want = X.max(axis=1) * np.sum((X / X.max(axis=1)[:, None]) ** q, axis=1) ** (1 / q)
    for A in (X, sp.csr_matrix(X)):
        np.testing.assert_allclose(row_norms(A, q), want, rtol=1e-12)
    np.testing.assert_allclose(vector_norms(X, q), want, rtol=1e-12)
    # Tiny l2 rows (squares underflow) are measured too.
    tiny = np.full((2, 3), 1e-170)
    np.testing.assert_allclose(row_norms(tiny, 2.0), np.sqrt(3) * 1e-170, rtol=1e-12)
    # Clipping and truncation see the true norms.
    D = np.full((6, 1), 0.3)
    clipped = clip_coefficients(D, want, 0.01, ord=q)
    np.testing.assert_allclose(want * np.abs(clipped[:, 0]), 0.01, rtol=1e-9)
    assert np.all(truncated_coefficients(D, want, 0.01, q) == 0.0)
    # Problem.build clips such rows to the declared bound.
    spec = _spec(q, 8, 0.0, bound=0.1)
    problem = Problem.build(X, np.ones((6, 1)), spec, data_norm=0.1)
    norms = vector_norms(problem.design_matrix(), q)
    assert np.all(norms <= 0.1 * (1 + 1e-9)) and np.all(norms >= 0.1 * (1 - 1e-9))


@pytest.mark.parametrize("sparse", [False, True])
def test_large_order_norms_with_an_intercept_do_not_underflow(sparse):
    # Review regression: (a^q + c^q)^(1/q) underflowed to 0 for q = 1001 and a, c <= 0.48,
    # so with fit_intercept the truncated and clipped solvers saw gradient norms of 0 and
    # released records untruncated (measured sensitivity 150x the declared one).
    q, c = 1001.0, 0.3
    rng = np.random.default_rng(6)
    X = rng.uniform(0.05, 0.3, size=(6, 8))
    Xin = sp.csr_matrix(X) if sparse else X
    spec = _spec(q, 8, c, bound=c * 2 ** (1 / q))
    problem = Problem.build(Xin, np.ones((6, 1)), spec, data_norm=c, intercept=c)
    want = vector_norms(problem.design_matrix(), q)
    assert np.all(want >= c)
    np.testing.assert_allclose(problem.row_norms_in(q), want, rtol=1e-12)
    # Without data_norm the caller's bound is checked on the true augmented norms.
    with pytest.raises(ValueError, match="row_norm_bound"):
        Problem.build(Xin, np.ones((6, 1)), _spec(q, 8, c, bound=0.1), intercept=c)


@pytest.mark.parametrize("q", [2.0, 3.0, 11.0, 101.0])
def test_clipped_gradients_never_exceed_the_clip_norm_in_exact_arithmetic(q):
    # Review regression: clipping to exactly clip_norm / ||g|| left the float64 gradient
    # entries up to 4.4e-16 (relative) above the clip norm; the sensitivity must hold for
    # the entries actually summed, so clipping aims slightly inside (NORM_SAFETY).
    import mpmath

    from skdp.losses import clip_coefficients

    mpmath.mp.dps = 40
    rng = np.random.default_rng(0)
    for _ in range(150):
        x = rng.standard_normal(6) * 10 ** rng.uniform(-3, 3)
        d = rng.standard_normal((1, 3)) * 10 ** rng.uniform(-3, 3)
        clip = 10 ** rng.uniform(-3, 0)
        D = clip_coefficients(d, vector_norms(x[None], q), clip, ord=q)
        entries = np.outer(x, D[0]).ravel()
        exact = mpmath.fsum(mpmath.mpf(abs(float(v))) ** q for v in entries) ** (1 / mpmath.mpf(q))
        assert exact <= clip


LOSSES = [LogisticLoss(), MultinomialLogisticLoss(3), SquaredLoss(1.0), HuberLoss(),
          HingeLoss(), SmoothedHingeLoss()]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: type(loss).__name__)
def test_fused_value_and_derivative_match_the_separate_ones(loss):
    rng = np.random.default_rng(0)
    K = getattr(loss, "n_outputs_hint", 1)
    # Scores far into both tails, where exp over/underflows if computed naively.
    Z = np.concatenate([rng.normal(scale=3.0, size=(200, K)),
                        np.array([[-800.0] * K, [800.0] * K, [0.0] * K, [40.0] * K])])
    if K > 1:
        Y = np.eye(K)[rng.integers(0, K, size=Z.shape[0])]
    else:
        Y = rng.choice([-1.0, 1.0], size=(Z.shape[0], 1))
    value, derivative = loss.value_and_derivative(Z, Y)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(derivative))
    np.testing.assert_allclose(value, loss.value(Z, Y), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(derivative, loss.derivative(Z, Y), rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_one_pass_loss_and_gradient_sums_match_the_objective(intercept, n_classes):
    # n larger than one block, so several blocks are summed.
    problem = make_problem(n=5000, d=80, n_classes=n_classes, intercept=intercept, alpha=0.0)
    rng = np.random.default_rng(1)
    W = rng.normal(size=(problem.spec.n_params, problem.spec.n_outputs))
    total, grad = problem.loss_and_gradient_sums(W)
    n = problem.spec.n_samples
    assert total / n == pytest.approx(problem.objective(W), rel=1e-12)
    np.testing.assert_allclose(grad / n, problem.gradient(W), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("data_norm", [1e-15, 1e-100, 1.0])
def test_huge_rows_are_clipped_inside_a_tiny_data_norm(sparse, data_norm):
    """Regression (review): a single factor data_norm / ||x|| is subnormal for rows near
    1e308 and a tiny data_norm, and once rounded a clipped row 1.33 data_norm long."""
    rng = np.random.default_rng(0)
    X = np.zeros((50, 3))
    X[:, 0] = rng.uniform(1.0, 1.79, size=50) * 1e308
    X[:, 1] = rng.normal(size=50)
    X = sp.csr_matrix(X) if sparse else X
    spec = ProblemSpec(n_samples=50, n_params=3, n_outputs=1, n_penalized=3,
                       row_norm_bound=data_norm, loss=LogisticLoss(),
                       constraint=Unconstrained(), alpha=0.0)
    problem = Problem.build(X, np.ones((50, 1)), spec, data_norm=data_norm)
    rows = problem.design_matrix()
    assert np.all(np.linalg.norm(rows / data_norm, axis=1) <= 1.0)
    assert np.all(np.linalg.norm(rows / data_norm, axis=1) > 1.0 - 1e-9)


@pytest.mark.parametrize("loss, bad, good", [
    (LogisticLoss(), [[-50.0]], [[-1.0]]),
    (SquaredLoss(1.0), [[100.0]], [[1.0]]),
    (HuberLoss(1.0, label_bound=2.0), [[-2.5]], [[-2.0]]),
    (MultinomialLogisticLoss(3), [[0.0, -1.0, 0.0]], [[0.0, 1.0, 0.0]]),
    (HingeLoss(), [[0.0]], [[1.0]]),
])
def test_labels_outside_the_loss_domain_are_refused(loss, bad, good):
    # Review regression: the gradient bounds assume labels in the loss's domain, and
    # Problem.build accepted any Y; phased SGD (no clipping) then had a realised
    # sensitivity of 1.5x (squared, label 100 with bound 1) and 11x (logistic, label -50).
    k = len(good[0])
    X = np.random.default_rng(0).uniform(-0.3, 0.3, size=(4, 3))
    spec = ProblemSpec(n_samples=4, n_params=3, n_outputs=k, n_penalized=3,
                       row_norm_bound=1.0, loss=loss, constraint=Unconstrained(), alpha=0.1)
    Y = np.repeat(np.array(good, dtype=float), 4, axis=0)
    Problem.build(X, Y, spec, data_norm=1.0)
    Y[2] = bad[0]
    with pytest.raises(ValueError, match="labels must"):
        Problem.build(X, Y, spec, data_norm=1.0)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features_are_refused(sparse, bad):
    # Review regression: an inf entry was prescaled to NaN and NaN * 0 reached X^T D, so
    # Frank-Wolfe's report-noisy-min always returned the first NaN candidate.
    X = np.random.default_rng(1).uniform(-0.3, 0.3, size=(5, 3))
    X[2, 1] = bad
    spec = _spec(2.0, 3, 0.0)
    message = "Input X contains NaN" if np.isnan(bad) else "Input X contains infinity"
    with pytest.raises(ValueError, match=message):
        Problem.build(sp.csr_matrix(X) if sparse else X, np.ones((5, 1)), spec, data_norm=1.0)


# -- clip skipping ------------------------------------------------------------------------
def _reference_clipped_gradient(problem, W, clip_norm):
    """The clipping pass as it was before the skip: always clip."""
    from skdp.losses import clip_coefficients

    grad = np.zeros((problem.spec.n_params, W.shape[1]))
    for block, rows in problem.row_blocks():
        D = clip_coefficients(problem.spec.loss.derivative(problem.scores(W, rows),
                                                           problem.Y[block]),
                              problem.norms[block], clip_norm)
        grad += problem.gradient_sum(D, rows)
    return grad / problem.spec.n_samples


def _clip_problem(loss, ord, intercept, n=3000, d=6, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.01, 3, size=(n, 1))
    k = getattr(loss, "n_outputs_hint", 1)
    if isinstance(loss, MultinomialLogisticLoss):
        Y = np.eye(k)[rng.integers(0, k, n)]
    elif isinstance(loss, HuberLoss):
        Y = rng.uniform(-1, 1, size=(n, 1))
    else:
        Y = rng.choice([-1.0, 1.0], size=(n, k))
    data_norm = 0.8
    c = data_norm if intercept else 0.0
    bound = data_norm * ((1.0 if ord == math.inf else 2 ** (1 / ord)) if intercept else 1.0)
    n_params = d + (1 if intercept else 0)
    spec = ProblemSpec(n_samples=n, n_params=n_params, n_outputs=Y.shape[1],
                       n_penalized=d, row_norm_bound=bound, loss=loss,
                       constraint=Unconstrained(), alpha=0.1, intercept_feature=c,
                       row_norm_ord=ord)
    Xin = sp.csr_matrix(X) if sparse else X
    return Problem.build(Xin, Y, spec, data_norm=data_norm, intercept=c), rng


@pytest.mark.parametrize("loss", [LogisticLoss(), MultinomialLogisticLoss(3), HingeLoss(2),
                                  SmoothedHingeLoss(1, 0.5), HuberLoss(0.7, 1.0)],
                         ids=lambda loss: type(loss).__name__)
@pytest.mark.parametrize("ord", [2.0, math.inf, 1.5])
@pytest.mark.parametrize("intercept", [False, True])
def test_clip_skipping_gives_the_clipped_result(loss, ord, intercept, monkeypatch):
    # The numpy pass, bit for bit (the compiled pass's own skip: tests/solvers/
    # test_compiled.py, equal to it to rounding).
    monkeypatch.setenv("SKDP_NUMBA", "0")
    problem, rng = _clip_problem(loss, ord, intercept)
    clip = problem.spec.gradient_bound
    assert problem.clip_cannot_bind(clip)
    for scale in (0.1, 10.0, 1e6):  # extreme scores: |phi'| at its supremum
        W = rng.standard_normal((problem.spec.n_params, problem.spec.n_outputs)) * scale
        got = problem.clipped_gradient(W, clip)
        want = _reference_clipped_gradient(problem, W, clip)
        # Identical up to the NORM_SAFETY margin, which the old path could bind by on
        # rows at the bound with |phi'| at its supremum (1e-12 relative at most).
        np.testing.assert_allclose(got, want, rtol=2e-12, atol=1e-15)
        if scale == 0.1 and isinstance(loss, LogisticLoss | MultinomialLogisticLoss):
            # |phi'| below its supremum: the old clip never bound, bit for bit the same.
            np.testing.assert_array_equal(got, want)


def test_clip_skipping_keeps_every_gradient_within_the_clip():
    # Rows exactly at the bound, the derivative at its supremum: the per-example
    # gradients the skip leaves unclipped are within clip_norm (the sensitivity holds).
    problem, _ = _clip_problem(LogisticLoss(), 2.0, True, n=500)
    clip = problem.spec.gradient_bound
    W = np.zeros((problem.spec.n_params, 1))
    W[-1] = -1e6 * problem.Y[0]  # phi' = -y expit(-y z) = +-1 exactly
    D = problem.spec.loss.derivative(problem.scores(W), problem.Y)
    design = problem.design_matrix()
    per_example = np.linalg.norm(design, axis=1) * np.abs(D[:, 0])
    assert per_example.max() <= clip


def test_clip_skipping_needs_public_proof():
    problem, _ = _clip_problem(LogisticLoss(), 2.0, False)
    bound = problem.spec.gradient_bound
    assert problem.clip_cannot_bind(bound)
    assert not problem.clip_cannot_bind(bound * (1 - 1e-15))  # a binding clip
    # Rows not clipped at build (only checked against the declared bound, with slack).
    unclipped = Problem.build(problem.design_matrix(), problem.Y, problem.spec)
    assert not unclipped.clip_cannot_bind(bound)

    class Custom(LogisticLoss):  # may override derivative: not trusted
        pass

    spec = problem.spec
    custom = Problem.build(problem.X, problem.Y, ProblemSpec(**{
        **{f: getattr(spec, f) for f in spec.__dataclass_fields__}, "loss": Custom()}),
        data_norm=problem.clipped_to)
    assert not custom.clip_cannot_bind(bound)
    # The squared loss's derivative grows with the score: never skipped.
    squared = make_problem(loss="squared", constraint=L2Ball(1.0))
    assert not squared.clip_cannot_bind(squared.spec.gradient_bound)


def test_clip_skipping_drops_non_finite_gradients_as_before():
    problem, rng = _clip_problem(LogisticLoss(), 2.0, False, n=400)
    W = rng.standard_normal((problem.spec.n_params, 1))
    W[0] = np.nan
    clip = problem.spec.gradient_bound
    np.testing.assert_array_equal(problem.clipped_gradient(W, clip),
                                  _reference_clipped_gradient(problem, W, clip))


# -- storage: float32, blocks, memory --------------------------------------------------------
@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("sparse", [False, True])
def test_row_norms_by_blocks_match_one_block(ord, sparse):
    from skdp.losses import _block_row_norms, row_block_size

    rng = np.random.default_rng(3)
    n = 3 * row_block_size(4) + 17
    X = rng.standard_normal((n, 4))
    X[5] = 1e200
    X = sp.csr_matrix(X) if sparse else X
    np.testing.assert_array_equal(row_norms(X, ord), _block_row_norms(X, ord))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_given_row_norms_replace_the_pass_with_the_same_numbers(dtype, monkeypatch):
    """``Problem.build(raw_norms=...)``, the norms an estimator's private data_norm read
    (``row_norms``): the clipping factors, norms and stored rows equal a build that
    computes them, over several blocks with huge rows prescaled; X is not read for them
    (no block statistics) unless a norm is not finite, and a NaN row still raises."""
    import skdp.solvers._problem as problem_module
    from skdp.losses import row_block_size

    rng = np.random.default_rng(8)
    n = 2 * row_block_size(5) + 31
    X = (rng.standard_normal((n, 5)) * rng.uniform(0.1, 3, size=(n, 1))).astype(dtype)
    X[7] = 1e30 if dtype == np.float32 else 1e200
    spec = ProblemSpec(n_samples=n, n_params=6, n_outputs=1, n_penalized=5,
                       row_norm_bound=math.hypot(1.0, 0.5), loss=LogisticLoss(),
                       constraint=Unconstrained(), alpha=0.1, intercept_feature=0.5)
    Y = rng.choice([-1.0, 1.0], size=(n, 1))
    computed = Problem.build(X, Y, spec, data_norm=1.0, intercept=0.5)
    calls = []
    real = problem_module._clipping_statistics
    monkeypatch.setattr(problem_module, "_clipping_statistics",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    given = Problem.build(X, Y, spec, data_norm=1.0, intercept=0.5,
                          raw_norms=row_norms(X, 2.0))
    # Only the prescaled huge row is read again (a float32 row cannot reach the bound).
    assert len(calls) == (1 if dtype == np.float64 else 0)
    np.testing.assert_array_equal(given.row_scale, computed.row_scale)
    np.testing.assert_array_equal(given.norms, computed.norms)
    np.testing.assert_array_equal(np.asarray(given.X), np.asarray(computed.X))
    bad = X.copy()
    bad[n - 3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Problem.build(bad, Y, spec, data_norm=1.0, intercept=0.5, raw_norms=row_norms(bad))


def test_a_private_data_norm_fit_reads_the_row_norms_once(monkeypatch):
    """End to end: with data_norm="auto" the problem reuses the norms the private bound
    read (no block statistics), and the fit equals the one that computes them again."""
    import warnings

    import skdp.solvers._problem as problem_module
    from skdp import DPLogisticRegression

    rng = np.random.default_rng(2)
    X = rng.standard_normal((3000, 4))
    y = (X[:, 0] + rng.logistic(size=3000) > 0).astype(int)
    calls = []
    real = problem_module._clipping_statistics
    monkeypatch.setattr(problem_module, "_clipping_statistics",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reused = DPLogisticRegression(1.0, classes=[0, 1], random_state=0).fit(X, y)
        assert calls == []
        build = problem_module.Problem.build.__func__

        def computing(cls, *args, raw_norms=None, **kwargs):
            return build(cls, *args, **kwargs)

        monkeypatch.setattr(problem_module.Problem, "build", classmethod(computing))
        computed = DPLogisticRegression(1.0, classes=[0, 1], random_state=0).fit(X, y)
        assert calls
    np.testing.assert_array_equal(reused.coef_, computed.coef_)
    assert reused.intercept_ == computed.intercept_


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [False, True])
def test_float32_rows_are_stored_as_given_and_computed_in_float64(sparse, intercept):
    rng = np.random.default_rng(4)
    X32 = (rng.standard_normal((5000, 7)) * rng.uniform(0.1, 3, size=(5000, 1))
           ).astype(np.float32)
    X64 = X32.astype(np.float64)
    if sparse:
        X32, X64 = sp.csr_matrix(X32), sp.csr_matrix(X64)
    c = 1.0 if intercept else 0.0
    spec = _spec(2.0, 7, c, bound=math.sqrt(2.0) if intercept else 1.0)
    spec = ProblemSpec(**{**{f: getattr(spec, f) for f in spec.__dataclass_fields__},
                          "n_samples": 5000})
    Y = rng.choice([-1.0, 1.0], size=(5000, 1))
    a = Problem.build(X32, Y, spec, data_norm=1.0, intercept=c)
    b = Problem.build(X64, Y, spec, data_norm=1.0, intercept=c)
    assert a.X.dtype == np.float32  # not doubled
    np.testing.assert_array_equal(a.row_scale, b.row_scale)
    np.testing.assert_array_equal(a.norms, b.norms)
    W = rng.standard_normal((spec.n_params, 1))
    np.testing.assert_array_equal(a.clipped_gradient(W, 0.5), b.clipped_gradient(W, 0.5))
    va, ga = a.loss_and_gradient_sums(W)
    vb, gb = b.loss_and_gradient_sums(W)
    assert va == vb
    np.testing.assert_array_equal(ga, gb)
    np.testing.assert_allclose(a.scores(W), b.scores(W), rtol=1e-13)
    D = rng.standard_normal((5000, 1))
    np.testing.assert_allclose(a.gradient_sum(D), b.gradient_sum(D), rtol=1e-11)


def _traced_peak(fn):
    import tracemalloc

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


@pytest.mark.parametrize("ord", [2.0, math.inf, 1.0])
@pytest.mark.parametrize("kind", ["float64", "float32", "csr"])
def test_build_and_passes_make_no_n_by_d_temporary(ord, kind):
    rng = np.random.default_rng(5)
    n, d = 200_000, 40
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    if kind == "float32":
        X = X.astype(np.float32)
    elif kind == "csr":
        X = sp.random(n, d, density=0.3, format="csr", random_state=0)
    nbytes = X.data.nbytes + X.indices.nbytes if kind == "csr" else X.nbytes
    Y = rng.choice([-1.0, 1.0], size=(n, 1))
    spec = ProblemSpec(n_samples=n, n_params=d, n_outputs=1, n_penalized=d,
                       row_norm_bound=1.0, loss=LogisticLoss(), constraint=Unconstrained(),
                       alpha=0.1, row_norm_ord=ord)
    W = rng.standard_normal((d, 1))

    def fit_like():
        problem = Problem.build(X, Y, spec, data_norm=1.0)
        problem.clipped_gradient(W, 1.0)
        problem.loss_and_gradient_sums(W)
        problem.row_norms_in(math.inf)

    # Two n-vectors (clipping factors, row norms) and one block of rows.
    assert _traced_peak(fit_like) < 0.5 * nbytes


@pytest.mark.parametrize("ord", [1.0, 1.5, math.inf])
def test_row_norms_of_a_small_matrix_stay_a_fraction_of_it(ord):
    """Blocks are at most 1/16 of the rows: on an 8 MB input (smaller than a few cache
    blocks) the norms' temporaries peaked at 0.89x before; now < 0.5x."""
    import tracemalloc

    X = np.random.default_rng(0).standard_normal((20_000, 50))
    tracemalloc.start()
    norms = row_norms(X, ord)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 0.5 * X.nbytes
    np.testing.assert_allclose(norms, np.linalg.norm(X, ord=ord, axis=1), rtol=1e-12)


@pytest.mark.parametrize("loss", [LogisticLoss(), MultinomialLogisticLoss(3), SquaredLoss(1.0),
                                  HuberLoss(0.5), HingeLoss(), SmoothedHingeLoss()],
                         ids=lambda loss: type(loss).__name__)
def test_derivative_inplace_is_the_derivative_bit_for_bit(loss):
    """The hot paths' in-place derivative (it overwrites the scratch scores) equals
    GLMLoss.derivative exactly, also at extreme and non-finite scores."""
    rng = np.random.default_rng(0)
    K = 3 if isinstance(loss, MultinomialLogisticLoss) else 1
    Z = rng.normal(scale=30.0, size=(500, K))
    Z[:3] = [[np.inf] * K, [-np.inf] * K, [np.nan] * K]
    if K > 1:
        Y = np.eye(K)[rng.integers(0, K, size=500)]
    elif isinstance(loss, (SquaredLoss, HuberLoss)):
        Y = rng.uniform(-1, 1, size=(500, 1))
    else:
        Y = rng.choice([-1.0, 1.0], size=(500, 1))
    expected = loss.derivative(Z.copy(), Y)
    np.testing.assert_array_equal(loss.derivative_inplace(Z.copy(), Y), expected)


@pytest.mark.parametrize("ord", [1.0, 1.5, 2.0, 3.0, 1001.0, math.inf])
def test_single_column_norms_are_the_scaled_formula(ord):
    """The one-column shortcut of ``vector_norms`` (single-output derivatives) returns
    what the scaled formula ``peak * ||a / peak||`` returns, NaN cases included."""

    a = np.array([[0.0], [1e-300], [3.5], [-2.0], [np.inf], [-np.inf], [np.nan], [1e308],
                  [5e-324]])
    peak = np.abs(a[:, 0])
    if ord == math.inf:
        expected = peak
    else:
        with np.errstate(all="ignore"):
            scaled = np.abs(a) / np.where(peak > 0, peak, 1.0)[:, None]
            expected = peak * np.sum(scaled ** ord, axis=1) ** (1.0 / ord)
    np.testing.assert_array_equal(vector_norms(a, ord), expected)
    two = np.hstack([a, np.zeros_like(a)])  # the general path agrees off the NaN rows
    finite = np.isfinite(a[:, 0])
    np.testing.assert_array_equal(vector_norms(a, ord)[finite], vector_norms(two, ord)[finite])


@pytest.mark.parametrize("storage", ["float64", "float32", "memmap", "csr"])
@pytest.mark.parametrize("intercept", [0.0, 1.0])
@pytest.mark.parametrize("ord_", [1.0, 2.0, 3.0, np.inf])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_entry_is_refused_whatever_the_norm(ord_, bad, intercept, storage,
                                                         tmp_path):
    # The entries of a dense block are checked only where a row norm is not finite: a NaN
    # or infinite entry must make its row's norm so in every ord (next to finite rows
    # whose norm overflows too).
    X = np.random.default_rng(0).normal(size=(600, 4))
    X[417, 2] = bad
    if storage != "float32":
        X[3, :2] = 1e308  # a finite row whose norm overflows: allowed

    def stored(X):
        if storage == "float32":
            return X.astype(np.float32)
        if storage == "csr":
            return sp.csr_matrix(X)
        if storage == "memmap":
            m = np.lib.format.open_memmap(tmp_path / f"X{np.isfinite(X).all()}.npy",
                                          mode="w+", dtype=float, shape=X.shape)
            m[:] = X
            return m
        return X

    p = 4 + (intercept > 0)
    spec = ProblemSpec(n_samples=600, n_params=p, n_outputs=1, n_penalized=4,
                       row_norm_bound=2.0, loss=LogisticLoss(), constraint=Unconstrained(),
                       alpha=0.0, row_norm_ord=ord_)
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        Problem.build(stored(X), np.ones((600, 1)), spec, data_norm=1.0, intercept=intercept)
    X[417, 2] = 0.0
    problem = Problem.build(stored(X), np.ones((600, 1)), spec, data_norm=1.0,
                            intercept=intercept)
    assert np.all(np.isfinite(problem.design_matrix()))


def test_row_norms_of_many_zero_and_tiny_rows_match_the_scaled_reference():
    # Zero and underflowing rows are recomputed (scaled) in blocks, not in one copy.
    X = np.zeros((5000, 7))
    X[::3] = np.random.default_rng(1).normal(size=(1667, 7)) * 1e-170
    X[1::3] = np.random.default_rng(2).normal(size=(1667, 7))
    expected = np.sqrt(np.einsum("ij,ij->i", X, X))
    small = np.arange(5000) % 3 != 1
    expected[small] = [vector_norms(row[None, :], 2.0)[0] for row in X[small]]
    assert np.all(expected[::3] > 0)
    np.testing.assert_array_equal(row_norms(X, 2.0), expected)


@pytest.mark.parametrize("ord_", [1.0, 2.0, 3.0, np.inf])
def test_sparse_row_norms_never_densify_empty_or_tiny_rows(ord_):
    # Empty and underflowing rows are recomputed scaled; for CSR rows that once took a
    # dense copy of 256 rows (205 MB at d = 1e5, 2 GB at d = 1e6).
    import tracemalloc

    rng = np.random.default_rng(0)
    weights = np.ones(3000)
    weights[::2], weights[1::4] = 0.0, 1e-170  # empty rows, underflowing rows
    columns = np.sort(rng.choice(100_000, size=(3000, 10)), axis=1).ravel()
    X = sp.csr_matrix((rng.normal(size=30_000), columns, np.arange(0, 30_001, 10)),
                      shape=(3000, 100_000))
    X = sp.diags(weights) @ X
    X.eliminate_zeros()
    tracemalloc.start()
    try:
        norms = row_norms(X, ord_)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5e6
    expected = np.array([vector_norms(X[i].toarray(), ord_)[0] for i in range(0, 3000, 7)])
    np.testing.assert_allclose(norms[::7], expected, rtol=1e-14, atol=0)
    assert np.all(norms[::2] == 0.0) and np.all(norms[1::4][X[1::4].getnnz(axis=1) > 0] > 0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, "both"])
@pytest.mark.parametrize("k", [1, 3])
def test_clip_skip_sends_every_non_finite_derivative_to_the_clip(bad, k):
    """The lossless-clip skip tests finiteness with one sum: a NaN, an infinity or two
    infinities of opposite signs (whose sum is NaN) still take the clipping path, which
    drops them; finite derivatives are returned as they are (the same array)."""
    from skdp.losses import clip_coefficients
    from skdp.solvers._problem import clip_unless_lossless

    rng = np.random.default_rng(k)
    D = rng.uniform(-1.0, 1.0, size=(50, k))
    norms = rng.uniform(0.5, 1.0, size=50)
    assert clip_unless_lossless(D, norms, 2.0, True) is D
    if bad == "both":
        D[3, 0], D[7, k - 1] = np.inf, -np.inf
    else:
        D[3, k - 1] = bad
    out = clip_unless_lossless(D, norms, 2.0, True)
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out, clip_coefficients(D, norms, 2.0))
    assert not out[3].any()
