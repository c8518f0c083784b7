"""Brute-force sensitivity of the Wang-Ye-Xu gradient releases (issue 6 item 3).

For DP-GD, DP-AccMD (the same full-batch query) and the DP-SVRG(++) snapshot and inner
releases: over random and adversarial replace-one neighbours and many query points, the
change of the released (pre-noise) quantity never exceeds the sensitivity the plan
declares, and adversarial neighbours come close to it (the bound is not vacuous). The
other solvers' sensitivity tests live in their own files (each solver's declared
``sensitivity``, tests/solvers/_cases.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from skdp.losses import clip_coefficients
from skdp.privacy import Budget
from skdp.solvers import DPSVRG, SOLVERS, DPAccMD, DPSVRGPlusPlus, NoisyGD, Problem
from tests.conftest import make_problem
from tests.solvers._cases import cases


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_registered_solver_has_a_sensitivity_test(name):
    """Each solver declares its brute-force neighbour test (tests/solvers/_cases.py)."""
    file, test = cases(name).sensitivity
    assert f"def {test}(" in (Path(__file__).parent / file).read_text(), (file, test)


def _neighbours(problem: Problem, rng, n_pairs: int):
    """Random and adversarial replacements of one record (rows on the data_norm sphere,
    labels flipped, directions opposite): yield the neighbouring problems."""
    spec = problem.spec
    X, Y = problem.X, problem.Y
    d = X.shape[1]
    for k in range(n_pairs):
        i = int(rng.integers(len(X)))
        X2, Y2 = X.copy(), Y.copy()
        if k % 3 == 0:  # random row on the sphere, random label
            row = rng.normal(size=d)
        elif k % 3 == 1:  # the opposite of the replaced row, label flipped
            row = -X[i] if np.any(X[i]) else rng.normal(size=d)
        else:  # a far-out row along one axis
            row = np.zeros(d)
            row[int(rng.integers(d))] = 1e6
        X2[i] = row / max(np.linalg.norm(row), 1e-300) * (1.0 if k % 3 != 2 else 10.0)
        # Flipped label: another class for one-hot labels, the opposite sign otherwise.
        flipped = np.roll(Y[i], 1) if np.all((Y == 0) | (Y == 1)) else -Y[i]
        Y2[i] = flipped if k % 2 else Y[int(rng.integers(len(Y)))]
        yield i, Problem.build(X2, Y2, spec, data_norm=1.0,
                               intercept=problem.intercept)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("solver", [NoisyGD(n_iter=3), DPAccMD(n_iter=3),
                                    NoisyGD(n_iter=3, clip_norm=0.05)], ids=repr)
def test_full_batch_gradient_sensitivity(solver, n_classes):
    problem = make_problem(n=40, d=4, n_classes=n_classes, seed=3, intercept=True)
    plan = solver.plan(problem.spec, Budget(1.0, 1e-5), "gaussian", "replace_one")
    declared, clip = plan.sensitivity, plan.clip_norm
    rng = np.random.default_rng(0)
    worst = 0.0
    for _, other in _neighbours(problem, rng, 60):
        for _ in range(5):
            W = rng.normal(size=(problem.spec.n_params, problem.spec.n_outputs)) * 3
            change = np.linalg.norm(problem.clipped_gradient(W, clip)
                                    - other.clipped_gradient(W, clip))
            worst = max(worst, change / declared)
    assert worst <= 1 + 1e-12
    assert worst > 0.5  # adversarial neighbours reach the bound's order


def test_full_batch_gradient_sensitivity_of_the_squared_loss():
    """DP-GD's default clip for the unbounded squared loss (half the label bound): the
    clipped mean gradient moves by at most the declared 2C/n."""
    problem = make_problem(n=40, d=4, seed=3, intercept=True, loss="squared")
    plan = NoisyGD(n_iter=3).plan(problem.spec, Budget(1.0, 1e-5), "gaussian",
                                  "replace_one")
    rng = np.random.default_rng(0)
    worst = 0.0
    for _, other in _neighbours(problem, rng, 60):
        for _ in range(5):
            W = rng.normal(size=(problem.spec.n_params, 1)) * 3
            change = np.linalg.norm(problem.clipped_gradient(W, plan.clip_norm)
                                    - other.clipped_gradient(W, plan.clip_norm))
            worst = max(worst, change / plan.sensitivity)
    assert 0.5 < worst <= 1 + 1e-12


def _inner(p: Problem, idx, x, w_tilde, g: float, c: float, b: int) -> np.ndarray:
    """The pre-noise SVRG inner release on batch ``idx`` (reference, as in the solver)."""
    rows = p.rows(idx)
    loss, Y, norms = p.spec.loss, p.Y[idx], p.norms[idx]
    cx = clip_coefficients(loss.derivative(p.scores(x, rows), Y), norms, g)
    cw = clip_coefficients(loss.derivative(p.scores(w_tilde, rows), Y), norms, g)
    return p.gradient_sum(clip_coefficients(cx - cw, norms, c), rows) / b


@pytest.mark.parametrize("cls", [DPSVRG, DPSVRGPlusPlus])
def test_svrg_releases_sensitivity(cls):
    # Snapshot: mean clipped gradient (2G/n); inner: batch mean of clipped corrections
    # clip_C(clip_G(grad f(x; z)) - clip_G(grad f(w~; z))) over b records (2C/b).
    problem = make_problem(n=30, d=3, seed=4, alpha=0.1)
    solver = cls(n_epochs=2, batch_size=6, correction_clip=0.3)
    plan = solver.plan(problem.spec, Budget(1.0, 1e-5), "rdp", "replace_one")
    s = plan
    g, c, b = s.clip_norm, s.correction_clip, s.batch_size
    rng = np.random.default_rng(1)
    worst_snap = worst_inner = 0.0
    for i, other in _neighbours(problem, rng, 45):
        for _ in range(4):
            shape = (problem.spec.n_params, problem.spec.n_outputs)
            x, w_tilde = rng.normal(size=shape) * 3, rng.normal(size=shape) * 3
            snap = np.linalg.norm(problem.clipped_gradient(w_tilde, g)
                                  - other.clipped_gradient(w_tilde, g))
            worst_snap = max(worst_snap, snap / s.sensitivity_snapshot)
            # A batch containing the replaced record i.
            idx = np.unique(np.r_[i, rng.choice(problem.spec.n_samples, b - 1)])
            idx = np.r_[idx, rng.choice(np.setdiff1d(np.arange(30), idx),
                                        b - len(idx), replace=False)]

            change = np.linalg.norm(_inner(problem, idx, x, w_tilde, g, c, b)
                                    - _inner(other, idx, x, w_tilde, g, c, b))
            worst_inner = max(worst_inner, change / s.sensitivity_inner)
    assert worst_snap <= 1 + 1e-12 and worst_inner <= 1 + 1e-12
    assert worst_snap > 0.5 and worst_inner > 0.5


def test_neighbours_differ_in_exactly_one_record():
    problem = make_problem(n=20, d=3, seed=2)
    rng = np.random.default_rng(3)
    for i, other in _neighbours(problem, rng, 9):
        changed = np.flatnonzero(np.any(problem.design_matrix() != other.design_matrix(), 1)
                                 | np.any(problem.Y != other.Y, axis=1))
        assert set(changed) <= {i}
    assert replace(problem).spec == problem.spec
