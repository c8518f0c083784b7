"""Benchmark (issue 4): private sparse regression in l1 geometry.

Private l1 solvers -- skdp's variance-reduced Frank-Wolfe (``PrivateFrankWolfe``, pure
epsilon-DP) and, when importable, the mirror-descent solvers (``NoisyMirrorDescent``,
``LocalizedMirrorDescent``, ``DPAccMD``) -- against non-private scikit-learn ``Lasso`` and
the Euclidean DP-GD over an l2 ball (``DPLinearRegression(solver="gd", constraint="l2")``).

Data (synthetic, deterministic in the seed): ``n`` training and 2000 test rows,
``d`` features. The 10 informative columns are dense Rademacher (+-1); the other
``d - 10`` columns are sparse, each entry non-zero with probability 1% and then uniform on
``[-1, 1]`` (CSR; 1% density at every ``d``). Rows are therefore bounded in l-infinity by 1
(the l1 solvers' public ``data_norm = 1``). ``w*`` has 10 non-zeros ``+-0.1``
(``||w*||_1 = 1``, ``||w*||_2 = 0.316``), ``y = <w*, x> + N(0, 0.1^2)`` clipped to
``[-1.5, 1.5]`` (the public label bound; ``|<w*, x>| <= 1``, so clipping needs a 5-sigma
noise draw). Features are independent with mean 0 and ``E x_j^2 = 1`` (informative) or
``0.01 / 3`` (others), so the excess population risk of the loss ``(y - <w, x>)^2 / 2`` is
``sum_j E x_j^2 (w_j - w*_j)^2 / 2`` exactly (up to the negligible clipping).

Solvers (``fit_intercept=False``, ``alpha=0``, ``y_bound=1.5``, ``delta=1e-5``):

* l1 solvers: ``constraint="l1", radius=||w*||_1 = 1`` (an oracle radius, public by
  assumption), ``data_norm=1`` in l-infinity. Frank-Wolfe is pure epsilon-DP (its ledger
  has ``delta = 0``); the mirror-descent solvers use ``delta = 1e-5``.
* DP-GD: ``constraint="l2", radius=||w*||_2`` (oracle), rows clipped in l2 to
  ``data_norm = sqrt(10 + 0.01 d)`` (a public bound from the generator's design, about
  the largest typical row norm; the l-infinity bound alone only gives ``sqrt(d)``).
* ``Lasso(alpha=sigma sqrt(2 ln d / n))`` (non-private; the theory value of the penalty),
  and the zero predictor.

Default rows use every solver's defaults (lossless clips, the theorems' steps and
schedules). Rows ``*_tuned`` (Frank-Wolfe, noisy mirror descent, DP-GD) use public settings
chosen on seed 0 at epsilon = 1 from a grid of the same kind for each (clip x steps /
phases, ``TUNE_GRIDS``) and are evaluated, unchanged, at every epsilon on the other seeds
only: they stand for settings tuned on public data of the same distribution, and are
labelled as such in the tables (never the solvers' defaults).

Run from the repository root::

    python benchmarks/bench_l1.py            # full: n in {1000, 10000}, 5 seeds (~15 min)
    python benchmarks/bench_l1.py --quick    # n = 10000, eps in {1, 5}, 2 seeds (~3 min)
    python benchmarks/bench_l1.py [--quick] --rewrite   # tables/plot again from the JSON

Results: ``benchmarks/results/l1_{full,quick}.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from sklearn.linear_model import Lasso

import skdp
from skdp import DPLinearRegression
from skdp.exceptions import PrivacyLeakWarning
from skdp.solvers.frank_wolfe import PrivateFrankWolfe
from skdp.solvers.gd import NoisyGD

RESULTS = Path(__file__).resolve().parent / "results"
N_INFORMATIVE = 10
COEF = 0.1
DENSITY = 0.01
SIGMA = 0.1
LABEL_BOUND = 1.5
N_TEST = 2000
DELTA = 1e-5
# Reference rows (no privacy): the zero predictor, sklearn's Lasso and Frank-Wolfe at
# epsilon = inf (the one-pass algorithm's own statistical floor).
NON_PRIVATE = ("zero", "sklearn_lasso", "frank_wolfe_eps_inf")
# Tuned public settings (rows ``*_tuned``): every grid point is fitted on seed 0 at
# epsilon = TUNE_EPS and scored on seed 0's test rows; the best point is then evaluated,
# unchanged, at every epsilon on the OTHER seeds (fresh data). This stands for settings
# chosen on public data from the same distribution: choosing them on the private data
# itself would leak. Every solver compared gets a grid of the same kind.
TUNE_EPS = 1.0
TUNE_GRIDS = {
    # l-inf clip of per-example gradients (lossless: 2.5) x number of phases.
    "frank_wolfe": [{"clip_norm": c, "n_phases": t} for c in (0.1, 0.3, 1.0)
                    for t in (2, 3, 4, 5)],
    # l2 clip of per-example gradients (lossless: 2.5 sqrt(d)) x multiplier of the step.
    "mirror_descent": [{"clip_norm": c, "step_scale": s} for c in (0.1, 0.3, 1.0)
                       for s in (10.0, 30.0, 100.0)],
    # l2 clip (lossless: 2.5 data_norm) x iterations x step size.
    "dp_gd_l2": [{"clip_norm": c, "n_iter": t, "step_size": s} for c in (0.1, 0.3, 1.0)
                 for t in (3, 10, 40) for s in (0.5, 2.0)],
}


def _other_l1_solvers() -> dict:
    """The l1 solvers written in parallel, when importable (skipped otherwise)."""
    found = {}
    for name, module, cls in (
        ("mirror_descent", "skdp.solvers.mirror_descent", "NoisyMirrorDescent"),
        ("localized_mirror_descent", "skdp.solvers.localized_mirror_descent",
         "LocalizedMirrorDescent"),
        ("accelerated_mirror_descent", "skdp.solvers.accelerated_mirror_descent", "DPAccMD"),
    ):
        try:
            found[name] = getattr(__import__(module, fromlist=[cls]), cls)
        except (ImportError, AttributeError):
            pass
    return found


def make_data(n: int, d: int, seed: int):
    """Training and test data, ``w*`` and the per-feature second moments (see module doc)."""
    rng = np.random.default_rng(seed)
    total = n + N_TEST
    informative = sp.csr_matrix(rng.choice([-1.0, 1.0], size=(total, N_INFORMATIVE)))
    m = d - N_INFORMATIVE
    nnz = int(rng.binomial(m * total, DENSITY))
    rows = rng.integers(0, total, nnz)
    cols = rng.integers(0, m, nnz)
    noise = sp.csr_matrix((rng.uniform(-1.0, 1.0, nnz), (rows, cols)), shape=(total, m))
    noise.sum_duplicates()
    np.clip(noise.data, -1.0, 1.0, out=noise.data)  # (rare) duplicates summed: re-bound
    X = sp.hstack([informative, noise], format="csr")
    w = np.zeros(d)
    w[:N_INFORMATIVE] = COEF * rng.choice([-1.0, 1.0], N_INFORMATIVE)
    y = np.clip(X @ w + SIGMA * rng.normal(size=total), -LABEL_BOUND, LABEL_BOUND)
    second_moment = np.full(d, DENSITY / 3.0)
    second_moment[:N_INFORMATIVE] = 1.0
    return X[:n], y[:n], X[n:], y[n:], w, second_moment


def _fit(est, X, y):
    """Fit ``est`` (warnings about the fixed benchmark seeds silenced); return it and time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        start = time.perf_counter()
        est.fit(X, y)
        return est, time.perf_counter() - start


