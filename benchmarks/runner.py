"""Run a profile: every solver on every scenario it supports, the baselines, the scaling
curves, the l_p rates and the cold-start fits. Reads skdp's public API only."""

from __future__ import annotations

import datetime
import importlib
import json
import os
import platform
import resource
import subprocess
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import sklearn
from threadpoolctl import threadpool_limits

import skdp
from benchmarks import config, datasets
from benchmarks.config import Profile, Scenario
from benchmarks.measure import (
    Objective,
    _labels,
    _metric,
    _options,
    certified_optimum,
    input_bytes,
    inside,
    paired_fit,
    peak_memory,
    run_fresh,
    timed_fit,
)
from skdp.exceptions import IncompatibleSolverError
from skdp.losses import HuberLoss, row_norms
from skdp.solvers import SOLVERS

ROOT = Path(__file__).resolve().parent


def run_scenario(sc: Scenario, profile: Profile, seed: int, log) -> dict:
    """Every solver and baseline on one scenario and seed."""
    n = sc.sizes.get(profile.name, 0)
    Xtr, ytr, Xte, yte = sc.load(n, profile.sparse_d, seed)
    n, d = Xtr.shape
    size, dense = input_bytes(Xtr), n * d * 8
    optima: dict = {}

    def excess(fit_intercept: bool, kind: str, params: dict, b_scale: float, coef, b):
        key = (fit_intercept, kind, params.get("radius", np.inf), b_scale)
        free = (fit_intercept, "none", np.inf, b_scale)
        f = Objective(sc, Xtr, ytr, fit_intercept, b_scale)
        if key not in optima:
            if free in optima and inside(optima[free].theta, kind, key[2]):
                optima[key] = optima[free]  # the ball does not cut the optimum
            else:
                optima[key] = certified_optimum(f, kind, key[2])
                if not optima[key].cut:
                    optima[free] = optima[key]  # the unconstrained optimum, reusable
        return f.value(coef, b) - optima[key].value, optima[key].certificate

    out = {"runs": [], "skipped": [], "baselines": []}
    sk_times = []

    def sklearn_fit():
        est, t = timed_fit(lambda: sc.sklearn(n, d), Xtr, ytr, profile.repeats)
        sk_times.append(t)
        return est

    est = sklearn_fit()
    kind0, params0 = sc.constraints[0]
    radius0 = params0.get("radius", np.inf)
    fi = sc.params.get("fit_intercept", True)
    ex, cert = excess(fi, kind0, params0, np.inf, est.coef_,
                      getattr(est, "intercept_", 0.0))
    out["baselines"].append(dict(method="sklearn", estimator=type(est).__name__,
                                 metric=_metric(est, Xte, yte), excess_risk=ex))
    zero = excess(fi, kind0, params0, np.inf, np.zeros(d), 0.0)[0]
    yte_ = _labels(sc, yte)[:, 0]
    out["baselines"].append(dict(
        method="zero model", excess_risk=zero,
        metric=float(np.mean(yte_ < 0)) if sc.loss == "logistic"
        else float(1 - np.sum(yte_**2) / np.sum((yte_ - yte_.mean()) ** 2))))
    out["baselines"].append(diffprivlib_baseline(sc, Xtr, ytr, Xte, yte, profile))
    log(f"  sklearn {sk_times[0]:.3f}s, optimum certificate {cert:.1e}, radius {radius0}")

    for name, cls in SOLVERS.items():
        if sc.loss not in cls.capabilities.losses:
            out["skipped"].append(dict(solver=name, reason=f"loss {sc.loss!r} not declared"))
            continue
        reasons = []
        for kind, params in _options(sc, cls.capabilities):
            try:  # the compatibility check runs before any data is read
                out["runs"] += _run_solver(sc, name, cls, (kind, params), Xtr, ytr, Xte, yte,
                                           profile, seed, excess, size, dense, log,
                                           lambda: sc.sklearn(n, d))
                break
            except IncompatibleSolverError as exc:
                reasons.append(str(exc))
            except Exception as exc:
                # A declared solver that fails is a result: recorded (a miss of the
                # time target on covertype), never dropped.
                reason = f"error: {type(exc).__name__}: {exc}"
                log(f"  {name}: {reason}")
                out["skipped"].append(dict(solver=name, reason=reason, error=True))
                break
        else:
            out["skipped"].append(dict(solver=name, reason=" | ".join(dict.fromkeys(reasons))
                                       or "no constraint option of the scenario declared"))
    sklearn_fit()  # again after the solvers: the machine's load drifts
    out["sklearn_seconds"] = float(np.median(sk_times))
    out["baselines"][0]["fit_seconds"] = out["sklearn_seconds"]
    for row in out["runs"]:
        row.setdefault("time_ratio", row["fit_seconds"] / out["sklearn_seconds"])
    out.update(scenario=sc.name, seed=seed, n=n, d=d, sparse=sp.issparse(Xtr),
               input_bytes=size, optimum_certificates={
                   "/".join(map(str, k)): v.certificate for k, v in optima.items()})
    return out


