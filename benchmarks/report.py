"""The one results writer (markdown, plots, README tables) and the threshold check."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import numpy as np

from benchmarks import config

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
START, END = "<!-- suite-results: written by `python -m benchmarks` -->", \
    "<!-- end of suite-results -->"


def _median(rows: list[dict], key: str) -> float:
    values = [r[key] for r in rows if r.get(key) is not None]
    return float(np.median(values)) if values else float("nan")


def _cells(results: dict) -> dict:
    """``(scenario, solver, epsilon) -> runs over seeds`` (and the baselines)."""
    cells: dict = {}
    for block in results["scenarios"]:
        for r in block["runs"]:
            cells.setdefault((block["scenario"], r["solver"], r["epsilon"]), []).append(r)
    return cells


def evaluate(results: dict) -> list[dict]:
    """Every declared target with its measured value and whether it passes."""
    cells = _cells(results)
    eps = max((e for (_, _, e) in cells), default=1.0)

    def worst(values: dict) -> tuple[float, str]:
        """Largest value and the solvers above the bound's row (filled by the caller)."""
        if not values:
            return float("nan"), "no measurement"
        name = max(values, key=values.get)
        return values[name], f"worst: {name}"

    ratio = {s: _median(cells.get(("covertype", s, eps), []), "time_ratio")
             for s in ("gd", "svrg", "svrg++")}
    per_solver_time: dict = {}
    dense_mem: dict = {}
    sparse_mem: dict = {}
    elsewhere: dict = {}  # the time ratios of the other measured scenarios (information)
    unmeasured: dict = {}  # registered solvers without a covertype time, and why
    for block in results["scenarios"]:
        if block["scenario"] == "covertype":
            for skip in block.get("skipped", []):
                if skip.get("error"):  # a declared solver that failed: a miss
                    per_solver_time[skip["solver"]] = math.inf
                else:
                    unmeasured[skip["solver"]] = skip["reason"]
    for (sc, solver, e), rows in cells.items():
        if sc not in config.MEASURED or e != eps:
            continue
        # The issue states the time targets on the covertype-shaped task.
        times = per_solver_time if sc == "covertype" else elsewhere
        key = solver if sc == "covertype" else f"{solver} on {sc}"
        times[key] = max(times.get(key, 0), _median(rows, "time_ratio"))
        if sc == "sparse":
            sparse_mem[solver] = _median(rows, "peak_dense_ratio")
        else:
            dense_mem[solver] = max(dense_mem.get(solver, 0), _median(rows, "peak_ratio"))
    cold = {r["solver"]: r["fit_seconds"] for r in results.get("cold", [])}
    f32 = {r["solver"]: r["peak_ratio"] for r in results.get("float32", [])}
    fw = [s for s in results.get("scaling", {}).get("slopes", [])
          if s["solver"] == "frank_wolfe" and s["axis"] == "n"]
    ooc = results.get("out_of_core") or {}
    ooc_size = f"n = {ooc.get('n', 0):g} x {ooc.get('d', 0)}"
    measured = [
        (_median(cells.get(("covertype", "gd", eps), []), "excess_risk"), "median over seeds"),
        (ratio["gd"], ""), (ratio["svrg"], ""), (ratio["svrg++"], ""),
        worst(per_solver_time), worst(cold), worst(dense_mem), worst(sparse_mem), worst(f32),
        (fw[0]["time_slope"], f"n = {fw[0]['sizes'][0]:g}..{fw[0]['sizes'][-1]:g}") if fw
        else (float("nan"), "not run"),
        (ooc.get("peak_ratio", float("nan")), f"{ooc_size}, {ooc.get('n_iter')} passes"),
        # The fit matches only with the same ledger too: a different ledger is a miss.
        (ooc.get("relative_difference", float("nan")) if ooc.get("same_ledger", True)
         else float("nan"),
         f"{ooc_size}; same ledger: {ooc['same_ledger']}" if "same_ledger" in ooc
         else ooc.get("cluster", "")),
    ]
    by_solver = [None, None, None, None, per_solver_time, cold, dense_mem, sparse_mem, f32,
                 None, None, None]
    out = []
    for flow in results.get("defaults", []):  # issue 19: median scores of the workflows
        if flow["target"] is not None:
            out.append(dict(target=f"{flow['workflow']} on raw {flow['data']} "
                                   f"(epsilon = {flow['epsilon']:g})",
                            bound=f">= {flow['target']:g}", value=flow["median"],
                            passed=bool(flow["median"] >= flow["target"]),
                            detail=f"median of {len(flow['scores'])} seeds"))
    for row in results.get("pipelines") or []:  # issue 40: private pipelines, peers
        if "target" in row:
            out.append(dict(target=f"{row['name']} on {row['data']} (total epsilon = "
                                   f"{row['epsilon']:g})",
                            bound=f">= {row['target']:g}", value=row["median"],
                            passed=bool(row["met"]),
                            detail=f"median of {row['runs']} unseeded runs"))
        if row.get("peer") and "median" in row:
            out.append(dict(target=f"{row['name']} on {row['data']} above {row['peer']} "
                                   f"(epsilon = {row['epsilon']:g})",
                            bound="> peer's median", value=row["median"],
                            passed=row.get("beats_peer"),
                            detail="peer skipped" if row.get("beats_peer") is None
                            else f"median of {row['runs']} unseeded runs each"))
    for row in results.get("intervals") or []:  # issue 40: 95% interval coverage
        if math.isfinite(row["epsilon"]):
            worst = max(row["coverage"], key=lambda c: abs(c - 0.95))
            out.append(dict(target=f"95% interval coverage, {row['name']} (epsilon = "
                                   f"{row['epsilon']:g}), farthest coefficient",
                            bound="{:.3f}-{:.3f}".format(*row["band"]), value=worst,
                            passed=bool(row["met"]),
                            detail=f"{row['runs']} unseeded data sets"))
    if results.get("default_logistic"):  # issue 40: the default's excess, time, passes
        from benchmarks.default_logistic import target_rows

        out += target_rows(results["default_logistic"])
    for target, (value, detail), table in zip(config.TARGETS, measured, by_solver, strict=True):
        skipped = str(detail).startswith("skipped")  # e.g. no dask: the cluster fit
        if value != value and (not results.get(target.part) or skipped):
            # The part that measures it was not run (a partial run): neither pass nor miss.
            out.append(dict(target=target.name, bound=f"{target.bound:g}", value=value,
                            passed=None, detail=detail if skipped
                            else f"not run (part {target.part!r})"))
            continue
        if target.kind == "abs":
            ok = abs(value - target.centre) <= target.bound
            bound = f"{target.centre:g} +/- {target.bound:g}"
        else:
            ok = value <= target.bound
            bound = f"<= {target.bound:g}"
        if table:
            misses = sorted(k for k, v in table.items() if not v <= target.bound)
            detail += f"; misses: {', '.join(misses)}" if misses else "; all pass"
        if table is per_solver_time and unmeasured:
            detail += "; not run on covertype: " + ", ".join(
                f"{k} ({v})" for k, v in sorted(unmeasured.items()))
        if table is per_solver_time and elsewhere:
            far = sorted((k for k, v in elsewhere.items() if not v <= target.bound),
                         key=elsewhere.get, reverse=True)
            detail += (f"; other scenarios (not part of the target): worst "
                       f"{max(elsewhere.values()):.3g}x, above the bound: {', '.join(far)}")
        out.append(dict(target=target.name, bound=bound, value=value, passed=bool(ok),
                        detail=detail))
    return out


