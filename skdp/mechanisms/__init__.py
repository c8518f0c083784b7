"""Private mechanisms that are not solvers: bound estimation (private quantiles)."""

from skdp.mechanisms.quantile import SCALES, private_quantile, quantile_event, rank_utilities

__all__ = ["SCALES", "private_quantile", "quantile_event", "rank_utilities"]
