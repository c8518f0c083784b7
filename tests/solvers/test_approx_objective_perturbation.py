"""Approximate objective perturbation: tested with exact objective perturbation in
``test_objective_perturbation.py``; this file declares its registry-wide test data."""

# -- what the registry-wide suites need (tests/solvers/_cases.py) -------------------------
def solver_cases():
    from dataclasses import replace

    from skdp.solvers import ApproxObjectivePerturbation
    from tests.solvers.test_objective_perturbation import solver_cases as exact_cases

    # Exact objective perturbation's test data with this solver (its Gaussian audit and
    # zero-signal law, which includes the output Gaussian). Measured (seeds 0-2): real
    # <= 0.16, twin 2.44-2.98.
    exact = exact_cases()["objective_perturbation"]
    solver = ApproxObjectivePerturbation
    return {"approx_objective_perturbation": replace(
        exact, fast=solver, converged=solver, zero_signal=solver,
        audits=tuple(replace(audit, solver=solver) for audit in exact.audits
                     if audit.delta > 0),
    )}
