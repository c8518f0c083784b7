"""``python -m skdp demo``: private logistic regression on scikit-learn's breast-cancer data."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

# Feature ranges PUBLISHED with the Wisconsin diagnostic breast-cancer data set (its
# documentation, ``load_breast_cancer().DESCR``, "Summary Statistics"), in the order of
# the 30 columns. They are used as fixed public constants: nothing is computed from the
# training rows at run time. (In a real deployment such bounds must come from domain
# knowledge, never from the private data.)
PUBLIC_FEATURE_RANGES = np.array([
    (6.981, 28.11), (9.71, 39.28), (43.79, 188.5), (143.5, 2501.0), (0.053, 0.163),
    (0.019, 0.345), (0.0, 0.427), (0.0, 0.201), (0.106, 0.304), (0.05, 0.097),
    (0.112, 2.873), (0.36, 4.885), (0.757, 21.98), (6.802, 542.2), (0.002, 0.031),
    (0.002, 0.135), (0.0, 0.396), (0.0, 0.053), (0.008, 0.079), (0.001, 0.03),
    (7.93, 36.04), (12.02, 49.54), (50.41, 251.2), (185.2, 4254.0), (0.071, 0.223),
    (0.027, 1.058), (0.0, 1.252), (0.0, 0.291), (0.156, 0.664), (0.055, 0.208),
])
EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0, math.inf)
DELTA = 1e-5
DATA_NORM = 1.0
#: The workflow's GridSearchCV over epsilon, shared with the benchmark suite's selection
#: part: every other parameter at the estimator's default (private bounds per fit), a
#: spread grid (the two lower candidates add 0.09 to the total, the top one's six fits
#: most of the rest) and discrete Gaussian accuracy scores, whose fifteen cost about 0.5
#: of the total 4.97 (pure ones with as much noise, 0.8), with enough epsilon that the
#: mean of five fold scores (about 80 rows each) has noise of standard deviation about
#: 0.05 (docs/tuning_and_budgets.md, section 1).
GRID_EPSILONS = (0.1, 0.3, 1.4)
SCORE_EPSILON = 0.5
SCORE_DELTA = 1e-6
#: The workflow's PrivateRandomizedSearch space (each list sampled uniformly).
SEARCH_SPACE = {"alpha": (1e-3, 1e-2, 1e-1), "data_norm": (1.0, 2.0, 4.0)}


def public_preprocess(X: np.ndarray) -> np.ndarray:
    """Fixed, data-independent map: scale each feature to [-0.5, 0.5] by its public range.

    Each row is transformed on its own (no statistic of the data set is used), so the map
    costs no privacy; the estimator then clips rows to ``data_norm``.
    """
    lo, hi = PUBLIC_FEATURE_RANGES[:, 0], PUBLIC_FEATURE_RANGES[:, 1]
    return np.clip((X - lo) / (hi - lo), 0.0, 1.0) - 0.5


# The l1-geometry solvers run over an l1 ball (Frank-Wolfe needs it, and the intercept
# outside a bounded vertex set); the others use the defaults.
_L1 = {"constraint": "l1", "radius": 5.0, "fit_intercept": False}
SOLVER_SETTINGS = {
    "frank_wolfe": _L1,
    "mirror_descent": _L1,
    "localized_mirror_descent": _L1,
    "accelerated_mirror_descent": _L1,
    # Labels are -1/+1: their public bound is 1 (a private spread of such a target is 0).
    "sufficient_statistics": {"alpha": 0.0, "y_bound": 1.0},
}
# Least-squares solvers fit DPLinearRegression to the labels -1/+1 and classify by the
# sign of the prediction (a least-squares linear classifier).
LEAST_SQUARES = {"sufficient_statistics"}


class _SignClassifier:
    """The sign of a private least-squares fit to -1/+1 labels, as a 0/1 classifier."""

    def __init__(self, **params):
        from skdp import DPLinearRegression

        self.regressor = DPLinearRegression(**params)

    def fit(self, X, y):
        self.regressor.fit(X, 2.0 * np.asarray(y) - 1.0)
        self.privacy_spent_ = self.regressor.privacy_spent_
        return self

    def score(self, X, y):
        return float(np.mean((self.regressor.predict(X) > 0) == (np.asarray(y) == 1)))


def run_demo(seed: int = 0, plot: str | None = "skdp_demo.png",
             all_solvers: bool = False, repeats: int = 3, runs: int = 5) -> list[dict]:
    """The main job: a private workflow on raw bundled data, its total spend, and the
    non-private score beside it (``all_solvers``: the table of every solver instead).

    Parameters
    ----------
    seed : int
        Seed of the first train/test split (run ``r`` uses ``seed + r``; the noise is
        fresh OS entropy in the workflow, seeded in the solver table).
    plot : str or None
        Path of the PNG (skipped without matplotlib).
    all_solvers : bool
        Print the table of every registered solver for several epsilons instead.
    repeats : int
        Noise draws per setting of the solver table.
    runs : int
        Runs of the workflow (splits and noise); the median and range are printed.

    Returns
    -------
    list of dict
        One row per step (or per solver and epsilon).
    """
    if all_solvers:
        return run_solver_table(seed=seed, plot=plot, repeats=repeats)
    return run_workflow(seed=seed, plot=plot, runs=runs)


def public_pipeline(accountant=None, classes=(0, 1), **params):
    """``PublicBoundsScaler`` (the published feature ranges, no privacy spent) and
    ``DPLogisticRegression(**params)`` charged to ``accountant``."""
    from sklearn.pipeline import make_pipeline

    from skdp import DPLogisticRegression
    from skdp.preprocessing import PublicBoundsScaler

    public = (PUBLIC_FEATURE_RANGES[:, 0], PUBLIC_FEATURE_RANGES[:, 1])
    return make_pipeline(PublicBoundsScaler(public),
                         DPLogisticRegression(classes=list(classes), accountant=accountant,
                                              **params))


def grid_search(accountant, seed: int = 0, classes=(0, 1)):
    """The workflow's ``GridSearchCV`` over :data:`GRID_EPSILONS` (``KFold(5)`` shuffled
    by ``seed``: a public partition) with discrete Gaussian accuracy scores at
    ``(SCORE_EPSILON, SCORE_DELTA)``, every fit and score charged to ``accountant``."""
    from sklearn.model_selection import GridSearchCV, KFold

    from skdp.metrics import make_private_scorer

    return GridSearchCV(
        public_pipeline(accountant, classes),
        {"dplogisticregression__epsilon": list(GRID_EPSILONS)},
        scoring=make_private_scorer("accuracy", epsilon=SCORE_EPSILON, delta=SCORE_DELTA,
                                    accountant=accountant),
        cv=KFold(5, shuffle=True, random_state=seed))


def private_search(accountant, total: float, classes=(0, 1)):
    """The workflow's ``PrivateRandomizedSearch`` over :data:`SEARCH_SPACE` at the total
    ``(total, 1e-5)``."""
    from skdp.model_selection import PrivateRandomizedSearch

    return PrivateRandomizedSearch(
        public_pipeline(None, classes),
        {f"dplogisticregression__{name}": list(values)
         for name, values in SEARCH_SPACE.items()},
        epsilon=total, delta=1e-5, accountant=accountant)


def released_accuracy(model, X, y) -> tuple[float, bool]:
    """Exact accuracy of the released model on held-out rows (a search's ``score`` would
    call its private scorer: noisy, and charged), and whether a model was released: a
    private search that drew no candidate (Poisson, probability ``exp(-mean)``) released
    none, which leaves the user without a model and counts as accuracy 0."""
    if getattr(model, "best_estimator_", True) is None:
        return 0.0, False
    return float(np.mean(model.predict(X) == y)), True


def _workflow_steps(accountant, classes):
    """The workflow's steps, charged to ``accountant`` (fresh noise: OS entropy)."""
    from sklearn.pipeline import make_pipeline

    from skdp import DPLogisticRegression
    from skdp.preprocessing import DPStandardScaler

    grid = "/".join(f"{e:g}" for e in GRID_EPSILONS)
    return [
        ("DPLogisticRegression(epsilon=1), every default (private bounds)",
         DPLogisticRegression(epsilon=1.0, classes=classes, accountant=accountant)),
        ("DPStandardScaler(0.3) + DPLogisticRegression(0.7), every default",
         make_pipeline(DPStandardScaler(0.3, accountant=accountant),
                       DPLogisticRegression(0.7, classes=classes, accountant=accountant))),
        (f"GridSearchCV(epsilon {grid} x 5 folds, scores ({SCORE_EPSILON:g}, "
         f"{SCORE_DELTA:g}))",
         grid_search(accountant, 0, classes)),
        ("PrivateRandomizedSearch(alpha, data_norm; total epsilon=1)",
         private_search(accountant, 1.0, classes)),
    ]


