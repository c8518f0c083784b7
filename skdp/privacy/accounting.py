"""Privacy accounting on top of ``dp_accounting``: events, ledgers and calibration.

``dp_accounting.DpEvent`` objects are the only currency between solvers and accounting.
Three accountants are available, named by strings so that estimators stay clonable:

``"gaussian"``
    Exact closed form for compositions of *non-subsampled* Gaussian releases. The
    privacy-loss distribution of a Gaussian release with sensitivity ``Delta`` and noise
    ``sigma`` is that of ``mu``-GDP with ``mu = Delta / sigma``, and ``T`` such releases
    compose to ``mu = sqrt(sum_t mu_t^2)`` (Dong, Roth & Su 2022, Cor. 3.3). The
    ``(epsilon, delta)`` curve of ``mu``-GDP is the analytic Gaussian formula of
    Balle & Wang (2018, Thm. 8). This is tight, so it needs less noise than RDP or PLD.
``"rdp"``
    ``dp_accounting``'s Renyi-DP accountant (supports sampling without replacement under
    replace-one).
``"pld"``
    ``dp_accounting``'s privacy-loss-distribution accountant (tight for Poisson sampling
    under add/remove; a pessimistic discretisation).
``"pure"``
    Pure ``epsilon``-DP: basic composition (epsilons add) of :class:`PureDpEvent` and
    ``LaplaceDpEvent`` releases. ``dp_accounting`` has no event for a pure-DP mechanism
    in a general norm (the l2 "multivariate Laplace" of output perturbation, report-noisy-
    min); :class:`PureDpEvent` records one with its exact closed-form epsilon.
``"basic"``
    Basic composition of ``(epsilon, delta)`` guarantees: epsilons add and deltas add
    (Dwork & Roth 2014, Thm. 3.16). Reads :class:`ApproxDpEvent` (a closed-form
    ``(epsilon, delta)`` guarantee, e.g. objective perturbation, whose privacy profile
    no ``dp_accounting`` event describes) and everything ``"pure"`` reads.

The same ``GaussianDpEvent(noise_multiplier)`` means different mechanisms to the RDP and
PLD accountants under replace-one (the PLD accountant measures the noise multiplier
relative to *half* the replace-one sensitivity). :func:`gaussian_noise_multiplier` is the
one place where a noise multiplier is derived from ``(sigma, sensitivity)``; every
Gaussian event in skdp is built through it.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import attr
import dp_accounting as dpa
import mpmath
import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.optimize import brentq
from scipy.special import log_ndtr
from scipy.stats import binom

from skdp.exceptions import BudgetError, IncompatibleSolverError, PrivacyAccountingError
from skdp.privacy.budget import Budget

__all__ = [
    "ACCOUNTANTS",
    "RELATIONS",
    "ApproxDpEvent",
    "BasicCompositionAccountant",
    "GaussianAccountant",
    "PrivacyLedger",
    "PureDpAccountant",
    "PureDpEvent",
    "SelfComposingPldAccountant",
    "add_remove_budget",
    "PrivacySpent",
    "analytic_gaussian_multiplier",
    "calibrate_noise_multiplier",
    "check_sensitivity",
    "epsilon_spent",
    "gaussian_event",
    "gaussian_log_delta",
    "gaussian_noise_multiplier",
    "make_accountant",
    "randomized_response_event",
    "single_gaussian_multiplier",
    "single_release",
    "subsampled_gaussian_event",
]

ACCOUNTANTS: tuple[str, ...] = ("gaussian", "rdp", "pld", "pure", "basic")
RELATIONS: tuple[str, ...] = ("replace_one", "add_remove")

# PLD discretisation: smaller is tighter and slower; the result is always an upper bound.
PLD_DISCRETIZATION = 1e-4
# Renyi orders of the RDP accountant. Any set of orders gives a valid bound (the
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


def _check_names(accountant: str, relation: str) -> None:
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}.")
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}.")


# ---------------------------------------------------------------------------------------
# Exact Gaussian (mu-GDP) curve
# ---------------------------------------------------------------------------------------
def gaussian_log_delta(mu: float, epsilon: float) -> float:
    """Log of the exact delta(epsilon) of ``mu``-GDP.

    ``delta(eps) = Phi(mu/2 - eps/mu) - exp(eps) Phi(-mu/2 - eps/mu)`` (Balle & Wang 2018,
    Thm. 8; Dong, Roth & Su 2022, Cor. 2.13), evaluated in log space.
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


