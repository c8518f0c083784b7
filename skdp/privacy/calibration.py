"""Calibration: the smallest noise that a named accounting method says meets a budget.

Everything here trusts its :class:`~skdp.privacy.budget.Budget` (validated once, by
:func:`~skdp.privacy.budget.check_budget`, or derived from a validated one). Results are
cached: :func:`epsilon_spent` by the event's ``repr``, the calibration by its inputs and the
analytic Gaussian multiplier by ``(epsilon, delta)``.
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
import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.optimize import brentq

from skdp.exceptions import BudgetError, IncompatibleSolverError
from skdp.privacy.budget import Budget
from skdp.privacy.engines import RDP_ORDERS, _precise_delta, make_engine
from skdp.privacy.events import DiscreteGaussianDpEvent, PureDpEvent, gaussian_event

__all__ = [
    "SingleRelease",
    "analytic_gaussian_multiplier",
    "calibrate_noise_multiplier",
    "epsilon_spent",
    "single_gaussian_multiplier",
    "single_release",
]


def _supporting(event: dpe.DpEvent, accounting: str, relation: str) -> dpa.PrivacyAccountant:
    """A fresh composition engine of the named accounting method that can compose ``event``
    (else raises)."""
    engine = make_engine(accounting, relation)
    if not engine.supports(event):
        raise IncompatibleSolverError(
            f"accounting method {accounting!r} cannot account this mechanism under the "
            f"{relation!r} relation: {event}. Choose another accounting method."
        )
    return engine


def _composed(event: dpe.DpEvent, accounting: str, relation: str) -> dpa.PrivacyAccountant:
    engine = _supporting(event, accounting, relation)
    engine.compose(event)
    return engine


_SPENT_CACHE: dict[tuple, float] = {}
_SPENT_CACHE_SIZE = 4096


def epsilon_spent(event: dpe.DpEvent, delta: float, *, accounting: str, relation: str) -> float:
    """Epsilon of ``event`` at ``delta`` according to the named accounting method.

    Results are memoised by the event's complete ``repr`` (events are immutable value
    objects): the calibration's search and the solvers' planning evaluate the same events
    repeatedly. This memo is the calibration's; the check of a ledger against its budget
    (:func:`~skdp.privacy.ledger.reaccount`) never reads it.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The event to account.
    delta : float
        The point of the privacy curve.
    accounting : str
        The accounting method (see :func:`~skdp.privacy.make_engine`).
    relation : str
        The neighbouring relation.

    Returns
    -------
    float
        The smallest epsilon the method certifies for ``event`` at ``delta``.
    """
    key = (repr(event), float(delta), accounting, relation)
    value = _SPENT_CACHE.get(key)
    if value is None:
        value = float(_composed(event, accounting, relation).get_epsilon(delta))
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

    Parameters
    ----------
    budget : Budget
        The budget of the ``count`` releases together.
    count : int, default=1
        Number of releases.

    Returns
    -------
    float
        ``z`` (0 when ``epsilon = inf``).

    Raises
    ------
    BudgetError
        If ``delta = 0`` (the Gaussian mechanism needs ``delta > 0``).
    """
    if not budget.is_private:
        return 0.0
    if budget.delta <= 0:
        raise BudgetError("the Gaussian mechanism needs delta > 0.")
    return math.sqrt(count) * _analytic_unit_multiplier(budget.epsilon, budget.delta)


@lru_cache(maxsize=256)
def _analytic_unit_multiplier(epsilon: float, delta: float) -> float:
    """``sigma_B1(epsilon, delta)`` of :func:`analytic_gaussian_multiplier`, memoised by
    its two public inputs (a fit evaluates it for several release counts; a search for
    each of its budgets)."""
    z1 = dpa.get_sigma_gaussian(epsilon, delta) * (1.0 + 1e-9)
    while _precise_delta(1.0 / z1, epsilon) > delta:
        z1 *= 1.0 + 1e-9
    return z1


# Largest noise multiplier tried before a budget is declared unreachable.
_MAX_MULTIPLIER = 1e6