CEILING = (8.0, 1e-4)


def run_workflow(seed: int = 0, plot: str | None = "skdp_demo.png",
                 runs: int = 5) -> list[dict]:
    """A private model, a private pipeline, scikit-learn's GridSearchCV with private scores
    and a private search on raw breast cancer, all charged to one BudgetAccountant per
    run; prints the median test accuracy over ``runs`` splits and fresh noise draws, its
    range, and the true total."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skdp import BudgetAccountant

    X, y = load_breast_cancer(return_X_y=True)
    classes = [0, 1]  # the public label set (benign, malignant)
    n_train = int(round(0.7 * X.shape[0]))
    print(f"skdp demo: raw breast cancer, {n_train} train / {X.shape[0] - n_train} test "
          f"rows, {X.shape[1]} features; {runs} runs (splits and fresh noise), each with "
          f"one BudgetAccountant(epsilon={CEILING[0]:g}, delta={CEILING[1]:g}) that "
          "records every private release (replace-one neighbours).\n")
    scores: dict[str, list[float]] = {}
    totals: dict[str, list[float]] = {}
    baseline, majority, spent_all, entries, empty = [], [], [], 0, 0
    for r in range(runs):
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, random_state=seed + r, stratify=y)
        accountant = BudgetAccountant(*CEILING)
        for name, model in _workflow_steps(accountant, classes):
            model.fit(X_train, y_train)
            # The test rows are not the private training rows; an empty private search
            # counts as 0, and the footer says so.
            accuracy, released = released_accuracy(model, X_test, y_test)
            empty += not released
            scores.setdefault(name, []).append(accuracy)
            totals.setdefault(name, []).append(accountant.spent().epsilon)
        sk = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
        baseline.append(sk.score(X_test, y_test))
        majority.append(max(np.mean(y_test), 1 - np.mean(y_test)))
        spent_all.append(accountant.spent())
        entries = len(accountant)
    header = (f"{'step':<66} {'median test acc [min, max]':>27} "
              f"{'total epsilon so far':>21}")
    print(header)
    print("-" * len(header))
    rows = []
    for name in scores:
        acc, tot = np.array(scores[name]), np.array(totals[name])
        rows.append({"step": name, "test_accuracy": float(np.median(acc)),
                     "test_accuracy_min": float(acc.min()),
                     "test_accuracy_max": float(acc.max()),
                     "total_epsilon": float(np.max(tot)), "total_delta": CEILING[1]})
        print(f"{name:<66} {np.median(acc):>10.3f} [{acc.min():.3f}, {acc.max():.3f}]"
              f"{'':>2} {np.median(tot):>21.3f}")
    print(f"{'scikit-learn LogisticRegression (NOT private)':<66} "
          f"{np.median(baseline):>10.3f} [{min(baseline):.3f}, {max(baseline):.3f}]")
    print(f"{'majority class':<66} {np.median(majority):>10.3f}")
    eps = [s.epsilon for s in spent_all]
    print(f"\nTotal read from the accountant: epsilon {np.median(eps):.3f} (median of "
          f"{runs} runs; the refit's cost depends on the winner), delta "
          f"{max(s.delta for s in spent_all):.1e} ({entries} entries: every fit, every "
          "private score and every refit; ceiling "
          f"{CEILING[0]:g}, {CEILING[1]:g}). The searches released one model each; their "
          "scores are noisy and charged"
          + (f" ({empty} search(es) drew no candidate and released nothing: accuracy 0)"
             if empty else "")
          + ". The grid's bottom candidate (epsilon 0.1) is noise-dominated in its folds "
          "(NoiseDominatedWarning, once per message): it releases the intercept-only "
          "model, about 5 score noise deviations below the others, never chosen in "
          "practice.\nMore: python -m skdp demo --all-solvers (every "
          "solver), docs/tuning_and_budgets.md.")
    if plot:
        _plot_workflow(rows, float(np.median(baseline)), float(np.median(majority)), plot)
    return rows


def run_solver_table(seed: int = 0, plot: str | None = "skdp_demo.png",
                     repeats: int = 3) -> list[dict]:
    """Fit every registered solver for several epsilons; print a table; optionally plot.

    Parameters
    ----------
    seed : int
        Seed of the train/test split and of the noise (reproducible demo; use
        ``random_state=None`` for real releases).
    plot : str or None
        Path of the PNG of accuracy against epsilon (skipped without matplotlib).
    repeats : int
        Independent noise draws per setting; accuracy and fit time are their means.

    Returns
    -------
    list of dict
        One row per (solver, epsilon).
    """
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    from skdp import DPLogisticRegression, PrivacyLeakWarning
    from skdp.solvers import SOLVERS

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        public_preprocess(X), y, test_size=0.25, random_state=seed, stratify=y
    )
    print(
        f"skdp demo: DP logistic regression on breast cancer "
        f"({X_train.shape[0]} train / {X_test.shape[0]} test rows, {X.shape[1]} features; "
        f"data_norm={DATA_NORM}, alpha=1e-2, replace-one neighbours; accuracy and fit time: "
        f"mean over {repeats} noise draws; eps spent: per fit, from the ledger)\n"
    )
    header = f"{'solver':<34} {'epsilon':>8} {'delta':>8} {'test acc':>9} {'eps spent':>10} " \
             f"{'fit time':>9}"
    print(header)
    print("-" * len(header))
    rows = []
    for name in SOLVERS:
        for eps in EPSILONS:
            accuracies, times, spent = [], [], []
            # Without noise one fit suffices (only the batch order is random).
            for repeat in range(repeats if math.isfinite(eps) else 1):
                # The table compares the solvers: each runs even where the fit is
                # noise-dominated (epsilon 0.1), instead of the intercept-only model.
                params = {"alpha": 1e-2, "noise_dominated": "fit",
                          **SOLVER_SETTINGS.get(name, {})}
                model = _SignClassifier if name in LEAST_SQUARES else DPLogisticRegression
                if model is DPLogisticRegression:
                    # Each solver's own intercept, without the private threshold.
                    params["threshold_fraction"] = 0.0
                clf = model(
                    epsilon=eps, delta=DELTA, solver=name, data_norm=DATA_NORM,
                    random_state=seed * 1000 + repeat, **params,
                )
                start = time.perf_counter()
                with warnings.catch_warnings():
                    # epsilon=inf is the deliberate non-private reference row, and the
                    # fixed seeds make the demo reproducible (never for a real release).
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                    clf.fit(X_train, y_train)
                times.append(time.perf_counter() - start)
                accuracies.append(clf.score(X_test, y_test))
                spent.append(clf.privacy_spent_.epsilon)
            row = {
                "solver": name,
                "epsilon": eps,
                "delta": DELTA,
                "test_accuracy": float(np.mean(accuracies)),
                "test_accuracy_std": float(np.std(accuracies)),
                "epsilon_spent": float(max(spent)),
                "fit_time_s": float(np.mean(times)),
            }
            rows.append(row)
            print(f"{name:<34} {eps:>8g} {DELTA:>8g} {row['test_accuracy']:>9.3f} "
                  f"{row['epsilon_spent']:>10.4g} {row['fit_time_s']:>8.2f}s")
    majority = max(np.mean(y_test), 1 - np.mean(y_test))
    print(f"\nmajority-class accuracy: {majority:.3f}. epsilon=inf rows are NOT private. "
          f"{', '.join(sorted(LEAST_SQUARES))}: DPLinearRegression on -1/+1 labels, "
          "classified by the sign of the prediction.")
    if plot:
        _plot(rows, plot)
    return rows


def _pyplot():
    """matplotlib's pyplot on the Agg backend, or ``None`` (with a message) without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot written (pip install matplotlib).")
        return None
    return plt