class _AdditiveAccountant(dpa.PrivacyAccountant):
    """An accountant whose privacy parameters are sums over the composed releases.

    Walks ``ComposedDpEvent``/``SelfComposedDpEvent`` trees (no-ops cost nothing, a
    non-private release costs ``inf``) and adds ``count * cost(leaf)`` for each leaf;
    subclasses give the cost of the leaves they understand (``None``: unsupported), either
    a number or a pair ``(cost, delta)`` whose deltas are summed too.
    """

    #: What the accountant reads, for the error message of unsupported events.
    handles: str = ""

    def __init__(self, neighboring_relation: dpa.NeighboringRelation) -> None:
        super().__init__(neighboring_relation)
        self._total = 0.0
        self._delta_total = 0.0

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
                invalid_event=event, error_message=f"this accountant handles only {self.handles}"
            )
        if do_compose:
            self._total += count * cost
            self._delta_total += count * delta
        return None


class GaussianAccountant(_AdditiveAccountant):
    """Exact accountant for compositions of non-subsampled Gaussian releases.

    A ``GaussianDpEvent(z)`` is read as a Gaussian release whose noise is ``z`` times the
    l2 sensitivity under the accountant's neighbouring relation (the RDP convention).
    ``T`` releases with multipliers ``z_t`` are exactly ``mu``-GDP with
    ``mu^2 = sum_t 1 / z_t^2``. Subsampled events are not supported (use ``"rdp"`` or
    ``"pld"``).
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
        return _gdp_epsilon(self.mu, target_delta)

    def get_delta(self, target_epsilon: float) -> float:
        return math.exp(gaussian_log_delta(self.mu, target_epsilon))


@attr.s(frozen=True, slots=True, auto_attribs=True)
class PureDpEvent(dpe.DpEvent):
    """A mechanism that is ``epsilon``-DP (``delta = 0``) by a closed-form argument.

    Used for pure-DP releases that ``dp_accounting`` has no event for, for example the
    l2 "multivariate Laplace" noise of output perturbation (density proportional to
    ``exp(-epsilon ||z||_2 / Delta)``, epsilon-DP by the triangle inequality). The solver
    that records it states the argument; only :class:`PureDpAccountant` reads it.
    """

    epsilon: float


class PureDpAccountant(_AdditiveAccountant):
    """Basic composition of pure-DP events: the epsilons add, delta is 0.

    Reads :class:`PureDpEvent` (its ``epsilon``) and ``LaplaceDpEvent`` (``1 / z``: the
    Laplace mechanism with scale ``z`` times the l1 sensitivity) under either relation,
    composed or self-composed. Sequential composition of pure-DP mechanisms, even chosen
    adaptively, is ``sum(epsilon_i)``-DP (Dwork & Roth 2014, Thm. 3.16).
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
        # An epsilon-DP mechanism is (epsilon, delta)-DP for every delta >= 0.
        return self._total

    def get_delta(self, target_epsilon: float) -> float:
        return 0.0 if target_epsilon >= self._total else 1.0


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ApproxDpEvent(dpe.DpEvent):
    """A mechanism that is ``(epsilon, delta)``-DP by a closed-form argument.

    For mechanisms whose privacy profile ``dp_accounting`` cannot represent (objective
    perturbation, amplification by shuffling). The solver that records it states the
    argument and, in ``mechanism``, what was released; only
    :class:`BasicCompositionAccountant` reads it.
    """

    epsilon: float
    delta: float
    mechanism: str = ""


class BasicCompositionAccountant(_AdditiveAccountant):
    """Basic composition: ``k`` mechanisms ``(eps_i, delta_i)``-DP, even chosen adaptively,
    are ``(sum eps_i, sum delta_i)``-DP (Dwork & Roth 2014, Thm. 3.16).

    Reads :class:`ApproxDpEvent`, :class:`PureDpEvent` and ``LaplaceDpEvent`` (``1/z``).
    ``get_epsilon(delta)`` is the summed epsilon when ``delta`` covers the summed deltas,
    and ``inf`` otherwise: the recorded guarantees say nothing at a smaller delta.
    """

    handles = "compositions of ApproxDpEvent, PureDpEvent and LaplaceDpEvent"

    def _leaf_cost(self, event: dpe.DpEvent) -> float | tuple[float, float] | None:
        if isinstance(event, ApproxDpEvent):
            return (event.epsilon, event.delta)
        return PureDpAccountant._leaf_cost(self, event)  # type: ignore[arg-type]

    def get_epsilon(self, target_delta: float) -> float:
        # Rounding of a split delta (d1 + d2 computed from delta) is forgiven at 1e-12.
        return self._total if self._delta_total <= target_delta * (1 + 1e-12) else math.inf

    def get_delta(self, target_epsilon: float) -> float:
        return self._delta_total if target_epsilon >= self._total else 1.0


