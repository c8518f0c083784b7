"""The composition engines: how a ``DpEvent`` is turned into ``(epsilon, delta)``.

:func:`make_engine` builds a FRESH composition engine from the name of an accounting
method; no epsilon is cached here. See :mod:`skdp.privacy.accounting` for what each
accounting method reads. The calibration
(:mod:`skdp.privacy.calibration`) and the independent re-accounting of a ledger
(:func:`skdp.privacy.ledger.reaccount`) share these classes, so that both read an event
the same way, and one memo: the RDP engine's per-order values of a subsampled
Gaussian (``_RDP_MEMO``, keyed by every input of that pure function; it returns the
floats that recomputation returns, docs/privacy_accounting_speed.md).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from functools import lru_cache

import dp_accounting as dpa
import mpmath
import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.optimize import brentq
from scipy.special import gammaln, log_ndtr
from scipy.stats import binom

from skdp._docstrings import fill_docstrings
from skdp.exceptions import PrivacyAccountingError
from skdp.privacy.events import (
    ApproxDpEvent,
    DiscreteGaussianDpEvent,
    PureDpEvent,
    _check_names,
    _rr_loss,
)

__all__ = [
    "BasicCompositionEngine",
    "ClampedRdpEngine",
    "GaussianEngine",
    "PLD_DISCRETIZATION",
    "PureDpEngine",
    "RDP_ORDERS",
    "SelfComposingPldEngine",
    "WOR_MAX_STABLE_ORDER",
    "gaussian_log_delta",
    "make_engine",
]


# PLD discretisation: smaller is tighter and slower; the result is always an upper bound.
PLD_DISCRETIZATION = 1e-4
# Renyi orders of the RDP engine. Any set of orders gives a valid bound (the
# conversion minimises over them); this one covers the optimal orders of epsilon in
# [0.05, 50] at delta >= 1e-12 and costs about half of dp_accounting's default 156.
RDP_ORDERS: tuple[float, ...] = (
    1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, *(x / 4 for x in range(8, 33)),
    *range(9, 17), *range(18, 33, 2), 40, 48, 56, 64, 80, 96, 128, 192, 256, 512,
)

_RELATION = {
    "replace_one": dpa.NeighboringRelation.REPLACE_ONE,
    "add_remove": dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
}


# ---------------------------------------------------------------------------------------
# Exact Gaussian (mu-GDP) curve
# ---------------------------------------------------------------------------------------
def gaussian_log_delta(mu: float, epsilon: float) -> float:
    """Log of the exact delta(epsilon) of ``mu``-GDP.

    ``delta(eps) = Phi(mu/2 - eps/mu) - exp(eps) Phi(-mu/2 - eps/mu)`` (Balle & Wang 2018,
    Thm. 8; Dong, Roth & Su 2022, Cor. 2.13), evaluated in log space.

    Parameters
    ----------
    mu : float
        The GDP parameter, ``>= 0``.
    epsilon : float
        The epsilon at which delta is read.

    Returns
    -------
    float
        ``log(delta)`` (``-inf`` for ``delta = 0``).
    """
    if mu <= 0.0:
        return -math.inf
    if math.isinf(mu):
        return 0.0
    if math.isinf(epsilon):
        return -math.inf
    a = float(log_ndtr(mu / 2.0 - epsilon / mu))
    b = epsilon + float(log_ndtr(-mu / 2.0 - epsilon / mu))
    if b >= a:
        return -math.inf
    return a + math.log1p(-math.exp(b - a))


def _gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon (rounded up, verified) with delta(epsilon) <= delta for mu-GDP."""
    if mu == 0.0:
        return 0.0
    if math.isinf(mu) or delta <= 0.0:
        return math.inf
    log_target = math.log(delta)
    if _precise_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_log_delta(mu, hi) > log_target:
        hi *= 2.0
    eps = brentq(lambda e: gaussian_log_delta(mu, e) - log_target, 0.0, hi, xtol=1e-14)
    # brentq returns a root to within xtol on either side, and the double-precision delta
    # loses relative accuracy to cancellation when mu is tiny: step up until the delta,
    # evaluated with 50 significant digits, is verified.
    while _precise_delta(mu, eps) > delta:
        eps = eps * (1.0 + 1e-9) + 1e-15
    return eps


def _precise_delta(mu: float, epsilon: float) -> float:
    """``delta(epsilon)`` of ``mu``-GDP with 50 significant digits (verification only)."""
    with mpmath.workdps(50):
        m, e = mpmath.mpf(mu), mpmath.mpf(epsilon)
        value = mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)
    return float(value)


#: What the additive engines' public methods take, described once (a line ``<<name>>``
#: in their docstrings is replaced by the text, :mod:`skdp._docstrings`).
ENGINE_DOCS: dict[str, str] = {
    "engine_parameters": """\
Parameters
----------
neighboring_relation : dp_accounting.NeighboringRelation
    The relation under which the composed events are read.
""",
    "epsilon_parameters": """\
Parameters
----------
target_delta : float
    The delta at which epsilon is read.
""",
    "delta_parameters": """\
Parameters
----------
target_epsilon : float
    The epsilon at which delta is read.
""",
}


