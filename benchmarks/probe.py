"""A DP linear probe at embedding scale (issue 39): multinomial logistic regression on
synthetic unit-norm embeddings, on NumPy and on PyTorch (CPU here, CUDA where a GPU is).

The embeddings are generated from a fixed seed, on the backend that fits them: ``K``
class centres ``c_k ~ N(0, I / d)``, a label uniform over the classes, a row ``x = c_y *
SIGNAL / sqrt(d) + N(0, I / d)`` scaled to norm 1 (the non-private probe's accuracy
stays near 0.9 whatever ``d``) (so ``data_norm = 1`` is public), ``TEST_ROWS``
held-out rows. Each backend fits scikit-learn's ``LogisticRegression()`` with its
defaults (lbfgs, ``C=1``; through the array API on PyTorch) as the non-private probe
and ``DPLogisticRegression(epsilon, data_norm=1, classes=range(K))`` with its defaults
(DP-GD, ``alpha="auto"``) at each epsilon, with fresh noise (OS entropy) every run:
test accuracy (median, p5, min), fit time and its ratio to scikit-learn's on the same
backend, and, on NumPy, the peak of traced allocations over
the size of ``X``.

In the suite (``python -m benchmarks run --part probe``) the sizes fit the 2-core machine;
on a GPU machine the same code runs at the issue's size unchanged::

    python -m benchmarks.probe --backends torch-cuda --rows 1000000 --features 1024 \\
        --classes 100 --out probe_gpu.json

(PyTorch with CUDA; the JSON lands where ``--out`` says and the README of the benchmarks
says how to merge it into the results).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import tracemalloc
import warnings

import numpy as np

EPSILONS = (0.5, 1.0, 8.0)
SIGNAL = 4.0  # times 1 / sqrt(d): the centres' separation does not grow with d
TEST_ROWS = 10_000
#: (rows, features, classes, unseeded runs per epsilon) of each profile on the CPU.
SIZES = {"quick": (20_000, 128, 20, 3), "full": (100_000, 256, 50, 5)}


def _embeddings(n: int, d: int, k: int, seed: int, backend: str):
    """Unit-norm synthetic embeddings ``(X, y)``, float32, generated on the host by blocks
    of rows (the same values for every backend), then moved to ``backend``."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d)) / math.sqrt(d)
    y = rng.integers(0, k, size=n)
    X = np.empty((n, d), dtype=np.float32)
    step = 1 << 16
    for start in range(0, n, step):  # no float64 temporary of n x d
        stop = min(start + step, n)
        block = (centres[y[start:stop]] * (SIGNAL / math.sqrt(d))
                 + rng.normal(size=(stop - start, d)) / math.sqrt(d))
        X[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    if backend == "numpy":
        return X, y
    import torch

    device = backend.split("-")[1]
    return torch.from_numpy(X).to(device), torch.from_numpy(y).to(device)


def _sync(backend: str) -> None:
    if backend == "torch-cuda":
        import torch

        torch.cuda.synchronize()


def _accuracy(model, X, y) -> float:
    from skdp._array_api import to_numpy

    return float(np.mean(to_numpy(model.predict(X)) == to_numpy(y)))


def _timed_fit(model, X, y, backend: str) -> float:
    _sync(backend)
    start = time.perf_counter()
    model.fit(X, y)
    _sync(backend)
    return time.perf_counter() - start


def measure(backend: str, n: int, d: int, k: int, runs: int, log=print,
            epsilons=EPSILONS) -> list[dict]:
    """The rows of one backend: scikit-learn's probe, then skdp's at each epsilon."""
    import sklearn
    from sklearn.linear_model import LogisticRegression

    from skdp import DPLogisticRegression

    os.environ.setdefault("SCIPY_ARRAY_API", "1")
    X, y = _embeddings(n, d, k, 0, backend)
    Xt, yt = _held_out(n, d, k, backend)
    rows = []
    with sklearn.config_context(array_api_dispatch=backend != "numpy"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The non-private probe: scikit-learn's LogisticRegression with its defaults
        # (C=1), what a user trains without privacy. (Its penalty matched to skdp's
        # former fixed alpha=1e-2, C = 1 / (alpha n), over-regularised this task: 0.809
        # against 0.929 at the full size, a reference that made every gap look small.)
        reference = LogisticRegression(max_iter=1000)
        seconds = _timed_fit(reference, X, y, backend)
        exact = _accuracy(reference, Xt, yt)
        log(f"  {backend}: scikit-learn {seconds:.2f} s, accuracy {exact:.4f}")
        rows.append(dict(backend=backend, model="LogisticRegression() (not private)",
                         epsilon=math.inf, rows=n, features=d, classes=k, seconds=[seconds],
                         scores=[exact]))
        for eps in epsilons:
            times, scores, peaks = [], [], []
            for _ in range(runs):
                model = DPLogisticRegression(eps, data_norm=1.0, classes=list(range(k)))
                if backend == "numpy":
                    tracemalloc.start()
                times.append(_timed_fit(model, X, y, backend))
                if backend == "numpy":
                    peaks.append(tracemalloc.get_traced_memory()[1] / X.nbytes)
                    tracemalloc.stop()
                scores.append(_accuracy(model, Xt, yt))
            log(f"  {backend}: skdp epsilon {eps:g}: median {np.median(scores):.4f}, "
                f"{np.median(times):.2f} s")
            rows.append(dict(backend=backend, model="DPLogisticRegression", epsilon=eps,
                             rows=n, features=d, classes=k, seconds=times, scores=scores,
                             peak_memory=max(peaks) if peaks else None,
                             sklearn_seconds=seconds, exact=exact))
    return rows


def _held_out(n: int, d: int, k: int, backend: str):
    """``TEST_ROWS`` rows of the same class centres (seed 0) and fresh within-class noise
    (the tail of a generation of ``n + TEST_ROWS`` rows with seed 0 would repeat the
    training rows' noise stream otherwise)."""
    X, y = _embeddings(n + TEST_ROWS, d, k, 0, backend)
    return X[n:], y[n:]


def run(profile, log=print) -> list[dict]:
    """The suite's part: NumPy and PyTorch CPU (where PyTorch imports) at the profile's
    size."""
    n, d, k, runs = SIZES[profile.name]
    backends = ["numpy"]
    try:
        import torch  # noqa: F401

        backends.append("torch-cpu")
    except ImportError:
        log("  PyTorch not installed: NumPy only")
    rows = []
    for backend in backends:
        rows += measure(backend, n, d, k, runs, log)
    return rows


def _f(value, spec=".3f") -> str:
    return "-" if value is None or value != value else format(value, spec)


def markdown(rows: list[dict]) -> list[str]:
    """The part's table, one row per backend and model."""
    lines = ["| backend | rows x features x classes | model | epsilon | runs | median | p5 | "
             "min | gap to the non-private probe | fit seconds (median) | / scikit-learn "
             "| peak memory / X |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        s = np.asarray(row["scores"])
        private = row["model"] == "DPLogisticRegression"
        seconds = float(np.median(row["seconds"]))
        lines.append(
            f"| {row['backend']} | {row['rows']:,} x {row['features']} x {row['classes']} | "
            f"{row['model']} | {_f(row['epsilon'], 'g')} | {len(s)} | "
            f"{np.median(s):.4f} | {np.percentile(s, 5):.4f} | {s.min():.4f} | "
            f"{_f(row['exact'] - np.median(s), '.4f') if private else '-'} | "
            f"{seconds:.2f} | {_f(seconds / row['sklearn_seconds'], '.2f') if private else '-'}"
            f" | {_f(row.get('peak_memory'), '.2f')} |")
    return lines + [""]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=["numpy", "torch-cpu"],
                        choices=["numpy", "torch-cpu", "torch-cuda"])
    parser.add_argument("--rows", type=int, default=SIZES["quick"][0])
    parser.add_argument("--features", type=int, default=SIZES["quick"][1])
    parser.add_argument("--classes", type=int, default=SIZES["quick"][2])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rows = []
    for backend in args.backends:
        rows += measure(backend, args.rows, args.features, args.classes, args.runs)
    print("\n".join(markdown(rows)))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1, default=float)


if __name__ == "__main__":
    main()