def _run_solver(sc, name, cls, chosen, Xtr, ytr, Xte, yte, profile, seed, excess, size,
                dense, log, make_sklearn) -> list[dict]:
    """One solver at every epsilon of the profile (memory traced at the last one); on the
    :data:`~benchmarks.config.PAIRED` scenarios, timed in pairs with scikit-learn."""
    kind, params = chosen
    rows = []
    for eps in profile.epsilons:
        make = partial(sc.estimator, epsilon=eps, solver=name, random_state=seed,
                       **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if sc.name in config.PAIRED and eps == max(profile.epsilons):  # the targets'
                est, t, ratio = paired_fit(make, make_sklearn, Xtr, ytr,
                                           config.PAIRED_REPEATS)
            else:
                (est, t), ratio = timed_fit(make, Xtr, ytr, profile.repeats), None
            peak = peak_memory(make, Xtr, ytr) if eps == profile.epsilons[-1] and \
                sc.name in config.MEASURED else None
        fi = params.get("fit_intercept", True)
        b_scale = est.data_norm_ if cls.capabilities.intercept == "penalized" and fi \
            else np.inf
        ex, cert = excess(fi, kind, params, b_scale, est.coef_, est.intercept_)
        row = dict(solver=name, constraint=kind, fit_intercept=fi, epsilon=eps,
                   fit_seconds=t, metric=_metric(est, Xte, yte), excess_risk=ex,
                   certificate=cert, n_iter=int(np.max(est.n_iter_)),
                   epsilon_spent=float(est.privacy_spent_.epsilon),
                   peak_ratio=None if peak is None else peak / size,
                   peak_dense_ratio=None if peak is None else peak / dense)
        if ratio is not None:
            row["time_ratio"] = ratio
        rows.append(row)
        log(f"  {name:<34} eps={eps:<4} {t:8.3f}s excess={ex:.2e} "
            f"metric={row['metric']:.3f}"
            + ("" if peak is None else f" mem={row['peak_ratio']:.2f}x"))
    return rows


def diffprivlib_baseline(sc: Scenario, Xtr, ytr, Xte, yte, profile: Profile) -> dict:
    """diffprivlib's model at the last epsilon, or the reason it is skipped."""
    row = dict(method="diffprivlib")
    try:
        import diffprivlib.models as dpl

        eps = profile.epsilons[-1]
        norm = float(np.max(row_norms(Xtr)))  # benchmark only: not private
        est = (dpl.LogisticRegression(epsilon=eps, data_norm=norm,
                                      C=1.0 / (sc.alpha * len(ytr)))
               if sc.loss == "logistic" else
               dpl.LinearRegression(epsilon=eps, bounds_X=(-1.0, 1.0),
                                    bounds_y=(float(ytr.min()), float(ytr.max()))))
        start = time.perf_counter()
        est.fit(Xtr, ytr)
        row.update(fit_seconds=time.perf_counter() - start, metric=float(est.score(Xte, yte)),
                   epsilon=eps)
    except Exception as exc:
        row["skipped"] = f"{type(exc).__name__}: {exc}"
    return row


# Scaling curves, rates, cold start, float32 ----------------------------------------------

def slope(x, y) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def scaling(profile: Profile, log) -> dict:
    """Fit time and peak memory against n (covertype-shaped) and d (sparse)."""
    rows, slopes = [], []
    sc = config.SCENARIOS["covertype"]
    for n in profile.scaling_n:
        X, y = datasets.make_covertype_like(n, 0)
        for name in config.SCALING_SOLVERS:
            rows.append(_scaling_point(sc, name, X, y, profile, "n", n))
            log(f"  n={n:<8} {name:<12} {rows[-1]['fit_seconds']:.3f}s "
                f"mem={rows[-1]['peak_ratio']:.2f}x passes={rows[-1]['n_iter']}")
        del X, y
    sc = config.SCENARIOS["sparse"]
    for d in profile.scaling_d:
        X, y = datasets.make_sparse_regression(config.SCALING_D_ROWS, max(d, 11), 0)
        for name in config.SCALING_D_SOLVERS:
            rows.append(_scaling_point(sc, name, X, y, profile, "d", X.shape[1]))
            log(f"  d={d:<8} {name:<12} {rows[-1]['fit_seconds']:.3f}s "
                f"mem={rows[-1]['peak_ratio']:.2f}x")
    for axis in ("n", "d"):
        for name in dict.fromkeys(r["solver"] for r in rows if r["axis"] == axis):
            pts = [r for r in rows if r["axis"] == axis and r["solver"] == name]
            sizes = [r["size"] for r in pts]
            claim, claimed = config.SCALING_SOLVERS.get(name, ("-", None))
            if claimed == "passes":  # n per pass times the passes the solver chose
                claimed = 1.0 + slope(sizes, [r["n_iter"] for r in pts])
            slopes.append(dict(solver=name, axis=axis, sizes=sizes, claim=claim if axis ==
                               "n" else "-", claimed_slope=claimed if axis == "n" else None,
                               time_slope=slope(sizes, [r["fit_seconds"] for r in pts]),
                               memory_slope=slope(sizes, [max(r["peak_bytes"], 1)
                                                          for r in pts])))
    return {"points": rows, "slopes": slopes}


def _scaling_point(sc: Scenario, name: str, X, y, profile: Profile, axis: str, size: int):
    kind, params = _options(sc, SOLVERS[name].capabilities)[0]
    make = partial(sc.estimator, epsilon=1.0, solver=name, random_state=0,
                   **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The fastest of up to 5 fits: another job's load only adds time, and one slow
        # fit of the smallest n (15 ms) moved the fitted slope by 0.1.
        est, t = timed_fit(make, X, y, 5, statistic=min)
        peak = peak_memory(make, X, y)
    return dict(solver=name, axis=axis, size=size, fit_seconds=t, peak_bytes=peak,
                peak_ratio=peak / input_bytes(X), n_iter=int(np.max(est.n_iter_)))


def rates(profile: Profile, log) -> dict:
    """Excess population risk against d for the l_p solvers (Su, Zhao & Wang), Huber
    loss with threshold 1, unconstrained, rows bounded by 1 in l_q."""
    from skdp.linear_model import DPHuberRegressor

    rng = np.random.default_rng(12345)
    t, u = rng.uniform(-1, 1, 200_000), rng.uniform(-0.5, 0.5, 200_000)
    loss = HuberLoss(1.0)

    def huber(r: np.ndarray) -> np.ndarray:
        return np.ravel(loss.value(r[:, None], np.zeros((r.size, 1))))

    base = huber(-u).mean()
    rows, slopes = [], []
    for p, (name, claimed) in config.RATES.items():
        for d in profile.rates_d:
            excess = []
            for seed in profile.seeds:
                X, y, e = datasets.make_lp_instance(profile.rates_n, d, p, seed)
                est = DPHuberRegressor(config.RATES_EPSILON, config.RATES_DELTA, solver=name,
                                       alpha=0.0, huber_delta=1.0, y_bound=1.5, data_norm=1.0,
                                       data_norm_ord=p / (p - 1), fit_intercept=False,
                                       constraint="lp", p=p, radius=1.0e3, random_state=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(X, y)
                a = float(np.ravel(est.coef_) @ e)  # population risk depends on <w, e>
                excess.append(huber(t * (a - 1) - u).mean() - base)
            rows.append(dict(p=p, d=d, solver=name, excess=float(np.mean(excess)),
                             trivial=float(huber(-t - u).mean() - base)))
            log(f"  p={p:<5} d={d:<6} {name:<28} excess={rows[-1]['excess']:.3e}")
        pts = [r for r in rows if r["p"] == p]
        slopes.append(dict(p=p, solver=name, claimed_exponent=claimed,
                           measured_slope=slope([r["d"] for r in pts],
                                                [r["excess"] for r in pts])))
    return {"points": rows, "slopes": slopes, "n": profile.rates_n}


def cold_fit(name: str) -> tuple[str, object, float] | None:
    """``(scenario, estimator, seconds)`` of the first fit of :data:`config.COLD_ROWS`
    rows by solver ``name``, on the first of :data:`config.COLD_SCENARIOS` (and option)
    it accepts; ``None`` when it accepts none. Run in a fresh interpreter by the callers."""
    for sc_name in config.COLD_SCENARIOS:
        sc = config.SCENARIOS[sc_name]
        X, y, _, _ = sc.load(config.COLD_ROWS + 200, 100, 0)
        X, y = X[:config.COLD_ROWS], y[:config.COLD_ROWS]
        caps = SOLVERS[name].capabilities
        for _, params in _options(sc, caps) if sc.loss in caps.losses else ():
            est = sc.estimator(epsilon=1.0, solver=name, random_state=0, **params)
            start = time.perf_counter()
            try:  # a refused option fails before any data is read
                est.fit(X, y)
            except IncompatibleSolverError:
                continue
            return sc_name, est, time.perf_counter() - start
    return None


COLD_CODE = """
import sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
from benchmarks import runner
t1 = time.perf_counter()
found = runner.cold_fit(sys.argv[1])
if found:
    print(found[0], t1 - t0, found[2])
"""


def cold_starts(log) -> list[dict]:
    """The first fit of 500 rows after import, in a fresh interpreter per solver."""
    rows = []
    for name in SOLVERS:
        proc = run_fresh(COLD_CODE, name)
        if proc.returncode or not proc.stdout.strip():
            log(f"  {name}: no cold fit ({proc.stderr.strip()[-200:]})")
            continue
        sc_name, imp, fit = proc.stdout.split()[-3:]
        rows.append(dict(solver=name, scenario=sc_name, fit_seconds=float(fit),
                         import_seconds=float(imp)))
        log(f"  {name:<34} {sc_name:<10} first fit {float(fit):.3f}s "
            f"(import {float(imp):.2f}s)")
    return rows


def float32_memory(profile: Profile, log) -> list[dict]:
    """Peak extra memory of one fit on float32 covertype-shaped data, per solver."""
    sc = config.SCENARIOS["covertype"]
    X, y = datasets.make_covertype_like(sc.sizes[profile.name], 0)
    X = X.astype(np.float32)
    rows = []
    for name, cls in SOLVERS.items():
        if sc.loss not in cls.capabilities.losses:
            continue
        for kind, params in _options(sc, cls.capabilities):
            make = partial(sc.estimator, epsilon=1.0, solver=name, random_state=0,
                           **params)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    peak = peak_memory(make, X, y)
            except IncompatibleSolverError:
                continue
            rows.append(dict(solver=name, constraint=kind, peak_ratio=peak / X.nbytes))
            log(f"  {name:<34} float32 mem={rows[-1]['peak_ratio']:.2f}x")
            break
    return rows


def _file_rows(path: str, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of a ``.npy`` file, read where this runs (a dask worker)."""
    return np.array(np.load(path, mmap_mode="r")[start:stop])


def _write_logistic_file(path: Path, n: int, d: int, chunk: int) -> np.ndarray:
    """An ``n x d`` float64 ``.npy`` file of rows on the unit sphere, written chunk by chunk
    (never whole in memory), and its {0, 1} labels from a logistic model."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=d)
    w *= 3.0 / np.linalg.norm(w)
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, d))
    y = np.empty(n, dtype=np.int8)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        rows = rng.normal(size=(stop - start, d))
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        X[start:stop] = rows
        y[start:stop] = rng.random(stop - start) < 1.0 / (1.0 + np.exp(-(rows @ w)))
    X.flush()
    del X
    return y


def out_of_core(profile: Profile, log) -> dict:
    """A memory-mapped ``n x 50`` float64 default fit (DP Newton at these sizes: the time,
    then the peak traced allocations of a second fit, over the matrix) and the same file,
    read chunk by chunk by the workers, fitted on a two-process dask ``LocalCluster``: the
    coefficients' relative difference and the ledgers. The file goes to ``$TMPDIR`` (2 GB
    in the full profile)."""
    import tempfile

    n, d, chunk = profile.out_of_core_n, config.OUT_OF_CORE_D, config.OUT_OF_CORE_CHUNK
    make = partial(skdp.DPLogisticRegression, epsilon=1.0, delta=1e-6, data_norm=1.0,
                   classes=[0, 1], random_state=0)
    out: dict = dict(n=n, d=d, chunk_rows=chunk)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(tmp) / "X.npy"
        y = _write_logistic_file(path, n, d, chunk)
        X = np.load(path, mmap_mode="r")
        out["matrix_bytes"] = X.nbytes
        est = make()
        t0 = time.perf_counter()  # timed without tracemalloc (it slows a fit by ~25%)
        est.fit(X, y)
        out["memmap_seconds"] = time.perf_counter() - t0
        out["peak_bytes"] = peak_memory(make, X, y)  # a second, traced fit
        out["peak_ratio"] = out["peak_bytes"] / X.nbytes
        out["n_iter"] = int(est.n_iter_)
        log(f"  memmap {n} x {d}: {out['memmap_seconds']:.1f} s, {est.n_iter_} passes, "
            f"peak {out['peak_ratio']:.3f}x the matrix")
        try:
            import dask.array as da
            import distributed
            from dask import delayed
        except ImportError as exc:
            out["cluster"] = f"skipped: {type(exc).__name__}: {exc}"
            log(f"  LocalCluster {out['cluster']}")
            return out
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            parts = [da.from_delayed(delayed(_file_rows)(str(path), s, min(s + chunk, n)),
                                     shape=(min(s + chunk, n) - s, d), dtype=np.float64)
                     for s in range(0, n, chunk)]
            Xd = da.concatenate(parts).persist()
            distributed.wait(Xd)
            other = make()
            t0 = time.perf_counter()
            other.fit(Xd, y)
            out["cluster_seconds"] = time.perf_counter() - t0
            out["cluster_n_iter"] = int(other.n_iter_)
        a = np.append(np.ravel(est.coef_), est.intercept_)
        b = np.append(np.ravel(other.coef_), other.intercept_)
        out["relative_difference"] = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
        out["same_ledger"] = bool(other.privacy_spent_ == est.privacy_spent_
                                  and other.privacy_plan_.event == est.privacy_plan_.event)
        out["cluster"] = "ran"
        log(f"  LocalCluster (2 workers): {out['cluster_seconds']:.1f} s, relative difference "
            f"{out['relative_difference']:.2e}, same ledger: {out['same_ledger']}")
    return out


def _module_part(module: str, function: str):
    """The part ``benchmarks.<module>.<function>(profile, log)``, imported when it runs
    (a part's own dependencies load only for a run that asks for it)."""
    def run(profile: Profile, log) -> list[dict]:
        return getattr(importlib.import_module(f"benchmarks.{module}"), function)(profile, log)
    return run


_tails = _module_part("tails", "tails")
_selection = _module_part("selection", "selection")
_pipelines = _module_part("pipelines", "pipelines")
_intervals = _module_part("intervals", "intervals")
_default_logistic = _module_part("default_logistic", "default_logistic")
_probe = _module_part("probe", "run")


def defaults(profile: Profile, log) -> list[dict]:
    """Every workflow of :data:`config.WORKFLOWS` on raw bundled data, 70/30 splits: test
    accuracy or R^2 and the spend each fit reports (its ``privacy_spent_``, or the
    pipeline's total)."""
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.metrics import r2_score
    from sklearn.model_selection import train_test_split

    # Diabetes as scikit-learn ships it: features already centred and scaled (with the
    # data set's own statistics), the target raw (25..346).
    data = {"breast_cancer": load_breast_cancer(return_X_y=True),
            "diabetes": load_diabetes(return_X_y=True)}
    rows = []
    for eps in config.DEFAULTS_EPSILONS:
        for flow in config.WORKFLOWS:
            X, y = data[flow.data]
            scores, spent = [], []
            for seed in range(profile.defaults_seeds):
                Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
                if flow.make is None:  # the trivial baseline
                    if flow.data == "diabetes":
                        scores.append(r2_score(yte, np.full(len(yte), ytr.mean())))
                    else:
                        scores.append(float(np.mean(yte == np.bincount(ytr).argmax())))
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = flow.make(eps, seed).fit(Xtr, ytr)
                scores.append(float(model.score(Xte, yte)))
                total = skdp.privacy_spent(model)
                spent.append((total.epsilon, total.delta))
            worst = max(spent) if spent else (0.0, 0.0)
            rows.append(dict(workflow=flow.name, data=flow.data, epsilon=eps,
                             scores=scores, median=float(np.median(scores)),
                             target=flow.targets.get(eps), spent_epsilon=worst[0],
                             spent_delta=max((d for _, d in spent), default=0.0)))
            log(f"  {flow.data:<13} eps={eps:g} {flow.name:<60} {rows[-1]['median']:.3f}")
    return rows


# The whole run ---------------------------------------------------------------------------

def environment() -> dict:
    # "-dirty" when the working tree (results aside) differs from the commit: its numbers
    # are not the commit's.
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    changed = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!benchmarks/results"],
                             capture_output=True, text=True, cwd=ROOT.parent).stdout.strip()
    commit += "-dirty" if changed else ""
    # The compiled kernels (skdp[numba]) change the truncated solvers' times: whether they
    # load here (loading them runs a tiny warm-up fit of the kernel).
    from skdp.solvers import _compiled

    if not _compiled.enabled():
        numba = "off (not installed, or SKDP_NUMBA)"
    else:
        from importlib.metadata import version

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = _compiled.truncated_chunk() is not None
        numba = version("numba") + ("" if loaded else " (installed, kernels fail to load)")
    return dict(date=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                commit=commit, python=platform.python_version(), numpy=np.__version__,
                numba=numba,
                sklearn=sklearn.__version__, skdp=getattr(skdp, "__version__", "?"),
                cpus=os.cpu_count(), machine=platform.machine(), blas_threads=1)


def run(profile: Profile, scenarios: list[str] | None = None, log=print,
        parts: tuple[str, ...] | None = None) -> dict:
    """Everything of one profile (one BLAS thread throughout), or only ``parts``."""
    start, cpu = time.perf_counter(), time.process_time()
    # --scenario alone reruns those scenarios only and keeps the rest of the last run.
    parts = parts or (("scenarios",) if scenarios else
                      tuple(p for p in config.PARTS if p not in profile.skipped))
    results = dict(meta=dict(profile=profile.name, load_before=os.getloadavg()[0],
                             **environment()), scenarios=[])
    previous = ROOT / "results" / f"suite_{profile.name}.json"
    here = dict(commit=results["meta"]["commit"], date=results["meta"]["date"],
                numba=results["meta"]["numba"], sklearn=results["meta"]["sklearn"])
    results["meta"]["part_runs"] = {p: here for p in parts}
    old = json.loads(previous.read_text()) if previous.exists() else {}
    if set(parts) != set(config.PARTS) and old:
        # A partial run keeps the other (non-empty) parts of the profile's last results,
        # each with the run it came from.
        origin = old["meta"].get("part_runs", {})
        for p in config.PARTS:
            if p not in parts and old.get(p):
                results[p] = old[p]
                results["meta"]["part_runs"][p] = origin.get(
                    p, dict(commit=old["meta"]["commit"], date=old["meta"]["date"]))
    with threadpool_limits(limits=1):
        if "scenarios" in parts:
            # Scenarios not rerun keep their blocks (and the run they came from).
            origin = old.get("meta", {}).get("part_runs", {}).get("scenarios", here)
            results["scenarios"] = [{"run": origin, **b} for b in old.get("scenarios", [])
                                    if scenarios and b["scenario"] not in scenarios]
            for name in scenarios or config.SCENARIOS:
                sc = config.SCENARIOS[name]
                for seed in profile.seeds:
                    log(f"{name} (seed {seed})")
                    results["scenarios"].append(
                        dict(run_scenario(sc, profile, seed, log), run=here))
        for part, label, fn in (("scaling", "scaling", scaling), ("rates", "l_p rates", rates),
                                ("float32", "float32 memory", float32_memory),
                                ("defaults", "defaults on raw bundled data", defaults),
                                ("tails", "tails of default fits (unseeded)", _tails),
                                ("selection", "private model selection (unseeded)",
                                 _selection),
                                ("pipelines", "private pipelines, DPPCA and DPGaussianNB "
                                 "(unseeded)", _pipelines),
                                ("intervals", "coverage of the confidence intervals "
                                 "(unseeded)", _intervals),
                                ("default_logistic", "the default logistic regression on "
                                 "covertype (unseeded)", _default_logistic),
                                ("probe", "a DP linear probe on NumPy and PyTorch "
                                 "(unseeded)", _probe)):
            if part in parts:
                log(label)
                results[part] = fn(profile, log)
    if "cold" in parts:
        log("cold starts")
        results["cold"] = cold_starts(log)
    if "out_of_core" in parts:  # its own processes and BLAS pools (a dask cluster)
        log("out of core")
        with threadpool_limits(limits=1):
            results["out_of_core"] = out_of_core(profile, log)
    if "floors" in parts:
        from benchmarks import floors

        log("floors: the default schedules in plain numpy")
        with threadpool_limits(limits=1):
            results["floors"] = floors.time_floors(profile, log)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Other jobs on a shared machine stretch the wall time; the CPU time does not move.
    results["meta"].update(seconds=time.perf_counter() - start, load_after=os.getloadavg()[0],
                           cpu_seconds=time.process_time() - cpu + children.ru_utime
                           + children.ru_stime)
    return results


def save(results: dict) -> Path:
    path = ROOT / "results" / f"suite_{results['meta']['profile']}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=float))
    return path
