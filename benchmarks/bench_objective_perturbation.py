"""Benchmark: skdp's objective perturbation (exact and approximate) against diffprivlib's.

Issue 5 (a). L2-regularised logistic regression on bundled real data (breast cancer,
digits 0-4 vs 5-9) and the Covertype-shaped data of ``datasets.py``, rows scaled to unit
l2 norm (a per-record map), ``epsilon in {0.1, 0.2, 0.5, 1, 2, 5}``, ``delta = 1e-5``:

* ``objective_perturbation``: exact GLM objective perturbation (Su, Zhao & Wang Alg. 5)
  with the closed-form privacy profile, certified to ``r_max`` (1% of the budget covers
  the certified optimisation error);
* ``approx_objective_perturbation``: Algorithms 1/2, 0.9/0.1 budget split;
* ``diffprivlib``: IBM diffprivlib's objective perturbation (Chaudhuri et al. 2011; pure
  epsilon-DP, via ``peer_objective_perturbation.py``).

All three minimise the SAME objective, skdp's ``DPLogisticRegression`` objective (and
diffprivlib's non-noisy part with ``C = 1/(n alpha)``)::

    F(w, b) = mean_i log(1 + exp(-s_i (x_i.w + b))) + (alpha/2) ||w||^2   (b unpenalised)

Measured: median (over seeds) excess empirical risk ``F(theta) - F*`` on the training
split, test accuracy, and the noise scale over a fine epsilon grid (monotonicity: the peer
collapses when its ``eps' = eps - 2 ln(1 + c C)`` switches to ``eps / 2``).

    python benchmarks/bench_objective_perturbation.py            # full: 10 seeds
    python benchmarks/bench_objective_perturbation.py --quick    # 2 seeds, n=20000 cover.

Results: ``benchmarks/results/objective_perturbation{,_quick}.{json,md,png}``.
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
from threadpoolctl import threadpool_limits

import skdp
from skdp.exceptions import PrivacyLeakWarning
from skdp.privacy import Budget
from skdp.solvers.approx_objective_perturbation import ApproxObjectivePerturbation
from skdp.solvers.objective_perturbation import ObjectivePerturbation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_output_perturbation import (
    _jsonable,
    augment,
    environment,
    load_datasets,
    objective,
    solve_optimum,
    theta_of,
)
from peer_objective_perturbation import PeerLogisticRegression

RESULTS = Path(__file__).resolve().parent / "results"
EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
DELTA = 1e-5
ALPHA = 1e-2  # DPLogisticRegression's default; public, not tuned
DATA_NORM = 1.0
METHODS = ("objective_perturbation", "approx_objective_perturbation", "diffprivlib")
DATASETS = ("breast_cancer", "digits", "covertype_like")
FINE_GRID = tuple(np.round(np.concatenate([np.arange(0.05, 3.0, 0.05),
                                           np.arange(3.0, 20.01, 0.5)]), 4))


def _log(msg):
    print(msg, flush=True)


def fit(method, X, y, epsilon, seed):
    """One fit; returns theta = (w, b) and seconds."""
    n = X.shape[0]
    t0 = time.perf_counter()
    if method == "diffprivlib":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = PeerLogisticRegression(epsilon=epsilon, data_norm=DATA_NORM,
                                         C=1.0 / (n * ALPHA), fit_intercept=True,
                                         random_state=seed).fit(X, y)
    else:
        solver = (ObjectivePerturbation() if method == "objective_perturbation"
                  else ApproxObjectivePerturbation())
        est = skdp.DPLogisticRegression(epsilon, DELTA, solver=solver, alpha=ALPHA,
                                        data_norm=DATA_NORM, fit_intercept=True,
                                        random_state=seed).fit(X, y)
        assert est.privacy_spent_.epsilon <= epsilon
    return theta_of(est.coef_, est.intercept_), time.perf_counter() - t0


def peer_noise_scale(epsilon, n):
    """diffprivlib 0.6.6's noise: ||beta|| ~ Gamma(d+1, 2 sqrt(X^2+1)/eps') in the sum-form
    objective (see peer_objective_perturbation.py); its scale 2 sqrt(X^2+1)/eps'."""
    c = 0.25 * math.sqrt(DATA_NORM**2 + 1)
    C = 1.0 / (n * ALPHA)
    e = epsilon - 2 * math.log(1 + c * C)
    if e <= 0:
        e = epsilon / 2
    return 2 * math.sqrt(DATA_NORM**2 + 1) / e