def _plot_workflow(rows: list[dict], sklearn_score: float, majority: float,
                   path: str) -> None:
    plt = _pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = [r["step"].split("(")[0] for r in rows]
    med = np.array([r["test_accuracy"] for r in rows])
    err = np.array([med - [r["test_accuracy_min"] for r in rows],
                    [r["test_accuracy_max"] for r in rows] - med])
    ax.barh(names, med, xerr=err, color="tab:blue", capsize=3)
    ax.axvline(sklearn_score, color="k", linestyle="--", label="scikit-learn (not private)")
    ax.axvline(majority, color="gray", linestyle=":", label="majority class")
    ax.set_xlim(0.5, 1.0)
    ax.set_xlabel("test accuracy (raw breast cancer): median, range over runs")
    ax.set_title(f"skdp: total spent {rows[-1]['total_epsilon']:.2f} epsilon, "
                 "read from one BudgetAccountant")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"plot written to {path}")


def _plot(rows: list[dict], path: str) -> None:
    plt = _pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    finite = [e for e in EPSILONS if math.isfinite(e)]
    for name in dict.fromkeys(r["solver"] for r in rows):
        acc = [r["test_accuracy"] for r in rows if r["solver"] == name]
        line = ax.plot(finite, acc[: len(finite)], marker="o", label=name)[0]
        ax.axhline(acc[-1], color=line.get_color(), linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (delta = 1e-5)")
    ax.set_ylabel("test accuracy")
    ax.set_title("skdp: DP logistic regression, breast cancer\n(dotted: epsilon = inf)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"plot written to {path}")
