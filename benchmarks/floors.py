"""Floors of the timed targets: the same work as a default fit, in plain numpy.

A replica runs the schedule that a solver's default plan fixes (its passes over the data,
epochs, batch sizes and steps) with nothing else: no clipping, noise, validation,
accounting or projection; labels in {-1, +1} and the logistic derivative computed in place;
mini-batches drawn with replacement (cheaper than skdp's exact uniform subsets) and, for
the localized solver, from contiguous pools (the cheapest gathers). Its time is therefore a
lower bound on any numpy implementation of that schedule on this machine, and its ratio to
scikit-learn's fit (paired like the scenarios' ratios) says whether a time target can be
met without changing the schedule: a floor above the bound cannot.

Reads skdp's public API only (the fitted ``privacy_plan_``).
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
from scipy.special import expit

from benchmarks import config
from skdp.losses import row_block_size

#: Solvers whose schedules are replicated (the timed targets and the slowest defaults).
FLOOR_SOLVERS = ("gd", "accelerated_mirror_descent", "svrg", "svrg++",
                 "localized_mirror_descent")
#: Iteration counts of DP-GD tried for the fewest passes that meet the excess-risk target.
GD_SWEEP = (32, 36, 40, 44)
GD_SWEEP_SEEDS = (0, 1, 2)


def _derivative(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``-y expit(-y z)`` in place (the logistic derivative, as skdp's in-place form)."""
    z *= y
    np.negative(z, out=z)
    expit(z, out=z)
    z *= y
    return np.negative(z, out=z)


class Replica:
    """The plain-numpy work of one schedule on ``X`` (dense float64) and labels ``y``."""

    def __init__(self, X: np.ndarray, y: np.ndarray) -> None:
        self.X = X
        self.y = y[:, None]
        n, d = X.shape
        step = row_block_size(d, n)  # skdp's row blocks
        self.blocks = [slice(i, min(i + step, n)) for i in range(0, n, step)]
        self.rng = np.random.default_rng(0)

    def full_pass(self, w: np.ndarray, b: float, out: np.ndarray | None = None
                  ) -> tuple[np.ndarray, float]:
        """One blocked pass: scores, derivative, gradient sum (X read once from memory)."""
        g, gb = np.zeros_like(w), 0.0
        for s in self.blocks:
            rows = self.X[s]
            z = rows @ w
            z += b
            dz = _derivative(z, self.y[s])
            if out is not None:
                out[s] = dz
            g += rows.T @ dz
            gb += float(dz.sum())
        return g, gb

    def passes(self, n_passes: int) -> None:
        """``n_passes`` full-batch gradient steps (DP-GD, accelerated mirror descent)."""
        w, b = np.zeros((self.X.shape[1], 1)), 0.0
        n = self.X.shape[0]
        for _ in range(n_passes):
            g, gb = self.full_pass(w, b)
            w -= g / n
            b -= gb / n

    def _step(self, idx: np.ndarray, w: np.ndarray, b: float,
              snap: np.ndarray | None) -> tuple[np.ndarray, float]:
        rows = self.X.take(idx, axis=0)
        z = rows @ w
        z += b
        dz = _derivative(z, self.y.take(idx, axis=0))
        if snap is not None:
            dz -= snap.take(idx, axis=0)
        return rows.T @ dz, float(dz.sum())

    def svrg(self, epoch_lengths: tuple[int, ...], batch: int) -> None:
        """DP-SVRG(++): per epoch a pass that stores the snapshot derivatives, then
        ``m`` steps of a ``batch``-row gather, scores, derivative difference, product."""
        n, d = self.X.shape
        w, b = np.zeros((d, 1)), 0.0
        snap = np.empty((n, 1))
        for m in epoch_lengths:
            self.full_pass(w, b, out=snap)
            idx = np.sort(self.rng.integers(0, n, size=(m, batch)), axis=1)
            for t in range(m):
                g, gb = self._step(idx[t], w, b, snap)
                w -= 1e-3 * g
                b -= 1e-3 * gb

    def phases(self, sizes: tuple[int, ...], batches: tuple[int, ...],
               iters: tuple[int, ...]) -> None:
        """Localized mirror descent: phase ``i`` runs ``iters[i]`` steps of ``batches[i]``
        rows gathered from its own pool of ``sizes[i]`` consecutive rows."""
        d = self.X.shape[1]
        w, b, start = np.zeros((d, 1)), 0.0, 0
        for size, batch, steps in zip(sizes, batches, iters, strict=True):
            local = np.sort(self.rng.integers(0, size, size=(steps, batch)), axis=1)
            for t in range(steps):
                g, gb = self._step(start + local[t], w, b, None)
                w -= 1e-3 * g
                b -= 1e-3 * gb
            start += size


