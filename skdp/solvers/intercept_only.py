"""The intercept-only model: one noisy mean of the encoded targets.

What a private fit can still learn when its noise would dominate any signal the features
carry (:func:`skdp._planning.noise_ratio` at least 1): the class frequencies or the mean
target. The estimators switch to it then (``noise_dominated="intercept_only"``, their
default); it is also a registered solver, the private baseline of every estimator.
Derivation: docs/algorithms/intercept_only.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event as dpe

from skdp.exceptions import IncompatibleSolverError
from skdp.privacy.accounting import check_sensitivity, single_release
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec
from skdp.solvers._capabilities import CONSTRAINT_KINDS, LOSS_NAMES, Capabilities

__all__ = ["InterceptOnly", "InterceptOnlyPlan"]


@dataclass(frozen=True, kw_only=True)
class InterceptOnlyPlan(Plan):
    """Constants of the one release of the mean encoded target, fixed before any data is
    read.

    Attributes
    ----------
    sensitivity : float
        Replace-one l2 sensitivity ``D / n`` of the mean of the encoded targets (``D``
        the loss's :meth:`~skdp.losses.GLMLoss.target_diameter`); 0 without an
        intercept (nothing is released).
    mechanism : {"gaussian", "l2_laplace", "none"}
        Noise of the sensitivity-1 vector (:func:`~skdp.privacy.accounting.single_release`).
    unit_scale : float
        The Gaussian multiplier ``z`` or the l2-Laplace scale ``1 / epsilon``.
    sigma : float
        Noise scale of the released mean: ``unit_scale * sensitivity`` (the Gaussian's
        per-coordinate standard deviation, or the l2-Laplace scale).
    intercept_feature : float
        The constant feature ``c`` (the released coefficient is the intercept over ``c``).
    """

    sensitivity: float
    mechanism: str
    unit_scale: float
    sigma: float
    intercept_feature: float = 1.0


class InterceptOnly(BaseDPSolver):
    """The intercept-only model of the loss, from one noisy mean of the encoded targets.

    Releases ``m~ = mean_i y_i + noise`` (``y_i`` the loss's encoding of the label: ``+-1``,
    one-hot rows, or the label clipped to ``y_bound``) and returns the constant model
    ``coef = 0``, ``intercept = loss.intercept_only(m~)``: the log odds of the private
    class shares (logistic losses), the private mean (squared and Huber losses), or the
    private mean of the ``+-1`` labels (hinge losses, whose sign or argmax is the
    majority). It reads no feature. Without an intercept the model is 0 and nothing is
    released.

    The estimators use it when their planned fit is noise-dominated
    (``noise_dominated="intercept_only"``): the decision reads ``n``, the number of
    parameters and the budget only.

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation (``n`` public). Replacing
    one record moves the mean of the encoded targets by at most ``D / n`` in l2, ``D``
    the diameter of the loss's label domain (2 for ``+-1`` labels, ``sqrt(2)`` for
    one-hot rows, ``2 sqrt(2)`` for one-vs-rest ``+-1`` rows, ``2 y_bound`` for clipped
    labels; :meth:`~skdp.losses.GLMLoss.target_diameter`). One release of that mean:
    ``delta > 0``, ``N(0, (z D / n)^2 I)`` with ``z`` the exact single-release Gaussian
    multiplier of the accounting method (analytic Gaussian by default); ``delta = 0``,
    density proportional to ``exp(-epsilon n ||v||_2 / D)`` (the l2 K-norm mechanism,
    ``PureDpEvent``). The link to the intercept is post-processing with the public ``n``.

    Assumptions: a loss with a bounded label domain (the Huber loss needs ``y_bound``).
    It ignores the features, the penalty, the constraint, the tilt and the adversarial
    radius: a constant model's objective is the plain mean loss (the adversary moves
    ``x`` only, and a constant score does not read ``x``).

    Reference: the Gaussian and K-norm mechanisms (Dwork & Roth 2014, Thm. A.1; Hardt &
    Talwar 2010); the decision rule and the measurements: docs/algorithms/intercept_only.md.
    """

    name = "intercept_only"
    capabilities = Capabilities(
        algorithm="intercept-only model: one noisy mean of the encoded targets",
        needs_delta=False, accounting_methods=("pure", "gaussian", "rdp", "pld"),
        # Pure DP by default: for the few coordinates of a mean target the l2 Laplace's
        # noise (norm k / epsilon) is below the Gaussian's at a small delta (1-D,
        # epsilon 0.1, delta 1e-5: scale 10 against a standard deviation of 46).
        default_accounting="pure",
        losses=LOSS_NAMES, constraints=CONSTRAINT_KINDS,
        objectives=("erm", "tilted", "adversarial", "tilted_adversarial"),
        secure=True, out_of_core=True,
        inexact_at_inf=("it fits the intercept only (every coefficient is 0): the private "
                        "baseline, not the objective's optimum"),
    )

    def __init__(self):
        pass

    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """The generic check, then: the loss's label domain must be bounded.

        <<check_sections>>
            If a generic check fails or the loss declares no bounded label domain.
        """
        super().check_compatible(spec, accounting, relation)
        if spec.intercept_feature and not math.isfinite(
                spec.loss.target_diameter(spec.n_outputs)):
            raise IncompatibleSolverError(
                f"solver {self.name!r} needs labels in a bounded domain, and "
                f"{type(spec.loss).__name__} declares none: set y_bound (or give the loss "
                "a label_bound).")

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> InterceptOnlyPlan:
        """Fix the one noisy release of the mean encoded target.

        <<plan_parameters>>

        Returns
        -------
        InterceptOnlyPlan
            The mean's sensitivity and its Gaussian or l2-Laplace noise (no release
            without an intercept).
        """
        if not spec.intercept_feature:
            # The constant model without an intercept is 0: nothing is released.
            return InterceptOnlyPlan(n_iter=0, event=dpe.NoOpDpEvent(), accounting=accounting,
                                     relation=relation, sensitivity=0.0, mechanism="none",
                                     unit_scale=0.0, sigma=0.0)
        # Replacing one record moves sum_i y_i by at most the label domain's diameter D,
        # so the mean (public denominator n) by D / n.
        sensitivity = check_sensitivity(
            spec.loss.target_diameter(spec.n_outputs) / spec.n_samples,
            "mean target sensitivity D/n")
        release = single_release(budget, accounting, relation)
        return InterceptOnlyPlan(
            n_iter=1, event=release.event, accounting=accounting, relation=relation,
            sensitivity=sensitivity, mechanism=release.mechanism,
            unit_scale=release.unit_scale, sigma=release.unit_scale * sensitivity,
            intercept_feature=abs(float(spec.intercept_feature)))

    def release_noise_scale(self, plan: InterceptOnlyPlan) -> float:
        """The noise scale of the released coefficient, the intercept over ``c``.

        The links' slopes are at least 1 where they do not clip (``log`` of a share in
        ``[1/(2n), 1]``, the log odds, the identity), so the intercept's noise is at
        least the mean's, ``sigma``; the released coefficient is the intercept over the
        constant feature ``c``.

        <<release_parameters>>

        Returns
        -------
        float
            ``sigma / c`` (``sigma``: the Gaussian's standard deviation or the l2-Laplace
            scale, a lower bound on its per-coordinate standard deviation).
        """
        return plan.sigma / plan.intercept_feature if plan.intercept_feature else 0.0

    def noisy_mean(self, problem: Problem, plan: InterceptOnlyPlan, noise: NoiseSource
                   ) -> np.ndarray:
        """The release: the mean of the encoded targets plus the planned noise.

        Only the targets ``problem.Y`` are read.

        Parameters
        ----------
        <<release_inputs>>

        Returns
        -------
        ndarray of shape (n_outputs,)
            The noisy mean.
        """
        k = problem.spec.n_outputs
        # Noise of the sensitivity-1 vector, scaled by the sensitivity D / n.
        draw = noise.release(plan.mechanism, (k,), plan.unit_scale) * plan.sensitivity
        return np.asarray(problem.Y, dtype=float).mean(axis=0) + draw

    def _run(self, problem: Problem, plan: InterceptOnlyPlan, noise: NoiseSource
             ) -> np.ndarray:
        spec = problem.spec
        W = np.zeros((spec.n_params, spec.n_outputs))
        if plan.n_iter == 0:
            return W
        scores = spec.loss.intercept_only(self.noisy_mean(problem, plan, noise),
                                          spec.n_samples)
        # The intercept is the last coordinate, on the constant feature c: b = c w.
        W[-1] = scores / spec.intercept_feature
        return W
