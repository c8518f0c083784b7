# ruff: noqa: F401
"""Privacy accounting on top of ``dp_accounting``: events, ledgers and calibration.

This module gathers the public names of four modules, which it re-exports unchanged:

:mod:`skdp.privacy.events`
    The events skdp records and the builders solvers use (:func:`gaussian_event`, ...).
:mod:`skdp.privacy.engines`
    The composition engines of the accounting methods below and :func:`make_engine`
    (a fresh one, never cached).
:mod:`skdp.privacy.calibration`
    The smallest noise meeting a budget (:func:`calibrate_noise_multiplier`, cached).
:mod:`skdp.privacy.ledger`
    :class:`PrivacyLedger` and :func:`reaccount`, the check of a ledger against its
    budget, which shares no code path or cache with the calibration.

``dp_accounting.DpEvent`` objects are the only currency between solvers and accounting.
The accounting methods are named by strings (:data:`ACCOUNTING_METHODS`), so that
estimators stay clonable:

``"gaussian"``
    Exact closed form for compositions of *non-subsampled* Gaussian releases. The
    privacy-loss distribution of a Gaussian release with sensitivity ``Delta`` and noise
    ``sigma`` is that of ``mu``-GDP with ``mu = Delta / sigma``, and ``T`` such releases
    compose to ``mu = sqrt(sum_t mu_t^2)`` (Dong, Roth & Su 2022, Cor. 3.3). The
    ``(epsilon, delta)`` curve of ``mu``-GDP is the analytic Gaussian formula of
    Balle & Wang (2018, Thm. 8). This is tight, so it needs less noise than RDP or PLD.
``"rdp"``
    ``dp_accounting``'s Renyi-DP ``RdpAccountant`` (supports sampling without replacement under
    replace-one).
``"pld"``
    ``dp_accounting``'s privacy-loss-distribution ``PLDAccountant`` (tight for Poisson sampling
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
PLD engines under replace-one (the PLD engine measures the noise multiplier
relative to *half* the replace-one sensitivity). :func:`gaussian_noise_multiplier` is the
one place where a noise multiplier is derived from ``(sigma, sensitivity)``; every
Gaussian event in skdp is built through it.
"""

# Every name of the former single module stays importable from here (the private ones
# too, for the code that imports them).
from skdp.privacy.calibration import (
    _MAX_MULTIPLIER,
    _SPENT_CACHE,
    _SPENT_CACHE_SIZE,
    SingleRelease,
    _bracket,
    _calibrate_cached,
    _composed,
    _one_gaussian_event,
    analytic_gaussian_multiplier,
    calibrate_noise_multiplier,
    epsilon_spent,
    single_gaussian_multiplier,
    single_release,
)
from skdp.privacy.engines import (
    _RELATION,
    PLD_DISCRETIZATION,
    RDP_ORDERS,
    WOR_MAX_STABLE_ORDER,
    BasicCompositionEngine,
    ClampedRdpEngine,
    GaussianEngine,
    PureDpEngine,
    SelfComposingPldEngine,
    _AdditiveEngine,
    _gdp_epsilon,
    _leaves,
    _precise_delta,
    gaussian_log_delta,
    make_engine,
)
from skdp.privacy.events import (
    ACCOUNTING_METHODS,
    RELATIONS,
    ApproxDpEvent,
    DiscreteGaussianDpEvent,
    PureDpEvent,
    _check_names,
    _rr_loss,
    check_sensitivity,
    gaussian_event,
    gaussian_noise_multiplier,
    randomized_response_event,
    subsampled_gaussian_event,
)
from skdp.privacy.ledger import (
    MAX_ADD_REMOVE_EPSILON,
    PrivacyLedger,
    PrivacySpent,
    add_remove_budget,
    reaccount,
)

__all__ = [
    "ACCOUNTING_METHODS",
    "RELATIONS",
    "ApproxDpEvent",
    "DiscreteGaussianDpEvent",
    "BasicCompositionEngine",
    "GaussianEngine",
    "PrivacyLedger",
    "PureDpEngine",
    "PureDpEvent",
    "SelfComposingPldEngine",
    "add_remove_budget",
    "PrivacySpent",
    "analytic_gaussian_multiplier",
    "calibrate_noise_multiplier",
    "check_sensitivity",
    "epsilon_spent",
    "gaussian_event",
    "gaussian_log_delta",
    "gaussian_noise_multiplier",
    "make_engine",
    "randomized_response_event",
    "reaccount",
    "single_gaussian_multiplier",
    "single_release",
    "subsampled_gaussian_event",
]