class _AdditiveEngine(dpa.PrivacyAccountant):
    """A composition engine whose privacy parameters are sums over the composed releases.

    Walks ``ComposedDpEvent``/``SelfComposedDpEvent`` trees (no-ops cost nothing, a
    non-private release costs ``inf``) and adds ``count * cost(leaf)`` for each leaf;
    subclasses give the cost of the leaves they understand (``None``: unsupported), either
    a number or a pair ``(cost, delta)`` whose deltas are summed too.
    """

    #: What the engine reads, for the error message of unsupported events.
    handles: str = ""

    def __init__(self, neighboring_relation: dpa.NeighboringRelation) -> None:
        super().__init__(neighboring_relation)
        self._total = 0.0
        self._delta_total = 0.0

    def __init_subclass__(cls, **kwargs: object) -> None:
        # The engines' docstrings get the shared descriptions (ENGINE_DOCS).
        super().__init_subclass__(**kwargs)
        fill_docstrings(cls, ENGINE_DOCS)

    @abstractmethod
    def _leaf_cost(self, event: dpe.DpEvent) -> float | tuple[float, float] | None:
        """The cost of one leaf release, or ``None`` if the event is not understood."""

    def _maybe_compose(self, event: dpe.DpEvent, count: int, do_compose: bool):
        if isinstance(event, dpe.NoOpDpEvent):
            return None
        if isinstance(event, dpe.SelfComposedDpEvent):
            return self._maybe_compose(event.event, count * event.count, do_compose)
        if isinstance(event, dpe.ComposedDpEvent):
            for sub in event.events:
                err = self._maybe_compose(sub, count, do_compose)
                if err is not None:
                    return err
            return None
        cost = math.inf if isinstance(event, dpe.NonPrivateDpEvent) else self._leaf_cost(event)
        cost, delta = cost if isinstance(cost, tuple) else (cost, 0.0)
        if cost is None or not cost >= 0 or not 0 <= delta <= 1:
            return self.CompositionErrorDetails(
                invalid_event=event, error_message=f"this engine handles only {self.handles}"
            )
        if do_compose:
            self._total += count * cost
            self._delta_total += count * delta
        return None


class GaussianEngine(_AdditiveEngine):
    """Exact composition engine for compositions of non-subsampled Gaussian releases.

    A ``GaussianDpEvent(z)`` is read as a Gaussian release whose noise is ``z`` times the
    l2 sensitivity under the engine's neighbouring relation (the RDP convention).
    ``T`` releases with multipliers ``z_t`` are exactly ``mu``-GDP with
    ``mu^2 = sum_t 1 / z_t^2``. Subsampled events are not supported (use ``"rdp"`` or
    ``"pld"``).

    <<engine_parameters>>
    """

    handles = "compositions of non-subsampled GaussianDpEvents"

    def _leaf_cost(self, event: dpe.DpEvent) -> float | None:
        if not isinstance(event, dpe.GaussianDpEvent):
            return None
        z = event.noise_multiplier
        return math.inf if z == 0 else 1.0 / (z * z)

    @property
    def mu(self) -> float:
        """The GDP parameter of everything composed so far."""
        return math.sqrt(self._total)

    def get_epsilon(self, target_delta: float) -> float:
        """The exact epsilon of ``mu``-GDP at ``target_delta``.

        <<epsilon_parameters>>

        Returns
        -------
        float
            The smallest epsilon whose delta, on the GDP curve, is at most
            ``target_delta``.
        """
        return _gdp_epsilon(self.mu, target_delta)

    def get_delta(self, target_epsilon: float) -> float:
        """The exact delta of ``mu``-GDP at ``target_epsilon``.

        <<delta_parameters>>

        Returns
        -------
        float
            ``exp(gaussian_log_delta(mu, target_epsilon))``.
        """
        return math.exp(gaussian_log_delta(self.mu, target_epsilon))


class PureDpEngine(_AdditiveEngine):
    """Basic composition of pure-DP events: the epsilons add, delta is 0.

    Reads :class:`PureDpEvent` (its ``epsilon``) and ``LaplaceDpEvent`` (``1 / z``: the
    Laplace mechanism with scale ``z`` times the l1 sensitivity) under either relation,
    composed or self-composed. Sequential composition of pure-DP mechanisms, even chosen
    adaptively, is ``sum(epsilon_i)``-DP (Dwork & Roth 2014, Thm. 3.16).

    <<engine_parameters>>
    """

    handles = "compositions of PureDpEvent and LaplaceDpEvent"

    def _leaf_cost(self, event: dpe.DpEvent) -> float | None:
        if isinstance(event, PureDpEvent):
            return event.epsilon
        if isinstance(event, dpe.LaplaceDpEvent):
            z = event.noise_multiplier
            return math.inf if z == 0 else 1.0 / z
        return None

    def get_epsilon(self, target_delta: float) -> float:
        """The summed epsilon, whatever ``target_delta``.

        <<epsilon_parameters>>

        Returns
        -------
        float
            The sum of the composed epsilons (pure DP holds at every delta).
        """
        # An epsilon-DP mechanism is (epsilon, delta)-DP for every delta >= 0.
        return self._total

    def get_delta(self, target_epsilon: float) -> float:
        """0 at or above the summed epsilon, else 1 (nothing is known below it).

        <<delta_parameters>>

        Returns
        -------
        float
            0 or 1.
        """
        return 0.0 if target_epsilon >= self._total else 1.0


