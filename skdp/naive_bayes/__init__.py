"""Differentially private naive Bayes: :class:`DPGaussianNB` (docs/naive_bayes.md)."""

from skdp.naive_bayes._gaussian import DPGaussianNB

__all__ = ["DPGaussianNB"]
