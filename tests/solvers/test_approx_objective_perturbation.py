"""Approximate objective perturbation: tested with exact objective perturbation in
``test_objective_perturbation.py``; this file declares its registry-wide test data."""

# -- what the registry-wide suites need (tests/solvers/_cases.py) -------------------------
def solver_cases():
    from skdp.losses import SmoothedHingeLoss
    from skdp.solvers import ApproxObjectivePerturbation
    from tests.solvers._cases import AuditCase, SolverCases
    from tests.solvers.test_objective_perturbation import constant_loss_variance

    # As objective perturbation's audit. Measured (seeds 0-2): real <= 0.16, twin
    # 2.44-2.98.
    return {"approx_objective_perturbation": SolverCases(
        fast=ApproxObjectivePerturbation,
        converged=ApproxObjectivePerturbation,
        sensitivity=("test_objective_perturbation.py",
                     "test_gaussian_step_sensitivity_brute_force"),
        audits=(AuditCase(ApproxObjectivePerturbation, SmoothedHingeLoss, alpha=1.0,
                          epsilon=2.0, delta=1e-5, n_trials=2000),),
        zero_signal=ApproxObjectivePerturbation,
        zero_signal_variance=constant_loss_variance,
        one_release=True,
    )}
