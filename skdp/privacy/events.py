"""The events skdp records, and the one place that turns ``(sigma, sensitivity)`` into a
noise multiplier.

``dp_accounting.DpEvent`` objects are the only currency between solvers and accounting.
This module holds the three event classes of skdp (:class:`PureDpEvent`,
:class:`ApproxDpEvent`: closed-form guarantees that ``dp_accounting`` has no event for;
:class:`DiscreteGaussianDpEvent`: an integer release read by its Renyi bound only) and
the builders every solver uses (:func:`gaussian_event`, :func:`subsampled_gaussian_event`,
:func:`randomized_response_event`). It imports no composition engine, so the engines
(:mod:`skdp.privacy.engines`), the calibration (:mod:`skdp.privacy.calibration`) and the
ledger (:mod:`skdp.privacy.ledger`) all read the same events.
"""

from __future__ import annotations

import math

import attr
from dp_accounting import dp_event as dpe

__all__ = [
    "ACCOUNTING_METHODS",
    "RELATIONS",
    "ApproxDpEvent",
    "DiscreteGaussianDpEvent",
    "PureDpEvent",
    "check_sensitivity",
    "gaussian_event",
    "gaussian_noise_multiplier",
    "randomized_response_event",
    "subsampled_gaussian_event",
]


#: The accounting methods that read a ledger, by name (:func:`make_engine`).
#:
#: ``"gaussian"``: exact composition of Gaussian releases (GDP); ``"rdp"``: Renyi DP;
#: ``"pld"``: privacy loss distributions; ``"pure"``: summed epsilons of pure-DP
#: releases; ``"basic"``: summed ``(epsilon, delta)`` of closed-form guarantees.
ACCOUNTING_METHODS: tuple[str, ...] = ("gaussian", "rdp", "pld", "pure", "basic")
#: The neighbouring relations an event can be read under.
#:
#: ``"replace_one"``: data sets of the same size differing in one record (the guarantee
#: of every fit); ``"add_remove"``: one record added or removed (used internally, then
#: converted by group privacy).
RELATIONS: tuple[str, ...] = ("replace_one", "add_remove")


def _check_names(accounting: str, relation: str) -> None:
    if accounting not in ACCOUNTING_METHODS:
        raise ValueError(
            f"accounting must be one of {ACCOUNTING_METHODS}, got {accounting!r}.")
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}.")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class PureDpEvent(dpe.DpEvent):
    """A mechanism that is ``epsilon``-DP (``delta = 0``) by a closed-form argument.

    Used for pure-DP releases that ``dp_accounting`` has no event for, for example the
    l2 "multivariate Laplace" noise of output perturbation (density proportional to
    ``exp(-epsilon ||z||_2 / Delta)``, epsilon-DP by the triangle inequality). The solver
    that records it states the argument; only :class:`PureDpEngine` reads it.

    Parameters
    ----------
    epsilon : float
        The mechanism's privacy loss (kept as the attribute of the same name).
    """

    epsilon: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ApproxDpEvent(dpe.DpEvent):
    """A mechanism that is ``(epsilon, delta)``-DP by a closed-form argument.

    For mechanisms whose privacy profile ``dp_accounting`` cannot represent (objective
    perturbation, amplification by shuffling). The solver that records it states the
    argument and, in ``mechanism``, what was released; only
    :class:`BasicCompositionEngine` reads it.

    Parameters
    ----------
    epsilon : float
        The mechanism's privacy loss.
    delta : float
        Its failure probability.
    mechanism : str, default=""
        What was released (for reports).
    """

    epsilon: float
    delta: float
    mechanism: str = ""


@attr.s(frozen=True, slots=True, auto_attribs=True)
class DiscreteGaussianDpEvent(dpe.DpEvent):
    """Discrete Gaussian noise added to an integer statistic: ``q(D) + N_Z(0, sigma^2)``.

    ``q`` is integer-valued with replace-one sensitivity ``Delta`` (an integer), and
    ``noise_multiplier = sigma / Delta``. ``N_Z(0, sigma^2)`` puts mass proportional to
    ``exp(-k^2 / (2 sigma^2))`` on each integer ``k``. For integer means ``m, m'``, its
    Renyi divergence of every order ``alpha >= 1`` is at most that of the continuous
    Gaussians, ``alpha (m - m')^2 / (2 sigma^2)`` (Canonne, Kamath & Steinke 2020,
    "The Discrete Gaussian for Differential Privacy": the discrete Gaussian is
    ``(Delta / sigma)^2 / 2``-zCDP). So the RDP engine
    (:class:`~skdp.privacy.engines.ClampedRdpEngine`) reads it as
    ``GaussianDpEvent(noise_multiplier)`` (noise ``z * Delta`` on its scale), and no other
    engine reads it: its privacy loss distribution and trade-off curve are not the
    continuous Gaussian's, so neither the PLD nor the Gaussian-DP bound applies.
    docs/privacy.md, "Discrete Gaussian scores".

    Parameters
    ----------
    noise_multiplier : float
        ``sigma / Delta``, positive.
    """

    noise_multiplier: float


