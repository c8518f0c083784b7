"""The one charge sequence (skdp.privacy.charging.Charge)."""

import pytest

from skdp import BudgetAccountant
from skdp.privacy import Budget, PrivacyLedger, PureDpEvent
from skdp.privacy.charging import Charge


def pure(eps):
    return PrivacyLedger(PureDpEvent(eps), "pure", "replace_one", Budget(eps, 0.0))


def test_success_keeps_the_amended_entry():
    acc = BudgetAccountant(2.0)
    with Charge(acc, pure(1.0), source="t") as charge:
        charge.amend(pure(0.5))
    assert len(acc) == 1 and acc.spent().epsilon == pytest.approx(0.5)


def test_failure_before_any_release_refunds():
    acc = BudgetAccountant(2.0)
    with pytest.raises(RuntimeError), Charge(acc, pure(1.0), source="t"):
        raise RuntimeError("input error")
    assert len(acc) == 0


def test_failure_after_a_release_keeps_what_was_released():
    acc = BudgetAccountant(2.0)
    with pytest.raises(RuntimeError), Charge(acc, pure(1.0), source="t") as charge:
        charge.keep(pure(0.25))
        charge.amend(pure(0.75))
        raise RuntimeError("later")
    assert len(acc) == 1 and acc.spent().epsilon == pytest.approx(0.25)
    with pytest.raises(RuntimeError), Charge(acc, pure(0.5), source="t") as charge:
        charge.keep(charge.ledger)  # all of it was released (a score)
        raise RuntimeError("later")
    assert len(acc) == 2 and acc.spent().epsilon == pytest.approx(0.75)


def test_no_accountant_charges_nothing():
    with Charge(None, pure(1.0), source="t") as charge:
        charge.amend(pure(0.5))
        charge.keep(pure(0.1))
    assert charge.entry is None

