"""What every skdp linear classifier shares: label checks, scores and predictions."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import ClassifierMixin

from skdp._array_api import namespace, to_device, to_numpy
from skdp._base import BaseDPLinearModel, ExactScoreNoticeMixin
from skdp._labels import checked_classes
from skdp._sklearn_compat import Interval, StrOptions
from skdp.linear_model._docs import shared_docs

__all__ = ["BaseDPClassifier"]


@shared_docs
class BaseDPClassifier(ExactScoreNoticeMixin, ClassifierMixin, BaseDPLinearModel):
    """Linear classifier: one score per class (one score for two classes)."""

    _parameter_constraints: dict = {
        **BaseDPLinearModel._parameter_constraints,
        "classes": ["array-like", None],
        "threshold_fraction": [Interval(Real, 0, 1, closed="left"), StrOptions({"auto"})],
    }

    def _check_classes(self, y) -> np.ndarray:
        """The sorted label set, after the checks every loss needs.

        With ``classes`` given it is the declared set (``y`` is only checked to lie in
        it), so the model's shape and whether ``fit`` raises do not depend on any record.
        Otherwise it is read from ``y`` (treated as public; see docs/privacy.md).
        """
        name = type(self).__name__
        classes = checked_classes(name, self.classes, y)
        if classes.size > 2 and self.adversarial_radius:
            raise ValueError(
                "Only binary classification is supported. The type of the target is "
                f"multiclass: {name} with adversarial_radius has a closed-form robust "
                "loss for two classes only (fit one binary model per class instead)."
            )
        return classes

    def decision_function(self, X):
        """Confidence scores: the signed score of ``classes_[1]`` for binary problems.

        <<parameters_X>>

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``X @ coef_.T + intercept_`` on the clipped rows: one column per class, or
            for two classes one score, positive for ``classes_[1]``.
        """
        scores = self._decision_scores(X, "decision_function")
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predicted class labels.

        <<parameters_X>>

        Returns
        -------
        ndarray of shape (n_samples,)
            The label of ``classes_`` with the highest score of
            :meth:`decision_function` for each row (for two classes, ``classes_[1]``
            where the score is positive).
        """
        scores = self._decision_scores(X, "predict")
        if not isinstance(scores, np.ndarray):
            return self._device_labels(scores)
        if scores.shape[1] == 1:
            return self.classes_[(scores[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _device_labels(self, scores):
        """:meth:`predict` of scores on a device: labels in their namespace when the
        classes are numbers (a NumPy array of labels otherwise: no namespace holds
        strings)."""
        xp = namespace(scores)
        index = (xp.astype(scores[:, 0] > 0, xp.int64) if scores.shape[1] == 1
                 else xp.argmax(scores, axis=1))
        if self.classes_.dtype.kind not in "biuf":
            return self.classes_[to_numpy(index)]
        dtype = xp.float64 if self.classes_.dtype.kind == "f" else xp.int64
        return xp.take(to_device(self.classes_, scores, dtype=dtype), index)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # At the default epsilon a private model fitted on the 100-300 samples of
        # scikit-learn's toy checks is noise-dominated by design: the 0.83 accuracy bar of
        # check_classifiers_train is not a fair test of it (it passes at epsilon=inf).
        tags.classifier_tags.poor_score = True
        # The robust loss has a closed form for one output only (binary problems).
        tags.classifier_tags.multi_class = not self.adversarial_radius
        return tags