class BasicCompositionEngine(_AdditiveEngine):
    """Basic composition of ``(eps_i, delta_i)``-DP mechanisms: the epsilons and deltas add.

    ``k`` mechanisms ``(eps_i, delta_i)``-DP, even chosen adaptively, are
    ``(sum eps_i, sum delta_i)``-DP (Dwork & Roth 2014, Thm. 3.16). Reads
    :class:`ApproxDpEvent`, :class:`PureDpEvent` and ``LaplaceDpEvent`` (``1/z``).
    ``get_epsilon(delta)`` is the summed epsilon when ``delta`` covers the summed deltas,
    and ``inf`` otherwise: the recorded guarantees say nothing at a smaller delta.

    <<engine_parameters>>
    """

    handles = "compositions of ApproxDpEvent, PureDpEvent and LaplaceDpEvent"

    def _leaf_cost(self, event: dpe.DpEvent) -> float | tuple[float, float] | None:
        if isinstance(event, ApproxDpEvent):
            return (event.epsilon, event.delta)
        return PureDpEngine._leaf_cost(self, event)  # type: ignore[arg-type]

    def get_epsilon(self, target_delta: float) -> float:
        """The summed epsilon if ``target_delta`` covers the summed deltas, else ``inf``.

        <<epsilon_parameters>>

        Returns
        -------
        float
            The summed epsilon or ``inf`` (the rounding of a split delta is forgiven at
            ``1e-12`` relative).
        """
        # Rounding of a split delta (d1 + d2 computed from delta) is forgiven at 1e-12.
        return self._total if self._delta_total <= target_delta * (1 + 1e-12) else math.inf

    def get_delta(self, target_epsilon: float) -> float:
        """The summed delta at or above the summed epsilon, else 1.

        <<delta_parameters>>

        Returns
        -------
        float
            The summed delta, or 1 below the summed epsilon.
        """
        return self._delta_total if target_epsilon >= self._total else 1.0


# Largest Renyi order at which dp_accounting's without-replacement bound is used.
WOR_MAX_STABLE_ORDER = 64