def run(config: dict) -> list[dict]:
    others = _other_l1_solvers()
    records = []
    tuning_log: list[dict] = config.setdefault("tuning_log", [])
    tuned: dict = {}
    for n in config["n"]:
        for d in config["d"]:
            for seed in range(config["seeds"]):
                t0 = time.perf_counter()
                X, y, Xt, yt, w_star, moment = make_data(n, d, seed)
                gen_time = time.perf_counter() - t0

                def record(solver, eps, est_coef, fit_time, extra=None, *, n=n, d=d,
                           seed=seed, Xt=Xt, yt=yt, w_star=w_star, moment=moment):
                    coef = np.asarray(est_coef, dtype=float).ravel()
                    rec = {
                        "solver": solver, "n": n, "d": d, "seed": seed, "epsilon": eps,
                        "test_mse": float(np.mean((Xt @ coef - yt) ** 2)),
                        "excess_risk": float(0.5 * np.sum(moment * (coef - w_star) ** 2)),
                        "fit_time": float(fit_time),
                        "l1_norm": float(np.abs(coef).sum()),
                        "support_hits": int(np.sum(np.argsort(-np.abs(coef))[:N_INFORMATIVE]
                                                   < N_INFORMATIVE)),
                    }
                    rec.update(extra or {})
                    records.append(rec)

                record("zero", None, np.zeros(d), 0.0)
                start = time.perf_counter()
                lasso = Lasso(alpha=SIGMA * math.sqrt(2 * math.log(d) / n),
                              fit_intercept=False).fit(X, y)
                record("sklearn_lasso", None, lasso.coef_, time.perf_counter() - start)
                r1 = float(np.abs(w_star).sum())
                est, t = _fit(DPLinearRegression(
                    epsilon=math.inf, delta=0.0, solver=PrivateFrankWolfe(), constraint="l1",
                    radius=r1, data_norm=1.0, fit_intercept=False, alpha=0.0,
                    y_bound=LABEL_BOUND, random_state=seed), X, y)
                record("frank_wolfe_eps_inf", None, est.coef_, t,
                       {"n_phases": est.privacy_plan_.n_phases})
                r2 = float(np.linalg.norm(w_star))
                gd_norm = math.sqrt(N_INFORMATIVE + DENSITY * d)
                common = {"delta": DELTA, "fit_intercept": False, "alpha": 0.0,
                          "y_bound": LABEL_BOUND, "random_state": seed}
                l1_kw = {"constraint": "l1", "radius": r1, "data_norm": 1.0, **common}
                gd_kw = {"constraint": "l2", "radius": r2, "data_norm": gd_norm,
                         "data_norm_ord": 2, **common}
                makers = {"frank_wolfe": (PrivateFrankWolfe, l1_kw),
                          "dp_gd_l2": (NoisyGD, gd_kw)}
                if "mirror_descent" in others:
                    makers["mirror_descent"] = (others["mirror_descent"], l1_kw)
                if seed == 0:  # tune on seed 0 (its test rows), at epsilon = TUNE_EPS
                    for name, (cls, kw) in makers.items():
                        scores = []
                        for params in TUNE_GRIDS[name]:
                            est, t = _fit(DPLinearRegression(epsilon=TUNE_EPS, solver=cls(
                                **params), **kw), X, y)
                            mse = float(np.mean((Xt @ est.coef_.ravel() - yt) ** 2))
                            scores.append(mse)
                            tuning_log.append({"solver": name, "n": n, "d": d,
                                               "params": params, "test_mse": mse,
                                               "fit_time": t})
                        tuned[(n, d, name)] = TUNE_GRIDS[name][int(np.argmin(scores))]
                elif tuned:
                    for name, (cls, kw) in makers.items():
                        limit = (config["other_seeds"] if name == "mirror_descent"
                                 else config["seeds"] - 1)
                        if seed > limit:
                            continue
                        params = tuned[(n, d, name)]
                        for eps in config["epsilon"]:
                            if name == "mirror_descent" and eps not in config["other_epsilon"]:
                                continue
                            est, t = _fit(DPLinearRegression(epsilon=eps, solver=cls(**params),
                                                             **kw), X, y)
                            record(name + "_tuned", eps, est.coef_, t,
                                   {"n_steps": est.n_iter_, "params": params})
                for eps in config["epsilon"]:
                    est, t = _fit(DPLinearRegression(
                        epsilon=eps, solver=PrivateFrankWolfe(), constraint="l1", radius=r1,
                        data_norm=1.0, **common), X, y)
                    record("frank_wolfe", eps, est.coef_, t, {
                        "n_phases": est.privacy_plan_.n_phases,
                        "n_steps": est.n_iter_,
                        "epsilon_spent": est.privacy_spent_.epsilon,
                        "delta_spent": 0.0})
                    est, t = _fit(DPLinearRegression(
                        epsilon=eps, solver="gd", constraint="l2", radius=r2,
                        data_norm=gd_norm, data_norm_ord=2, **common), X, y)
                    record("dp_gd_l2", eps, est.coef_, t, {"n_steps": est.n_iter_})
                    if seed >= config["other_seeds"] or eps not in config["other_epsilon"]:
                        continue
                    for name, cls in others.items():
                        try:
                            est, t = _fit(DPLinearRegression(
                                epsilon=eps, solver=cls(), constraint="l1", radius=r1,
                                data_norm=1.0, **common), X, y)
                        except Exception as exc:  # report, do not hide
                            print(f"  {name} failed at n={n} d={d} eps={eps}: {exc!r}")
                            continue
                        record(name, eps, est.coef_, t, {"n_steps": est.n_iter_})
                print(f"n={n} d={d} seed={seed} done (data {gen_time:.1f}s, "
                      f"{time.perf_counter() - t0:.1f}s)", flush=True)
    config["tuned"] = [{"n": n, "d": d, "solver": name, "params": params}
                       for (n, d, name), params in tuned.items()]
    return records


