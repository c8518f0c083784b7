"""Private mechanisms that are not solvers: bound estimation (private quantiles)."""

from skdp.mechanisms.quantile import (
    SCALES,
    TOLERANCE,
    private_quantile,
    quantile_event,
    quantile_utility,
    utility_pieces,
)

__all__ = ["SCALES", "TOLERANCE", "private_quantile", "quantile_event", "quantile_utility",
           "utility_pieces"]
