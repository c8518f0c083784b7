"""Why zeroing loses to clipping on the heavy-tailed benchmark (issue 5 (c)).

Truncated mirror descent (Su, Zhao & Wang, Algorithms 4 and 7) replaces a per-example
gradient ``g`` by ``g 1{||g|| <= tau}`` (zeroing); clipped DP-GD replaces it by
``g min(1, C / ||g||)``. Both operators map into the ball of radius ``tau`` (resp. ``C``),
so two records' contributions differ by at most ``2 tau`` (``2 C``): at equal threshold
the privacy noise is the same. What differs is the signal: the restoring force of the
population mean gradient near the optimum,

    S(t) = d/ds E[<v, op_t(g(theta + s v))>] at s = 0,

for a unit direction ``v``. A noisy gradient method that stops near ``theta`` sits where
the noise and the restoring force balance, so its noise-driven squared error scales like
``(t / S(t))^2`` up to the common constants (the same noise multiplier, step sizes and
number of releases for both). The best threshold of each operator maximises ``S(t) / t``;
the ratio of the two maxima, squared, is the factor by which zeroing's noise-driven error
exceeds clipping's at any privacy level where that error dominates (small epsilon).

Data: the benchmark's distribution (``bench_heavy_tails.py``): i.i.d. Student-t(2.5)
features (``d = 50``) and noise, ``theta`` with 5 non-zeros. With ``y = <theta, x> + e``
the residual at ``theta + s v`` is ``s <x, v> - e``, so ``g = x phi'(s <x, v> - e)`` and
only the scalars ``<x, v>``, ``||x||`` and ``e`` are needed. ``S`` is a central difference
with common random numbers (two replicates of ``10^6`` draws, ``s = +-h``). Two
directions: a coordinate ``e_1`` and a random dense unit vector (the Student-t law is not
rotation invariant); two losses: squared and Huber (threshold 1). Norms: l2 (the
``p = 2`` variant and DP-GD) and, for zeroing, l_q with ``q = p / (p - 1)``,
``p = 1 + 1/ln d`` (the benchmark's l_p run).

Run from the repository root (~10 s)::

    python benchmarks/bench_heavy_tails_signal.py

Results: ``benchmarks/results/heavy_tails_signal.{json,md}``.
"""

from __future__ import annotations

import datetime
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"

D, DF = 50, 2.5
P = 1.0 + 1.0 / math.log(D)
Q = P / (P - 1.0)
DRAWS = 1_000_000
CHUNK = 100_000
STEP = 0.02  # the finite-difference step h (in units of ||v|| = 1)
HUBER = 1.0
THRESHOLDS = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0)


def derivative(loss: str, r: np.ndarray) -> np.ndarray:
    return r if loss == "squared" else np.clip(r, -HUBER, HUBER)


def directions(rng: np.random.Generator) -> dict[str, np.ndarray]:
    dense = rng.standard_normal(D)
    coordinate = np.zeros(D)
    coordinate[0] = 1.0
    return {"coordinate": coordinate, "dense": dense / np.linalg.norm(dense)}


def signals(seed: int = 0) -> dict:
    """``S(t)`` for every (loss, direction, operator, norm, threshold)."""
    rng = np.random.default_rng(seed)
    dirs = directions(rng)
    thresholds = np.asarray(THRESHOLDS)
    keys = [(loss, name, op, norm) for loss in ("squared", "huber") for name in dirs
            for op, norm in (("zero", "l2"), ("clip", "l2"), ("zero", "lq"))]
    sums = {k: np.zeros(thresholds.size) for k in keys}
    for start in range(0, DRAWS, CHUNK):
        m = min(CHUNK, DRAWS - start)
        X = rng.standard_t(DF, size=(m, D))
        e = rng.standard_t(DF, size=m)
        norms = {"l2": np.linalg.norm(X, axis=1), "lq": np.linalg.norm(X, ord=Q, axis=1)}
        for name, v in dirs.items():
            xv = X @ v
            for loss in ("squared", "huber"):
                for sign in (1.0, -1.0):
                    phi = derivative(loss, sign * STEP * xv - e)
                    size = np.abs(phi)
                    for op, norm in (("zero", "l2"), ("clip", "l2"), ("zero", "lq")):
                        gnorm = size[:, None] * norms[norm][:, None]  # ||g|| per threshold
                        if op == "zero":
                            factor = (gnorm <= thresholds).astype(float)
                        else:
                            factor = np.minimum(1.0, thresholds / np.maximum(gnorm, 1e-300))
                        # <v, op(g)> = <x, v> phi' * factor; the derivative's sign: s -> +-h.
                        sums[(loss, name, op, norm)] += sign * ((xv * phi) @ factor)
    out = []
    for (loss, name, op, norm), total in sums.items():
        slope = total / (2.0 * STEP * DRAWS)
        for t, s in zip(THRESHOLDS, slope, strict=True):
            out.append({"loss": loss, "direction": name, "operator": op, "norm": norm,
                        "threshold": t, "signal": float(s), "signal_per_threshold": float(s / t)})
    return {"rows": out}