def aggregate(records: list[dict]) -> list[dict]:
    groups: dict = {}
    for r in records:
        groups.setdefault((r["solver"], r["n"], r["d"], r["epsilon"]), []).append(r)
    out = []
    for (solver, n, d, eps), rs in sorted(groups.items(), key=lambda kv: (
            kv[0][1], kv[0][2], kv[0][0], -1 if kv[0][3] is None else kv[0][3])):
        row = {"solver": solver, "n": n, "d": d, "epsilon": eps, "runs": len(rs)}
        for key in ("test_mse", "excess_risk", "fit_time", "support_hits"):
            vals = np.array([r[key] for r in rs], dtype=float)
            row[key] = float(vals.mean())
            row[key + "_std"] = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
        row["fit_time_max"] = float(max(r["fit_time"] for r in rs))
        out.append(row)
    return out


def _get(agg, solver, n, d, eps, key="test_mse"):
    for row in agg:
        if (row["solver"], row["n"], row["d"], row["epsilon"]) == (solver, n, d, eps):
            return row[key]
    return None


def targets(agg: list[dict], config: dict) -> list[dict]:
    """The issue's three targets, evaluated honestly."""
    out = []
    n_big = max(config["n"])
    d_big, d_small = max(config["d"]), min(config["d"])
    times = [r for r in agg if r["solver"] == "frank_wolfe" and r["n"] == n_big
             and r["d"] == d_big]
    if times:
        worst = max(r["fit_time_max"] for r in times)
        out.append({"target": f"Frank-Wolfe fit at d={d_big}, n={n_big} < 10 s",
                    "value": f"max {worst:.2f} s over all epsilons and seeds",
                    "met": worst < 10.0})
    l1 = ["frank_wolfe", *[k for k in _other_l1_solvers()]]
    for n in config["n"]:
        fw, zero = (_get(agg, s, n, d_big, None) for s in ("frank_wolfe_eps_inf", "zero"))
        if fw is not None:
            out.append({"target": f"FW at eps=inf no worse than the zero predictor "
                                  f"(n={n}, d={d_big})",
                        "value": f"test MSE {fw:.4f} vs zero {zero:.4f}", "met": fw <= zero})
    for eps in config["epsilon"]:
        for solver in ("frank_wolfe", "dp_gd_l2", "frank_wolfe_tuned", "dp_gd_l2_tuned"):
            lo = _get(agg, solver, n_big, d_small, eps, "excess_risk")
            hi = _get(agg, solver, n_big, d_big, eps, "excess_risk")
            if lo is None or hi is None:
                continue
            growth = hi / lo
            log_ratio = math.log(d_big) / math.log(d_small)
            poly = math.sqrt(d_big / d_small)
            zero = _get(agg, "zero", n_big, d_big, None, "excess_risk")
            if solver.startswith("frank_wolfe"):
                out.append({
                    "target": f"eps={eps}: {solver} excess risk grows at most logarithmically "
                              f"in d ({d_small} -> {d_big}: ln ratio {log_ratio:.2f})",
                    "value": f"{lo:.4f} -> {hi:.4f} (x{growth:.2f}); zero predictor "
                             f"{zero:.4f} (FW removes {100 * (1 - hi / zero):.0f}% of it "
                             f"at d={d_big})",
                    "met": growth <= log_ratio * 1.1})
            else:
                out.append({
                    "target": f"eps={eps}: {solver} excess risk, for comparison "
                              f"(sqrt(d) ratio {poly:.1f})",
                    "value": f"{lo:.4f} -> {hi:.4f} (x{growth:.2f}); zero predictor "
                             f"{zero:.4f}",
                    "met": None})
    for n in config["n"]:
        for d in config["d"]:
            if d < 10000:
                continue
            gd_by_eps = {e: _get(agg, "dp_gd_l2", n, d, e) for e in config["epsilon"]}
            wins = []
            for e in config["epsilon"]:
                vals = [v for v in (_get(agg, s, n, d, e) for s in l1) if v is not None]
                if vals and gd_by_eps[e] is not None and gd_by_eps[e] >= 2.0 * min(vals):
                    wins.append(e)
            out.append({
                "target": f"n={n}, d={d}: epsilons where the best l1 test MSE <= DP-GD / 2",
                "value": ", ".join(map(str, wins)) if wins else "none",
                "met": None})
    l1_tuned = ["frank_wolfe_tuned", "mirror_descent_tuned"]
    for tag, gd_name, l1_names in (("", "dp_gd_l2", l1),
                                   (" (tuned settings)", "dp_gd_l2_tuned", l1_tuned)):
        if 1.0 not in config["epsilon"]:
            break
        for n in config["n"]:
            for d in config["d"]:
                if d < 10000:
                    continue
                gd = _get(agg, gd_name, n, d, 1.0)
                cands = {s: _get(agg, s, n, d, 1.0) for s in l1_names}
                cands = {s: v for s, v in cands.items() if v is not None}
                if gd is None or not cands:
                    continue
                best = min(cands, key=cands.get)
                # No predictor's population test MSE is below the label noise SIGMA^2 (the
                # 5-sigma label clip changes it by < 1e-9), so no l1 solver can reach a
                # ratio above gd / SIGMA^2; the excess ratio removes that floor.
                ceiling = gd / SIGMA**2
                excess_ratio = ((gd - SIGMA**2) / (cands[best] - SIGMA**2)
                                if cands[best] > SIGMA**2 else math.inf)
                out.append({
                    "target": f"eps=1, n={n}, d={d}: best l1 test MSE <= DP-GD / 2{tag}",
                    "value": f"best l1 = {best} {cands[best]:.4f}, DP-GD {gd:.4f} "
                             f"(ratio {gd / cands[best]:.2f}; largest ratio any predictor "
                             f"can reach: DP-GD / sigma^2 = {ceiling:.2f}; ratio of the "
                             f"MSEs above sigma^2: {excess_ratio:.2f}); zero predictor "
                             f"{_get(agg, 'zero', n, d, None):.4f}",
                    "met": gd >= 2.0 * cands[best]})
    return out