def _bracket(
    epsilon_of: Callable[[float], float], target: float, start: float = 1.0, factor: float = 2.0
) -> tuple[float, float]:
    """A bracket ``[lo, hi]`` with ``eps(hi) <= target < eps(lo)``, found by doubling.

    Starting at ``start`` and moving by ``factor`` means no engine is ever evaluated at
    a noise level far below the solution: the PLD engine's memory grows with the
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


# ---------------------------------------------------------------------------------------
# RDP: calibration on the orders near the optimum
# ---------------------------------------------------------------------------------------
# Relative tolerance of the RDP calibration: the returned multiplier is accounted within
# the budget and at most this factor above a multiplier that is not.
_RDP_RTOL = 1e-4
# The search range of the multiplier, as for the other accounting methods (_bracket).
_LOG_MIN, _LOG_MAX = math.log(1e-6), math.log(_MAX_MULTIPLIER)


@lru_cache(maxsize=256)
def _rdp_order_guess(epsilon: float, delta: float) -> int:
    """Index in :data:`RDP_ORDERS` where the RDP calibration starts its order search.

    The optimal order of a linear RDP curve ``rho * alpha`` (the Gaussian mechanism,
    composed or not) whose epsilon at ``delta`` is ``epsilon``: a subsampled Gaussian's
    curve is close to linear below its optimal order. Only the speed of the search
    depends on this guess, never the soundness of its result; it is a function of
    ``(epsilon, delta)`` alone, so the calibration stays a function of its inputs.
    """
    orders = np.asarray(RDP_ORDERS, dtype=float)

    def eps_and_order(log_rho: float) -> tuple[float, float]:
        return compute_epsilon(orders, math.exp(log_rho) * orders, delta)

    # Epsilon grows with rho: bisect log(rho) to 5e-8, far below what moves the optimal
    # order by one grid step.
    lo, hi = -40.0, 10.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if eps_and_order(mid)[0] <= epsilon else (lo, mid)
    return RDP_ORDERS.index(float(eps_and_order(lo)[1]))


class _OrderEpsilons:
    """Epsilon at ``delta`` of ``make_event(z)`` accounted at ONE Renyi order, memoised.

    ``of(i, z)`` composes the event with a fresh RDP engine whose only order is
    ``RDP_ORDERS[i]``. Any set of orders gives a valid epsilon (dp_accounting's conversion
    minimises over the orders it has), so each ``of(i, z)`` is an upper bound on the
    epsilon of the full engine at ``z``. The memo lives for one calibration.
    """

    def __init__(self, make_event: Callable[[float], dpe.DpEvent], delta: float,
                 relation: str) -> None:
        self._make_event = make_event
        self._delta = delta
        self._relation = relation
        self._memo: dict[tuple[int, float], float] = {}

    def of(self, i: int, z: float) -> float:
        key = (i, z)
        value = self._memo.get(key)
        if value is None:
            engine = make_engine("rdp", self._relation, orders=(RDP_ORDERS[i],))
            engine.compose(self._make_event(z))
            value = float(engine.get_epsilon(self._delta))
            self._memo[key] = value
        return value


def _log_gap(epsilon: float, target: float) -> float:
    """``log(epsilon / target)``, finite (epsilon 0 and inf are clipped)."""
    return math.log(min(max(epsilon, 1e-300), 1e300) / target)


def _solve_log(
    gap: Callable[[float], float],
    *,
    start: float,
) -> tuple[float, float]:
    """A bracket ``(lo, hi)`` of the root of a decreasing ``gap(log z)``, of ratio
    ``hi / lo <= 1 + _RDP_RTOL``, with ``gap(log hi) <= 0 < gap(log lo)``.

    ``hi`` is always a point where ``gap`` was evaluated and found ``<= 0``. The bracket is
    found by geometric steps from ``start``, whose length follows the secant of the
    last two points; the root is then refined by ``scipy.optimize.brentq`` in ``log z``,
    whose last two points are on opposite sides and within the tolerance. ``lo = 0``: even
    ``z = hi < 1e-6`` meets the budget. Raises :class:`BudgetError` above
    ``_MAX_MULTIPLIER``.
    """
    seen: dict[float, float] = {}

    def g(u: float) -> float:
        value = seen.get(u)
        if value is None:
            value = seen[u] = gap(u)
        return value

    u_a = math.log(start)
    g_a = g(u_a)
    # Walk towards the root: up while gap > 0, down while gap <= 0. Each step is the
    # secant prediction of the root overshot by 20% (so that one step usually brackets
    # it), at most 4 times the previous step (the first at most a factor 4 in z) and at
    # least 1e-4: at most a few hundred steps reach a bound.
    up = g_a > 0
    slope = -1.0  # d log(epsilon) / d log(z): about -1 for a Gaussian at moderate epsilon
    step = math.log(4.0) / 4.0
    while True:
        step = min(1.2 * abs(g_a / slope) + 1e-4, 4.0 * step)
        u_b = u_a + (step if up else -step)
        if up and u_a >= _LOG_MAX:
            raise BudgetError(
                "no noise level meets the budget for this mechanism; raise epsilon or "
                "delta, or run fewer iterations."
            )
        if not up and u_a <= _LOG_MIN:
            # Even a negligible multiplier meets the (huge) budget: use it.
            return 0.0, math.exp(u_a)
        u_b = min(max(u_b, _LOG_MIN), _LOG_MAX)
        g_b = g(u_b)
        if g_b != g_a:
            slope = min((g_b - g_a) / (u_b - u_a), -1e-3)
        if (g_b <= 0) == up:
            lo, hi = (u_a, u_b) if up else (u_b, u_a)
            break
        u_a, g_a = u_b, g_b
    if g(hi) < 0 < g(lo) and hi - lo > math.log1p(_RDP_RTOL):
        # brentq stops when its last point and the bracket's other end, both evaluated
        # and of opposite signs, are within xtol (+ a rounding-level rtol) of each other.
        brentq(g, lo, hi, xtol=0.9 * math.log1p(_RDP_RTOL), rtol=4 * np.finfo(float).eps)
    hi = min(u for u, v in seen.items() if v <= 0 and u >= lo)
    lo = max(u for u, v in seen.items() if v > 0 and u <= hi)
    return math.exp(lo), math.exp(hi)


def _calibrate_rdp(
    make_event: Callable[[float], dpe.DpEvent],
    epsilon: float,
    delta: float,
    relation: str,
    lower_bound: float | None,
) -> float:
    """The RDP calibration, searched one Renyi order at a time.

    ``make_event(z)`` must be order-separable (:func:`_order_separable`): its RDP at
    one order is then the same whether accounted alone or with all orders.
    Write ``e_a(z)`` for the epsilon of ``make_event(z)`` accounted at order ``a`` alone
    and ``z_a`` for the root of ``e_a(z) = epsilon``. The full engine reports
    ``e(z) = min_a e_a(z)`` (dp_accounting's conversion minimises over its orders), so
    ``e(z) <= epsilon`` as soon as ONE ``e_a(z) <= epsilon``:

    * soundness: the returned ``z`` was accounted at one order within the budget, hence
      the full engine (and the ledger, re-accounted with every order) reports at most
      ``epsilon`` at ``z``. This holds whatever orders the search visits.
    * optimality: with every ``e_a`` decreasing in ``z``, the full calibration is
      ``z* = min_a z_a``, and order ``b`` has ``z_b < lo`` iff ``e_b(lo) <= epsilon``.
      The search brackets ``z_a`` within ``(lo, hi]`` for one order ``a`` (starting at
      a guess, :func:`_rdp_order_guess`), finds the run of orders next to ``a`` that
      meet the budget at ``lo`` (:func:`_orders_meeting`), solves for its middle order,
      and so on; it stops when neither neighbour of ``a`` meets the budget at ``lo``.
      When ``b -> z_b`` is unimodal on the order grid (as for Gaussians and subsampled
      Gaussians; checked against the full calibration in
      tests/privacy/test_calibration_orders.py), the orders with ``z_b < lo`` form an
      interval that halves at each step, the last ``a`` is the optimal order, and
      ``z* > lo >= hi / (1 + _RDP_RTOL)``. Without unimodality the result is still
      sound, only possibly above ``z*``.

    The result depends on the inputs only (the guess is a function of ``epsilon`` and
    ``delta``, the memo lives for one call), so equal fits get equal noise in any process.
    Cost: about ten evaluations at one order each, instead of a dozen evaluations at all
    orders (the without-replacement bound costs ``O(alpha^2)`` per order,
    docs/privacy_accounting_speed.md).
    """
    _supporting(make_event(lower_bound or 1.0), "rdp", relation)
    eps_of = _OrderEpsilons(make_event, delta, relation)
    last = len(RDP_ORDERS) - 1

    def root(i: int, **kwargs) -> tuple[float, float]:
        return _solve_log(lambda u: _log_gap(eps_of.of(i, math.exp(u)), epsilon), **kwargs)

    i = _rdp_order_guess(epsilon, delta)
    lo, hi = root(i, start=lower_bound or 1.0)
    # Each pass lowers the verified hi (every root is solved below the previous lo).
    for _ in range(2 * len(RDP_ORDERS)):
        if lo == 0.0:
            break
        k = _orders_meeting(lambda j, z=lo: eps_of.of(j, z) <= epsilon, i, last)
        if k is not None:
            # Orders i + 1 .. k (or k .. i - 1) meet the budget at lo: their roots are
            # below lo. Solve for the middle one; the orders that still meet the budget
            # at its (smaller) lo are a sub-interval without it: the run halves each time.
            i = (i + (1 if k > i else -1) + k) // 2
            lo, hi = root(i, start=lo)
            continue
        # A local optimum: check it with every order at hi (the ledger's engine).
        per_order = _per_order_epsilons(make_event(hi), delta, relation, epsilon)
        if min(per_order) > epsilon:
            raise _SearchFailed  # cannot happen: order i alone meets the budget at hi
        # An order with a root below lo meets the budget at hi, and at lo.
        better = [j for j, e in enumerate(per_order)
                  if e <= epsilon and j != i and eps_of.of(j, lo) <= epsilon]
        if not better:
            break
        i = min(better, key=lambda j: eps_of.of(j, lo))
        lo, hi = root(i, start=lo)
    return hi


def _order_separable(event: dpe.DpEvent) -> bool:
    """Whether the RDP of ``event`` at each order depends on that order only.

    True for compositions of Gaussian and Laplace releases and of Gaussians on batches
    sampled without replacement or by Poisson sampling: dp_accounting (and
    :class:`~skdp.privacy.engines.ClampedRdpEngine`) computes their RDP order by
    order, so an engine on one order reports exactly the full engine's value at
    that order. Not for e.g. ``RepeatAndSelectDpEvent``, whose RDP at one order is
    optimised over the other orders: one order alone gives a valid but larger value,
    which would mislead the order search (:func:`_calibrate_rdp`).
    """
    if isinstance(event, dpe.SelfComposedDpEvent):
        return _order_separable(event.event)
    if isinstance(event, dpe.ComposedDpEvent):
        return all(_order_separable(e) for e in event.events)
    if isinstance(event, dpe.SampledWithoutReplacementDpEvent | dpe.PoissonSampledDpEvent):
        return isinstance(event.event, dpe.GaussianDpEvent)
    return isinstance(event, dpe.GaussianDpEvent | dpe.LaplaceDpEvent | dpe.NoOpDpEvent
                      | DiscreteGaussianDpEvent)


class _SearchFailed(Exception):
    """The RDP order search gives up; the generic search decides."""


def _per_order_epsilons(event: dpe.DpEvent, delta: float, relation: str, upto: float
                        ) -> list[float]:
    """Epsilon at ``delta`` of ``event`` at each order of :data:`RDP_ORDERS` alone, exact
    where it is at most ``upto`` (an order above it may report a smaller value that is
    still above ``upto``: :meth:`ClampedRdpEngine.order_epsilons
    <skdp.privacy.engines.ClampedRdpEngine.order_epsilons>`).

    Whether each order meets the budget ``upto`` is therefore exact, and so is the minimum
    when it is at most ``upto``: the full engine's epsilon. The subsampled-Gaussian
    values it evaluates land in the RDP engines' memo, where the ledger's accounting at the
    same multiplier finds them.
    """
    engine = make_engine("rdp", relation).compose(event)
    return engine.order_epsilons(delta, upto=upto)


def _orders_meeting(meets: Callable[[int], bool], i: int, last: int) -> int | None:
    """The far end of the run of order indices next to ``i`` for which ``meets`` holds.

    ``meets(i)`` is false. When the indices where ``meets`` holds form an interval (the
    sublevel set ``{a: z_a < lo}`` of a unimodal ``a -> z_a``), it lies on one side of
    ``i``; returns its end away from ``i`` (found by doubling steps, then bisection), or
    ``None`` if neither neighbour of ``i`` meets the budget.
    """
    if i > 0 and meets(i - 1):
        d = -1
    elif i < last and meets(i + 1):
        d = 1
    else:
        return None
    near, step = i + d, 1
    while True:
        far = near + d * step
        if not 0 <= far <= last:
            far = -1 if d < 0 else last + 1
            break
        if not meets(far):
            break
        near, step = far, 2 * step
    while abs(far - near) > 1:
        mid = (near + far) // 2
        near, far = (mid, far) if meets(mid) else (near, mid)
    return near


@lru_cache(maxsize=512)
def _calibrate_cached(
    factory: Callable[..., dpe.DpEvent],
    args: tuple,
    epsilon: float,
    delta: float,
    accounting: str,
    relation: str,
    lower_bound: float | None,
    start: float | None = None,
) -> float:
    def make_event(z: float) -> dpe.DpEvent:
        return factory(z, *args)

    def epsilon_of(z: float) -> float:
        return epsilon_spent(make_event(z), delta, accounting=accounting, relation=relation)

    if (accounting == "rdp" and 0.0 < delta < 1.0 and 0.0 < epsilon < math.inf
            and _order_separable(make_event(lower_bound or 1.0))):
        try:
            return _calibrate_rdp(make_event, epsilon, delta, relation, lower_bound)
        except (BudgetError, _SearchFailed):
            pass  # the full engine decides (e.g. whether the budget is unreachable)
    if lower_bound:
        # A known lower bound of the solution (e.g. the exact Gaussian multiplier, which
        # every upper-bounding engine needs at least): search just above it.
        lo, hi = _bracket(epsilon_of, epsilon, start=lower_bound, factor=1.05)
    else:
        # A start above the largest multiplier tried would skip the unreachable-budget
        # check of the doubling.
        lo, hi = _bracket(epsilon_of, epsilon, start=min(start or 1.0, _MAX_MULTIPLIER))
    if lo == 0.0:
        return hi
    z = dpa.calibrate_dp_mechanism(
        lambda: make_engine(accounting, relation),
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
    accounting: str,
    relation: str,
    lower_bound: float | None = None,
    start: float | None = None,
) -> float:
    """Smallest noise multiplier ``z`` with ``factory(z, *args)`` within ``budget``.

    ``factory`` must be a module-level function (results are cached by its identity and
    ``args``). ``lower_bound``, if given, must be a multiplier that is known NOT to be
    larger than the solution (it only speeds up the search). ``start`` (default 1, at most
    ``1e6``), where the doubling bracket of the generic search begins, keeps that search
    from evaluating the engine far below the solution (it halves down from ``start``
    only while the budget is met, so it never tries a multiplier below
    ``min(start, z) / 2``): for an event whose components' multipliers are far below
    ``z``, at which the PLD engine's memory would explode. Any ``start`` gives a
    multiplier within the budget; ``lower_bound``, when given, and the RDP order search
    ignore it. ``budget`` is trusted (see
    :func:`~skdp.privacy.budget.check_budget`).

    The returned ``z`` is on the private side by construction. ``"rdp"`` with an event
    whose RDP is computed order by order (Gaussians, subsampled or not, and Laplace; see
    :func:`_order_separable`): it was accounted within ``budget`` at one Renyi order of
    :data:`RDP_ORDERS`, which bounds the epsilon of the engine on all of them, then
    checked with all of them (:func:`_calibrate_rdp`; within 0.01% of the smallest such
    ``z``; if that search finds no multiplier up to ``1e6``, the generic search decides).
    Otherwise: the bracket's upper end is accounted within ``budget`` before it is used,
    and ``dp_accounting.calibrate_dp_mechanism`` returns a root only after accounting it
    (or its neighbour within ``tol``) within ``budget`` with a fresh engine. It is
    not accounted once more here: the one check of a plan against its budget is the
    independent re-accounting of its ledger (:func:`~skdp.privacy.ledger.reaccount`,
    run by :meth:`~skdp.solvers._base.BaseDPSolver.prepare` before any noise is drawn).

    Parameters
    ----------
    factory : callable
        ``factory(z, *args)`` returns the event of the mechanism at multiplier ``z``.
    args : tuple
        The other arguments of ``factory`` (hashable).
    budget : Budget
        The budget to meet.
    accounting : str
        The accounting method that reads the event.
    relation : str
        The neighbouring relation.
    lower_bound : float or None, default=None
        A multiplier known not to exceed the solution.
    start : float or None, default=None
        Where the doubling bracket begins (1 by default, at most ``1e6``).

    Returns
    -------
    float
        The smallest multiplier found within ``budget`` (0 when ``epsilon = inf``).
    """
    if not budget.is_private:
        return 0.0
    return _calibrate_cached(factory, tuple(args), budget.epsilon, budget.delta, accounting,
                             relation, lower_bound, start)


def _one_gaussian_event(z: float, accounting: str, relation: str) -> dpe.DpEvent:
    return gaussian_event(z, 1.0, accounting=accounting, relation=relation)


def single_gaussian_multiplier(budget: Budget, accounting: str, relation: str) -> float:
    """Noise multiplier of ONE Gaussian release meeting ``budget`` (0 when not private).

    ``"gaussian"``: the exact analytic Gaussian (Balle & Wang 2018); other accounting methods
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
    if accounting == "gaussian":
        return exact
    return calibrate_noise_multiplier(
        _one_gaussian_event, (accounting, relation), budget,
        accounting=accounting, relation=relation, lower_bound=exact,
    )


class SingleRelease(NamedTuple):
    """The mechanism of ONE release of a sensitivity-1 vector, from :func:`single_release`."""

    mechanism: str  # "none", "l2_laplace" or "gaussian"
    event: dpe.DpEvent
    #: Noise scale per unit of sensitivity: the l2-Laplace ``scale`` (density proportional
    #: to ``exp(-||v|| / scale)``) or the Gaussian standard deviation ``z``; 0 for "none".
    unit_scale: float


def single_release(budget: Budget, accounting: str, relation: str) -> SingleRelease:
    """The noise of one release of sensitivity 1 meeting ``budget`` exactly.

    ``"pure"``: density proportional to ``exp(-epsilon ||v||_2)``, epsilon-DP for l2
    sensitivity 1 by the triangle inequality (``PureDpEvent``). Otherwise one Gaussian with
    the accounting method's single-release multiplier ``z`` (:func:`single_gaussian_multiplier`).
    A release of sensitivity ``Delta`` scales the noise by ``Delta``.
    """
    if not budget.is_private:
        return SingleRelease("none", dpe.NonPrivateDpEvent(), 0.0)
    if accounting == "pure":
        return SingleRelease("l2_laplace", PureDpEvent(budget.epsilon), 1.0 / budget.epsilon)
    z = single_gaussian_multiplier(budget, accounting, relation)
    return SingleRelease("gaussian", gaussian_event(z, 1.0, accounting=accounting,
                                                    relation=relation), z)