def noise_curves(n, d):
    """Planned noise (sum-form std of B) of ours, and the peer's scale, on FINE_GRID."""
    from skdp.geometry import Unconstrained
    from skdp.losses import LogisticLoss
    from skdp.solvers import ProblemSpec

    spec = ProblemSpec(n_samples=n, n_params=d + 1, n_outputs=1, n_penalized=d,
                       row_norm_bound=math.sqrt(2.0), loss=LogisticLoss(),
                       constraint=Unconstrained(), alpha=ALPHA, intercept_feature=1.0)
    out = {"epsilon": list(FINE_GRID), "diffprivlib_scale": [], "objective_perturbation": [],
           "approx_objective_perturbation": []}
    for eps in FINE_GRID:
        out["diffprivlib_scale"].append(peer_noise_scale(float(eps), n))
        for name, cls in (("objective_perturbation", ObjectivePerturbation),
                          ("approx_objective_perturbation", ApproxObjectivePerturbation)):
            plan = cls().plan(spec, Budget(float(eps), DELTA), "basic", "replace_one")
            out[name].append(plan.sigma)
    for key in ("diffprivlib_scale", "objective_perturbation", "approx_objective_perturbation"):
        v = np.asarray(out[key])
        out[f"{key}_monotone"] = bool(np.all(np.diff(v) <= 0))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--covertype-n", type=int, default=None)
    args = parser.parse_args(argv)
    n_seeds = args.seeds or (2 if args.quick else 10)
    covertype_n = args.covertype_n or (20000 if args.quick else 100000)
    stem = "objective_perturbation_quick" if args.quick else "objective_perturbation"
    warnings.filterwarnings("ignore", category=PrivacyLeakWarning)
    t_start = time.perf_counter()
    env = environment(1)
    data = load_datasets(covertype_n)
    results = {"setting": dict(epsilons=EPSILONS, delta=DELTA, alpha=ALPHA,
                               data_norm=DATA_NORM, seeds=n_seeds, covertype_n=covertype_n,
                               objective="mean logistic + (alpha/2)||w||^2, intercept "
                                         "unpenalised (skdp = diffprivlib's non-noisy part)"),
               "environment": env, "datasets": {}, "runs": [], "noise_curves": {}}
    with threadpool_limits(limits=1):
        for ds in DATASETS:
            X_tr, X_te, y_tr, y_te = data[ds]["data"]
            t = 2.0 * y_tr - 1.0
            Xa = augment(X_tr)
            theta_star, info = solve_optimum("logistic", Xa, t, ALPHA,
                                             penalize_intercept=False)
            F_star = info["F_star"]
            F0 = objective("logistic", Xa, t, np.zeros(Xa.shape[1]), ALPHA, False)
            results["datasets"][ds] = dict(
                n_train=X_tr.shape[0], n_test=X_te.shape[0], n_features=X_tr.shape[1],
                preprocessing=data[ds]["preprocessing"], F_star=F_star,
                excess_of_zero=F0 - F_star, optimum=info)
            _log(f"{ds}: n={X_tr.shape[0]} d={X_tr.shape[1]} F*={F_star:.8f} "
                 f"(grad {info.get('grad_norm'):.1e}); F(0)-F*={F0 - F_star:.3e}")
            for eps in EPSILONS:
                for method in METHODS:
                    for seed in range(n_seeds):
                        theta, sec = fit(method, X_tr, y_tr, eps, seed)
                        excess = objective("logistic", Xa, t, theta, ALPHA, False) - F_star
                        acc = float(np.mean(((augment(X_te) @ theta) > 0) == (y_te > 0.5)))
                        results["runs"].append(dict(dataset=ds, method=method, epsilon=eps,
                                                    seed=seed, excess=float(excess),
                                                    accuracy=acc, seconds=sec))
                    med = np.median([r["excess"] for r in results["runs"]
                                     if r["dataset"] == ds and r["method"] == method
                                     and r["epsilon"] == eps])
                    _log(f"  eps={eps:<4} {method:<30} median excess {med:.3e}")
            results["noise_curves"][ds] = noise_curves(X_tr.shape[0], X_tr.shape[1])
    results["summary"] = summarise(results)
    results["seconds"] = time.perf_counter() - t_start
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(_jsonable(results), indent=1))
    write_markdown(RESULTS / f"{stem}.md", results)
    write_plot(RESULTS / f"{stem}.png", results)
    print((RESULTS / f"{stem}.md").read_text())
    return results