def _rr_loss(noise_parameter: float) -> float:
    """Privacy loss ``log((1 - p/2) / (p/2)) = log1p(2 (1 - p) / p)`` of binary randomized
    response, accurate to a few ulps also for ``p`` near 1 (tiny losses), where the
    difference of two logarithms cancels."""
    p = noise_parameter
    return math.log1p(2.0 * (1.0 - p) / p)


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


# ---------------------------------------------------------------------------------------
# Building events: the ONE place that turns (sigma, sensitivity) into a noise multiplier
# ---------------------------------------------------------------------------------------
def gaussian_noise_multiplier(
    sigma: float, sensitivity: float, *, accounting: str, relation: str
) -> float:
    """Noise multiplier that makes ``GaussianDpEvent`` describe ``N(0, sigma^2 I)``.

    Parameters
    ----------
    sigma : float
        Standard deviation of the Gaussian noise added to the query.
    sensitivity : float
        The l2 sensitivity of the query under ``relation`` (for replace-one: the largest
        change when one record is replaced by any other).
    accounting, relation : str
        The accounting method that will read the event, and the neighbouring relation.

    Returns
    -------
    float
        ``z`` (``inf`` for a zero sensitivity).

    Raises
    ------
    ValueError
        If a name is unknown, or ``sigma`` or ``sensitivity`` is negative or not finite.

    Notes
    -----
    dp_accounting 0.6 reads ``GaussianDpEvent(z)`` as noise ``z * Delta`` for its
    ``RdpAccountant`` under any relation and for its ``PLDAccountant`` under add/remove, but
    for the ``PLDAccountant`` under replace-one as noise ``z * Delta / 2`` (its replace-one pair
    shifts the mean by ``+-1/z``). Hence ``z = sigma / (Delta / 2)`` there.
    """
    _check_names(accounting, relation)
    if not (math.isfinite(sigma) and math.isfinite(sensitivity)) or sensitivity < 0 or sigma < 0:
        raise ValueError(
            f"sigma and sensitivity must be finite and non-negative, got {sigma}, {sensitivity}."
        )
    if sensitivity == 0:
        return math.inf
    if accounting == "pld" and relation == "replace_one":
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
    sigma: float, sensitivity: float, *, accounting: str, relation: str
) -> dpe.DpEvent:
    """The ``DpEvent`` of one release ``q(D) + N(0, sigma^2 I)`` with the given sensitivity.

    ``sensitivity`` must be positive and finite: a query that does not depend on the data
    needs no event at all (a zero that comes from an underflow must not be accounted as
    free).

    Parameters
    ----------
    sigma : float
        Standard deviation of the noise; 0 is the non-private release.
    sensitivity : float
        Sensitivity of the query under ``relation``, positive and finite.
    accounting : str
        The accounting method that will read the event.
    relation : str
        The neighbouring relation of ``sensitivity``.

    Returns
    -------
    dp_accounting.DpEvent
        A ``GaussianDpEvent`` (a ``NonPrivateDpEvent`` for ``sigma = 0``).
    """
    check_sensitivity(sensitivity)
    if sigma == 0:
        return dpe.NonPrivateDpEvent()
    z = gaussian_noise_multiplier(sigma, sensitivity, accounting=accounting, relation=relation)
    return dpe.GaussianDpEvent(z)


def subsampled_gaussian_event(
    sigma: float,
    sensitivity: float,
    *,
    n_samples: int,
    batch_size: int,
    sampling: str,
    accounting: str,
    relation: str,
) -> dpe.DpEvent:
    """The ``DpEvent`` of a Gaussian release computed on a random batch.

    ``sampling="without_replacement"``: a uniform subset of exactly ``batch_size`` records
    (replace-one only, RDP accounting; Wang, Balle & Kasiviswanathan 2019, Thm. 27).
    ``sampling="poisson"``: each record independently with probability
    ``batch_size / n_samples`` (add/remove; RDP or PLD accounting).

    Parameters
    ----------
    sigma : float
        Standard deviation of the noise added to the batch query; 0 is non-private.
    sensitivity : float
        Sensitivity of the batch query under ``relation``.
    n_samples : int
        The dataset size ``n``.
    batch_size : int
        The batch size ``b`` (the expected one for Poisson batches).
    sampling : {"without_replacement", "poisson"}
        How the batch is drawn.
    accounting : str
        The accounting method that will read the event.
    relation : str
        The neighbouring relation of the guarantee.

    Returns
    -------
    dp_accounting.DpEvent
        The sampled Gaussian event (a ``NonPrivateDpEvent`` for ``sigma = 0``).

    Raises
    ------
    ValueError
        If ``sampling`` is unknown.
    """
    if sigma == 0:
        return dpe.NonPrivateDpEvent()
    inner = gaussian_event(sigma, sensitivity, accounting=accounting, relation=relation)
    if sampling == "without_replacement":
        return dpe.SampledWithoutReplacementDpEvent(n_samples, batch_size, inner)
    if sampling == "poisson":
        return dpe.PoissonSampledDpEvent(batch_size / n_samples, inner)
    raise ValueError(f"sampling must be 'without_replacement' or 'poisson', got {sampling!r}.")
