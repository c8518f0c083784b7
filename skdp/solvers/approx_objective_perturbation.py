"""Approximate objective perturbation (Su, Zhao & Wang, Algorithms 1 and 2), certified.

The objective-perturbation core (calibration, regulariser, certified solve) lives in
:mod:`skdp.solvers.objective_perturbation`; this solver differs only in its public
defaults (a 0.9/0.1 budget split and a coarser certified radius, i.e. a cheaper solve)
and in accepting any registered constraint, applied by projection after the noise.
"""

from __future__ import annotations

from types import MappingProxyType

from skdp._params import declared_init
from skdp.solvers._capabilities import Capabilities
from skdp.solvers.objective_perturbation import ObjectivePerturbation

__all__ = ["ApproxObjectivePerturbation"]


class ApproxObjectivePerturbation(ObjectivePerturbation):
    """Approximate objective perturbation for smooth GLMs, any constraint by projection.

    ``theta_hat = Proj_C(theta_2 + H)``: ``theta_2`` is a CERTIFIED approximate minimiser
    of the unconstrained perturbed objective (``||grad J(theta_2)||_2 / Lambda <= r_max /
    2``, deterministic L-BFGS / Newton / gradient descent), ``H ~ N(0, sigma_2^2 I)``.
    Algorithm 1 (convex, ``alpha = 0``) and Algorithm 2 (strongly convex) are one rule:
    ``Lambda = max(n alpha, Lambda_req)`` on the penalised rows, i.e. the paper's
    ``lambda = max(r beta/(epsilon n) - Delta, 0)`` with ``Delta`` the **l2** modulus
    ``alpha`` of the user's regulariser (the paper's Minkowski modulus would over-credit).

    Parameters
    ----------
    jacobian_share : float, default=0.1
        Share of ``epsilon_1`` for the Jacobian term (see
        :class:`~skdp.solvers.ObjectivePerturbation`).
    noise_radius : float or None, default=1.0
        Public cap on the noise displacement of the minimiser (see
        :class:`~skdp.solvers.ObjectivePerturbation`).
    objective_share : float, default=0.9
        Public split: ``(epsilon_1, delta_1) = objective_share * (epsilon, delta)`` for
        objective perturbation, the rest for the Gaussian step.
    radius_fraction : float, default=1e-3
        ``r_max = radius_fraction * sigma / (n (beta + alpha) + beta)`` (floored at a
        float64-safe value).
    certified_radius : float, optional
        Public ``r_max`` (overrides ``radius_fraction``).
    max_iter : int, default=100000
        Step budget of the sure gradient-descent fallback of the certified solve.
    shrinkage : {"threshold"} or None, default=None
        Release ``0`` when the noisy minimiser is within the noise's public reach of
        ``0`` (before the projection; see :class:`~skdp.solvers.ObjectivePerturbation`).

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation; rows clipped to the public
    ``data_norm``; smooth convex GLM loss with bounded ``phi'`` and ``phi''``. Step 1 is
    exact objective perturbation of the UNCONSTRAINED objective, ``(epsilon_1,
    delta_1)``-DP (:func:`~skdp.solvers.objective_perturbation.objective_perturbation_delta`);
    step 2 certifies ``||theta_2 - theta_1|| <= r_max`` for every data set; step 3 adds
    the analytic Gaussian of sensitivity ``2 r_max`` at ``(epsilon_2, delta_2)``. Basic
    composition, two ``ApproxDpEvent`` (``"basic"`` accounting); with ``delta = 0`` the
    pure variant of :class:`~skdp.solvers.ObjectivePerturbation`, two ``PureDpEvent``.
    The projection onto the constraint (l2, l1, lp ball or simplex) is post-processing.

    Reference: Su, Zhao & Wang, Algorithms 1/2 and Theorem 1's proof (A.1), with the
    corrections of docs/algorithms/objective_perturbation.md (sure instead of
    in-expectation accuracy; exact profile; l2 strong-convexity modulus).
    """

    name = "approx_objective_perturbation"
    capabilities = Capabilities(
        algorithm="approximate objective perturbation, Su-Zhao-Wang Algs. 1, 2",
        needs_delta=False, accounting_methods=("basic", "pure"), default_accounting="basic",
        losses=("logistic", "multinomial", "smoothed_hinge", "huber"),
        constraints=("none", "l2", "l1", "lp", "simplex"), secure=True, out_of_core=True,
    )
    projects = True

    #: Objective perturbation's parameters; the Gaussian step gets a tenth of the budget
    #: and a larger certified radius than the exact variant's.
    _defaults = MappingProxyType({**ObjectivePerturbation._defaults,
                                  "objective_share": 0.9, "radius_fraction": 1e-3})
    __init__ = declared_init(_defaults, {})
