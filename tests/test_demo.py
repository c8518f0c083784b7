import math

import numpy as np
from sklearn.datasets import load_breast_cancer

from skdp.__main__ import main
from skdp._demo import PUBLIC_FEATURE_RANGES, public_preprocess, run_demo
from skdp.solvers import SOLVERS


def test_preprocessing_is_per_row_and_bounded():
    X, _ = load_breast_cancer(return_X_y=True)
    Z = public_preprocess(X)
    assert Z.shape == X.shape and np.all(np.abs(Z) <= 0.5)
    # Per-row map: transforming a subset equals the subset of the transform.
    np.testing.assert_array_equal(public_preprocess(X[:7]), Z[:7])
    assert PUBLIC_FEATURE_RANGES.shape == (X.shape[1], 2)


def test_demo_runs_every_solver(capsys, tmp_path):
    rows = run_demo(seed=1, plot=str(tmp_path / "demo.png"))
    out = capsys.readouterr().out
    assert {r["solver"] for r in rows} == set(SOLVERS)
    for r in rows:
        if math.isfinite(r["epsilon"]):
            assert 0.99 * r["epsilon"] <= r["epsilon_spent"] <= r["epsilon"]
        else:
            assert r["test_accuracy"] > 0.7
    assert "eps spent" in out
    assert (tmp_path / "demo.png").exists()


def test_cli_entry_point(capsys):
    assert main(["demo", "--no-plot", "--seed", "2"]) == 0
    assert "majority-class accuracy" in capsys.readouterr().out
