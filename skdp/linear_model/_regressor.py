"""The shared part of skdp's regressors: public label clipping, predict and tags."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin

from skdp._array_api import namespace
from skdp._base import BaseDPLinearModel, ExactScoreNoticeMixin
from skdp._sklearn_compat import Interval, StrOptions
from skdp.linear_model._docs import shared_docs

__all__ = ["BaseDPRegressor"]


@shared_docs
class BaseDPRegressor(ExactScoreNoticeMixin, RegressorMixin, BaseDPLinearModel):
    """Single-target regression with labels clipped to the public ``[-y_bound, y_bound]``.

    Subclasses choose the loss in :meth:`_encode_targets` from :meth:`_clipped_labels`.
    """

    _y_numeric = True
    _parameter_constraints: dict = {
        **BaseDPLinearModel._parameter_constraints,
        "y_bound": [Interval(Real, 0, 1e150, closed="neither"), StrOptions({"auto"})],
    }

    def _clipped_labels(self, y, bounds) -> tuple[np.ndarray, float]:
        """``y - centre`` clipped to the bound (a per-record map with public or privately
        released constants), as a column, and the bound."""
        bound = float(bounds.y_bound)
        centred = np.asarray(y, dtype=np.float64) - bounds.y_centre
        return np.clip(centred, -bound, bound)[:, None], bound

    def predict(self, X):
        """Predicted values.

        <<parameters_X>>

        Returns
        -------
        ndarray of shape (n_samples,)
            ``X @ coef_ + intercept_`` on the clipped rows. With ``y_bound="auto"``,
            clipped to the training targets' range ``y_centre_ +- y_bound_``
            (post-processing of the released model).
        """
        scores = self._decision_scores(X, "predict")[:, 0]
        if isinstance(self.y_bound, str):
            low, high = self.y_centre_ - self.y_bound_, self.y_centre_ + self.y_bound_
            if not isinstance(scores, np.ndarray):  # on a device (array API)
                return namespace(scores).clip(scores, min=low, max=high)
            return np.clip(scores, low, high)
        return scores

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Private fits on the checks' tiny data sets are noisy by design.
        tags.regressor_tags.poor_score = True
        return tags
