"""Private matrix decompositions for pipelines."""

from skdp.decomposition._pca import DPPCA

__all__ = ["DPPCA"]
