"""The constructor parameters the DP linear models share, declared once per group.

Each estimator's signature is ``declared_init(PRIVACY, {<its own>, **BOUNDS, ...})``
(:func:`skdp._params.declared_init`), and the shared docstring entries of the same
groups (``<<bounds>>``, ``<<options>>``, ``<<run_options>>`` in
:mod:`skdp.linear_model._docs`) are listed from these names, so a parameter added to a
group reaches every estimator's signature and docstring at once; the parameter
constraints live in ``BaseDPLinearModel._parameter_constraints``.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["BOUNDS", "OPTIONS", "PRIVACY", "RUN_OPTIONS"]

#: The budget, the two parameters that may be passed by position.
PRIVACY = MappingProxyType({"epsilon": 1.0, "delta": 1e-5})
#: The row bound and the share of the budget that private bounds may spend.
BOUNDS = MappingProxyType({"data_norm": "auto", "bounds_fraction": "auto"})
#: How the run is accounted, seeded and reported.
RUN_OPTIONS = MappingProxyType({
    "accounting": "auto", "accountant": None, "neighboring": "replace_one",
    "random_state": None, "secure": False, "verbose": 0,
    "noise_dominated": "intercept_only"})
#: The model's shape (intercept, constraint set, norms, tilted and adversarial losses),
#: then the run options.
OPTIONS = MappingProxyType({
    "fit_intercept": True, "constraint": None, "radius": None, "p": None,
    "data_norm_ord": "auto", "tilt": None, "adversarial_radius": None,
    "adversarial_norm": 2, **RUN_OPTIONS})
