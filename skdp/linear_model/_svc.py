"""Differentially private linear support vector classification."""

from __future__ import annotations

import numpy as np

from skdp._base import BaseDPLinearModel
from skdp._params import POSITIVE, declared_init
from skdp._sklearn_compat import StrOptions
from skdp.linear_model._classifier import BaseDPClassifier
from skdp.linear_model._docs import shared_docs
from skdp.linear_model._parameters import BOUNDS, OPTIONS, PRIVACY
from skdp.losses import HingeLoss, SmoothedHingeLoss

__all__ = ["DPLinearSVC"]


@shared_docs
class DPLinearSVC(BaseDPClassifier):
    """Linear support vector classifier with differential privacy.

    Minimises ``mean_i hinge_i + (alpha / 2) ||W||^2`` (one-vs-rest for more than two
    classes, with ONE joint calibration for all classes) with a private solver.

    Parameters
    ----------
    <<epsilon>>
    <<delta:1e-5>>
        With ``delta=0`` (``"output_perturbation"``) the noise overwhelms the signal on
        a few hundred rows: breast cancer at epsilon = 1 scores 0.64 with it, 0.89 with
        the default.
    <<classes:coefficients>>
    loss : {"smoothed_hinge", "hinge"}, default="smoothed_hinge"
        ``"smoothed_hinge"`` (quadratic within ``smoothing`` of the margin; the smooth
        default, as scikit-learn's ``LinearSVC`` defaults to the smooth squared hinge) is
        smooth: every solver applies, and output perturbation certifies its inner solve
        to ``0.05`` of the sensitivity. ``"hinge"`` is not differentiable: only
        ``"output_perturbation"`` applies, with a duality-gap certificate and the sure
        subgradient method of Lowy & Razaviyayn's Theorem 2.1 as fallback, whose public
        certified radius ``2 L / (alpha sqrt(max_iter + 1))`` does not shrink with
        ``n``: on large data it dominates the noise (raise the solver's ``max_iter``).
    smoothing : float, default=0.5
        Width of the quadratic zone of ``"smoothed_hinge"``.
    <<solver:"gd">>
        DP-GD needs the smooth ``"smoothed_hinge"``; ``"hinge"`` needs a solver that
        accepts it.

        <<solvers>>

    <<alpha:1e-2>>
        ``"output_perturbation"`` penalises the intercept too.
    <<bounds>>
    <<options>>
    <<threshold_fraction>>

    <<attributes:classifier>>

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import DPLinearSVC
    >>> X, y = make_classification(n_samples=500, random_state=0)
    >>> clf = DPLinearSVC(epsilon=1.0, data_norm=5.0, random_state=0).fit(X, y)
    >>> clf.privacy_spent_.epsilon
    1.0
    """

    # The losses and constraint kinds this estimator offers (its solver list in the
    # docstring and its solver validation come from the solvers' declarations).
    _solver_losses = ('hinge', 'smoothed_hinge')
    _solver_constraints = ("none", "l2", "l1", "lp")

    _parameter_constraints: dict = {
        **BaseDPLinearModel._parameter_constraints,
        "loss": [StrOptions({"hinge", "smoothed_hinge"})],
        "smoothing": POSITIVE,
    }

    # The signature: epsilon and delta by position, then keyword-only parameters, the
    # shared groups declared once in skdp.linear_model._parameters.
    __init__ = declared_init(PRIVACY, dict(
        classes=None, loss="smoothed_hinge", smoothing=0.5, solver="gd", alpha=1e-2,
        **BOUNDS, **OPTIONS, threshold_fraction="auto",
    ))

    def _encode_targets(self, y, bounds):
        classes = self._check_classes(y)
        if classes.size == 2:
            Y = np.where(y == classes[1], 1.0, -1.0)[:, None]
        else:
            # One-vs-rest margins, one joint calibration for all columns.
            Y = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
        k = Y.shape[1]
        loss = HingeLoss(k) if self.loss == "hinge" else SmoothedHingeLoss(k, self.smoothing)
        return Y, loss, {"classes_": classes}
