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
        "fnr=0.2, fpr_upper=0.3, fnr_upper=0.4, detection_limit=5.12346, violated=False)")


def test_an_audit_result_prints_its_verdict():
    """A lower bound just above the claim reads as equal at 6 digits: the repr says it."""
    result = AuditResult(epsilon_lower_bound=2.0000004, epsilon=2.0, delta=1e-5,
                         confidence=0.99, n_trials=1000, threshold=0.0, direction=1,
                         fpr=0.1, fnr=0.1, fpr_upper=0.2, fnr_upper=0.2,
                         detection_limit=5.0, scores=np.zeros(1), scores_prime=np.zeros(1))
    assert result.violated
    assert "epsilon_lower_bound=2, epsilon=2," in repr(result)
    assert repr(result).endswith("violated=True)")


def test_the_report_keeps_apart_mechanisms_that_read_the_same_at_six_digits():
    from skdp._report import _mechanisms

    a, b = dpe.GaussianDpEvent(1.0000001), dpe.GaussianDpEvent(1.0000002)
    ledger = PrivacyLedger(dpe.ComposedDpEvent([a, a, b]), "rdp", "replace_one",
                           Budget(1.0, 1e-5))
    counts = _mechanisms(ledger)[1]
    assert sorted(counts.values()) == [1, 2]
    assert set(counts) == {repr(a), repr(b)}
    one = PrivacyLedger(dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(3.96291926443131), 4),
                        "rdp", "replace_one", Budget(1.0, 1e-5))
    assert dict(_mechanisms(one)[1]) == {"GaussianDpEvent(noise_multiplier=3.96292)": 4}


def test_a_plan_pickled_before_the_rename_reads_its_accounting_method():
    from skdp.solvers.gd import GDPlan

    plan = GDPlan(n_iter=3, event=dpe.GaussianDpEvent(1.0), accounting="rdp",
                  relation="replace_one", sigma=1.0, noise_multiplier=1.0, sensitivity=1.0,
                  clip_norm=1.0, step_size=1.0, momentum=0.0)
    state = dict(vars(plan))
    state["accountant"] = state.pop("accounting")
    old = GDPlan.__new__(GDPlan)
    old.__setstate__(state)
    assert old.accounting == "rdp" and old == plan and "accounting='rdp'" in repr(old)


def test_a_solver_overriding_the_renamed_hook_is_refused():
    import pytest

    from skdp.solvers import NoisyGD

    with pytest.raises(TypeError, match="resolve_accounting"):
        type("OldStyle", (NoisyGD,), {"resolve_accountant": lambda self, a, b=None: a})


def test_stored_ledgers_name_the_method_under_both_keys():
    from skdp.privacy.budget_accountant import _ledger_from_dict, _ledger_to_dict

    ledger = PrivacyLedger(dpe.GaussianDpEvent(2.0), "rdp", "replace_one", Budget(1.0, 1e-5))
    stored = _ledger_to_dict(ledger)
    assert stored["accounting"] == stored["accountant"] == "rdp"  # older readers: the latter
    assert _ledger_from_dict(stored) == ledger
