"""The public linear estimators, read once from ``skdp.linear_model`` (a new estimator is
picked up by every test that iterates over them)."""

from __future__ import annotations

from sklearn.base import is_classifier

import skdp.linear_model as _linear_model

#: Every public estimator of ``skdp.linear_model``, in its ``__all__`` order.
LINEAR = tuple(getattr(_linear_model, name) for name in _linear_model.__all__)
CLASSIFIERS = tuple(cls for cls in LINEAR if is_classifier(cls()))
REGRESSORS = tuple(cls for cls in LINEAR if cls not in CLASSIFIERS)
