"""Composition of many fits' ledgers: per-ledger summaries that add, and their total.

A budget accountant composes the ledgers of fits run one after the other on the same data
(sequential, adaptive composition; cross-validation folds overlap, so they are not
parallel composition). Every candidate bound below is valid for that composition, and the
reported epsilon is the smallest of them at ONE delta, the sum of the ledgers' own deltas:

``"basic"``
    Every ledger is ``(eps_i, delta_i)``-DP by its own re-accounting, so the composition is
    ``(sum eps_i, sum delta_i)``-DP (Dwork & Roth 2014, Thm. 3.16). Always available.
``"gaussian"``
    When every ledger is a composition of non-subsampled Gaussian releases, the whole is
    exactly ``mu``-GDP with ``mu^2 = sum mu_i^2`` (Dong, Roth & Su 2022, Cor. 3.3).
``"rdp"``
    When dp_accounting's ``RdpAccountant`` reads every ledger (Gaussian, subsampled Gaussian,
    Laplace, repeat-and-select, randomized response; a discrete Gaussian as the Gaussian of
    its multiplier, :class:`~skdp.privacy.DiscreteGaussianDpEvent`), Renyi divergences add order by
    order; pure ``eps``-DP releases (:class:`~skdp.privacy.PureDpEvent`) are read as binary
    randomized response with the same ``eps``, which dominates every ``eps``-DP pair
    (Kairouz, Oh & Viswanath 2015, Thm. 2.1), so its Renyi divergences bound theirs.

Each summary is a sum over ledgers (a scalar or one vector over the Renyi orders), so a
check costs the same with 1 or 10000 entries. PLD accounting is not used across
ledgers: its distributions do not add, and a ledger accounted by ``"pld"`` under
replace-one reads ``GaussianDpEvent(z)`` on another scale (noise ``z Delta / 2``), so such
ledgers (and ledgers converted from add/remove by group privacy) enter by ``"basic"`` only.
See docs/tuning_and_budgets.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction

import attr
import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting.rdp import rdp_privacy_accountant

from skdp.privacy.accounting import (
    RDP_ORDERS,
    PrivacyLedger,
    PrivacySpent,
    PureDpEvent,
    _gdp_epsilon,
    make_engine,
    randomized_response_event,
)
from skdp.privacy.budget import Budget

__all__ = ["CompositeLedger", "LedgerSummary", "Totals", "event_from_dict", "event_to_dict",
           "rdp_curve", "summarize"]

# Ledgers whose GaussianDpEvent multipliers are on the RDP scale (noise = z * sensitivity).
_RDP_SCALE_ACCOUNTING = ("gaussian", "rdp", "pure")


def _map_leaves(event: dpe.DpEvent, fn) -> dpe.DpEvent:
    """``event`` with every leaf replaced by ``fn(leaf)`` (composition structure kept)."""
    if isinstance(event, dpe.ComposedDpEvent):
        return dpe.ComposedDpEvent([_map_leaves(e, fn) for e in event.events])
    if isinstance(event, dpe.SelfComposedDpEvent):
        return dpe.SelfComposedDpEvent(_map_leaves(event.event, fn), event.count)
    if isinstance(event, dpe.RepeatAndSelectDpEvent):
        return dpe.RepeatAndSelectDpEvent(_map_leaves(event.event, fn), event.mean, event.shape)
    return fn(event)


#: Above this epsilon randomized response's flip probability underflows; such a release
#: is read as non-private by the Renyi bound (infinite: the basic bound still applies).
_MAX_RR_EPSILON = 700.0


def _pure_as_randomized_response(leaf: dpe.DpEvent) -> dpe.DpEvent:
    if isinstance(leaf, PureDpEvent):
        if not leaf.epsilon <= _MAX_RR_EPSILON:
            return dpe.NonPrivateDpEvent()
        return randomized_response_event(leaf.epsilon)
    return leaf


def rdp_curve(event: dpe.DpEvent, relation: str = "replace_one") -> np.ndarray | None:
    """Renyi divergences of ``event`` at :data:`RDP_ORDERS` (RDP scale), or ``None``.

    ``PureDpEvent`` leaves are read as randomized response of the same epsilon (a
    dominating pair). ``None`` when dp_accounting's ``RdpAccountant`` cannot read the event
    (for example an ``ApproxDpEvent`` with ``delta > 0``).
    """
    engine = make_engine("rdp", relation)
    mapped = _map_leaves(event, _pure_as_randomized_response)
    if not engine.supports(mapped):
        return None
    engine.compose(mapped)
    # Renyi divergences are non-negative; dp_accounting's randomized-response formula
    # rounds to about -1e-17 at tiny epsilons, and one negative order makes its epsilon
    # conversion report 0 for the whole composition.
    return np.maximum(np.asarray(engine.rdp, dtype=float), 0.0)


@dataclass(frozen=True)
class LedgerSummary:
    """What one ledger adds to each composition bound (``None``: that bound cannot read it)."""

    epsilon: float
    delta: float
    mu2: float | None = None
    rdp: tuple[float, ...] | None = None

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "mu2": self.mu2,
                "rdp": None if self.rdp is None else list(self.rdp)}

    @classmethod
    def from_dict(cls, d: dict) -> LedgerSummary:
        rdp = d.get("rdp")
        return cls(float(d["epsilon"]), float(d["delta"]),
                   None if d.get("mu2") is None else float(d["mu2"]),
                   None if rdp is None else tuple(float(v) for v in rdp))


@dataclass(frozen=True)
class CompositeLedger:
    """The ledger of a fit that runs several mechanisms one after the other.

    For example a private bound estimate, then the solver planned with that bound
    (``parts = (("bounds", ...), ("fit", ...), ("threshold", ...))``). The parts compose
    sequentially, with the tightest bound of :class:`Totals` (basic composition at least:
    the parts' own epsilons and deltas add).

    Attributes
    ----------
    parts : tuple of (str, PrivacyLedger)
        Each mechanism's name and ledger, in the order they ran.
    budget : Budget
        The whole fit's budget.
    """

    parts: tuple[tuple[str, PrivacyLedger], ...]
    budget: Budget

    def spent(self) -> PrivacySpent:
        """The composed ``(epsilon, delta)`` of the parts."""
        return Totals().plus(summarize(self)).spent()[0]

    def part(self, name: str) -> PrivacyLedger:
        """The ledger of the part called ``name``."""
        for key, ledger in self.parts:
            if key == name:
                return ledger
        raise KeyError(name)


def summarize(ledger: PrivacyLedger | CompositeLedger) -> LedgerSummary:
    """The additive summary of one fit's ledger (its own spend plus the tight readings)."""
    if isinstance(ledger, CompositeLedger):
        parts = [summarize(p) for _, p in ledger.parts]
        return LedgerSummary(
            sum(p.epsilon for p in parts), sum(p.delta for p in parts),
            None if any(p.mu2 is None for p in parts) else sum(p.mu2 for p in parts),
            None if any(p.rdp is None for p in parts) else
            tuple(np.sum([p.rdp for p in parts], axis=0).tolist()))
    return _summarize_ledger(repr(ledger.event), ledger)


_SUMMARY_CACHE: dict[tuple, LedgerSummary] = {}


def _summarize_ledger(key: str, ledger: PrivacyLedger) -> LedgerSummary:
    # Ledgers are immutable values: memoised by their complete description (the Renyi
    # curve of randomized response costs dp_accounting ~15 ms to evaluate).
    full_key = (key, ledger.accounting, ledger.relation, ledger.budget, ledger.via_add_remove)
    summary = _SUMMARY_CACHE.get(full_key)
    if summary is None:
        if len(_SUMMARY_CACHE) >= 4096:
            _SUMMARY_CACHE.clear()
        summary = _SUMMARY_CACHE[full_key] = _summarize_uncached(ledger)
    return summary


def _summarize_uncached(ledger: PrivacyLedger) -> LedgerSummary:
    spent = ledger.spent()
    summary = LedgerSummary(float(spent.epsilon), float(spent.delta))
    if (ledger.via_add_remove or ledger.relation != "replace_one"
            or ledger.accounting not in _RDP_SCALE_ACCOUNTING
            or not math.isfinite(spent.epsilon)):
        return summary
    gauss = make_engine("gaussian", "replace_one")
    if gauss.supports(ledger.event):
        gauss.compose(ledger.event)
        summary = replace(summary, mu2=float(gauss.mu ** 2))
    curve = rdp_curve(ledger.event)
    if curve is not None and np.all(np.isfinite(curve)):
        summary = replace(summary, rdp=tuple(curve.tolist()))
    return summary


@dataclass
class Totals:
    """Running sums of :class:`LedgerSummary` objects and the composed spend.

    The sums are exact rationals (:class:`fractions.Fraction`; every finite float is one),
    so a total does not depend on the order in which entries arrive: two process workers
    that charge one accountant in either order, a refund or an amendment (:meth:`minus`
    restores the sum exactly), and :func:`~skdp.privacy.privacy_cost` summing the same
    ledgers all read bit-for-bit the same epsilon. Rounding happens once, when a bound
    reads the sum. An entry of infinite epsilon (a non-private fit) is counted apart
    (``epsilon_inf``), so that removing it restores the finite sum.

    ``mu2_missing`` and ``rdp_missing`` count the summaries that a bound cannot read: the
    bound applies while its count is 0, and removing a summary (:meth:`minus`) restores it.
    """

    count: int = 0
    epsilon_finite: Fraction = Fraction(0)
    epsilon_inf: int = 0
    delta: Fraction = Fraction(0)
    mu2: Fraction = Fraction(0)
    mu2_missing: int = 0
    rdp: list[Fraction] = field(default_factory=lambda: [Fraction(0)] * len(RDP_ORDERS))
    rdp_missing: int = 0

    @property
    def epsilon(self) -> Fraction | float:
        """The basic-composition sum of the entries' epsilons (``inf`` with a non-private
        entry)."""
        return math.inf if self.epsilon_inf else self.epsilon_finite

    def _add(self, s: LedgerSummary, sign: int) -> Totals:
        # Summaries carry a finite mu2 and Renyi curve only (composition reads nothing
        # else); their epsilon may be infinite, their delta is finite.
        infinite = math.isinf(s.epsilon)
        rdp = self.rdp if s.rdp is None else [a + sign * Fraction(b) for a, b in
                                               zip(self.rdp, s.rdp, strict=True)]
        return Totals(
            count=self.count + sign,
            epsilon_finite=self.epsilon_finite + (0 if infinite
                                                  else sign * Fraction(s.epsilon)),
            epsilon_inf=self.epsilon_inf + sign * infinite,
            delta=max(self.delta + sign * Fraction(s.delta), Fraction(0)),
            mu2=self.mu2 if s.mu2 is None else self.mu2 + sign * Fraction(s.mu2),
            mu2_missing=self.mu2_missing + sign * (s.mu2 is None),
            rdp=[max(v, Fraction(0)) for v in rdp] if sign < 0 else rdp,
            rdp_missing=self.rdp_missing + sign * (s.rdp is None),
        )

    def plus(self, s: LedgerSummary) -> Totals:
        """A new total with ``s`` added (``self`` is not modified)."""
        return self._add(s, 1)

    def minus(self, s: LedgerSummary) -> Totals:
        """A new total with ``s`` (a summary added before) removed."""
        return self._add(s, -1)

    @classmethod
    def of(cls, summaries) -> Totals:
        total = cls()
        for s in summaries:
            total = total.plus(s)
        return total

    def bounds(self, delta: float | None = None) -> dict[str, float]:
        """Epsilon of every applicable bound at ``delta`` (default :attr:`delta`, the sum
        of the entries' deltas). Basic composition holds at that sum only (``inf`` below
        it); the Gaussian and Renyi bounds are curves, valid at every ``delta``."""
        delta = float(self.delta if delta is None else delta)
        if self.count == 0:
            return {"basic": 0.0}
        out = {"basic": float(self.epsilon) if self.delta <= delta * (1.0 + 1e-12)
               else math.inf}
        if delta > 0 and self.mu2_missing == 0:
            out["gaussian"] = _gdp_epsilon(math.sqrt(max(float(self.mu2), 0.0)), delta)
        if delta > 0 and self.rdp_missing == 0:
            eps, _ = rdp_privacy_accountant.compute_epsilon(
                RDP_ORDERS, np.asarray([float(v) for v in self.rdp]), delta)
            out["rdp"] = float(eps)
        return out

    def spent(self, delta_cap: float | None = None) -> tuple[PrivacySpent, str]:
        """The smallest epsilon of :meth:`bounds`, and the bound that gave it.

        At ``delta`` (the sum of the entries' deltas), or, when that sum passes
        ``delta_cap`` (a budget accountant's delta ceiling), at ``delta_cap`` by the
        Gaussian or Renyi curve where one applies: deltas add up under basic
        composition only, so many Gaussian fits compose to ``(epsilon(delta_cap),
        delta_cap)`` whatever their own deltas sum to.
        """
        at = float(self.delta)
        if delta_cap is not None and self.delta > delta_cap * (1.0 + 1e-12) and (
                self.mu2_missing == 0 or self.rdp_missing == 0) and delta_cap > 0:
            at = float(delta_cap)
        bounds = self.bounds(at)
        method = min(bounds, key=lambda k: (bounds[k], k != "basic"))
        return PrivacySpent(bounds[method], at), method

    def to_dict(self) -> dict:
        """JSON-ready: the sums as floats (what earlier versions read) and, under
        ``"exact"``, as the texts of the exact rationals (``"p/q"``)."""
        return {"count": self.count, "epsilon": float(self.epsilon),
                "delta": float(self.delta), "mu2": float(self.mu2),
                "mu2_missing": self.mu2_missing, "rdp": [float(v) for v in self.rdp],
                "rdp_missing": self.rdp_missing,
                "exact": {"epsilon_finite": str(self.epsilon_finite),
                          "epsilon_inf": self.epsilon_inf, "delta": str(self.delta),
                          "mu2": str(self.mu2), "rdp": [str(v) for v in self.rdp]}}

    @classmethod
    def from_dict(cls, d: dict) -> Totals:
        """Inverse of :meth:`to_dict`; a record without ``"exact"`` (written by an
        earlier version) is read from its floats."""
        exact = d.get("exact")
        if exact is None:
            epsilon = float(d["epsilon"])
            infinite = math.isinf(epsilon)
            return cls(int(d["count"]), Fraction(0) if infinite else Fraction(epsilon),
                       int(infinite), Fraction(float(d["delta"])),
                       Fraction(float(d["mu2"])), int(d["mu2_missing"]),
                       [Fraction(float(v)) for v in d["rdp"]], int(d["rdp_missing"]))
        return cls(int(d["count"]), Fraction(exact["epsilon_finite"]),
                   int(exact["epsilon_inf"]), Fraction(exact["delta"]),
                   Fraction(exact["mu2"]), int(d["mu2_missing"]),
                   [Fraction(v) for v in exact["rdp"]], int(d["rdp_missing"]))


# ---------------------------------------------------------------------------------------
# DpEvent <-> JSON (audit trails)
# ---------------------------------------------------------------------------------------
def _event_classes() -> dict[str, type]:
    from skdp.privacy.accounting import ApproxDpEvent, DiscreteGaussianDpEvent

    classes = {name: cls for name, cls in vars(dpe).items()
               if isinstance(cls, type) and issubclass(cls, dpe.DpEvent)}
    classes.update({"PureDpEvent": PureDpEvent, "ApproxDpEvent": ApproxDpEvent,
                    "DiscreteGaussianDpEvent": DiscreteGaussianDpEvent})
    return classes


def event_to_dict(event: dpe.DpEvent) -> dict:
    """A JSON-ready description of ``event`` (class name and fields, recursively)."""
    fields = {}
    for a in attr.fields(type(event)):
        value = getattr(event, a.name)
        if isinstance(value, dpe.DpEvent):
            value = event_to_dict(value)
        elif isinstance(value, list | tuple):
            value = [event_to_dict(v) if isinstance(v, dpe.DpEvent) else v for v in value]
        fields[a.name] = value
    return {"type": type(event).__name__, "fields": fields}


def event_from_dict(d: dict) -> dpe.DpEvent:
    """Inverse of :func:`event_to_dict`."""
    cls = _event_classes().get(d["type"])
    if cls is None:
        raise ValueError(f"unknown DpEvent type {d['type']!r} in the audit trail.")
    kwargs = {}
    for name, value in d["fields"].items():
        if isinstance(value, dict) and "type" in value:
            value = event_from_dict(value)
        elif isinstance(value, list):
            value = [event_from_dict(v) if isinstance(v, dict) and "type" in v else v
                     for v in value]
        kwargs[name] = value
    return cls(**kwargs)