class ClampedRdpEngine(rdp_privacy_accountant.RdpAccountant):
    """dp_accounting's ``RdpAccountant`` with a numerically safe sampling-without-replacement
    term.

    For large sampling ratios (q ~ 0.3), large noise multipliers and orders above 64,
    dp_accounting's bound for Gaussians on batches sampled without replacement (Wang, Balle
    & Kasiviswanathan 2019, Thm. 27) loses precision: its values become erratic (up to 10x
    the un-subsampled Gaussian's RDP), which makes epsilon non-monotone in the noise and
    calibration unstable. skdp therefore uses that bound only at orders <= 64 (where it was
    checked to be smooth and monotone for q in [1e-3, 0.3], z in [0.5, 300]) and, at every
    order, clamps it by the RDP ``alpha / (2 z^2)`` of the un-subsampled Gaussian, which
    is always valid: the batches of neighbouring data sets can be coupled to differ in at
    most one record and Renyi divergence is jointly quasi-convex. Above order 64 the
    un-subsampled bound alone is used. Every value stays an upper bound; all other events
    are accounted by dp_accounting unchanged, except Poisson-subsampled Gaussians, whose
    negative or non-finite values (float cancellation at tiny q, large z) are replaced by
    the same un-subsampled bound.

    The subsampled values are memoised per order for the process (``_RDP_MEMO``): the
    without-replacement bound costs ``O(alpha^2)`` per order (about 70 ms for the orders
    up to 64), and the calibration's check of its result, the solvers' ``epsilon_spent``
    and the re-accounting of the ledger evaluate it at the same ``z``.

    **Lazy orders.** Without-replacement subsampled Gaussians are not evaluated when
    composed: :meth:`get_epsilon` evaluates them only at the orders that can attain the
    minimum. Each order's epsilon is a non-decreasing function of its RDP
    (:func:`_order_epsilon`), so an order whose epsilon at a cheap lower bound of its RDP
    (:func:`_wor_lower_bound`) is already at least the smallest exact epsilon found cannot
    attain the minimum: the orders are visited by increasing lower bound and the search
    stops there. The epsilon returned is the one of the full curve, float for float (each
    visited order sums the same values in the same order as the full curve). The full
    curve (:attr:`rdp`, :meth:`get_delta`) evaluates every order, as does a
    ``RepeatAndSelectDpEvent``'s inner event (its RDP is a function of the whole curve).
    """

    def __init__(self, orders=None,
                 neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE) -> None:
        super().__init__(orders, neighboring_relation)
        # What was composed from the first not yet evaluated without-replacement subsampled
        # Gaussian on, in composition order: (q, z, count) of such events, or the exact
        # RDP curve of any other event (so that every order sums the same values in the
        # same order as eager composition would). See "Lazy orders" above.
        self._tail: list[tuple[float, float, int] | np.ndarray] = []
        self._eager = 0

    def _maybe_compose(self, event: dpe.DpEvent, count: int, do_compose: bool):
        if isinstance(event, DiscreteGaussianDpEvent):
            # Its Renyi divergences are at most the continuous Gaussian's of the same
            # multiplier at every order (Canonne, Kamath & Steinke 2020; see the class).
            event = dpe.GaussianDpEvent(event.noise_multiplier)
        found = self._subsampled_gaussian(event) if do_compose else None
        if found is not None and found[0] and not self._eager:
            _, q, z = found
            # One order now, so that an invalid event fails at compose as before.
            self._exact(q, z, self._orders[:1])
            self._tail.append((q, z, count))
            return None
        if (do_compose and self._tail and not self._eager
                and not isinstance(event, dpe.ComposedDpEvent | dpe.SelfComposedDpEvent)):
            # After a pending event: this event's curve joins the tail (0 + x is x, so the
            # settled sum is the eager one, float for float).
            saved, self._rdp = self._rdp, np.zeros_like(self._rdp)
            try:
                error = self._compose_now(event, count, found, do_compose)
            finally:
                part, self._rdp = self._rdp, saved
            if error is None:
                self._tail.append(part)
            return error
        return self._compose_now(event, count, found, do_compose)

    def _compose_now(self, event: dpe.DpEvent, count: int,
                     found: tuple[bool, float, float] | None, do_compose: bool):
        """Compose ``event`` into the evaluated curve ``_rdp`` (every order)."""
        if isinstance(event, dpe.RepeatAndSelectDpEvent):
            # Its RDP is a non-additive function of the inner event's whole curve: the
            # inner event is evaluated at every order now.
            self._eager += 1
            try:
                return super()._maybe_compose(event, count, do_compose)
            finally:
                self._eager -= 1
        if found is None:
            return super()._maybe_compose(event, count, do_compose)
        wor, q, z = found
        self._rdp += count * _subsampled_rdp(wor, self.neighboring_relation, q, z, self._orders)
        return None

    def _subsampled_gaussian(self, event: dpe.DpEvent) -> tuple[bool, float, float] | None:
        """``(without_replacement, q, z)`` of a subsampled Gaussian this class clamps, or
        ``None`` (then dp_accounting composes the event unchanged).

        Sampling without replacement (replace-one): dp_accounting's bound at orders <= 64.
        Poisson (add/remove): dp_accounting's bound, which comes out slightly negative
        (~ -1e-22) for q <~ 2e-7 and z >~ 5e3; one negative order made the whole ledger
        report epsilon = 0. Every value that is non-finite, negative or above the
        un-subsampled Gaussian's ``alpha / (2 z^2)`` (an upper bound at every order:
        subsampling never increases the Renyi divergence) is replaced by that bound.
        """
        relation = self.neighboring_relation
        if isinstance(event, dpe.SampledWithoutReplacementDpEvent):
            if relation is not dpa.NeighboringRelation.REPLACE_ONE:
                return None
            q = event.sample_size / event.source_dataset_size
        elif isinstance(event, dpe.PoissonSampledDpEvent):
            if relation is not dpa.NeighboringRelation.ADD_OR_REMOVE_ONE:
                return None
            q = event.sampling_probability
        else:
            return None
        if not (isinstance(event.event, dpe.GaussianDpEvent)
                and event.event.noise_multiplier > 0):
            return None
        wor = isinstance(event, dpe.SampledWithoutReplacementDpEvent)
        return wor, float(q), float(event.event.noise_multiplier)

    # -- lazy orders ------------------------------------------------------------------------
    def _summed(self, index: slice,
                pending: Callable[[float, float, np.ndarray], np.ndarray]) -> np.ndarray:
        """The evaluated curve plus the tail at the orders ``self._orders[index]``, in
        composition order, each pending event ``(q, z, count)`` valued by ``pending(q, z,
        orders)``: exactly (:func:`_subsampled_rdp`, then the sums the settled curve holds,
        float for float) or from below (:func:`_wor_lower_bound`: float addition is
        monotone, so the same sums of smaller terms stay smaller)."""
        orders = self._orders[index]
        out = np.array(self._rdp[index], dtype=float)
        for part in self._tail:
            if isinstance(part, tuple):
                q, z, count = part
                out += count * pending(q, z, orders)
            else:
                out += part[index]
        return out

    def _exact(self, q: float, z: float, orders: np.ndarray) -> np.ndarray:
        return _subsampled_rdp(True, self.neighboring_relation, q, z, orders)

    def _settle(self) -> None:
        """Evaluate the pending events at every order (the full RDP curve)."""
        self._rdp = self._summed(slice(None), self._exact)
        self._tail.clear()

    def _exact_at(self, k: int) -> float:
        """The RDP of everything composed at order ``self._orders[k]`` (the value the
        settled curve holds there)."""
        return float(self._summed(slice(k, k + 1), self._exact)[0])

    def _lower_curve(self) -> np.ndarray:
        """A lower bound on the settled curve at every order (:func:`_wor_lower_bound`)."""
        return self._summed(slice(None), _wor_lower_bound)

    def order_epsilons(self, target_delta: float, upto: float = math.inf) -> list[float]:
        """Epsilon at ``target_delta`` of each order alone (dp_accounting's conversion of
        that order's RDP): exact where it is at most ``upto``; an order whose lower bound
        (:func:`_wor_lower_bound`) already exceeds ``upto`` reports that lower bound,
        which also exceeds ``upto``. ``upto = inf``: every order exact."""
        lower = self._lower_curve() if self._tail else self._rdp
        out = []
        for k, a in enumerate(self._orders.tolist()):
            e = _order_epsilon(a, float(lower[k]), target_delta)
            if self._tail and not e > upto:
                e = _order_epsilon(a, self._exact_at(k), target_delta)
            out.append(e)
        return out

    def get_epsilon_and_optimal_order(self, target_delta: float) -> tuple[float, float]:
        """dp_accounting's epsilon (the minimum over the orders of each order's
        conversion), evaluating the pending events only at orders that can attain it."""
        if not self._tail:
            return super().get_epsilon_and_optimal_order(target_delta)
        lower = self._lower_curve()
        if not (target_delta > 0 and np.all(np.isfinite(lower) | (lower == math.inf))):
            self._settle()
            return super().get_epsilon_and_optimal_order(target_delta)
        orders = self._orders.tolist()
        bounds = [_order_epsilon(a, float(r), target_delta)
                  for a, r in zip(orders, lower, strict=True)]
        best, best_k = math.inf, None
        for k in sorted(range(len(orders)), key=lambda j: (bounds[j], j)):
            if best_k is not None and bounds[k] >= best:
                break  # this order, and every later one, cannot go below `best`
            e = _order_epsilon(orders[k], self._exact_at(k), target_delta)
            if best_k is None or e < best or (e == best and k < best_k):
                best, best_k = e, k
        return best, orders[best_k]

    def get_epsilon(self, target_delta: float) -> float:
        return self.get_epsilon_and_optimal_order(target_delta)[0]

    def get_delta_and_optimal_order(self, target_epsilon: float) -> tuple[float, float]:
        self._settle()
        return super().get_delta_and_optimal_order(target_epsilon)

    def get_delta(self, target_epsilon: float) -> float:
        self._settle()
        return super().get_delta(target_epsilon)

    @property
    def rdp(self) -> np.ndarray:
        """The RDP at every order (the pending events are evaluated first)."""
        self._settle()
        return np.copy(self._rdp)


