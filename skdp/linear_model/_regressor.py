"""The shared part of skdp's regressors: public label clipping, predict and tags."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin

from skdp._base import BaseDPLinearModel
from skdp._sklearn_compat import Interval

__all__ = ["BaseDPRegressor"]


class BaseDPRegressor(RegressorMixin, BaseDPLinearModel):
    """Single-target regression with labels clipped to the public ``[-y_bound, y_bound]``.

    Subclasses choose the loss in :meth:`_encode_targets` from :meth:`_clipped_labels`.
    """

    _y_numeric = True
    _parameter_constraints: dict = {
        **BaseDPLinearModel._parameter_constraints,
        "y_bound": [Interval(Real, 0, 1e150, closed="neither")],
    }

    def _clipped_labels(self, y) -> tuple[np.ndarray, float]:
        """``y`` clipped to the public bound (a per-record map), as a column, and the bound."""
        bound = float(self.y_bound)
        return np.clip(np.asarray(y, dtype=np.float64), -bound, bound)[:, None], bound

    def predict(self, X):
        """Predicted values.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._decision_scores(X)[:, 0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Private fits on the checks' tiny data sets are noisy by design.
        tags.regressor_tags.poor_score = True
        return tags
