"""Private mechanisms that are not solvers: bounds, means and scores on public grids."""

from skdp.mechanisms.quantile import (
    GRID_STEP,
    MEAN_RESOLUTION,
    SLACK,
    bound_event,
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

__all__ = ["GRID_STEP", "MEAN_RESOLUTION", "SLACK", "bound_event", "discrete_laplace",
           "grid_ceil", "grid_points", "mean_event", "on_grid", "private_bound",
           "private_mean", "private_range_mean", "target_count"]
