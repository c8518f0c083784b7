"""Localized mirror descent: its steps and batches are tested with noisy mirror
descent's in ``test_mirror_descent.py``; this file declares its registry-wide test data."""

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
        sensitivity=("test_mirror_descent.py",
                     "test_batch_gradient_sensitivity_is_never_exceeded"),
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
