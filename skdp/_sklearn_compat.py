"""The only module that imports scikit-learn's private API (it may move between releases)."""

from sklearn.base import _fit_context
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import validate_data

__all__ = [
    "BaseSearchCV",
    "HasMethods",
    "Interval",
    "Options",
    "StrOptions",
    "_fit_context",
    "validate_data",
    "validate_parameter_constraints",
]