def summarise(rows: list[dict]) -> list[dict]:
    """Best ``S(t) / t`` of each operator and the implied noise-driven error ratio.

    The ratio compares l2 zeroing with l2 clipping (equal noise per unit of threshold).
    The l_q zeroing row is reported alone: an l_q threshold admits larger l2 norms and its
    generalized Gaussian noise is larger per unit of threshold, so its ``S/t`` is not on
    the same scale.
    """
    best = {}
    for r in rows:
        key = (r["loss"], r["direction"], r["operator"], r["norm"])
        if key not in best or r["signal_per_threshold"] > best[key]["signal_per_threshold"]:
            best[key] = r
    summary = []
    for loss in ("squared", "huber"):
        for name in ("coordinate", "dense"):
            clip, zero = best[(loss, name, "clip", "l2")], best[(loss, name, "zero", "l2")]
            zero_q = best[(loss, name, "zero", "lq")]
            summary.append({
                "loss": loss, "direction": name,
                "clip_best_threshold": clip["threshold"],
                "clip_signal_per_threshold": clip["signal_per_threshold"],
                "zero_best_threshold": zero["threshold"],
                "zero_signal_per_threshold": zero["signal_per_threshold"],
                "error_ratio_zero_over_clip": (clip["signal_per_threshold"]
                                               / zero["signal_per_threshold"]) ** 2,
                "zero_lq_best_threshold": zero_q["threshold"],
                "zero_lq_signal_per_threshold": zero_q["signal_per_threshold"],
            })
    return summary


def write(results: dict) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "heavy_tails_signal.json").write_text(json.dumps(results, indent=1))
    meta = results["meta"]
    lines = [
        "# Heavy tails: signal per unit of sensitivity, zeroing against clipping",
        "",
        f"Generated {meta['date']} by `benchmarks/bench_heavy_tails_signal.py` "
        f"(numpy {meta['numpy']}, {meta['seconds']:.0f} s). Student-t({DF}) features "
        f"(d = {D}) and noise, 2 x {DRAWS:,} draws (two replicates, averaged; their "
        f"largest disagreement on S/t: {results['replicate_max_abs_difference']:.4f}), "
        f"central difference h = {STEP}. "
        "`S(t)`: slope of the population mean of the operated gradient along `v` at "
        "theta; `S(t)/t`: signal per unit of the l2 (or l_q) threshold, which fixes the "
        "noise. Error ratio `(max S/t clip / max S/t zero)^2`: the factor by which "
        "zeroing's noise-driven squared error exceeds clipping's at equal privacy (l2 "
        "thresholds for both).",
        "",
        "| loss | direction | clip: best t | clip: S/t | zero: best t | zero: S/t | "
        "error ratio zero / clip | zero in l_q: best t | zero in l_q: S/t |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in results["summary"]:
        lines.append(
            f"| {s['loss']} | {s['direction']} | {s['clip_best_threshold']:g} | "
            f"{s['clip_signal_per_threshold']:.4f} | {s['zero_best_threshold']:g} | "
            f"{s['zero_signal_per_threshold']:.4f} | {s['error_ratio_zero_over_clip']:.1f} | "
            f"{s['zero_lq_best_threshold']:g} | {s['zero_lq_signal_per_threshold']:.4f} |")
    lines += ["", "The l_q columns are not on the l2 scale: an l_q threshold admits larger "
              "l2 norms, and the generalized Gaussian noise per unit of l_q threshold is "
              "larger (docs/algorithms/truncated_mirror_descent.md), so they do not enter "
              "the ratio."]
    lines += ["", "## S(t)/t over the threshold grid", "",
              "| loss | direction | operator | norm | "
              + " | ".join(f"t={t:g}" for t in THRESHOLDS) + " |",
              "|---|---|---|---|" + "---|" * len(THRESHOLDS)]
    rows = results["rows"]
    for loss in ("squared", "huber"):
        for name in ("coordinate", "dense"):
            for op, norm in (("clip", "l2"), ("zero", "l2"), ("zero", "lq")):
                vals = [r["signal_per_threshold"] for r in rows
                        if (r["loss"], r["direction"], r["operator"], r["norm"])
                        == (loss, name, op, norm)]
                lines.append(f"| {loss} | {name} | {op} | {norm} | "
                             + " | ".join(f"{v:.4f}" for v in vals) + " |")
    (RESULTS / "heavy_tails_signal.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    start = time.time()
    # Two independent Monte Carlo replicates: the table uses their mean, and their largest
    # disagreement on S/t is reported as the Monte Carlo resolution.
    first, second = signals(seed=0)["rows"], signals(seed=1)["rows"]
    spread = max(abs(a["signal_per_threshold"] - b["signal_per_threshold"])
                 for a, b in zip(first, second, strict=True))
    rows = [{**a, "signal": 0.5 * (a["signal"] + b["signal"]),
             "signal_per_threshold": 0.5 * (a["signal_per_threshold"]
                                            + b["signal_per_threshold"])}
            for a, b in zip(first, second, strict=True)]
    results = {"rows": rows, "replicate_max_abs_difference": spread}
    results["summary"] = summarise(rows)
    results["meta"] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "numpy": np.__version__,
        "machine": platform.machine(), "seconds": time.time() - start,
        "draws": DRAWS, "step": STEP, "d": D, "df": DF, "q": Q,
    }
    write(results)
    for s in results["summary"]:
        print(s, flush=True)


if __name__ == "__main__":
    sys.exit(main())
