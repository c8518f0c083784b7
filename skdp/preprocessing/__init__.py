"""Transformers for private pipelines (issue 19): public-bounds scaling, row clipping and
a differentially private standard scaler."""

from skdp.preprocessing._scalers import DPStandardScaler, PublicBoundsScaler, RowNormClipper

__all__ = ["DPStandardScaler", "PublicBoundsScaler", "RowNormClipper"]
