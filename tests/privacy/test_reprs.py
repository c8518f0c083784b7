"""The value objects print their floats with 6 significant digits and keep every bit."""

import pickle

import numpy as np
from dp_accounting import dp_event as dpe

from skdp import BudgetAccountant
from skdp.audit import AuditResult
from skdp.privacy import Budget, PrivacyLedger, PrivacySpent
from skdp.solvers.localized_mirror_descent import LocalizedMirrorDescentPlan

EPSILON, DELTA = 0.1 + 0.2, 3 * 1e-5  # 0.30000000000000004, 3.0000000000000004e-05


def test_budget_prints_rounded_floats_and_keeps_its_values():
    budget = Budget(EPSILON, DELTA)
    assert repr(budget) == "Budget(epsilon=0.3, delta=3e-05)"
    assert str(budget) == repr(budget)
    assert budget.epsilon == EPSILON and budget.delta == DELTA
    assert budget != Budget(0.3, 3e-05)  # equality reads the exact values
    assert pickle.loads(pickle.dumps(budget)) == budget
    assert repr(Budget(float("inf"), 0.0)) == "Budget(epsilon=inf, delta=0)"


def test_ledger_prints_its_event_and_budget_rounded():
    event = dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(86.45903507818177), 70)
    ledger = PrivacyLedger(event, "gaussian", "replace_one", Budget(EPSILON, DELTA))
    assert repr(ledger) == (
        "PrivacyLedger(event=SelfComposedDpEvent(event=GaussianDpEvent("
        "noise_multiplier=86.459), count=70), accounting='gaussian', "
        "relation='replace_one', budget=Budget(epsilon=0.3, delta=3e-05), "
        "via_add_remove=False)")
    assert ledger.event.event.noise_multiplier == 86.45903507818177
    assert repr(PrivacySpent(EPSILON, DELTA)) == "PrivacySpent(epsilon=0.3, delta=3e-05)"


def test_plan_prints_the_floats_of_its_tuples_rounded():
    plan = LocalizedMirrorDescentPlan(
        n_iter=2, event=dpe.NonPrivateDpEvent(), accounting="rdp", relation="replace_one",
        phase_starts=(0, 1), phase_sizes=(1, 1), batch_sizes=(1, 1), phase_iters=(1, 1),
        noise_multiplier=(EPSILON, 2.0), sigma=(DELTA, 1.0), sensitivity=(1.0, 1.0),
        phase_epsilons=(1.0, 1.0), step_sizes=(1.0, 1.0), lambdas=(1.0, 1.0),
        radii=(1.0, 1.0), worst_phase=0, clip_norm=1 / 3)
    text = repr(plan)
    assert "noise_multiplier=(0.3, 2)" in text and "sigma=(3e-05, 1)" in text
    assert "clip_norm=0.333333" in text
    assert plan.noise_multiplier[0] == EPSILON


def test_accountant_and_audit_result_print_at_most_six_digits():
    acc = BudgetAccountant(epsilon=1.0, delta=1e-4)
    acc.charge(PrivacyLedger(dpe.GaussianDpEvent(30.0), "gaussian", "replace_one",
                             Budget(EPSILON, DELTA)), source="test")
    assert "0.30000000000000004" not in repr(acc)
    assert "budget=Budget(epsilon=0.3, delta=3e-05)" in repr(acc.entries[0])
    result = AuditResult(0.1234567891, EPSILON, DELTA, 0.95, 100, 1 / 3, 1, 0.1, 0.2, 0.3,
                         0.4, 5.123456789, np.zeros(2), np.zeros(2))
    assert repr(result) == (
        "AuditResult(epsilon_lower_bound=0.123457, epsilon=0.3, delta=3e-05, "
        "confidence=0.95, n_trials=100, threshold=0.333333, direction=1, fpr=0.1, "
        "fnr=0.2, fpr_upper=0.3, fnr_upper=0.4, detection_limit=5.12346)")
