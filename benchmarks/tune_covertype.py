"""Which data-independent solver settings work best at epsilon = 1 on the Covertype setting?

A small grid over public solver parameters of DP-GD, DP-SVRG and DP-SVRG++ (iteration
counts, batch sizes, step sizes, output iterate) on the benchmark problem of
``bench_covertype.py`` (n = 200000, alpha = 1e-2, epsilon = 1, delta = 1e-3), 2 seeds per
setting. Every setting is a public choice fixed before seeing the data, so each fit is
(1, 1e-3)-DP on its own; picking the best setting BY LOOKING AT THESE RESULTS is not
private for this dataset: the point is to choose better *defaults* for data like this.

Run from the repository root::

    python benchmarks/tune_covertype.py            # about 4 minutes on 2 idle cores
    python benchmarks/tune_covertype.py --quick    # n=20000, a few settings
    python benchmarks/tune_covertype.py --refine   # stage 2: best settings, all epsilons,
                                                   # 5 seeds (about 3 minutes)

Results: ``benchmarks/results/covertype_tuning{,_refine}{,_quick}.{json,md}``.

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
    sklearn_fit_seconds,
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


def gd_rule_n_iter(epsilon, n_samples, n_params, step_size):
    """A data-independent DP-GD iteration count from a bias-noise balance (proposal).

    The last iterate of noisy GD with step ``eta`` carries, per coordinate, a stationary
    excess risk of about ``eta sigma^2 / 4``; with ``T`` steps the exact (GDP) noise is
    ``sigma^2 = T z1^2 Delta^2`` (``z1`` the one-release analytic Gaussian multiplier,
    ``Delta = 2 G / n``), so the noise term is ``d z1^2 Delta^2 K / 4`` with ``K = eta T``,
    while the optimisation error is at most ``F(0) - F* <= ln 2`` times
    ``exp(-2 alpha K)``. Their sum is smallest at
    ``K* = ln(8 alpha ln2 / (d z1^2 Delta^2)) / (2 alpha)``; ``T = ceil(K* / eta)``.
    """
    from skdp.privacy.accounting import analytic_gaussian_multiplier

    z1 = analytic_gaussian_multiplier(Budget(epsilon, DELTA), 1)
    delta_sens = 2.0 * math.sqrt(2.0) * DATA_NORM / n_samples
    ratio = 8.0 * ALPHA * math.log(2.0) / (n_params * (z1 * delta_sens) ** 2)
    k_star = math.log(max(ratio, math.e)) / (2.0 * ALPHA)
    return max(1, math.ceil(k_star / step_size))


def refine_grid(n_samples, n_params):
    """Promising settings from the first grid, at every epsilon with more seeds."""
    out = []
    for eps in (0.2, 0.5, 1.0):
        for mult in (1.0, 1.9):
            t_rule = gd_rule_n_iter(eps, n_samples, n_params, mult / BETA)
            out.append((eps, "gd", f"rule n_iter={t_rule}, step={mult:g}/beta, last",
                        NoisyGD(n_iter=t_rule, step_size=mult / BETA), {}))
        out.append((eps, "gd", "n_iter=100, step=1.9/beta, last",
                    NoisyGD(n_iter=100, step_size=1.9 / BETA), {}))
        out.append((eps, "gd", "n_iter=200, step=1/beta, last",
                    NoisyGD(n_iter=200, step_size=1.0 / BETA), {}))
    out += [
        (1.0, "gd", f"n_iter={t}, step=1.9/beta, last",
         NoisyGD(n_iter=t, step_size=1.9 / BETA), {})
        for t in (70, 85, 125)
    ]
    out += [
        (1.0, "svrg", "b=2048, epochs=8, step=4/(12 beta)",
         DPSVRG(batch_size=2048, n_epochs=8, step_size=4 / (12 * BETA)), {}),
        (1.0, "svrg", "b=2048, epochs=3, step=1/beta",
         DPSVRG(batch_size=2048, n_epochs=3, step_size=1 / BETA), {}),
        (1.0, "svrg++", "b=2048, epochs=4, step=1/beta",
         DPSVRGPlusPlus(batch_size=2048, n_epochs=4, step_size=1 / BETA), {}),
        # Poisson batches: tight PLD accountant under add/remove at (eps/2, ...), turned
        # into the replace-one guarantee by group privacy.
        (1.0, "svrg", "b=2048, epochs=3, step=1/beta, poisson, PLD (group privacy)",
         DPSVRG(batch_size=2048, n_epochs=3, step_size=1 / BETA, sampling="poisson"),
         {"accountant": "pld"}),
    ]
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


def run_refine(X, y, F_star, sk_time, n_seeds, stem, t_start, optimum, sk, env_start):
    """Stage 2: the promising settings at every epsilon, ``n_seeds`` seeds."""
    rows = []
    for eps, family, label, solver, params in refine_grid(*X.shape):
        sk_now = sklearn_fit_seconds(X, y, ALPHA)  # same machine load as the cold fit
        recs = [fit_once(X, y, solver, eps, seed, F_star, cold=(seed == 0), **params)[0]
                for seed in range(n_seeds)]
        ex = np.array([r["excess_risk"] for r in recs])
        t = np.array([r["fit_seconds"] for r in recs])
        row = {
            "epsilon": eps, "family": family, "setting": label, "solver": repr(solver),
            "params": params, "excess_mean": float(ex.mean()),
            "excess_std": float(ex.std(ddof=1)), "excess_runs": ex.tolist(),
            "cold_fit_seconds": float(t[0]), "warm_fit_seconds_median": float(np.median(t[1:])),
            "sklearn_seconds_interleaved": sk_now,
            "n_iter": recs[0]["n_iter"], "settings": recs[0]["settings"],
            "epsilon_spent": max(r["epsilon_spent"] for r in recs),
        }
        rows.append(row)
        print(f"eps={eps:<4g} {family:6s} {label:58s} excess={row['excess_mean']:.3e} "
              f"± {row['excess_std']:.1e} cold={t[0]:6.2f} s warm={np.median(t[1:]):6.2f} s",
              flush=True)
    res = {
        "config": {"n_samples": X.shape[0], "delta": DELTA, "alpha": ALPHA,
                   "seeds": list(range(n_seeds)), "beta": BETA},
        "optimum": optimum, "sklearn": sk, "rows": rows,
        "total_seconds": time.perf_counter() - t_start, "environment": env_start,
    }
    (RESULTS / f"{stem}.json").write_text(json.dumps(_jsonable(res), indent=1) + "\n")
    lines = [
        f"# Refined settings (n = {X.shape[0]}, {n_seeds} seeds)",
        "",
        f"sklearn median fit at the start: {sk_time:.3f} s; the ratio uses one sklearn fit "
        "timed right before each setting (shared machine). Cold = first fit (seed 0, "
        "calibration cache cleared); warm = median of the others. `rule` = the bias-noise "
        "balance of `gd_rule_n_iter` (data-independent).",
        "",
        "| epsilon | solver | setting | excess risk (mean ± std) | cold fit (s) | "
        "cold / sklearn | warm fit (s) | noisy steps |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['epsilon']:g} | {row['family']} | {row['setting']} | "
            f"{row['excess_mean']:.2e} ± {row['excess_std']:.1e} | "
            f"{row['cold_fit_seconds']:.2f} | "
            f"{row['cold_fit_seconds'] / row['sklearn_seconds_interleaved']:.1f} | "
            f"{row['warm_fit_seconds_median']:.2f} | {row['n_iter']} |")
    _write_markdown(lines, res, env_start, stem)


def _write_markdown(lines, res, env_start, stem):
    """Append the run footer (time, commit) and write ``results/<stem>.md``."""
    dirty = " (plus uncommitted changes)" if env_start.get("skdp_has_uncommitted_changes") else ""
    lines += ["", f"Total: {res['total_seconds'] / 60:.1f} min; skdp commit "
              f"{env_start['git_commit']}{dirty}.", ""]
    (RESULTS / f"{stem}.md").write_text("\n".join(lines))
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds per setting (default 2; 5 with --refine)")
    parser.add_argument("--refine", action="store_true",
                        help="stage 2: promising settings at every epsilon, 5 seeds")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=PrivacyLeakWarning)
    n_samples = 20000 if args.quick else 200000
    stem = "covertype_tuning" + ("_refine" if args.refine else "") + (
        "_quick" if args.quick else "")
    n_seeds = args.seeds or (5 if args.refine else 2)
    t_start = time.perf_counter()
    env_start = environment()
    X, y = make_covertype_like(n_samples=n_samples, random_state=0)
    _, optimum = solve_optimum(X, y, ALPHA)
    F_star = optimum["F_star"]
    sk = time_sklearn(X, y, ALPHA, F_star)
    sk_time = sk["default_tol"]["median_seconds"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.refine:
        run_refine(X, y, F_star, sk_time, n_seeds, stem, t_start, optimum, sk, env_start)
        return
    cal_cache = {}
    rows = []
    for family, label, solver in grid(args.quick):
        cal = calibration_seconds(solver, *X.shape, cal_cache)
        recs = []
        for seed in range(n_seeds):
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
                   "alpha": ALPHA, "seeds": list(range(n_seeds)), "beta": BETA},
        "optimum": optimum, "sklearn": sk, "rows": rows,
        "total_seconds": time.perf_counter() - t_start, "environment": env_start,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(_jsonable(res), indent=1) + "\n")
    lines = [
        f"# Tuning at epsilon = {EPSILON:g} (n = {n_samples}, {n_seeds} seeds)",
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
    _write_markdown(lines, res, env_start, stem)


if __name__ == "__main__":
    main()