def _order_epsilon(order: float, rdp: float, delta: float) -> float:
    """dp_accounting's conversion of the RDP ``rdp`` at ONE order to epsilon at ``delta``
    (:func:`~dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon` on that order):
    non-decreasing in ``rdp`` (0 up to the KL bound, then ``rdp`` plus a constant of the
    order, clipped at 0), and its minimum over the orders is the engine's epsilon."""
    return float(rdp_privacy_accountant.compute_epsilon([order], [rdp], delta)[0])


def _subsampled_rdp(wor: bool, relation: dpa.NeighboringRelation, q: float, z: float,
                    orders: np.ndarray) -> np.ndarray:
    """The clamped RDP of a subsampled Gaussian at ``orders``, through the memo."""
    orders = [float(a) for a in orders]
    # The memo's key: every input of the per-order value (see _RDP_MEMO).
    base = (_wor_rdp() if wor else _poisson_rdp(), WOR_MAX_STABLE_ORDER if wor else None,
            relation, q, z)
    values = [_RDP_MEMO.get((*base, a)) for a in orders]
    missing = [k for k, v in enumerate(values) if v is None]
    if missing:
        computed = _clamped_rdp(wor, q, z, np.array([orders[k] for k in missing]))
        if len(_RDP_MEMO) + len(missing) > _RDP_MEMO_SIZE:
            _RDP_MEMO.clear()
        for k, v in zip(missing, computed.tolist(), strict=True):
            values[k] = _RDP_MEMO[(*base, orders[k])] = v
    return np.array(values, dtype=float)


#: Relative margin of :func:`_wor_lower_bound` (covers the rounding of its few operations
#: against dp_accounting's own evaluation of the same terms).
_LOWER_BOUND_MARGIN = 1e-9
#: Largest noise multiplier for which :func:`_log_a_lower_bounds` keeps the terms ``i >= 3``.
#: Their closed-form bound on the forward differences lies below dp_accounting's float
#: evaluation of them, every even order up to 64, by at least 0.009 in log at 5000 values of
#: ``z`` in [0.1, 8]; near ``z = 10`` dp_accounting's high-order differences lose all
#: precision and can fall below it. Above this ``z`` the ``i = 2`` term alone, which uses no
#: difference, is used (and is tight there: the higher terms shrink like ``z^-2``).
_HIGHER_TERMS_MAX_Z = 7.0