def _schedule(name: str, plan, n_iter) -> tuple[str, tuple]:
    """The replica method and arguments of a fitted default plan."""
    if name in ("gd", "accelerated_mirror_descent"):
        return "passes", (int(np.max(n_iter)),)
    if name in ("svrg", "svrg++"):
        return "svrg", (tuple(plan.epoch_lengths), int(plan.batch_size))
    return "phases", (tuple(plan.phase_sizes), tuple(plan.batch_sizes),
                      tuple(plan.phase_iters))


class _Work:
    """A replica with an estimator's ``fit``, for :func:`benchmarks.measure.paired_fit`."""

    def __init__(self, work) -> None:
        self.work = work

    def fit(self, X, y) -> _Work:
        self.work()
        return self


def gd_sweep(sc, X, y, f, optimum: float, log) -> list[dict]:
    """Median excess risk of DP-GD at each ``GD_SWEEP`` iteration count (epsilon = 1)."""
    from skdp.solvers import NoisyGD

    rows = []
    for n_iter in GD_SWEEP:
        excess = []
        for seed in GD_SWEEP_SEEDS:
            est = sc.estimator(epsilon=1.0, solver=NoisyGD(n_iter=n_iter), random_state=seed,
                               **sc.params)
            est.fit(X, y)
            excess.append(f.value(est.coef_, est.intercept_) - optimum)
        rows.append(dict(n_iter=n_iter, excess=float(np.median(excess))))
        log(f"  gd n_iter={n_iter}: median excess {rows[-1]['excess']:.2e}")
    return rows


