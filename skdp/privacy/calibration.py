"""Calibration: the smallest noise that a named accountant says meets a budget.

Everything here trusts its :class:`~skdp.privacy.budget.Budget` (validated once, by
:func:`~skdp.privacy.budget.check_budget`, or derived from a validated one). Results are
cached: :func:`epsilon_spent` by the event's ``repr`` and the calibration by its inputs.
These caches serve the calibration and the solvers' own planning only; the check of a
planned ledger against its budget is :func:`skdp.privacy.ledger.reaccount`, which shares
none of them (it does not import this module).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

import dp_accounting as dpa
from dp_accounting import dp_event as dpe

from skdp.exceptions import BudgetError, IncompatibleSolverError
from skdp.privacy.accountants import _precise_delta, make_accountant
from skdp.privacy.budget import Budget
from skdp.privacy.events import PureDpEvent, gaussian_event

__all__ = [
    "SingleRelease",
    "analytic_gaussian_multiplier",
    "calibrate_noise_multiplier",
    "epsilon_spent",
    "single_gaussian_multiplier",
    "single_release",
]


def _composed(event: dpe.DpEvent, accountant: str, relation: str) -> dpa.PrivacyAccountant:
    acc = make_accountant(accountant, relation)
    if not acc.supports(event):
        raise IncompatibleSolverError(
            f"the {accountant!r} accountant cannot account this mechanism under the "
            f"{relation!r} relation: {event}. Choose another accountant."
        )
    acc.compose(event)
    return acc


_SPENT_CACHE: dict[tuple, float] = {}
_SPENT_CACHE_SIZE = 4096


def epsilon_spent(event: dpe.DpEvent, delta: float, *, accountant: str, relation: str) -> float:
    """Epsilon of ``event`` at ``delta`` according to the named accountant.

    Results are memoised by the event's complete ``repr`` (events are immutable value
    objects): the calibration's search and the solvers' planning evaluate the same events
    repeatedly. This memo is the calibration's; the check of a ledger against its budget
    (:func:`~skdp.privacy.ledger.reaccount`) never reads it.
    """
    key = (repr(event), float(delta), accountant, relation)
    value = _SPENT_CACHE.get(key)
    if value is None:
        value = float(_composed(event, accountant, relation).get_epsilon(delta))
        if len(_SPENT_CACHE) >= _SPENT_CACHE_SIZE:
            _SPENT_CACHE.clear()
        _SPENT_CACHE[key] = value
    return value


def analytic_gaussian_multiplier(budget: Budget, count: int = 1) -> float:
    """Noise multiplier ``z = sigma / Delta`` for ``count`` Gaussian releases, exactly.

    ``count`` releases with multiplier ``z`` are ``mu``-GDP with ``mu = sqrt(count) / z``,
    so ``z = sqrt(count) * sigma_B1(epsilon, delta)`` where ``sigma_B1`` is the analytic
    Gaussian calibration (Balle & Wang 2018) for sensitivity 1. The brentq root is rounded
    up and re-verified with the exact delta formula.
    """
    if not budget.is_private:
        return 0.0
    if budget.delta <= 0:
        raise BudgetError("the Gaussian mechanism needs delta > 0.")
    z1 = dpa.get_sigma_gaussian(budget.epsilon, budget.delta) * (1.0 + 1e-9)
    while _precise_delta(1.0 / z1, budget.epsilon) > budget.delta:
        z1 *= 1.0 + 1e-9
    return math.sqrt(count) * z1


# Largest noise multiplier tried before a budget is declared unreachable.
_MAX_MULTIPLIER = 1e6


def _bracket(
    epsilon_of: Callable[[float], float], target: float, start: float = 1.0, factor: float = 2.0
) -> tuple[float, float]:
    """A bracket ``[lo, hi]`` with ``eps(hi) <= target < eps(lo)``, found by doubling.

    Starting at ``start`` and moving by ``factor`` means no accountant is ever evaluated at
    a noise level far below the solution: the PLD accountant's memory grows with the
    privacy loss, and evaluating it at a tiny multiplier can exhaust the machine.
    """
    z = start
    if epsilon_of(z) > target:
        while True:
            lo, z = z, factor * z
            if z > _MAX_MULTIPLIER:
                raise BudgetError(
                    f"no noise level meets epsilon={target} for this mechanism; raise "
                    "epsilon or delta, or run fewer iterations."
                )
            if epsilon_of(z) <= target:
                return lo, z
    while z > 1e-6:
        hi, z = z, z / factor
        if epsilon_of(z) > target:
            return z, hi
    # Even a negligible multiplier meets the (huge) budget: use it.
    return 0.0, z


@lru_cache(maxsize=512)
def _calibrate_cached(
    factory: Callable[..., dpe.DpEvent],
    args: tuple,
    epsilon: float,
    delta: float,
    accountant: str,
    relation: str,
    lower_bound: float | None,
) -> float:
    def make_event(z: float) -> dpe.DpEvent:
        return factory(z, *args)

    def epsilon_of(z: float) -> float:
        return epsilon_spent(make_event(z), delta, accountant=accountant, relation=relation)

    if lower_bound:
        # A known lower bound of the solution (e.g. the exact Gaussian multiplier, which
        # every upper-bounding accountant needs at least): search just above it.
        lo, hi = _bracket(epsilon_of, epsilon, start=lower_bound, factor=1.05)
    else:
        lo, hi = _bracket(epsilon_of, epsilon)
    if lo == 0.0:
        return hi
    z = dpa.calibrate_dp_mechanism(
        lambda: make_accountant(accountant, relation),
        make_event,
        epsilon,
        delta,
        bracket_interval=dpa.ExplicitBracketInterval(lo, hi),
        tol=1e-3 * lo,
    )
    return float(z)


def calibrate_noise_multiplier(
    factory: Callable[..., dpe.DpEvent],
    args: tuple,
    budget: Budget,
    *,
    accountant: str,
    relation: str,
    lower_bound: float | None = None,
) -> float:
    """Smallest noise multiplier ``z`` with ``factory(z, *args)`` within ``budget``.

    ``factory`` must be a module-level function (results are cached by its identity and
    ``args``). ``lower_bound``, if given, must be a multiplier that is known NOT to be
    larger than the solution (it only speeds up the search). ``budget`` is trusted (see
    :func:`~skdp.privacy.budget.check_budget`).

    The returned ``z`` is on the private side by construction: the bracket's upper end is
    accounted within ``budget`` before it is used, and
    ``dp_accounting.calibrate_dp_mechanism`` returns a root only after accounting it (or
    its neighbour within ``tol``) within ``budget`` with a fresh accountant. It is not
    accounted once more here: the one check of a plan against its budget is the
    independent re-accounting of its ledger (:func:`~skdp.privacy.ledger.reaccount`,
    run by :meth:`~skdp.solvers._base.BaseDPSolver.prepare` before any noise is drawn).
    """
    if not budget.is_private:
        return 0.0
    return _calibrate_cached(factory, tuple(args), budget.epsilon, budget.delta, accountant,
                             relation, lower_bound)


def _one_gaussian_event(z: float, accountant: str, relation: str) -> dpe.DpEvent:
    return gaussian_event(z, 1.0, accountant=accountant, relation=relation)


def single_gaussian_multiplier(budget: Budget, accountant: str, relation: str) -> float:
    """Noise multiplier of ONE Gaussian release meeting ``budget`` (0 when not private).

    ``"gaussian"``: the exact analytic Gaussian (Balle & Wang 2018); other accountants
    calibrate their own (upper-bounding) reading of the event, for which the exact
    multiplier is a lower bound. ``delta = 0`` cannot be met by a Gaussian: raises
    :class:`~skdp.exceptions.IncompatibleSolverError` naming the pure-DP alternative.
    """
    if not budget.is_private:
        return 0.0
    if budget.delta <= 0:
        raise IncompatibleSolverError(
            "delta=0 asks for pure DP, which the Gaussian mechanism cannot give; "
            "use accounting='auto' or 'pure' (l2 Laplace noise)."
        )
    exact = analytic_gaussian_multiplier(budget, 1)
    if accountant == "gaussian":
        return exact
    return calibrate_noise_multiplier(
        _one_gaussian_event, (accountant, relation), budget,
        accountant=accountant, relation=relation, lower_bound=exact,
    )


class SingleRelease(NamedTuple):
    """The mechanism of ONE release of a sensitivity-1 vector, from :func:`single_release`."""

    mechanism: str  # "none", "l2_laplace" or "gaussian"
    event: dpe.DpEvent
    #: Noise scale per unit of sensitivity: the l2-Laplace ``scale`` (density proportional
    #: to ``exp(-||v|| / scale)``) or the Gaussian standard deviation ``z``; 0 for "none".
    unit_scale: float


def single_release(budget: Budget, accountant: str, relation: str) -> SingleRelease:
    """The noise of one release of sensitivity 1 meeting ``budget`` exactly.

    ``"pure"``: density proportional to ``exp(-epsilon ||v||_2)``, epsilon-DP for l2
    sensitivity 1 by the triangle inequality (``PureDpEvent``). Otherwise one Gaussian with
    the accountant's single-release multiplier ``z`` (:func:`single_gaussian_multiplier`).
    A release of sensitivity ``Delta`` scales the noise by ``Delta``.
    """
    if not budget.is_private:
        return SingleRelease("none", dpe.NonPrivateDpEvent(), 0.0)
    if accountant == "pure":
        return SingleRelease("l2_laplace", PureDpEvent(budget.epsilon), 1.0 / budget.epsilon)
    z = single_gaussian_multiplier(budget, accountant, relation)
    return SingleRelease("gaussian", gaussian_event(z, 1.0, accountant=accountant,
                                                    relation=relation), z)