@lru_cache(maxsize=4)
def _log_comb_table(kmax: int) -> np.ndarray:
    """``log C(k, i)`` for ``k = 0..kmax`` (rows) and ``i = 2..kmax`` (columns), ``-inf``
    where ``i > k``."""
    k = np.arange(kmax + 1, dtype=float)[:, None]
    i = np.arange(2, kmax + 1, dtype=float)[None, :]
    with np.errstate(invalid="ignore"):
        return np.where(i <= k, gammaln(k + 1.0) - gammaln(i + 1.0)
                        - gammaln(np.maximum(k - i, 0.0) + 1.0), -np.inf)


@lru_cache(maxsize=4096)
def _log_a_lower_bounds(q: float, z: float, kmax: int) -> np.ndarray:
    """Lower bounds on dp_accounting's ``log A_k`` (Wang, Balle & Kasiviswanathan 2019, Thm.
    27, without replacement) at the integer orders ``k = 0..kmax`` (index ``k``).

    dp_accounting sums, in log space with ``_log_add`` (never decreasing), ``1`` and the
    positive terms ``exp(s_i)``, ``i = 2..k``: ``s_2 = 2 log q + log C(k, 2) + min(log 4 +
    log(e^{2c} - 1), 2c + log 2)`` and, for ``i >= 3``, ``s_i = min(log 4 + (d_lo + d_hi) /
    2, log 2 + c (i - 1) i) + i log q + log C(k, i)``, with ``c = 1 / (2 z^2)`` and ``d_lo``,
    ``d_hi`` the logs of the forward differences of orders ``2 floor(i/2)`` and ``2
    ceil(i/2)`` of ``f(x) = exp(c x (x + 1))`` at ``x = -1``. Each such difference of order
    ``2m`` is ``f^(2m)(xi)`` at some ``xi`` (mean value theorem); with ``u = x + 1/2``, ``f =
    e^{-c/4} e^{c u^2}`` and ``(d/du)^{2m} e^{c u^2} = e^{c u^2} (2m)! sum_j (2 c u)^{2m - 2j}
    c^j / ((2m - 2j)! j!)``, all terms non-negative, so the difference is at least its ``j =
    m`` term at ``u = 0``: ``e^{-c/4} (2m)! c^m / m!``. Replacing ``d_lo``, ``d_hi`` by those
    bounds lowers every ``s_i``; the terms ``i >= 3`` are kept for ``z <=``
    :data:`_HIGHER_TERMS_MAX_Z` only. A bound that came out above dp_accounting's value could
    only make :meth:`ClampedRdpEngine.get_epsilon` skip an order: its epsilon is always
    dp_accounting's exact value at an order it evaluated, never below the minimum.
    Memoised (a pure function of its arguments; the array returned is read-only).
    """
    c = 1.0 / (2.0 * z * z)
    f2 = 2.0 * c
    i = np.arange(2, kmax + 1, dtype=float)
    head = np.full(i.shape, -np.inf)
    if i.size:
        head[0] = 2.0 * math.log(q) + min(math.log(4.0) + f2 + math.log1p(-math.exp(-f2)),
                                          f2 + math.log(2.0))
    if z <= _HIGHER_TERMS_MAX_Z and i.size > 1:
        rest = i[1:]

        def log_difference(m: np.ndarray) -> np.ndarray:
            return -c / 4.0 + gammaln(2.0 * m + 1.0) - gammaln(m + 1.0) + m * math.log(c)

        pair = 0.5 * (log_difference(np.floor(rest / 2.0)) + log_difference(np.ceil(rest / 2.0)))
        head[1:] = (np.minimum(math.log(4.0) + pair, math.log(2.0) + c * (rest - 1.0) * rest)
                    + rest * math.log(q))
    log_comb = _log_comb_table(kmax)
    terms = np.concatenate([np.zeros((kmax + 1, 1)), head[None, :] + log_comb], axis=1)
    out = np.logaddexp.reduce(terms, axis=1)
    out.flags.writeable = False  # cached: shared by every caller
    return out


