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
    with pytest.raises(ValueError, match="NaN or infinity"):
        Problem.build(sp.csr_matrix(X) if sparse else X, np.ones((5, 1)), spec, data_norm=1.0)
