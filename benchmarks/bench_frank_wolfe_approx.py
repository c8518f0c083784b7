"""Benchmark: private Frank-Wolfe with pure DP (delta = 0) vs approximate DP (delta > 0).

With ``delta > 0`` the selections that a record affects compose optimally (the PLD of
randomized response) instead of by basic composition; the schedule is the same, so only
the Laplace scales change. The gain grows with the number of leaves below a vertex, i.e.
with the number of phases, which grows with ``n``: this script uses the l1 benchmark's
data (``bench_l1.make_data``: 10 informative +-1 columns, the others 1% dense) at
``n = 200000``, ``d = 1000``, ``epsilon in {0.5, 1, 2}``, 3 seeds, and reports test MSE,
the number of phases and the last phase's Laplace scale.

Run from the repository root::

    python benchmarks/bench_frank_wolfe_approx.py          # about 30 s

Results: ``benchmarks/results/frank_wolfe_approx.{json,md}``.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent))

from bench_l1 import LABEL_BOUND, make_data  # noqa: E402

import skdp  # noqa: E402
from skdp import DPLinearRegression  # noqa: E402
from skdp.exceptions import PrivacyLeakWarning  # noqa: E402
from skdp.solvers.frank_wolfe import PrivateFrankWolfe  # noqa: E402

N, D = 200_000, 1000
EPSILONS = (0.5, 1.0, 2.0)
DELTAS = (0.0, 1e-5)
SEEDS = (0, 1, 2)
RESULTS = ROOT / "results"


def run() -> dict:
    X, y, Xt, yt, _, _ = make_data(N, D, 0)
    zero_mse = float(np.mean(yt**2))
    records = []
    for eps in EPSILONS:
        for delta in DELTAS:
            for seed in SEEDS:
                est = DPLinearRegression(
                    solver=PrivateFrankWolfe(), epsilon=eps, delta=delta, constraint="l1",
                    radius=1.0, data_norm=1.0, y_bound=LABEL_BOUND, fit_intercept=False,
                    alpha=0.0, random_state=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                    start = time.perf_counter()
                    est.fit(X, y)
                    seconds = time.perf_counter() - start
                s = est.privacy_plan_
                records.append(dict(
                    epsilon=eps, delta=delta, seed=seed,
                    test_mse=float(np.mean((Xt @ est.coef_.ravel() - yt) ** 2)),
                    n_phases=int(s.n_phases), last_scale=float(s.laplace_scales[-1]),
                    accountant=est.privacy_ledger_.accountant,
                    spent=float(est.privacy_spent_.epsilon), seconds=seconds))
    return dict(records=records, zero_mse=zero_mse, n=N, d=D, seeds=list(SEEDS),
                generated=datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"),
                skdp=skdp.__version__, machine=platform.machine())


def write(res: dict) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "frank_wolfe_approx.json").write_text(json.dumps(res, indent=1))
    lines = [
        "# Private Frank-Wolfe: pure DP vs approximate DP", "",
        f"Generated {res['generated']} by `benchmarks/bench_frank_wolfe_approx.py` "
        f"(skdp {res['skdp']}, {res['machine']}). Data: `bench_l1.make_data(n={res['n']}, "
        f"d={res['d']})`, l1 ball of radius 1, `PrivateFrankWolfe()` defaults; seeds "
        f"{res['seeds']}; zero predictor test MSE {res['zero_mse']:.4f}. Same schedule for "
        "both deltas; `delta = 1e-5` composes the selections by the PLD of randomized "
        "response.", "",
        "| epsilon | delta | accountant | phases | last Laplace scale | test MSE (mean over "
        "seeds) | max spent epsilon | fit time (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for eps in EPSILONS:
        for delta in DELTAS:
            rows = [r for r in res["records"] if r["epsilon"] == eps and r["delta"] == delta]
            lines.append(
                f"| {eps:g} | {delta:g} | {rows[0]['accountant']} | {rows[0]['n_phases']} | "
                f"{rows[0]['last_scale']:.3g} | "
                f"{np.mean([r['test_mse'] for r in rows]):.4f} | "
                f"{max(r['spent'] for r in rows):.4g} | "
                f"{np.median([r['seconds'] for r in rows]):.2f} |")
    (RESULTS / "frank_wolfe_approx.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    write(run())