def summarise(res):
    table = {}
    for ds in DATASETS:
        for method in METHODS:
            for eps in EPSILONS:
                rows = [r for r in res["runs"] if r["dataset"] == ds and r["method"] == method
                        and r["epsilon"] == eps]
                ex = np.array([r["excess"] for r in rows])
                table[f"{ds}|{method}|{eps}"] = dict(
                    median_excess=float(np.median(ex)), q25=float(np.quantile(ex, 0.25)),
                    q75=float(np.quantile(ex, 0.75)),
                    accuracy=float(np.median([r["accuracy"] for r in rows])),
                    seconds=float(np.median([r["seconds"] for r in rows])))
    verdict = {}
    for ds in DATASETS:
        for method in METHODS[:2]:
            wins = [table[f"{ds}|{method}|{e}"]["median_excess"]
                    < table[f"{ds}|diffprivlib|{e}"]["median_excess"] for e in EPSILONS]
            curve = [table[f"{ds}|{method}|{e}"]["median_excess"] for e in EPSILONS]
            verdict[f"{ds}|{method}"] = dict(
                lower_than_peer_at_every_epsilon=bool(all(wins)), wins=wins,
                median_excess_non_increasing=bool(np.all(np.diff(curve) <= 0)),
                planned_noise_monotone=res["noise_curves"][ds][f"{method}_monotone"])
    return dict(table=table, verdict=verdict)


