"""Budgets across scikit-learn workflows: pricing and private hyperparameter selection."""

from skdp.model_selection._cost import privacy_cost
from skdp.model_selection._private_search import PrivateRandomizedSearch

__all__ = ["PrivateRandomizedSearch", "privacy_cost"]