def _wor_lower_bound(q: float, z: float, orders: np.ndarray) -> np.ndarray:
    """A lower bound, cheap, on the clamped without-replacement RDP that
    :func:`_clamped_rdp` returns at ``orders``.

    dp_accounting evaluates the bound at an integer order ``a`` as ``log(A_a) / (a - 1)``
    and at a fractional order as ``((1 - t) log A_f + t log A_c) / (a - 1)`` between its
    neighbouring integers (``log A_1 = 0``); :func:`_log_a_lower_bounds` bounds ``log A``
    from below. The result is shrunk by :data:`_LOWER_BOUND_MARGIN` and clamped at the
    un-subsampled ``a / (2 z^2)`` as the exact value is (which is either ``min(bound, a / (2
    z^2))`` or ``a / (2 z^2)``). Above ``WOR_MAX_STABLE_ORDER``, and for ``q`` outside ``(0,
    1)``, the returned value is the exact clamped one (cheap there). Checked against
    dp_accounting over a grid of ``(q, z)`` at every order (tests/privacy/test_accounting.py);
    the argument is in docs/privacy_accounting_speed.md ("Lazy orders").
    """
    orders = np.asarray(orders, dtype=float)
    g = orders / (2.0 * z * z)
    if not 0.0 < q < 1.0:
        return _clamped_rdp(True, q, z, orders)
    log_a = _log_a_lower_bounds(q, z, WOR_MAX_STABLE_ORDER)
    low = np.minimum(np.floor(orders), WOR_MAX_STABLE_ORDER).astype(int)
    high = np.minimum(np.ceil(orders), WOR_MAX_STABLE_ORDER).astype(int)
    t = orders - np.floor(orders)
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = ((1.0 - t) * log_a[low] + t * log_a[high]) / (orders - 1.0)
    bound = np.minimum(bound * (1.0 - _LOWER_BOUND_MARGIN), g)
    return np.where(orders <= WOR_MAX_STABLE_ORDER, bound, g)


#: Per-order RDP of one subsampled Gaussian, shared by every ClampedRdpEngine of the
#: process (the calibration's searches, its check of the result with every order, and the
#: re-accounting of the ledger at the same multiplier). The value at order ``a`` is a
#: deterministic function of the without-replacement or Poisson bound used (the
#: dp_accounting function itself, so a replaced function is a different key), the order
#: cap of the former, the neighbouring relation, ``q``, ``z`` and ``a``, exactly the key;
#: a hit returns the float that recomputation returns (the bound is computed order by
#: order, and the clamping is elementwise).
_RDP_MEMO: dict[tuple, float] = {}
_RDP_MEMO_SIZE = 1 << 16


def _wor_rdp():
    return rdp_privacy_accountant._compute_rdp_sample_wor_gaussian


def _poisson_rdp():
    return rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian


def _clamped_rdp(wor: bool, q: float, z: float, orders: np.ndarray) -> np.ndarray:
    """The clamped RDP of a subsampled Gaussian at ``orders`` (see ClampedRdpEngine).

    ``min(bound, alpha / (2 z^2))`` where dp_accounting's bound is finite and
    non-negative (and, without replacement, ``alpha <= WOR_MAX_STABLE_ORDER``), else the
    un-subsampled ``alpha / (2 z^2)``. Elementwise in ``orders``.
    """
    rdp = orders / (2.0 * z * z)
    if wor:
        used = orders <= WOR_MAX_STABLE_ORDER
        sampled = _wor_rdp()(q, z, orders[used].tolist())
    else:
        used = np.ones(orders.shape, dtype=bool)
        sampled = _poisson_rdp()(q=q, noise_multiplier=z, orders=orders.tolist())
    with np.errstate(invalid="ignore"):
        sampled = np.asarray(sampled, dtype=float)
        ok = np.isfinite(sampled) & (sampled >= 0.0)
    rdp[used] = np.where(ok, np.minimum(sampled, rdp[used]), rdp[used])
    return rdp


def _leaves(event: dpe.DpEvent) -> list[dpe.DpEvent]:
    """The non-composition events of ``event`` (through Composed and SelfComposed)."""
    if isinstance(event, dpe.SelfComposedDpEvent):
        return _leaves(event.event)
    if isinstance(event, dpe.ComposedDpEvent):
        return [leaf for e in event.events for leaf in _leaves(e)]
    return [event]


