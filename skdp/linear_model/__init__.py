"""Differentially private linear models with the scikit-learn API."""

from skdp.linear_model._logistic import DPLogisticRegression

__all__ = ["DPLogisticRegression"]