def check(path: Path | None = None) -> int:
    """Print every target and its value; ``1`` when one misses (or nothing was run)."""
    path = path or latest()
    if path is None:
        print("no results: run `python -m benchmarks run --profile quick` first")
        return 1
    results = json.loads(path.read_text())
    rows = evaluate(results)
    print(f"{path.name} ({results['meta']['profile']} profile, {results['meta']['date']}, "
          f"commit {results['meta']['commit']})")
    for r in rows:
        detail = f"; {r['detail']}" if r["detail"] else ""
        status = {True: "PASS", False: "MISS", None: "----"}[r["passed"]]
        print(f"{status}  {r['target']}: {r['value']:.4g} (target {r['bound']}{detail})")
    measured = [r for r in rows if r["passed"] is not None]
    print(f"{sum(r['passed'] for r in measured)} of {len(measured)} measured targets met"
          f" ({len(rows) - len(measured)} not run)")
    return 0 if measured and all(r["passed"] for r in measured) else 1


def latest() -> Path | None:
    """The most recently written results JSON."""
    found = sorted(RESULTS.glob("suite_*.json"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


# Markdown ------------------------------------------------------------------------------

def _f(value, fmt: str = ".3g") -> str:
    return "-" if value is None or (isinstance(value, float) and np.isnan(value)) \
        else format(value, fmt)


def _table(head: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(map(str, r)) + " |" for r in rows), ""]


def _section(marker: str, title: str, *paragraphs: str) -> list[str]:
    """A page section's opening: its marker (README.md takes the page between markers),
    its title and its introductory paragraphs; :func:`_end` closes it."""
    lines = [f"<!-- {marker} -->", f"## {title}", ""]
    for paragraph in paragraphs:
        lines += [paragraph, ""]
    return lines


def _end(marker: str) -> list[str]:
    return [f"<!-- end {marker} -->", ""]


def markdown(results: dict, stem: str) -> str:
    """The results page: targets, one table per scenario, scaling, rates, cold starts."""
    meta = results["meta"]
    cells = _cells(results)
    lines = [f"# Benchmark suite ({meta['profile']} profile)", "",
             f"`python -m benchmarks run --profile {meta['profile']}`: {meta['date']}, skdp "
             f"commit {meta['commit']}, {meta['cpus']} CPUs, one BLAS thread, "
             f"{meta['seconds']:.0f} s in all ({meta.get('cpu_seconds', 0):.0f} s of CPU; "
             f"load average {meta.get('load_before', 0):.1f} before, "
             f"{meta.get('load_after', 0):.1f} after: other jobs stretch the times). "
             f"Python {meta['python']}, numpy "
             f"{meta['numpy']}, scikit-learn {meta['sklearn']}, numba "
             f"{meta.get('numba', 'not recorded')}.", "",
             "## Targets", "", "<!-- targets -->", ""]
    lines += _table(["target", "bound", "value", "pass", "detail"],
                    [[r["target"], r["bound"], _f(r["value"], ".4g"),
                      {True: "pass", False: "**miss**", None: "-"}[r["passed"]], r["detail"]]
                     for r in evaluate(results)])
    lines += ["<!-- end targets -->", ""]
    for name, sc in config.SCENARIOS.items():
        blocks = [b for b in results["scenarios"] if b["scenario"] == name]
        if not blocks:
            continue
        b0 = blocks[0]
        run = b0.get("run", meta)
        lines += _section(f"scenario {name}", sc.title,
                          f"Run of commit {run['commit']} ({run['date']}).",
                          f"n = {b0['n']}, d = {b0['d']}{' (CSR)' if b0['sparse'] else ''}, "
                          f"{len(blocks)} seed(s); excess risk `F(w) - F*` of the objective "
                          "the solver's options define (see README); time as a ratio to "
                          "scikit-learn's fit "
                          f"({_median(blocks, 'sklearn_seconds'):.3g} s"
                          + (f"; at the largest epsilon the median ratio of "
                             f"{config.PAIRED_REPEATS} fits, each paired with a scikit-learn "
                             "fit next to it"
                             if name in config.PAIRED else "")
                          + "); peak extra memory over the input size.")
        rows = []
        for (sc_name, solver, eps), runs in cells.items():
            if sc_name != name:
                continue
            r = runs[0]
            rows.append([f"`{solver}`", r["constraint"] + ("" if r["fit_intercept"] else
                                                           ", no intercept"), _f(eps, "g"),
                         _f(_median(runs, "metric"), ".3f"),
                         _f(_median(runs, "excess_risk"), ".2e"),
                         _f(_median(runs, "fit_seconds")), _f(_median(runs, "time_ratio")),
                         _f(_median(runs, "peak_ratio"), ".2f"), r["n_iter"]])
        for k, base in enumerate(b0["baselines"]):
            label = base["method"] + (f" (`{base['estimator']}`)" if "estimator" in base
                                      else "")
            if "skipped" in base:
                rows.append([label, f"skipped: {base['skipped']}", *["-"] * 7])
            else:
                seeds = [b["baselines"][k] for b in blocks]  # medians over seeds, as above
                rows.append([label, "-", _f(base.get("epsilon"), "g"),
                             _f(_median(seeds, "metric"), ".3f"),
                             _f(_median(seeds, "excess_risk"), ".2e"),
                             _f(_median(seeds, "fit_seconds")),
                             "1" if base["method"] == "sklearn" else "-", "-", "-"])
        metric = "accuracy" if sc.loss == "logistic" else "R^2"
        lines += _table(["solver", "constraint", "epsilon", f"test {metric}", "excess risk",
                         "fit (s)", "time / sklearn", "memory / X", "n_iter_"], rows)
        if b0["skipped"]:
            lines += ["Not run (from the declarations and the estimators' checks): "
                      + "; ".join(f"`{s['solver']}`: {s['reason'][:160]}"
                                  for s in b0["skipped"]), ""]
        lines += _end(f"scenario {name}")
    scaling = results.get("scaling")
    if scaling:
        lines += _section("scaling", "Scaling",
                          "Fit time (the fastest of up to five fits) and peak extra memory "
                          "against n (covertype-shaped, d = "
                          f"54) and d (sparse, n = {config.SCALING_D_ROWS}); log-log slopes "
                          "by least squares. The claimed slope is the paper's gradient "
                          "complexity (`passes`: n per pass times the passes the solver "
                          "chose, `n_iter_`).")
        lines += _table(["solver", "axis", "sizes", "time slope", "claimed", "claim",
                         "memory slope"],
                        [[f"`{s['solver']}`", s["axis"], ", ".join(f"{v:g}" for v in s["sizes"]),
                          _f(s["time_slope"], ".2f"), _f(s["claimed_slope"], ".2f"),
                          s["claim"], _f(s["memory_slope"], ".2f")] for s in scaling["slopes"]])
        lines += [f"![scaling]({stem}_scaling.png)", "", *_end("scaling")]
    rates = results.get("rates")
    if rates:
        lines += _section("rates", "l_p rates",
                          f"Su, Zhao & Wang's rank-one instance (n = {rates['n']}, epsilon = "
                          f"{config.RATES_EPSILON:g}, delta = {config.RATES_DELTA:g}, Huber "
                          "loss): excess population risk against d; the claimed exponent is "
                          "that of the privacy term of the bound in d.")
        lines += _table(["p", "solver", "d", "excess risk", "w = 0"],
                        [[r["p"], f"`{r['solver']}`", r["d"], _f(r["excess"], ".3e"),
                          _f(r["trivial"], ".3f")] for r in rates["points"]])
        lines += _table(["p", "solver", "measured slope", "claimed exponent"],
                        [[s["p"], f"`{s['solver']}`", _f(s["measured_slope"], ".2f"),
                          _f(s["claimed_exponent"], ".2f")] for s in rates["slopes"]])
        lines += _end("rates")
    flows = results.get("defaults")
    if flows:
        lines += _section("defaults", "Defaults on raw bundled data",
                          "Every parameter at its default except the total epsilon (split as "
                          "named); raw `load_breast_cancer()` (test accuracy) and "
                          "`load_diabetes()` as scikit-learn ships it (its features centred "
                          "and scaled by the data set's own statistics, the target raw; test "
                          "R^2), as the issue measures it; 70/30 splits, median over "
                          f"{len(flows[0]['scores'])} seeds; the spend is the largest total "
                          "any seed's fit reports (`skdp.privacy_spent`).")
        for data in dict.fromkeys(f["data"] for f in flows):
            for eps in dict.fromkeys(f["epsilon"] for f in flows):
                rows = [[f["workflow"], _f(f["median"], ".3f"),
                         f"{_f(min(f['scores']), '.3f')} .. {_f(max(f['scores']), '.3f')}",
                         f"({f['spent_epsilon']:.3f}, {f['spent_delta']:.3g})",
                         "-" if f["target"] is None else f">= {f['target']:g}"]
                        for f in flows if f["data"] == data and f["epsilon"] == eps]
                lines += [f"### {data}, epsilon = {eps:g}", ""]
                lines += _table(["workflow", "median", "range", "(epsilon, delta) spent",
                                 "target"], rows)
        lines += _end("defaults")
    # The parts whose module writes its own table: (part, title, introduction).
    for part, title, intro in (
            ("tails", "Tails of default fits (issue 36)",
             "Unseeded noise (OS entropy) and fresh stratified 70/30 splits for every fit; "
             "median, 5th percentile and minimum of the test score (accuracy or R^2); the "
             "quick profile runs a tenth of the issue's fit counts (at least 10). "
             "`python -m benchmarks run --part tails`."),
            ("selection", "Private model selection (issue 37)",
             "Raw breast cancer mapped by its published feature ranges; fresh stratified "
             "70/30 splits and noise (OS entropy) every run, the three search rows on the "
             "same splits (paired); test accuracy of the released model; the total read "
             "from one BudgetAccountant per run and what privacy_cost priced before it. "
             "`python -m benchmarks run --part selection`."),
            ("pipelines", "Private pipelines: DPPCA and DPGaussianNB (issue 40)",
             "Raw digits (pixels in the published range [0, 16]) and raw breast cancer "
             "(published feature ranges); fresh stratified 70/30 splits and noise (OS "
             "entropy) every run; test accuracy of the released model: median, 5th "
             "percentile, minimum. diffprivlib side by side where it imports (scikit-learn "
             "< 1.8; benchmarks/README.md says how). "
             "`python -m benchmarks run --part pipelines`."),
            ("intervals", "Coverage of the confidence intervals (issue 40)",
             "A well-specified model, n = 10,000, public bounds that clip nothing, "
             "alpha = 1e-4, fresh data and noise (OS entropy) every run; the share of runs "
             "whose nominal 95% interval covers each true coefficient "
             "(benchmarks/intervals.py). `python -m benchmarks run --part intervals`."),
            ("default_logistic", "The default logistic regression on covertype (issue 40)",
             "`make_covertype_like`: 200,000 training rows of norm at most 1, 54 features, "
             "50,000 test rows; epsilon = 1, delta = 1e-5, alpha = 1e-2; fresh noise (OS "
             "entropy) every fit, each timed next to scikit-learn's `LogisticRegression` "
             "on the same rows (alternating order) in this install "
             "(benchmarks/default_logistic.py). "
             "`python -m benchmarks run --part default_logistic`."),
            ("probe", "A DP linear probe on NumPy and PyTorch arrays (issue 39)",
             "Synthetic unit-norm embeddings (benchmarks/probe.py: class centres plus "
             "noise, float32, a fixed seed), multinomial `DPLogisticRegression(epsilon, "
             "data_norm=1, classes=range(K))` with its defaults (DP-GD) against "
             "scikit-learn's `LogisticRegression()` with its defaults (lbfgs, `C=1`), the "
             "non-private probe, on the same backend: PyTorch arrays through the array "
             "API (`array_api_dispatch=True`), "
             "kept on their device. Fresh noise (OS entropy) every run; 10,000 held-out "
             "rows; one BLAS thread. The GPU size runs unchanged with `python -m "
             "benchmarks.probe --backends torch-cuda ...` where a GPU is. `python -m "
             "benchmarks run --part probe`.")):
        if results.get(part):
            module = importlib.import_module(f"benchmarks.{part}")
            lines += _section(part, title, intro)
            lines += module.markdown(results[part])
            lines += _end(part)
    runs = meta.get("part_runs", {})
    if len({(r["commit"], r["date"]) for r in runs.values()}) > 1:
        lines += ["Parts from separate runs (`--part`): " + "; ".join(
            f"{p}: commit {r['commit']} ({r['date']}"
            + (f", numba {r['numba']}" if "numba" in r else "")
            + (f", scikit-learn {r['sklearn']})" if "sklearn" in r else ")")
            for p, r in runs.items()) + ".", ""]
    lines += _section("starts", "Cold starts and float32",
                      f"First fit of {config.COLD_ROWS} rows in a fresh interpreter (after "
                      "import), and peak extra memory of one fit on float32 covertype-shaped "
                      "data (over the float32 matrix: a float64 copy alone is 2).")
    f32 = {r["solver"]: r["peak_ratio"] for r in results.get("float32", [])}
    lines += _table(["solver", "scenario", "first fit (s)", "import (s)", "float32 memory / X"],
                    [[f"`{r['solver']}`", r["scenario"], _f(r["fit_seconds"]),
                      _f(r["import_seconds"], ".2f"), _f(f32.get(r["solver"]), ".2f")]
                     for r in results.get("cold", [])])
    lines += _end("starts")
    ooc = results.get("out_of_core")
    if ooc:
        lines += _section("out of core", "Out of core",
                          "The default fit (`DPLogisticRegression(epsilon=1, delta=1e-6, "
                          "data_norm=1.0, classes=[0, 1], random_state=0)`: public bounds; "
                          "`solver='auto'` runs DP Newton at these sizes) on a memory-mapped "
                          f"`{ooc['n']} x {ooc['d']}` float64 `.npy` file "
                          f"({ooc['matrix_bytes'] / 1e9:.2f} GB), then on the same file read "
                          f"by the workers in chunks of {ooc['chunk_rows']} rows "
                          "(`dask.array`, persisted) on a two-process `LocalCluster`, with the "
                          "same generator seed.",
                          "The time is of an untraced fit; the peak, of a second, traced one.")
        cluster = ooc.get("cluster") == "ran"
        lines += _table(
            ["input", "fit (s)", "passes", "peak traced allocations / matrix",
             "relative coefficient difference", "same ledger"],
            [["`numpy.memmap`", _f(ooc["memmap_seconds"]), ooc["n_iter"],
              _f(ooc["peak_ratio"]), "-", "-"],
             ["dask array, 2-worker `LocalCluster`",
              _f(ooc.get("cluster_seconds")) if cluster else ooc.get("cluster"),
              ooc.get("cluster_n_iter", "-") if cluster else "-", "-",
              _f(ooc.get("relative_difference")) if cluster else "-",
              ooc.get("same_ledger", "-")]])
        lines += _end("out of core")
    lines += _floors(results)
    if results["scenarios"]:
        lines += [f"![risk and time]({stem}_risk.png)", ""]
    return "\n".join(lines)


def _target(prefix: str) -> config.Target:
    """The declared target whose name starts with ``prefix``."""
    return next(t for t in config.TARGETS if t.name.startswith(prefix))


def _time_bound(solver: str) -> float:
    """The time bound of a solver: its own target, else every default's."""
    own = [t for t in config.TARGETS if t.name.startswith(f"{solver} fit time")]
    return (own[0] if own else _target("every solver's default fit time")).bound


def _floors(results: dict) -> list[str]:
    """The floors section: each default schedule in plain numpy against its bound."""
    floors = results.get("floors")
    if not floors:
        return []
    run = results["meta"].get("part_runs", {}).get("floors", results["meta"])
    lines = _section("floors", "Floors of the timed targets",
                     f"Run of commit {run['commit']} ({run['date']}). Each default fit's "
                     "schedule (its passes, epochs, batches and steps, read from the fitted "
                     "`privacy_plan_` on covertype, epsilon = 1) run in plain numpy with "
                     "nothing else: no clipping, noise, validation, accounting or "
                     "projection, batches drawn with replacement, the localized solver's "
                     "pools contiguous (`benchmarks/floors.py`). Its time, paired with "
                     "scikit-learn's fit as the scenarios' ratios are (and next to skdp's "
                     "default fit, paired the same way in this part), bounds any numpy "
                     "implementation of that schedule from below: a floor above the bound "
                     "means the target needs another schedule (fewer passes or steps) or "
                     "compiled code, which reads each row once (the compiled full passes "
                     "below go under their solvers' floors).")
    rows = []
    for r in floors["rows"]:
        bound = _time_bound(r["solver"])
        rows.append([f"`{r['solver']}`", r["work"], _f(r["fit_seconds"]), _f(r["fit_ratio"]),
                     _f(r["seconds"]), _f(r["ratio"]), _f(r["fit_ratio"] / r["ratio"]),
                     f"<= {bound:g}", "yes" if r["ratio"] > bound else "no"])
    lines += _table(["solver", "default schedule", "skdp fit (s)", "skdp / sklearn",
                     "replica (s)", "replica / sklearn", "skdp / replica (of the ratios)",
                     "bound", "floor above the bound"], rows)
    sweep = floors.get("gd_sweep") or []
    if sweep:
        text = ", ".join(f"{s['n_iter']}: {s['excess']:.2e}" for s in sweep)
        fewest = floors.get("gd_fewest")
        lines += [f"DP-GD's median excess risk (seeds "
                  f"{', '.join(map(str, floors.get('gd_sweep_seeds', [])))}) "
                  f"by iteration count: {text}. "
                  + (f"The fewest of these within the {_target('gd excess risk').bound:g} "
                     "target, "
                     f"{fewest['n_iter']} passes, take {fewest['ratio']:.2f}x "
                     "scikit-learn in plain numpy." if fewest else
                     "None of these meets the target."), ""]
    compiled = floors.get("compiled")
    if compiled:
        loads = compiled["load_seconds"]
        lines += [f"Compiled full passes (skdp[numba], `docs/scaling_out.md`): each default fit "
                  "with `SKDP_NUMBA=0` (numpy) and `SKDP_NUMBA=always` (compiled at every "
                  "size), paired with scikit-learn in this part. By default the pass runs "
                  f"compiled from {compiled['threshold']:.3g} planned products (passes x n x "
                  "d), where the saving repays the one-time load of the kernel within five "
                  "fits of a process (numba's import and the cached kernel, measured in fresh "
                  f"interpreters: {', '.join(f'{x:.2f}' for x in loads)} s).", ""]
        lines += _table(["solver", "products", "default path", "numpy / sklearn",
                         "compiled / sklearn", "compiled / numpy (of the ratios)"],
                        [[f"`{r['solver']}`", f"{r['products']:.3g}",
                          "compiled" if r["default_compiled"] else "numpy",
                          _f(r["ratio_0"]), _f(r["ratio_always"]),
                          _f(r["ratio_always"] / r["ratio_0"])] for r in compiled["rows"]])
    return lines + _end("floors")


# Plots ---------------------------------------------------------------------------------

def plots(results: dict, stem: str) -> None:
    """``<stem>_risk.png`` (excess risk against time ratio, per scenario) and
    ``<stem>_scaling.png`` (time against n and d)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = _cells(results)
    eps = max((e for (_, _, e) in cells), default=1.0)
    names = [n for n in config.SCENARIOS if any(k[0] == n for k in cells)]
    if names:  # a partial run (--part) may have no scenario
        rows = -(-len(names) // 3)
        fig, axes = plt.subplots(rows, 3, figsize=(13, 3.8 * rows), squeeze=False)
        for ax in axes.flat[len(names):]:
            ax.axis("off")
        for ax, name in zip(axes.flat, names, strict=False):
            for (sc, solver, e), runs in cells.items():
                if sc == name and e == eps:
                    x = _median(runs, "time_ratio")
                    y = max(_median(runs, "excess_risk"), 1e-12)
                    ax.scatter(x, y, s=14)
                    ax.annotate(solver, (x, y), fontsize=7)
            ax.set(xscale="log", yscale="log", title=f"{name} (epsilon = {eps:g})",
                   xlabel="fit time / scikit-learn", ylabel="excess risk")
        fig.tight_layout()
        fig.savefig(RESULTS / f"{stem}_risk.png", dpi=110)
        plt.close(fig)
    scaling = results.get("scaling")
    if not scaling:
        return
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, axis in zip(axes, ("n", "d"), strict=True):
        pts = [p for p in scaling["points"] if p["axis"] == axis]
        for solver in dict.fromkeys(p["solver"] for p in pts):
            sub = [p for p in pts if p["solver"] == solver]
            ax.loglog([p["size"] for p in sub], [p["fit_seconds"] for p in sub], "o-",
                      label=solver)
        ax.set(xlabel=axis, ylabel="fit time (s)", title=f"fit time against {axis}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / f"{stem}_scaling.png", dpi=110)
    plt.close(fig)


def write(results: dict) -> Path:
    """Markdown and plots next to the JSON; the quick profile's also goes into README.md."""
    stem = f"suite_{results['meta']['profile']}"
    page = markdown(results, stem)
    path = RESULTS / f"{stem}.md"
    path.write_text(page)
    plots(results, stem)
    if results["meta"]["profile"] == "quick":
        text = (ROOT / "README.md").read_text()
        start, end = text.index(START) + len(START), text.index(END)
        body = page.split("\n", 2)[2].replace("](suite_", "](results/suite_")
        (ROOT / "README.md").write_text(text[:start] + "\n" + body + "\n" + text[end:])
    return path
