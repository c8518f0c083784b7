"""Differentially private linear models with the scikit-learn API."""

from skdp.linear_model._huber import DPHuberRegressor
from skdp.linear_model._lasso import DPLasso
from skdp.linear_model._logistic import DPLogisticRegression
from skdp.linear_model._regression import DPLinearRegression
from skdp.linear_model._svc import DPLinearSVC

__all__ = [
    "DPHuberRegressor",
    "DPLasso",
    "DPLinearRegression",
    "DPLinearSVC",
    "DPLogisticRegression",
]