def time_floors(profile, log) -> dict:
    """Replicas of the default schedules on covertype-shaped data, paired with
    scikit-learn; DP-GD's excess risk against its iteration count."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the scenario's known PrivacyLeakWarnings
        return _time_floors(profile, log)


def _time_floors(profile, log) -> dict:
    from benchmarks import measure

    sc = config.SCENARIOS["covertype"]
    X, y, _, _ = sc.load(sc.sizes[profile.name], 0, 0)
    replica = Replica(X, measure._labels(sc, y)[:, 0])
    make_sklearn = lambda: sc.sklearn(*X.shape)  # noqa: E731
    rows = []
    for name in FLOOR_SOLVERS:
        caps = measure.SOLVERS[name].capabilities
        for _, params in measure._options(sc, caps):
            make = partial(sc.estimator, epsilon=1.0, solver=name, random_state=0, **params)
            try:  # skdp's default fit, paired with scikit-learn in this run
                est, fit_seconds, fit_ratio = measure.paired_fit(make, make_sklearn, X, y,
                                                                config.PAIRED_REPEATS)
            except measure.IncompatibleSolverError:
                continue
            break
        else:
            continue
        method, args = _schedule(name, est.privacy_plan_, est.n_iter_)
        work = partial(getattr(replica, method), *args)
        _, seconds, ratio = measure.paired_fit(lambda w=work: _Work(w), make_sklearn, X, y,
                                              config.PAIRED_REPEATS)
        rows.append(dict(solver=name, schedule=method, work=_describe(method, args),
                         seconds=seconds, ratio=ratio, fit_seconds=fit_seconds,
                         fit_ratio=fit_ratio))
        log(f"  {name:<28} skdp {fit_ratio:.2f}x, replica {seconds:.2f}s = {ratio:.2f}x "
            f"sklearn ({rows[-1]['work']})")
    f = measure.Objective(sc, X, y, True)
    optimum = measure.certified_optimum(f).value
    sweep = gd_sweep(sc, X, y, f, optimum, log)
    bound = next(t for t in config.TARGETS if t.name.startswith("gd excess risk")).bound
    meeting = [r["n_iter"] for r in sweep if r["excess"] <= bound]
    fewest = None
    if meeting:
        fewest = dict(n_iter=min(meeting))
        work = partial(replica.passes, fewest["n_iter"])
        _, fewest["seconds"], fewest["ratio"] = measure.paired_fit(
            lambda: _Work(work), make_sklearn, X, y, config.PAIRED_REPEATS)
        log(f"  gd replica at n_iter={fewest['n_iter']}: {fewest['ratio']:.2f}x sklearn")
    compiled = compiled_passes(sc, X, y, make_sklearn, log)
    return dict(rows=rows, gd_sweep=sweep, gd_sweep_seeds=list(GD_SWEEP_SEEDS), gd_fewest=fewest,
                compiled=compiled)


#: Solvers whose full passes run compiled (skdp[numba]) at some setting of SKDP_NUMBA.
COMPILED_SOLVERS = ("gd", "accelerated_mirror_descent")

LOAD_CODE = """
import time, warnings
warnings.simplefilter("ignore")
import skdp, sklearn.linear_model
from skdp.solvers import _compiled
start = time.perf_counter()
kernel = _compiled.clipped_gradient_pass()
print(time.perf_counter() - start if kernel is not None else "none")
"""


def compiled_passes(sc, X, y, make_sklearn, log) -> dict | None:
    """The default fits of :data:`COMPILED_SOLVERS` with the compiled full pass off
    (``SKDP_NUMBA=0``) and at every size (``always``), paired with scikit-learn; which
    path the default (work threshold) takes; the one-time load of the kernel in fresh
    interpreters. ``None`` without numba."""
    import os

    from benchmarks import measure
    from skdp.solvers import _compiled

    if not _compiled.enabled() or _compiled.clipped_gradient_pass() is None:
        return None
    loads = []
    for _ in range(3):
        out = measure.run_fresh(LOAD_CODE).stdout.split()
        if out and out[-1] != "none":
            loads.append(float(out[-1]))
    rows = []
    before = os.environ.get("SKDP_NUMBA")
    try:
        for name in COMPILED_SOLVERS:
            make = partial(sc.estimator, epsilon=1.0, solver=name, random_state=0, **sc.params)
            row = dict(solver=name)
            for setting in ("0", "always"):
                os.environ["SKDP_NUMBA"] = setting
                est, row[f"seconds_{setting}"], row[f"ratio_{setting}"] = measure.paired_fit(
                    make, make_sklearn, X, y, config.PAIRED_REPEATS)
            row["products"] = float(np.max(est.n_iter_)) * X.shape[0] * X.shape[1]
            row["default_compiled"] = row["products"] >= _compiled.FULL_PASS_MIN_WORK
            rows.append(row)
            log(f"  {name:<28} numpy {row['ratio_0']:.2f}x, compiled {row['ratio_always']:.2f}x "
                f"sklearn ({row['products']:.2e} products; default "
                f"{'compiled' if row['default_compiled'] else 'numpy'})")
    finally:
        if before is None:
            os.environ.pop("SKDP_NUMBA", None)
        else:
            os.environ["SKDP_NUMBA"] = before
    log(f"  kernel load in a fresh interpreter: {', '.join(f'{s:.2f}' for s in loads)} s")
    return dict(rows=rows, load_seconds=loads, threshold=float(_compiled.FULL_PASS_MIN_WORK))


def _describe(method: str, args: tuple) -> str:
    if method == "passes":
        return f"{args[0]} passes"
    if method == "svrg":
        lengths, batch = args
        return f"{len(lengths)} passes + {sum(lengths)} steps of {batch} rows"
    sizes, batches, iters = args
    rows = sum(b * t for b, t in zip(batches, iters, strict=True))
    return f"{len(sizes)} phases, {sum(iters)} steps, {rows} rows gathered"