class SelfComposingPldEngine(pld_privacy_accountant.PLDAccountant):
    """dp_accounting's ``PLDAccountant``, with randomized response composed exactly.

    Two problems of dp_accounting 0.6.0 with ``RandomizedResponseDpEvent`` (which skdp uses
    for pure-DP selections: every ``e``-DP mechanism is dominated by binary randomized
    response with the same ``e``, Kairouz, Oh & Viswanath 2015):

    * inside ``SelfComposedDpEvent(event, count)`` it is composed only ONCE (that branch
      ignores ``count``, unlike the Gaussian and Laplace ones): ``count = 256`` at
      ``e = 0.014`` was accounted 60x below the truth;
    * its losses ``+-e`` are rounded up to the fixed grid (``1e-4``): for ``e`` near the
      grid step the ``-e`` losses become 0 and ``count`` compositions lose tens of percent
      (``e < 1e-4`` cannot be accounted at all).

    Here binary randomized response under replace-one is represented exactly: ``k``
    releases have privacy loss ``(k - 2 i) e`` with ``i ~ Binomial(k, p/2)`` flips (the
    closed form of the optimal composition, Kairouz, Oh & Viswanath 2015, Thm. 3.3), put on
    the lattice ``e Z`` (interval ``e`` rounded up by two ulps, so no loss is
    under-stated by more than a few ulps) with ``scipy``'s binomial probabilities, and
    dp_accounting's PLD computes epsilon from it. No FFT convolution is involved: its
    round-off leaves negative probabilities of about ``1e-11`` at ``k = 2^18``, which
    under-states epsilon at small ``delta``. A ledger may hold randomized response of ONE
    parameter, plus no-op and non-private events; mixing it with anything else raises
    :class:`~skdp.exceptions.PrivacyAccountingError` before anything is composed (the
    PLDs live on different grids), and other randomized-response variants (more buckets,
    other relations) are refused when composed more than once (dp_accounting would
    compose them once). Every other event goes to dp_accounting unchanged.
    """

    def __init__(self, neighboring_relation, value_discretization_interval: float):
        super().__init__(neighboring_relation, value_discretization_interval)
        self._lattice: tuple[float, int] | None = None  # (noise_parameter, count)
        self._other = False

    def _exact_rr(self, event: dpe.DpEvent) -> bool:
        return (isinstance(event, dpe.RandomizedResponseDpEvent) and event.num_buckets == 2
                and 0 < event.noise_parameter < 1
                and self.neighboring_relation is dpa.NeighboringRelation.REPLACE_ONE)

    def _mixing_error(self, event: dpe.DpEvent) -> str | None:
        rr_params = set()
        other = self._other
        for leaf in _leaves(event):
            if isinstance(leaf, dpe.NoOpDpEvent | dpe.NonPrivateDpEvent):
                continue
            if self._exact_rr(leaf):
                rr_params.add(float(leaf.noise_parameter))
            elif isinstance(leaf, dpe.RandomizedResponseDpEvent):
                return ("dp_accounting 0.6.0 composes this randomized response (more than "
                        "two buckets, or not replace-one) only once; account it another way.")
            else:
                other = True
        if self._lattice is not None:
            rr_params.add(self._lattice[0])
        if rr_params and (other or len(rr_params) > 1):
            return ("PLD accounting composes randomized response exactly only on its "
                    "own lattice: one randomized-response parameter per ledger, and no "
                    "other mechanism.")
        return None

    def supports(self, event: dpe.DpEvent) -> bool:
        return self._mixing_error(event) is None and super().supports(event)

    def compose(self, event: dpe.DpEvent, count: int = 1):
        error = self._mixing_error(event)
        if error is not None:
            raise PrivacyAccountingError(error)
        return super().compose(event, count)

    def _maybe_compose(self, event: dpe.DpEvent, count: int, do_compose: bool):
        if not self._exact_rr(event):
            result = super()._maybe_compose(event, count, do_compose)
            if do_compose and result is None and not isinstance(
                    event, dpe.NoOpDpEvent | dpe.NonPrivateDpEvent
                    | dpe.SelfComposedDpEvent | dpe.ComposedDpEvent):
                self._other = True
            return result
        if do_compose:
            p = float(event.noise_parameter)
            total = count + (self._lattice[1] if self._lattice else 0)
            self._lattice = (p, total)
            flips = np.arange(total + 1)
            pmf = binom.pmf(flips, total, p / 2.0)
            keep = pmf > 0
            interval = math.nextafter(math.nextafter(_rr_loss(p), math.inf), math.inf)
            self._pld = privacy_loss_distribution.PrivacyLossDistribution.\
                create_from_rounded_probability(
                    dict(zip((total - 2 * flips[keep]).tolist(), pmf[keep].tolist(),
                             strict=True)),
                    0.0, interval)
        return None


def make_engine(
    accounting: str, relation: str = "replace_one", *, orders: tuple[float, ...] | None = None
) -> dpa.PrivacyAccountant:
    """A fresh composition engine of the named accounting method and relation.

    Parameters
    ----------
    accounting : str
        ``"gaussian"``, ``"pure"``, ``"basic"``, ``"rdp"`` or ``"pld"``.
    relation : str, default="replace_one"
        ``"replace_one"`` or ``"add_remove"``.
    orders : tuple of float, default=None
        ``"rdp"`` only: the Renyi orders to account at, a non-empty subset of
        :data:`RDP_ORDERS` (``None``: all of them). Epsilon is a minimum over the orders,
        so an engine on a subset reports an epsilon at least that of the full one
        (used by the calibration's order search, never by the re-accounting of a ledger).

    Returns
    -------
    dp_accounting.PrivacyAccountant
        A new composition engine with nothing composed.
    """
    _check_names(accounting, relation)
    rel = _RELATION[relation]
    if orders is not None:
        if accounting != "rdp" or not orders or not set(orders) <= set(RDP_ORDERS):
            raise ValueError("orders must be a non-empty subset of RDP_ORDERS, for 'rdp'.")
        return ClampedRdpEngine(orders=tuple(orders), neighboring_relation=rel)
    if accounting == "gaussian":
        return GaussianEngine(rel)
    if accounting == "pure":
        return PureDpEngine(rel)
    if accounting == "basic":
        return BasicCompositionEngine(rel)
    if accounting == "rdp":
        return ClampedRdpEngine(orders=RDP_ORDERS, neighboring_relation=rel)
    return SelfComposingPldEngine(
        neighboring_relation=rel, value_discretization_interval=PLD_DISCRETIZATION
    )
