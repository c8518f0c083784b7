"""What a fit ran (:class:`PrivacyLedger`) and its independent re-accounting.

:func:`reaccount` recomputes the ``(epsilon, delta)`` of a ledger from the events it
records, with a fresh composition engine. It deliberately does not import the calibration
(:mod:`skdp.privacy.calibration`): the check of a plan against its budget must not be a
hit in a cache of the code path that chose the noise (an epsilon memoised for an event,
or a calibrated multiplier). It shares with the calibration only the engine classes
(:func:`~skdp.privacy.engines.make_engine`), so both read an event the same way
and report identical numbers, and with them the RDP engine's memo of per-order
subsampled-Gaussian RDP values, a pure function of its key (docs/privacy_accounting_speed.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from dp_accounting import dp_event as dpe

from skdp._repr import dataclass_repr
from skdp.exceptions import IncompatibleSolverError
from skdp.privacy.budget import Budget
from skdp.privacy.engines import make_engine

__all__ = [
    "MAX_ADD_REMOVE_EPSILON",
    "PrivacyLedger",
    "PrivacySpent",
    "add_remove_budget",
    "reaccount",
]


class PrivacySpent(NamedTuple):
    """``(epsilon, delta)`` actually spent, from re-accounting a ledger.

    A named tuple: it unpacks as ``epsilon, delta``.

    Parameters
    ----------
    epsilon : float
        The privacy loss spent (``inf`` for a non-private fit).
    delta : float
        The failure probability spent.
    """

    epsilon: float
    delta: float

    def __repr__(self) -> str:
        # Rounded for reading (3.0000000000000004e-05 is 3e-05); the fields keep every bit.
        return f"PrivacySpent(epsilon={self.epsilon:.6g}, delta={self.delta:.6g})"

    def within(self, budget: Budget) -> bool:
        """Whether both ``epsilon`` and ``delta`` meet ``budget``.

        ``delta`` is forgiven the rounding of its own arithmetic (``1e-12`` relative, as
        for split deltas): a ledger converted by group privacy reports
        ``(1 + e^e) delta / (1 + e^h)``, exactly ``delta`` at ``e = h`` in real arithmetic.

        Parameters
        ----------
        budget : Budget
            The budget to meet.

        Returns
        -------
        bool
            ``epsilon <= budget.epsilon`` and ``delta <= budget.delta`` (up to that
            rounding).
        """
        return (self.epsilon <= budget.epsilon
                and self.delta <= budget.delta * (1.0 + 1e-12))



def renamed_accounting(state: dict) -> dict:
    """The pickled state of a ledger or plan with its accounting method under its current
    name: objects pickled before the rename hold it as ``"accountant"``.

    Parameters
    ----------
    state : dict
        The object's ``__dict__`` as pickled.

    Returns
    -------
    dict
        A copy with ``"accountant"`` renamed ``"accounting"``.
    """
    state = dict(state)
    if "accountant" in state:
        state["accounting"] = state.pop("accountant")
    return state

@dataclass(frozen=True)
class PrivacyLedger:
    """What a fit actually ran, with everything needed to re-account it.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The composed event of every noisy release of the fit.
    accounting : str
        The accounting method that reads ``event`` (``"gaussian"``, ``"rdp"``, ``"pld"``,
        ``"pure"`` or ``"basic"``). Ledgers pickled under its former name, ``accountant``,
        load with it renamed.
    relation : str
        Neighbouring relation of the guarantee (``"replace_one"`` or ``"add_remove"``).
    budget : Budget
        The target budget.
    via_add_remove : bool, default=False
        ``event`` is accounted under add/remove at :func:`add_remove_budget` and converted
        to ``relation`` (replace-one) by group privacy.
    """

    event: dpe.DpEvent
    accounting: str
    relation: str
    budget: Budget
    via_add_remove: bool = False
    #: The result of the last :meth:`reaccount` of THIS ledger (not shared with any other
    #: ledger or with the calibration); excluded from equality, hashing and ``repr``.
    _spent: PrivacySpent | None = field(default=None, init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        # Floats rounded for reading (the event's too); the fields keep every bit.
        return dataclass_repr(self)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(renamed_accounting(state))

    def reaccount(self) -> PrivacySpent:
        """Re-account ``event`` now, with a fresh composition engine (see :func:`reaccount`).

        The result is remembered by this ledger: later calls of :meth:`spent` return it
        without accounting again.

        Returns
        -------
        PrivacySpent
            The re-accounted ``(epsilon, delta)``.
        """
        spent = reaccount(self)
        object.__setattr__(self, "_spent", spent)
        return spent

    def spent(self) -> PrivacySpent:
        """The ``(epsilon, delta)`` spent under ``relation``.

        The first call re-accounts the ledger (:meth:`reaccount`: a fresh engine, none
        of the calibration's caches); later calls on the same ledger return that result.

        Returns
        -------
        PrivacySpent
            The ``(epsilon, delta)`` of the ledger.
        """
        spent = self._spent
        return self.reaccount() if spent is None else spent


def reaccount(ledger: PrivacyLedger) -> PrivacySpent:
    """The ``(epsilon, delta)`` of ``ledger``, recomputed from its events from scratch.

    An accounting path independent of the calibration that chose the noise: a FRESH
    composition engine of the ledger's accounting method
    (:func:`~skdp.privacy.engines.make_engine`)
    composes ``ledger.event`` itself (the event the solver says it runs, not the
    calibration's ``factory(z, *args)``) and converts its epsilon; no epsilon or
    multiplier is read from a cache (:func:`~skdp.privacy.calibration.epsilon_spent`'s
    memo and the calibration's ``lru_cache`` are not consulted). The numbers are those of
    the calibration's engine, exactly: both read the event with the same engine
    class. The one memo it shares is the RDP engine's per-order values of a
    subsampled Gaussian, keyed by every input of dp_accounting's bound (the bound itself,
    the relation, ``q``, ``z``, the order): a hit is the float that recomputation gives
    (tests/privacy/test_calibration_cache.py).

    Parameters
    ----------
    ledger : PrivacyLedger
        The ledger to re-account. Its ``budget`` is trusted (validated once, by
        :func:`~skdp.privacy.budget.check_budget`, or derived from a validated budget);
        only its ``delta`` is read, as the point of the privacy curve to evaluate.

    Returns
    -------
    PrivacySpent
        ``(epsilon, budget.delta)``; with ``via_add_remove``, the add/remove guarantee at
        ``d = add_remove_budget(budget).delta`` converted to replace-one by group privacy,
        ``(2 e, (1 + e^e) d)``. ``(inf, budget.delta)`` for a non-private budget.

    Raises
    ------
    IncompatibleSolverError
        If the ledger's accounting method cannot read its event under the relation.

    Notes
    -----
    Cost: one engine evaluation of the whole ledger, on every call (a warm fit, whose
    calibration is cached, pays it too). Measured for the default configuration of every
    solver (20 features, budget ``(1, 1e-5)``, ``n = 10^5``; localized mirror descent at
    ``n = 10^4``): about 1 ms with the ``"gaussian"``, ``"pure"`` and ``"basic"``
    accounting methods, at most 0.2 s with ``"rdp"`` and 0.7 s with ``"pld"`` (DP-SVRG with
    Poisson batches), against 1 to 10 s for the cold PLD calibration of the same ledgers
    (70 s for localized mirror descent). With ``"rdp"``, a ledger at the multiplier the
    calibration returned costs about 1 ms: the calibration checked that multiplier with
    every order, and the subsampled-Gaussian values are memoised.
    """
    budget = ledger.budget
    if not budget.is_private:
        return PrivacySpent(math.inf, budget.delta)
    if ledger.via_add_remove:
        inner_delta = add_remove_budget(budget).delta
        eps = _fresh_epsilon(ledger.event, inner_delta, ledger.accounting, "add_remove")
        # Replacing a record = removing it, then adding another: (eps, d) for
        # add/remove gives (2 eps, (1 + e^eps) d) for replace-one.
        factor = 1.0 + math.exp(eps) if eps < _MAX_EXP_ARGUMENT else math.inf
        return PrivacySpent(2.0 * eps, factor * inner_delta)
    eps = _fresh_epsilon(ledger.event, budget.delta, ledger.accounting, ledger.relation)
    return PrivacySpent(eps, budget.delta)


# Above it math.exp overflows: the converted delta is then infinite (never within budget).
_MAX_EXP_ARGUMENT = 700.0


def _fresh_epsilon(event: dpe.DpEvent, delta: float, accounting: str, relation: str) -> float:
    """Epsilon of ``event`` at ``delta`` from a new composition engine (deliberately not
    shared with :func:`~skdp.privacy.calibration.epsilon_spent`)."""
    engine = make_engine(accounting, relation)
    if not engine.supports(event):
        raise IncompatibleSolverError(
            f"accounting method {accounting!r} cannot account this mechanism under the "
            f"{relation!r} relation: {event}. Choose another accounting method."
        )
    engine.compose(event)
    return float(engine.get_epsilon(delta))


def add_remove_budget(budget: Budget) -> Budget:
    """The add/remove budget whose replace-one image (group privacy) is ``budget``.

    An ``(e, d)`` add/remove guarantee gives ``(2 e, (1 + e^e) d)`` under replace-one
    (P[M(D) in S] <= e^e P[M(D - x) in S] + d <= e^(2e) P[M(D - x + x') in S] + (1 + e^e) d),
    so ``e = min(epsilon / 2, 5)`` and ``d = delta / (1 + e^e)``.

    Parameters
    ----------
    budget : Budget
        The replace-one budget.

    Returns
    -------
    Budget
        The add/remove budget ``(e, d)``.
    """
    # Capped at 5: beyond it delta / (1 + e^(eps/2)) becomes so small (1e-16 at eps = 50)
    # that the PLD engine's truncation can certify it only with huge noise, and the
    # noise would grow with epsilon. The cap keeps the noise non-increasing in epsilon;
    # the guarantee is then (10, delta), stronger than asked.
    half = min(budget.epsilon / 2.0, MAX_ADD_REMOVE_EPSILON)
    return Budget(half, budget.delta / (1.0 + math.exp(half)))


#: Largest add/remove epsilon used by :func:`add_remove_budget`.
MAX_ADD_REMOVE_EPSILON = 5.0
