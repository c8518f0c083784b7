"""Private mechanisms that are not solvers: bound estimation on a public grid."""

from skdp.mechanisms.quantile import (
    GRID_STEP,
    MEAN_RESOLUTION,
    SLACK,
    bound_event,
    grid_ceil,
    grid_points,
    mean_event,
    on_grid,
    private_bound,
    private_mean,
    target_count,
)

__all__ = ["GRID_STEP", "MEAN_RESOLUTION", "SLACK", "bound_event", "grid_ceil", "grid_points",
           "mean_event", "on_grid", "private_bound", "private_mean", "target_count"]
