"""Which data-independent solver settings work best at epsilon = 1 on the Covertype setting?

A small grid over public solver parameters of DP-GD, DP-SVRG and DP-SVRG++ (iteration
counts, batch sizes, step sizes, output iterate) on the benchmark problem of
``bench_covertype.py`` (n = 200000, alpha = 1e-2, epsilon = 1, delta = 1e-3), 2 seeds per
setting. Every setting is a public choice fixed before seeing the data, so each fit is
(1, 1e-3)-DP on its own; picking the best setting BY LOOKING AT THESE RESULTS is not
private for this dataset: the point is to choose better *defaults* for data like this.

Run from the repository root::

    python benchmarks/tune_covertype.py            # about 15 minutes on 2 cores
    python benchmarks/tune_covertype.py --quick    # n=20000, a few settings

Results: ``benchmarks/results/covertype_tuning{,_quick}.{json,md}``.

Times: ``fit_seconds`` is a WARM fit (the solver's noise calibration is cached by skdp
after the first fit with the same public schedule); ``calibration_seconds`` is the cold
cost of that calibration, paid once per process and schedule. A cold fit costs about
their sum.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from skdp.exceptions import PrivacyLeakWarning
from skdp.geometry import Unconstrained
from skdp.losses import LogisticLoss
from skdp.privacy.budget import Budget
from skdp.solvers import DPSVRG, DPSVRGPlusPlus, NoisyGD, ProblemSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_covertype import (
    ALPHA,
    DATA_NORM,
    DELTA,
    RESULTS,
    _jsonable,
    clear_calibration_cache,
    environment,
    fit_once,
    solve_optimum,
    time_sklearn,
)
from datasets import make_covertype_like

EPSILON = 1.0
#: Public smoothness bound of the problem: curvature 1/4 times the squared augmented row
#: norm bound (sqrt(2) data_norm, the intercept feature included) plus alpha.
BETA = 0.25 * 2.0 * DATA_NORM**2 + ALPHA


def grid(quick=False):
    """(family, label, solver object) of every setting tried."""
    out = [("gd", "default", NoisyGD()),
           ("svrg", "default", DPSVRG()),
           ("svrg++", "default", DPSVRGPlusPlus())]
    gd_iters = (50, 100, 200) if quick else (50, 100, 200, 300, 500)
    for step_mult in (1.0, 1.9):
        for n_iter in gd_iters:
            for iterate in ("last", "average"):
                out.append(("gd", f"n_iter={n_iter}, step={step_mult:g}/beta, {iterate}",
                            NoisyGD(n_iter=n_iter, step_size=step_mult / BETA,
                                    iterate=iterate)))
    for iterate in ("average",):
        out.append(("gd", f"n_iter=default, step=1/beta, {iterate}",
                    NoisyGD(iterate=iterate)))
    batches = (512, 2048) if quick else (128, 512, 2048, 8192)
    epochs = (3, 5) if quick else (3, 5, 8)
    for b in batches:
        for n_epochs in epochs:
            for k in (1, 4, 12):
                out.append(("svrg", f"b={b}, epochs={n_epochs}, step={k}/(12 beta)",
                            DPSVRG(batch_size=b, n_epochs=n_epochs, step_size=k / (12 * BETA))))
    for b in ((2048,) if quick else (512, 2048)):
        for n_epochs in (None, 4, 6):
            for k in (1, 4, 13):
                label = f"b={b}, epochs={'default' if n_epochs is None else n_epochs}, " \
                        f"step={k}/(13 beta)"
                out.append(("svrg++", label, DPSVRGPlusPlus(
                    batch_size=b, n_epochs=n_epochs, step_size=k / (13 * BETA))))
    return out


def calibration_seconds(solver, n_samples, n_features, cache):
    """Cold planning time of ``solver`` (memoised on its public schedule)."""
    spec = ProblemSpec(
        n_samples=n_samples, n_params=n_features + 1, n_outputs=1, n_penalized=n_features,
        row_norm_bound=DATA_NORM * math.sqrt(2.0), loss=LogisticLoss(),
        constraint=Unconstrained(), alpha=ALPHA,
    )
    budget = Budget(EPSILON, DELTA)
    key = (type(solver).__name__, getattr(solver, "batch_size", None),
           getattr(solver, "n_epochs", None), getattr(solver, "n_iter", None))
    if key not in cache:
        clear_calibration_cache()
        t0 = time.perf_counter()
        solver.plan(spec, budget, solver.resolve_accountant("auto"), "replace_one")
        cache[key] = time.perf_counter() - t0
    return cache[key]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=PrivacyLeakWarning)
    n_samples = 20000 if args.quick else 200000
    stem = "covertype_tuning_quick" if args.quick else "covertype_tuning"
    t_start = time.perf_counter()
    X, y = make_covertype_like(n_samples=n_samples, random_state=0)
    _, optimum = solve_optimum(X, y, ALPHA)
    F_star = optimum["F_star"]
    sk = time_sklearn(X, y, ALPHA, F_star)
    sk_time = sk["default_tol"]["median_seconds"]
    cal_cache = {}
    rows = []
    for family, label, solver in grid(args.quick):
        cal = calibration_seconds(solver, *X.shape, cal_cache)
        recs = []
        for seed in range(args.seeds):
            rec, _ = fit_once(X, y, solver, EPSILON, seed, F_star, cold=False)
            recs.append(rec)
        ex = np.array([r["excess_risk"] for r in recs])
        t = np.array([r["fit_seconds"] for r in recs])
        row = {
            "family": family, "setting": label, "solver": repr(solver),
            "excess_mean": float(ex.mean()), "excess_runs": ex.tolist(),
            "fit_seconds_median": float(np.median(t)), "calibration_seconds": cal,
            "cold_seconds_estimate": float(np.median(t)) + cal,
            "n_iter": recs[0]["n_iter"], "settings": recs[0]["settings"],
            "epsilon_spent": max(r["epsilon_spent"] for r in recs),
        }
        rows.append(row)
        print(f"{family:6s} {label:45s} excess={row['excess_mean']:.3e} "
              f"warm={row['fit_seconds_median']:6.2f} s cal={cal:5.2f} s "
              f"n_iter={row['n_iter']}", flush=True)

    res = {
        "config": {"n_samples": n_samples, "epsilon": EPSILON, "delta": DELTA,
                   "alpha": ALPHA, "seeds": list(range(args.seeds)), "beta": BETA},
        "optimum": optimum, "sklearn": sk, "rows": rows,
        "total_seconds": time.perf_counter() - t_start, "environment": environment(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(_jsonable(res), indent=1) + "\n")
    lines = [
        f"# Tuning at epsilon = {EPSILON:g} (n = {n_samples}, {args.seeds} seeds)",
        "",
        f"beta = {BETA:g} (public smoothness bound). sklearn median fit: {sk_time:.3f} s. "
        "Warm = noise calibration cached; cold = warm + calibration. Sorted by excess risk "
        "within each solver.",
        "",
        "| solver | setting | excess risk (mean) | warm fit (s) | cold fit est. (s) | "
        "cold / sklearn | noisy steps |",
        "|---|---|---|---|---|---|---|",
    ]
    for family in ("gd", "svrg", "svrg++"):
        for row in sorted((r for r in rows if r["family"] == family),
                          key=lambda r: r["excess_mean"]):
            lines.append(
                f"| {family} | {row['setting']} | {row['excess_mean']:.2e} | "
                f"{row['fit_seconds_median']:.2f} | {row['cold_seconds_estimate']:.2f} | "
                f"{row['cold_seconds_estimate'] / sk_time:.1f} | {row['n_iter']} |")
    lines += ["", f"Total: {res['total_seconds'] / 60:.1f} min.", ""]
    (RESULTS / f"{stem}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
