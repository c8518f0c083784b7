import math
import warnings

import pytest

from skdp.exceptions import BudgetError, PrivacyLeakWarning
from skdp.privacy import Budget, check_budget


def test_valid_budget_roundtrip():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = check_budget(1.0, 1e-5, n_samples=1000)
    assert b == Budget(1.0, 1e-5) and b.is_private


@pytest.mark.parametrize("eps", [float("nan"), 0, 0.0, -1, True, False, "1", None, [1.0]])
def test_bad_epsilon(eps):
    with pytest.raises(BudgetError, match="epsilon"):
        check_budget(eps, 1e-5)


@pytest.mark.parametrize("delta", [float("nan"), -0.1, 1.0, 1.5, True, "0.1", None])
def test_bad_delta(delta):
    with pytest.raises(BudgetError, match="delta"):
        check_budget(1.0, delta)


def test_delta_zero_needs_pure_dp_solver():
    with pytest.raises(BudgetError, match="delta > 0"):
        check_budget(1.0, 0.0, needs_delta=True, solver_name="gd")
    assert check_budget(1.0, 0.0, needs_delta=False).delta == 0.0


def test_infinite_epsilon_is_explicit_non_private_mode():
    with pytest.warns(PrivacyLeakWarning, match="WITHOUT differential privacy"):
        b = check_budget(math.inf, 0.0)
    assert not b.is_private


def test_large_delta_warns():
    with pytest.warns(PrivacyLeakWarning, match="1/n_samples"):
        check_budget(1.0, 0.01, n_samples=100)


def test_privacy_spent_reads_rounded_and_keeps_every_bit():
    from skdp.privacy import PrivacySpent

    spent = PrivacySpent(0.9999999991, 3.0000000000000004e-05)
    assert repr(spent) == "PrivacySpent(epsilon=1, delta=3e-05)"
    assert spent.delta == 3.0000000000000004e-05
