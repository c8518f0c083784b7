"""DP-SVRG++ (``svrg++``): its plans and behaviour are tested with DP-SVRG's in
``test_svrg.py`` and ``test_sensitivity.py``; this file declares its registry-wide test data."""

# -- what the registry-wide suites need (tests/solvers/_cases.py) -------------------------
def solver_cases():
    from skdp.losses import LogisticLoss
    from skdp.solvers import DPSVRGPlusPlus
    from tests.solvers._cases import AuditCase, SolverCases
    from tests.solvers.test_svrg import svrg_epoch_variance

    # As DP-SVRG's audit (test_svrg.py). Measured over 10 seeds: real <= 0.40, twin in
    # [2.64, 3.38].
    return {"svrg++": SolverCases(
        fast=lambda: DPSVRGPlusPlus(n_epochs=3, inner_steps=3, batch_size=10),
        converged=lambda: DPSVRGPlusPlus(n_epochs=11, inner_steps=2, batch_size=10,
                                         step_size=0.5),
        sensitivity=("test_sensitivity.py", "test_svrg_releases_sensitivity"),
        audits=(AuditCase(lambda: DPSVRGPlusPlus(n_epochs=1, inner_steps=1, batch_size=5,
                                                 clip_norm=0.25, correction_clip=1e-3,
                                                 step_size=0.5),
                          LogisticLoss, alpha=0.0, epsilon=2.0, delta=1e-5,
                          n_trials=10000),),
        zero_signal=lambda: DPSVRGPlusPlus(n_epochs=1, inner_steps=1, batch_size=5),
        zero_signal_variance=svrg_epoch_variance,
    )}
