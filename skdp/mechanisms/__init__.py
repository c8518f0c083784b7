"""Private mechanisms that are not solvers: bounds, means, scores and thresholds on public
grids."""

from skdp.mechanisms.quantile import (
    GRID_STEP,
    MEAN_RESOLUTION,
    SLACK,
    bound_event,
    discrete_gaussian,
    discrete_laplace,
    grid_ceil,
    grid_points,
    mean_event,
    on_grid,
    private_bound,
    private_mean,
    private_range_mean,
    target_count,
)
from skdp.mechanisms.threshold import private_threshold, threshold_grid

__all__ = ["GRID_STEP", "MEAN_RESOLUTION", "SLACK", "bound_event", "discrete_gaussian",
           "discrete_laplace",
           "grid_ceil", "grid_points", "mean_event", "on_grid", "private_bound",
           "private_mean", "private_range_mean", "private_threshold", "target_count",
           "threshold_grid"]
