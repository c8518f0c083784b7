"""The label set of a private classifier: declared (public) or read from ``y``."""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

__all__ = ["CLASSES_DOC", "checked_classes"]

#: The ``classes`` parameter of every private classifier, described once (``{arg}``: what
#: each class gets, "coefficients" or "statistics").
CLASSES_DOC = """\
classes : array-like or None, default=None
    The PUBLIC label set. Given, ``fit`` never reads the label set from ``y``: labels
    outside it raise before any noise is drawn, classes absent from ``y`` still get
    {arg}, and the model's shape does not depend on any record. ``None``: the
    label set is read from ``y`` (treated as public; replacing the only record of a
    class changes the model's shape, see docs/privacy.md).
"""


def checked_classes(name: str, classes, y) -> np.ndarray:
    """The sorted label set, after the checks every private classifier needs.

    With ``classes`` given it is the declared set (``y`` is only checked to lie in it),
    so the model's shape and whether ``fit`` raises do not depend on any record. Otherwise
    it is read from ``y`` (treated as public; see docs/privacy.md).

    Parameters
    ----------
    name : str
        The estimator's class name, for the messages.
    classes : array-like or None
        The declared label set, or ``None``.
    y : ndarray of shape (n_samples,)
        The labels.

    Returns
    -------
    ndarray
        The sorted labels.
    """
    check_classification_targets(y)
    if classes is not None:
        declared = np.unique(np.asarray(classes))
        if declared.size != len(classes):
            raise ValueError(f"{name}: classes must not repeat a label.")
        if declared.size < 2:
            raise ValueError(f"{name}: classes must declare at least 2 labels.")
        if not np.all(np.isin(y, declared)):
            # The message names no label: which one is outside is private.
            raise ValueError(
                f"{name}: y has labels that are not in classes; add them to classes "
                "(or remove those rows).")
    else:
        declared = np.unique(y)
    if declared.size < 2:
        raise ValueError(
            f"{name} needs samples of at least 2 classes in y; got only one class "
            f"({declared[0]!r})."
        )
    return declared