# Largest Renyi order at which dp_accounting's without-replacement bound is used.
WOR_MAX_STABLE_ORDER = 64


class ClampedRdpAccountant(rdp_privacy_accountant.RdpAccountant):
    """dp_accounting's RDP accountant with a numerically safe sampling-without-replacement term.

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
    """

    def _maybe_compose(self, event: dpe.DpEvent, count: int, do_compose: bool):
        rdp = self._subsampled_gaussian_rdp(event) if do_compose else None
        if rdp is None:
            return super()._maybe_compose(event, count, do_compose)
        self._rdp += count * rdp
        return None

    def _subsampled_gaussian_rdp(self, event: dpe.DpEvent) -> np.ndarray | None:
        """Clamped RDP of a subsampled Gaussian at every order, or ``None`` (not one).

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
        z = event.event.noise_multiplier
        orders = np.asarray(self._orders, dtype=float)
        rdp = orders / (2.0 * z * z)
        if isinstance(event, dpe.SampledWithoutReplacementDpEvent):
            used = orders <= WOR_MAX_STABLE_ORDER
            sampled = rdp_privacy_accountant._compute_rdp_sample_wor_gaussian(
                q, z, orders[used].tolist())
        else:
            used = np.ones(orders.shape, dtype=bool)
            sampled = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(
                q=q, noise_multiplier=z, orders=self._orders)
        with np.errstate(invalid="ignore"):
            sampled = np.asarray(sampled, dtype=float)
            ok = np.isfinite(sampled) & (sampled >= 0.0)
        rdp[used] = np.where(ok, np.minimum(sampled, rdp[used]), rdp[used])
        return rdp


def _rr_loss(noise_parameter: float) -> float:
    """Privacy loss ``log((1 - p/2) / (p/2)) = log1p(2 (1 - p) / p)`` of binary randomized
    response, accurate to a few ulps also for ``p`` near 1 (tiny losses), where the
    difference of two logarithms cancels."""
    p = noise_parameter
    return math.log1p(2.0 * (1.0 - p) / p)


def _leaves(event: dpe.DpEvent) -> list[dpe.DpEvent]:
    """The non-composition events of ``event`` (through Composed and SelfComposed)."""
    if isinstance(event, dpe.SelfComposedDpEvent):
        return _leaves(event.event)
    if isinstance(event, dpe.ComposedDpEvent):
        return [leaf for e in event.events for leaf in _leaves(e)]
    return [event]


class SelfComposingPldAccountant(pld_privacy_accountant.PLDAccountant):
    """dp_accounting's PLD accountant, with randomized response composed exactly.

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
            return ("the PLD accountant composes randomized response exactly only on its "
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


def randomized_response_event(epsilon: float) -> dpe.RandomizedResponseDpEvent:
    """Binary randomized response that is ``epsilon``-DP and no less: the dominating pair
    of every pure ``epsilon``-DP mechanism (Kairouz, Oh & Viswanath 2015, Thm. 2.1), so its
    PLD bounds the privacy profile of any ``epsilon``-DP release and of their adaptive
    compositions. ``noise_parameter = 2 / (1 + e^epsilon)`` gives the odds
    ``(1 - p/2) / (p/2) = e^epsilon``; ``p`` is lowered by ulps until the represented loss
    is at least ``epsilon`` (rounding must not make the event weaker than the mechanism;
    checked in 50-digit arithmetic by the tests)."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be positive and finite, got {epsilon}.")
    p = 2.0 / (1.0 + math.exp(epsilon))
    # _rr_loss is accurate to a few ulps: ask for a few ulps more than epsilon.
    while _rr_loss(p) < epsilon * (1.0 + 1e-15):
        p = math.nextafter(p, 0.0)
    return dpe.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=2)


def make_accountant(accountant: str, relation: str = "replace_one") -> dpa.PrivacyAccountant:
    """A fresh accountant of the named kind for the named neighbouring relation."""
    _check_names(accountant, relation)
    rel = _RELATION[relation]
    if accountant == "gaussian":
        return GaussianAccountant(rel)
    if accountant == "pure":
        return PureDpAccountant(rel)
    if accountant == "basic":
        return BasicCompositionAccountant(rel)
    if accountant == "rdp":
        return ClampedRdpAccountant(orders=RDP_ORDERS, neighboring_relation=rel)
    return SelfComposingPldAccountant(
        neighboring_relation=rel, value_discretization_interval=PLD_DISCRETIZATION
    )


# ---------------------------------------------------------------------------------------
# Building events: the ONE place that turns (sigma, sensitivity) into a noise multiplier
# ---------------------------------------------------------------------------------------
def gaussian_noise_multiplier(
    sigma: float, sensitivity: float, *, accountant: str, relation: str
) -> float:
    """Noise multiplier that makes ``GaussianDpEvent`` describe ``N(0, sigma^2 I)``.

    Parameters
    ----------
    sigma : float
        Standard deviation of the Gaussian noise added to the query.
    sensitivity : float
        l2 sensitivity of the query under ``relation`` (for replace-one: the largest
        change when one record is replaced by any other).
    accountant, relation : str
        The accountant that will read the event, and the neighbouring relation.

    Notes
    -----
    dp_accounting 0.6 reads ``GaussianDpEvent(z)`` as noise ``z * Delta`` for the RDP
    accountant under any relation and for the PLD accountant under add/remove, but for the
    PLD accountant under replace-one as noise ``z * Delta / 2`` (its replace-one pair
    shifts the mean by ``+-1/z``). Hence ``z = sigma / (Delta / 2)`` there.
    """
    _check_names(accountant, relation)
    if not (math.isfinite(sigma) and math.isfinite(sensitivity)) or sensitivity < 0 or sigma < 0:
        raise ValueError(
            f"sigma and sensitivity must be finite and non-negative, got {sigma}, {sensitivity}."
        )
    if sensitivity == 0:
        return math.inf
    if accountant == "pld" and relation == "replace_one":
        return sigma / (sensitivity / 2.0)
    return sigma / sensitivity


def check_sensitivity(sensitivity: float, name: str = "sensitivity") -> float:
    """Return ``sensitivity`` if it is positive and finite, else raise ``ValueError``.

    A zero that comes from an underflow (tiny clip norms over a large n) must not be
    accounted as a data-independent query, and an infinite one cannot be calibrated.
    """
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(
            f"the {name} is {sensitivity}, not a positive finite number; use larger clip "
            "norms or data_norm."
        )
    return sensitivity


def gaussian_event(
    sigma: float, sensitivity: float, *, accountant: str, relation: str
) -> dpe.DpEvent:
    """The ``DpEvent`` of one release ``q(D) + N(0, sigma^2 I)`` with the given sensitivity.

    ``sensitivity`` must be positive and finite: a query that does not depend on the data
    needs no event at all (a zero that comes from an underflow must not be accounted as
    free). ``sigma = 0`` is the non-private release.
    """
    check_sensitivity(sensitivity)
    if sigma == 0:
        return dpe.NonPrivateDpEvent()
    z = gaussian_noise_multiplier(sigma, sensitivity, accountant=accountant, relation=relation)
    return dpe.GaussianDpEvent(z)


def subsampled_gaussian_event(
    sigma: float,
    sensitivity: float,
    *,
    n_samples: int,
    batch_size: int,
    sampling: str,
    accountant: str,
    relation: str,
) -> dpe.DpEvent:
    """The ``DpEvent`` of a Gaussian release computed on a random batch.

    ``sampling="without_replacement"``: a uniform subset of exactly ``batch_size`` records
    (replace-one only, RDP accountant; Wang, Balle & Kasiviswanathan 2019, Thm. 27).
    ``sampling="poisson"``: each record independently with probability
    ``batch_size / n_samples`` (add/remove; RDP or PLD accountant).
    ``sensitivity`` is that of the batch query under ``relation``.
    """
    if sigma == 0:
        return dpe.NonPrivateDpEvent()
    inner = gaussian_event(sigma, sensitivity, accountant=accountant, relation=relation)
    if sampling == "without_replacement":
        return dpe.SampledWithoutReplacementDpEvent(n_samples, batch_size, inner)
    if sampling == "poisson":
        return dpe.PoissonSampledDpEvent(batch_size / n_samples, inner)
    raise ValueError(f"sampling must be 'without_replacement' or 'poisson', got {sampling!r}.")


# ---------------------------------------------------------------------------------------
# Spending and calibration
# ---------------------------------------------------------------------------------------
class PrivacySpent(NamedTuple):
    """``(epsilon, delta)`` actually spent, from re-accounting a ledger."""

    epsilon: float
    delta: float

    def within(self, budget: Budget) -> bool:
        """Whether both ``epsilon`` and ``delta`` meet ``budget``.

        ``delta`` is forgiven the rounding of its own arithmetic (``1e-12`` relative, as
        for split deltas): a ledger converted by group privacy reports
        ``(1 + e^e) delta / (1 + e^h)``, exactly ``delta`` at ``e = h`` in real arithmetic.
        """
        return (self.epsilon <= budget.epsilon
                and self.delta <= budget.delta * (1.0 + 1e-12))


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
    objects), so re-accounting the same ledger costs one accountant evaluation.
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
    larger than the solution (it only speeds up the search). The returned ``z`` is
    re-accounted before it is returned: spent epsilon ``<= budget.epsilon`` or
    :class:`~skdp.exceptions.PrivacyAccountingError`.
    """
    if not budget.is_private:
        return 0.0
    _check_names(accountant, relation)
    z = _calibrate_cached(factory, tuple(args), budget.epsilon, budget.delta, accountant,
                          relation, lower_bound)
    spent = epsilon_spent(factory(z, *args), budget.delta, accountant=accountant, relation=relation)
    if not spent <= budget.epsilon:
        raise PrivacyAccountingError(
            f"calibrated noise multiplier {z} spends epsilon={spent} > {budget.epsilon}."
        )
    return z


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


@dataclass(frozen=True)
class PrivacyLedger:
    """What a fit actually ran, with everything needed to re-account it.

    Attributes
    ----------
    event : dp_accounting.DpEvent
        The composed event of every noisy release of the fit.
    accountant : str
        The accountant that reads ``event`` (``"gaussian"``, ``"rdp"`` or ``"pld"``).
    relation : str
        Neighbouring relation of the guarantee (``"replace_one"`` or ``"add_remove"``).
    budget : Budget
        The target budget.
    """

    event: dpe.DpEvent
    accountant: str
    relation: str
    budget: Budget
    via_add_remove: bool = False

    def spent(self) -> PrivacySpent:
        """Re-account ``event``: the ``(epsilon, delta)`` spent under ``relation``.

        With ``via_add_remove`` the event is accounted under add/remove at
        :func:`add_remove_budget` and converted to replace-one by group privacy.
        """
        if not self.budget.is_private:
            return PrivacySpent(math.inf, self.budget.delta)
        if self.via_add_remove:
            inner = add_remove_budget(self.budget)
            eps = epsilon_spent(self.event, inner.delta, accountant=self.accountant,
                                relation="add_remove")
            # Replacing a record = removing it, then adding another: (eps, d) for
            # add/remove gives (2 eps, (1 + e^eps) d) for replace-one.
            return PrivacySpent(2.0 * eps, (1.0 + math.exp(eps)) * inner.delta)
        eps = epsilon_spent(
            self.event, self.budget.delta, accountant=self.accountant, relation=self.relation
        )
        return PrivacySpent(eps, self.budget.delta)


def add_remove_budget(budget: Budget) -> Budget:
    """The add/remove budget whose replace-one image (group privacy) is ``budget``.

    An ``(e, d)`` add/remove guarantee gives ``(2 e, (1 + e^e) d)`` under replace-one
    (P[M(D) in S] <= e^e P[M(D - x) in S] + d <= e^(2e) P[M(D - x + x') in S] + (1 + e^e) d),
    so ``e = min(epsilon / 2, 5)`` and ``d = delta / (1 + e^e)``.
    """
    # Capped at 5: beyond it delta / (1 + e^(eps/2)) becomes so small (1e-16 at eps = 50)
    # that the PLD accountant's truncation can certify it only with huge noise, and the
    # noise would grow with epsilon. The cap keeps the noise non-increasing in epsilon;
    # the guarantee is then (10, delta), stronger than asked.
    half = min(budget.epsilon / 2.0, MAX_ADD_REMOVE_EPSILON)
    return Budget(half, budget.delta / (1.0 + math.exp(half)))


#: Largest add/remove epsilon used by :func:`add_remove_budget`.
MAX_ADD_REMOVE_EPSILON = 5.0