def write_markdown(path, res):
    s = res["setting"]
    lines = [
        "# Objective perturbation vs diffprivlib (issue 5 (a))", "",
        f"Logistic regression, alpha = {s['alpha']}, delta = {s['delta']} (ours; the peer is "
        f"pure epsilon-DP), data_norm = 1, fit_intercept = True, {s['seeds']} seeds, "
        f"covertype-like n = {s['covertype_n']} (75% train). Objective: {s['objective']}.",
        "Entries: median excess empirical risk F(theta) - F* on the training split "
        "(25%-75% quantiles), test accuracy in brackets.", "",
        f"Environment: skdp {res['environment'].get('git_commit')}, numpy "
        f"{res['environment']['numpy']}, scipy {res['environment']['scipy']}, diffprivlib "
        f"{res['environment']['diffprivlib']['version']}; 1 BLAS thread; total "
        f"{res.get('seconds', 0):.0f} s.", ""]
    table = res["summary"]["table"]
    for ds in DATASETS:
        d = res["datasets"][ds]
        lines += [f"## {ds} (n_train = {d['n_train']}, d = {d['n_features']}, "
                  f"F(0) - F* = {d['excess_of_zero']:.3g})", "",
                  "| epsilon | " + " | ".join(METHODS) + " |",
                  "|---|" + "---|" * len(METHODS)]
        for eps in EPSILONS:
            cells = []
            for m in METHODS:
                t = table[f"{ds}|{m}|{eps}"]
                cells.append(f"{t['median_excess']:.3g} ({t['q25']:.2g}-{t['q75']:.2g}) "
                             f"[{t['accuracy']:.3f}]")
            lines.append(f"| {eps} | " + " | ".join(cells) + " |")
        lines.append("")
        for m in METHODS[:2]:
            v = res["summary"]["verdict"][f"{ds}|{m}"]
            lines.append(f"- {m}: lower median excess risk than diffprivlib at every epsilon: "
                         f"**{'yes' if v['lower_than_peer_at_every_epsilon'] else 'no'}** "
                         f"({sum(v['wins'])}/{len(v['wins'])}); median excess non-increasing "
                         f"in epsilon: {v['median_excess_non_increasing']}; planned noise "
                         f"monotone on the fine grid 0.05..20: {v['planned_noise_monotone']}.")
        nc = res["noise_curves"][ds]
        lines.append(f"- diffprivlib's noise scale monotone on the same grid: "
                     f"{nc['diffprivlib_scale_monotone']}.")
        lines.append("")
    lines += [
        "## Notes", "",
        "- Ours is (epsilon, 1e-5)-DP under replace-one; the peer claims pure epsilon-DP "
        "(its intercept is unpenalised although its proof needs a strongly convex "
        "regulariser in every coordinate, and it uses 0.25 sqrt(X^2+1) for the Hessian "
        "bound c X^2; see peer_objective_perturbation.py). The comparison is on identical "
        "data, objective and epsilon.",
        "- Test accuracy (in brackets) is reported, not targeted. "
        + accuracy_note(res),
        "- 'Planned noise': the std of the linear noise B (ours) and the scale "
        "2 sqrt(X^2+1)/eps' of the peer's Gamma-norm noise, on epsilon in 0.05..20; the "
        "peer's eps' switches from eps - 2 ln(1 + c C) to eps/2, which makes its noise "
        "jump UP as epsilon grows past the switch.", ""]
    path.write_text("\n".join(lines))


def accuracy_note(res):
    """Where ours has a lower median test accuracy than the peer (honest reporting)."""
    table = res["summary"]["table"]
    worse = [f"{ds} eps={e}" for ds in DATASETS for e in EPSILONS
             if table[f"{ds}|objective_perturbation|{e}"]["accuracy"]
             < table[f"{ds}|diffprivlib|{e}"]["accuracy"]]
    if not worse:
        return "Ours is at least as accurate as the peer everywhere."
    return ("Ours has a LOWER median test accuracy than the peer at: " + ", ".join(worse)
            + ". There the noise-radius term of Lambda shrinks ours towards the "
            "intercept-only model (low risk, majority-class predictions), while the peer's "
            "far riskier, over-confident models keep a useful direction.")


def write_plot(path, res):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return
    fig, axes = plt.subplots(2, len(DATASETS), figsize=(5 * len(DATASETS), 8))
    table = res["summary"]["table"]
    for j, ds in enumerate(DATASETS):
        ax = axes[0, j]
        for m in METHODS:
            med = [table[f"{ds}|{m}|{e}"]["median_excess"] for e in EPSILONS]
            lo = [table[f"{ds}|{m}|{e}"]["q25"] for e in EPSILONS]
            hi = [table[f"{ds}|{m}|{e}"]["q75"] for e in EPSILONS]
            ax.plot(EPSILONS, med, marker="o", label=m)
            ax.fill_between(EPSILONS, lo, hi, alpha=0.2)
        ax.set(xscale="log", yscale="log", xlabel="epsilon", ylabel="excess empirical risk",
               title=ds)
        ax.legend(fontsize=7)
        ax = axes[1, j]
        nc = res["noise_curves"][ds]
        ax.plot(nc["epsilon"], nc["diffprivlib_scale"], label="diffprivlib scale")
        ax.plot(nc["epsilon"], nc["objective_perturbation"], label="objective_perturbation")
        ax.plot(nc["epsilon"], nc["approx_objective_perturbation"],
                label="approx_objective_perturbation", linestyle="--")
        ax.set(xscale="log", yscale="log", xlabel="epsilon", ylabel="noise scale (sum form)",
               title=f"{ds}: planned noise")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
