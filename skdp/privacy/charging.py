"""The one charge sequence of every release: charge, amend, keep what was released.

Every private fit, transformer, search and score given a budget accountant runs

1. ``charge`` its planned ledger, before it reads any value of the data (the ceiling is
   checked there; a refusal reads and records nothing);
2. ``amend`` the entry to what it really ran, when it could plan part of it only after a
   private release (bounds estimated from the data, then the solver planned with them);
3. on failure, ``keep`` only what was released before the failure, or ``refund`` the
   entry when nothing computed from the data was released.

:class:`Charge` is that sequence, as a context manager, so that it is written once.
See docs/tuning_and_budgets.md, section 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Charge"]


class Charge:
    """Charge ``ledger`` to ``accountant`` for the duration of a ``with`` block.

    Parameters
    ----------
    accountant : BudgetAccountant or None
        ``None``: nothing is charged (every method is a no-op).
    ledger : PrivacyLedger or CompositeLedger
        What the release will run, from its public plan.
    source : str
        The class that runs it.
    params : mapping, optional
        Its public parameters.

    Examples
    --------
    >>> from skdp import BudgetAccountant
    >>> from skdp.privacy import Budget, PrivacyLedger, PureDpEvent
    >>> acc = BudgetAccountant(1.0)
    >>> ledger = PrivacyLedger(PureDpEvent(0.5), "pure", "replace_one", Budget(0.5, 0.0))
    >>> with Charge(acc, ledger, source="example") as charge:
    ...     charge.keep(ledger)  # released: kept even if the block fails later
    >>> len(acc)
    1
    """

    def __init__(self, accountant, ledger, *, source: str,
                 params: Mapping[str, Any] | None = None):
        self.accountant = accountant
        self.ledger = ledger
        self.source = source
        self.params = params
        self.entry: int | None = None
        self._recorded = ledger
        self._kept = None

    @classmethod
    def of(cls, estimator, ledger) -> Charge:
        """The charge of an estimator's fit: to its ``accountant``, under its class name,
        with its public parameters (``get_params(deep=False)``).

        Parameters
        ----------
        estimator : estimator
            The estimator being fitted.
        ledger : PrivacyLedger or CompositeLedger
            What the fit will run, from its public plan.

        Returns
        -------
        Charge
            The charge, to open with ``with``.
        """
        return cls(estimator.accountant, ledger, source=type(estimator).__name__,
                   params=estimator.get_params(deep=False))

    def __enter__(self) -> Charge:
        if self.accountant is not None:
            self.entry = self.accountant.charge(self.ledger, source=self.source,
                                                params=self.params)
        return self

    def amend(self, ledger) -> None:
        """Record what really ran (the accountant re-checks its ceiling)."""
        if self.entry is not None:
            self.accountant.amend(self.entry, ledger)
            self._recorded = ledger

    def keep(self, ledger) -> None:
        """Mark ``ledger`` as released: on failure the entry is amended to it instead of
        refunded (whether the rest fails may depend on what it released, or on data)."""
        self._kept = ledger

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None or self.entry is None:
            return False
        if self._kept is not None:
            if self._kept is not self._recorded:
                self.accountant.amend(self.entry, self._kept)
        else:
            # Nothing computed from the data was released: the entry is taken back.
            self.accountant.refund(self.entry)
        return False
