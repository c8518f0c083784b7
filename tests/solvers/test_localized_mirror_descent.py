"""Localized mirror descent: its steps and batches are tested with noisy mirror
descent's in ``test_mirror_descent.py``; this file declares its registry-wide test data."""

import itertools

import numpy as np

from skdp.geometry import L2Ball
from skdp.losses import SquaredLoss
from skdp.privacy import Budget
from skdp.solvers import LocalizedMirrorDescent
from skdp.solvers.mirror_descent import batch_gradient
from tests.solvers.test_mirror_descent import _problem


def test_phase_batch_sensitivity_brute_force():
    """Each phase releases the mean clipped gradient of a batch of its own block (the
    localisation term is data-free): replacing one record (extreme rows and labels, at
    iterates inside and on the ball) moves it by at most the phase's declared
    sensitivity ``2 C / b_i`` (the worst case found reaches 40% of it)."""
    rng = np.random.default_rng(1)
    n, d = 8, 3
    X = rng.uniform(-1, 1, size=(n, d))
    y = rng.uniform(-1, 1, size=n)
    constraint = L2Ball(1.0)
    base = _problem(X, y, SquaredLoss(1.0), constraint=constraint)
    solver = LocalizedMirrorDescent(n_phases=2, batch_size=3, max_iter=2)
    plan = solver.plan(base.spec, Budget(1.0, 1e-5), "rdp", "replace_one")
    replacements = [(np.full(d, 1.0), 1.0), (np.full(d, -1.0), -1.0), (np.zeros(d), 1.0),
                    (np.array([5.0, -5.0, 5.0]), -1.0)]
    for b, declared in zip(plan.batch_sizes, plan.sensitivity, strict=True):
        assert declared == 2 * plan.clip_norm / b
        worst = 0.0
        for W in (np.zeros((d, 1)), constraint.project(rng.normal(size=(d, 1)) * 3)):
            for j, (xr, yr) in itertools.product(range(n), replacements):
                X2, y2 = X.copy(), y.copy()
                X2[j], y2[j] = xr, yr
                nb = _problem(X2, y2, SquaredLoss(1.0), constraint=constraint)
                for batch in itertools.combinations(range(n), b):
                    idx = np.array(batch)
                    diff = (batch_gradient(base, W, idx, plan.clip_norm, b)
                            - batch_gradient(nb, W, idx, plan.clip_norm, b))
                    worst = max(worst, float(np.linalg.norm(diff)))
        assert declared * 0.25 <= worst <= declared * (1 + 1e-12)  # not vacuous


# -- what the registry-wide suites need (tests/solvers/_cases.py) -------------------------
def solver_cases():
    from skdp.losses import LogisticLoss
    from skdp.solvers import LocalizedMirrorDescent
    from tests.solvers._cases import AuditCase, CanaryFirst, SolverCases

    # Identity permutation (the strongest fixed, data-independent order): the canary is
    # in phase 1's block in every run, so no block-assignment amplification hides it.
    # Measured: real 0.50, twin (/5) 4.16.
    return {"localized_mirror_descent": SolverCases(
        fast=lambda: LocalizedMirrorDescent(n_phases=3, batch_size=10, max_iter=10,
                                            step_size=1.0),
        not_erm="uses each record once (a population-risk method)",
        sensitivity=("test_localized_mirror_descent.py",
                     "test_phase_batch_sensitivity_brute_force"),
        audits=(AuditCase(lambda: LocalizedMirrorDescent(n_phases=1, batch_size=5,
                                                         max_iter=1, clip_norm=0.25,
                                                         step_size=100.0),
                          LogisticLoss, alpha=0.0, epsilon=2.0, delta=1e-5, n_trials=10000,
                          noise=CanaryFirst),),
        zero_signal=lambda: LocalizedMirrorDescent(n_phases=1, batch_size=5, max_iter=1,
                                                   step_size=1.0),
        # One phase, one step of the regularised problem from 0.
        zero_signal_variance=lambda plan, spec: (plan.sigma[0] / plan.lambdas[0]) ** 2,
        zero_signal_alpha=1e-9,
    )}