ORDER = ["zero", "sklearn_lasso", "frank_wolfe_eps_inf", "frank_wolfe", "dp_gd_l2",
         "frank_wolfe_tuned", "dp_gd_l2_tuned", "mirror_descent_tuned"]


def write_markdown(path: Path, config: dict, agg: list[dict], tg: list[dict], meta: dict):
    lines = [f"# l1 benchmark ({'quick' if config['quick'] else 'full'})", "",
             f"Generated {meta['date']} on {meta['platform']} (python {meta['python']}, "
             f"numpy {meta['numpy']}, scipy {meta['scipy']}, sklearn {meta['sklearn']}); "
             f"total {meta['elapsed']:.0f} s.", "",
             "Setting: see the docstring of `benchmarks/bench_l1.py` (10 informative dense "
             "+-1 columns with coefficients +-0.1, other columns 1% dense uniform, "
             "l-inf rows <= 1, sigma = 0.1, labels clipped to 1.5, 2000 test rows). "
             f"Seeds: {config['seeds']} (other l1 solvers: {config['other_seeds']}, at "
             f"eps in {config['other_epsilon']}). Values are mean (std) over seeds.", "",
             "## Targets", "", "| target | value | met |", "|---|---|---|"]
    for t in tg:
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
        lines.append(f"| {t['target']} | {t['value']} | {met} |")
    if config.get("tuned"):
        lines += ["", "## Tuned public settings", "",
                  f"Rows `*_tuned`: the grid point with the smallest test MSE on seed 0 at "
                  f"eps={TUNE_EPS} (grids in `TUNE_GRIDS`), evaluated unchanged at every "
                  "epsilon on seeds 1.. only (fresh data; Frank-Wolfe and DP-GD on all "
                  "other seeds, mirror descent on seeds 1..other_seeds). They stand for "
                  "settings chosen on public data from the same distribution; they are "
                  "not the solvers' defaults. Defaults (lossless clips, theory steps) are "
                  "the rows without the suffix.", "",
                  "| n | d | solver | chosen settings |", "|---|---|---|---|"]
        for row in config["tuned"]:
            lines.append(f"| {row['n']} | {row['d']} | {row['solver']} | "
                         + ", ".join(f"{k}={v}" for k, v in row["params"].items()) + " |")
    for key, title in (("test_mse", "Test MSE"), ("excess_risk", "Excess population risk"),
                       ("fit_time", "Fit time (s)")):
        lines += ["", f"## {title}", ""]
        eps_list = config["epsilon"]
        lines.append("| n | d | solver | " + " | ".join(f"eps={e}" for e in eps_list)
                     + " | non-private |")
        lines.append("|---|---|---|" + "---|" * (len(eps_list) + 1))
        solvers = sorted({r["solver"] for r in agg}, key=lambda s: (
            ORDER.index(s) if s in ORDER else 10, s))
        for n in config["n"]:
            for d in config["d"]:
                for s in solvers:
                    cells = []
                    for e in [*eps_list, None]:
                        row = next((r for r in agg if (r["solver"], r["n"], r["d"],
                                                       r["epsilon"]) == (s, n, d, e)), None)
                        cells.append("" if row is None else
                                     f"{row[key]:.4g} ({row[key + '_std']:.2g})")
                    if any(cells):
                        lines.append(f"| {n} | {d} | {s} | " + " | ".join(cells) + " |")
    lines += ["", "Frank-Wolfe is pure epsilon-DP (delta = 0); DP-GD and the mirror-descent "
              "solvers are (epsilon, 1e-5)-DP. `support_hits` (JSON) counts the true "
              "features among the 10 largest coefficients.", "",
              "Design note: the data design is kept. The signal is learnable in one pass: "
              "the noiseless one-pass Frank-Wolfe (`frank_wolfe_eps_inf`, every record "
              "used once) is within about 10% of scikit-learn's Lasso at n = 10000. What "
              "separates the private rows from it is the privacy noise at the default "
              "(lossless, worst-case) clips and steps, which the `*_tuned` rows isolate. "
              "Since this version, Frank-Wolfe at epsilon = inf uses the largest feasible "
              "number of phases (the three-term bound's choice, still used with privacy, "
              "stopped at 6-30 steps and was worse than zero at n = 1000)."]
    path.write_text("\n".join(lines) + "\n")


