"""Private scores for scikit-learn's model selection: every call releases one DP score."""

from skdp.metrics._scorers import PRIVATE_METRICS, PrivateScorer, make_private_scorer

__all__ = ["PRIVATE_METRICS", "PrivateScorer", "make_private_scorer"]
