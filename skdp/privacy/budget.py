"""The one privacy-budget validator shared by every ``fit``."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from skdp._repr import dataclass_repr
from skdp._warnings import warn_user
from skdp.exceptions import BudgetError, PrivacyLeakWarning

__all__ = ["Budget", "check_budget", "release_budget"]


@dataclass(frozen=True)
class Budget:
    """A validated privacy budget (see :func:`check_budget`).

    Parameters
    ----------
    epsilon : float
        Privacy-loss bound, in ``(0, inf]``; ``inf`` is the explicit non-private mode.
    delta : float
        Failure probability, in ``[0, 1)``.
    """

    epsilon: float
    delta: float

    def __repr__(self) -> str:
        # Rounded for reading (0.30000000000000004 is 0.3); the fields keep every bit.
        return dataclass_repr(self)

    @property
    def is_private(self) -> bool:
        """``False`` only for the explicit non-private mode ``epsilon=inf``."""
        return math.isfinite(self.epsilon)


def _as_real(value: object, name: str) -> float:
    # bool is an Integral in Python; a budget of True is always a mistake.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise BudgetError(
            f"{name} must be a real number, got {value!r} of type {type(value).__name__}."
        )
    value = float(value)
    if math.isnan(value):
        raise BudgetError(f"{name} must not be NaN.")
    return value


def check_budget(
    epsilon: object,
    delta: object,
    *,
    needs_delta: bool = True,
    n_samples: int | None = None,
    solver_name: str | None = None,
) -> Budget:
    """Validate a privacy budget; the single entry point used by every ``fit``.

    Parameters
    ----------
    epsilon : float
        Must be a real number in ``(0, inf]``. ``inf`` selects the non-private mode
        (no noise) and emits a :class:`~skdp.exceptions.PrivacyLeakWarning`.
    delta : float
        Must be a real number in ``[0, 1)``.
    needs_delta : bool, default=True
        Whether the mechanism is approximate-DP only (Gaussian noise), so that
        ``delta = 0`` cannot be met.
    n_samples : int, optional
        Public dataset size; ``delta >= 1 / n_samples`` is warned about because such a
        delta allows releasing a whole record.
    solver_name : str, optional
        Used in error messages.

    Returns
    -------
    Budget
        The validated budget.

    Raises
    ------
    BudgetError
        For NaN, booleans, strings, ``epsilon <= 0``, ``delta`` outside ``[0, 1)``, or
        ``delta = 0`` with a solver that needs ``delta > 0``.
    """
    eps = _as_real(epsilon, "epsilon")
    dlt = _as_real(delta, "delta")
    if eps <= 0:
        raise BudgetError(
            f"epsilon must be > 0 (use epsilon=inf for a non-private fit), got {eps}."
        )
    if not 0.0 <= dlt < 1.0:
        raise BudgetError(f"delta must be in [0, 1), got {dlt}.")
    who = f"solver {solver_name!r}" if solver_name else "this solver"
    if math.isfinite(eps) and dlt == 0.0 and needs_delta:
        raise BudgetError(
            f"{who} uses Gaussian noise and gives (epsilon, delta)-DP with delta > 0 only; "
            "set delta > 0 (for example 1e-5, well below 1/n_samples)."
        )
    if not math.isfinite(eps):
        warn_user(
            "epsilon=inf: the model is fitted WITHOUT differential privacy (no noise is "
            "added). Use it only to debug or to measure the cost of privacy.",
            PrivacyLeakWarning, once=True)
    elif n_samples is not None and n_samples > 0 and dlt >= 1.0 / n_samples:
        warn_user(
            f"delta={dlt:g} is at least 1/n_samples={1.0 / n_samples:g}: a mechanism with "
            "this delta may reveal whole records. Use delta much smaller than 1/n_samples.",
            PrivacyLeakWarning, once=True)
    return Budget(epsilon=eps, delta=dlt)


def release_budget(total: Budget, bounds_fraction: float | None, accounting: str
                   ) -> tuple[float, Budget, str]:
    """Split ``total`` between private bounds and one release, and resolve its accounting.

    The split of the one-release estimators and transformers (``DPStandardScaler``,
    ``DPPCA``, ``DPGaussianNB``): the bounds get ``bounds_fraction * epsilon`` (pure DP),
    the release the rest at the full ``delta``; by basic composition the two spend at
    most ``total`` (the release's epsilon is rounded down until the sum does not exceed
    it). ``"auto"`` accounting is ``"pure"`` for ``delta = 0`` and ``"gaussian"``
    otherwise; a pure release is given ``delta = 0``.

    Parameters
    ----------
    total : Budget
        The validated budget of the whole fit.
    bounds_fraction : float or None
        The bounds' share of epsilon, in ``(0, 1)``; ``None`` (public bounds) or a
        non-private ``total``: no split.
    accounting : str
        ``"auto"`` or an accounting method.

    Returns
    -------
    eps_bounds : float
        The bounds' epsilon (``inf`` without a split).
    release : Budget
        The release's budget.
    accounting : str
        The release's accounting method.
    """
    release, eps_bounds = total, math.inf
    if bounds_fraction is not None and total.is_private:
        eps_bounds = float(bounds_fraction) * total.epsilon
        eps_release = total.epsilon - eps_bounds
        while eps_bounds + eps_release > total.epsilon:  # rounding must not exceed it
            eps_release = math.nextafter(eps_release, 0.0)
        release = Budget(eps_release, total.delta)
    if accounting == "auto":
        accounting = "pure" if release.delta == 0 else "gaussian"
    if accounting == "pure" and release.delta > 0:
        release = Budget(release.epsilon, 0.0)
    return eps_bounds, release, accounting