COLORS = {"frank_wolfe": "C2", "dp_gd_l2": "C1", "mirror_descent": "C4",
          "localized_mirror_descent": "C3", "accelerated_mirror_descent": "C0",
          "frank_wolfe_eps_inf": "C8", "zero": "gray", "sklearn_lasso": "k",
          "frank_wolfe_tuned": "C5", "dp_gd_l2_tuned": "C6", "mirror_descent_tuned": "C9"}


def plot(path: Path, config: dict, agg: list[dict]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_big = max(config["n"])
    solvers = sorted({r["solver"] for r in agg if r["epsilon"] is not None})
    eps_panels = [e for e in (1.0, 5.0) if e in config["epsilon"]] or config["epsilon"][:1]
    fig, axes = plt.subplots(1, len(eps_panels) + 1, figsize=(5 * (len(eps_panels) + 1), 4))
    for ax, eps in zip(axes, eps_panels, strict=False):
        for s in [*solvers, *NON_PRIVATE]:
            e = None if s in NON_PRIVATE else eps
            pts = [(r["d"], r["excess_risk"], r["excess_risk_std"]) for r in agg
                   if r["solver"] == s and r["n"] == n_big and r["epsilon"] == e]
            if not pts:
                continue
            pts.sort()
            ds, m, sd = map(np.array, zip(*pts, strict=True))
            style = "--" if e is None else "-o"
            ax.errorbar(ds, m, yerr=sd, fmt=style, capsize=3, label=s, color=COLORS.get(s))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("d")
        ax.set_ylabel("excess population risk")
        ax.set_title(f"n={n_big}, eps={eps}")
        ax.grid(True, which="both", alpha=0.3)
    ax = axes[-1]
    d_big = max(config["d"])
    for s in solvers:
        pts = sorted((r["epsilon"], r["test_mse"], r["test_mse_std"]) for r in agg
                     if r["solver"] == s and r["n"] == n_big and r["d"] == d_big
                     and r["epsilon"] is not None)
        if pts:
            es, m, sd = map(np.array, zip(*pts, strict=True))
            ax.errorbar(es, m, yerr=sd, fmt="-o", capsize=3, label=s, color=COLORS.get(s))
    for s in NON_PRIVATE:
        v = _get(agg, s, n_big, d_big, None)
        if v is not None:
            ax.axhline(v, ls="--", color=COLORS.get(s), label=s)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("test MSE")
    ax.set_title(f"n={n_big}, d={d_big}")
    ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few seeds and sizes")
    parser.add_argument("--rewrite", action="store_true",
                        help="recompute the tables and plot from the existing JSON")
    args = parser.parse_args(argv)
    stem = "l1_quick" if args.quick else "l1_full"
    if args.rewrite:
        data = json.loads((RESULTS / f"{stem}.json").read_text())
        config, meta, records = data["config"], data["meta"], data["records"]
        agg = aggregate(records)
        tg = targets(agg, config)
        (RESULTS / f"{stem}.json").write_text(json.dumps(
            {"config": config, "meta": meta, "targets": tg, "aggregate": agg,
             "records": records}, indent=1))
        write_markdown(RESULTS / f"{stem}.md", config, agg, tg, meta)
        plot(RESULTS / f"{stem}.png", config, agg)
        return 0
    if args.quick:
        config = {"n": [10000], "d": [1000, 10000, 100000], "epsilon": [1.0, 5.0],
                  "seeds": 2, "other_seeds": 1, "other_epsilon": [1.0]}
    else:
        config = {"n": [1000, 10000], "d": [1000, 10000, 100000],
                  "epsilon": [0.1, 0.5, 1.0, 2.0, 5.0], "seeds": 5, "other_seeds": 2,
                  "other_epsilon": [0.1, 0.5, 1.0, 2.0, 5.0]}
    config["quick"] = args.quick
    config["other_l1_solvers"] = sorted(_other_l1_solvers())
    start = time.perf_counter()
    records = run(config)
    agg = aggregate(records)
    tg = targets(agg, config)
    meta = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "platform": platform.platform(), "python": platform.python_version(),
        "numpy": np.__version__, "scipy": scipy.__version__, "sklearn": sklearn.__version__,
        "skdp": getattr(skdp, "__version__", "dev"),
        "elapsed": time.perf_counter() - start,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(
        {"config": config, "meta": meta, "targets": tg, "aggregate": agg,
         "records": records}, indent=1))
    write_markdown(RESULTS / f"{stem}.md", config, agg, tg, meta)
    plot(RESULTS / f"{stem}.png", config, agg)
    for t in tg:
        print(("MET   " if t["met"] else "n/a   " if t["met"] is None else "NOT   ")
              + t["target"] + ": " + t["value"])
    print(f"wrote {RESULTS / stem}.{{json,md,png}} in {meta['elapsed']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
