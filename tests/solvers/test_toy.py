"""A new solver is its file, one registry line and its own test file.

``tests/solvers/toy.py`` is a toy solver; this is its test file, which declares its test
data for the registry-wide suites (:func:`solver_cases`) and holds its brute-force
sensitivity test. :func:`test_the_registry_wide_suites_pass_on_a_toy_solver` registers
it with one line (``SKDP_TEST_SOLVERS``, the stand-in for a line in ``SOLVERS``) and runs
the conformance suite, the sensitivity index and the audits on it, unchanged.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from skdp.privacy import Budget
from tests.conftest import make_problem
from tests.solvers.toy import ToyGD

ROOT = Path(__file__).resolve().parents[2]


def test_toy_step_sensitivity_brute_force():
    """The mean clipped gradient of neighbouring data sets (one record replaced: random,
    opposite and far-out rows, flipped labels) moves by at most the plan's sensitivity,
    at every point tried."""
    from tests.solvers.test_sensitivity import _neighbours

    problem = make_problem(n=40, d=3, seed=2)
    plan = ToyGD(n_iter=3).plan(problem.spec, Budget(1.0, 1e-5), "gaussian", "replace_one")
    rng = np.random.default_rng(0)
    worst = 0.0
    for _, neighbour in _neighbours(problem, rng, 60):
        W = rng.normal(size=(problem.spec.n_params, problem.spec.n_outputs)) * 3.0
        moved = (problem.clipped_gradient(W, plan.clip_norm)
                 - neighbour.clipped_gradient(W, plan.clip_norm))
        worst = max(worst, float(np.linalg.norm(moved)))
    assert 0.0 < worst <= plan.sensitivity * (1 + 1e-12)


def test_the_registry_wide_suites_pass_on_a_toy_solver():
    """Registered by one line, the toy solver joins the conformance suite, the
    sensitivity index and the audits (slow ones included) with nothing else edited, and
    they pass."""
    env = {**os.environ, "SKDP_TEST_SOLVERS": "toy=tests.solvers.toy:ToyGD"}
    suites = ["tests/solvers/test_conformance.py", "tests/solvers/test_sensitivity.py",
              "tests/test_audit.py"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-k", "toy", *suites],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert passed >= 15, summary  # the toy ran through every per-solver test


# -- what the registry-wide suites need (tests/solvers/_cases.py) -------------------------
def solver_cases():
    from skdp.losses import SmoothedHingeLoss
    from tests.solvers._cases import AuditCase, SolverCases

    return {"toy": SolverCases(
        fast=lambda: ToyGD(n_iter=10),
        converged=lambda: ToyGD(n_iter=3000),
        sensitivity=("test_toy.py", "test_toy_step_sensitivity_brute_force"),
        # One step from w = 0 on the smoothed hinge: the canary's derivative is -y on the
        # loss's linear part, so its clipped gradient moves by the full 2C.
        audits=(AuditCase(lambda: ToyGD(n_iter=1), SmoothedHingeLoss, alpha=0.0,
                          epsilon=2.0, delta=1e-5, n_trials=2000),),
        zero_signal=lambda: ToyGD(n_iter=1),
        # One step from 0: -eta * noise.
        zero_signal_variance=lambda plan, spec: (plan.step_size * plan.sigma) ** 2,
    )}
