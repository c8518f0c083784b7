"""The tails of default fits (issue 36): unseeded noise, median, p5 and min.

A user ships one fit with fresh noise, so each row fits the same estimator many times with
OS entropy (``random_state=None``) on fresh stratified 70/30 splits and reports the
median, the 5th percentile and the minimum of the test score, against the issue's target.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Fits per row: the issue's counts in the full profile, fewer in quick (its 5 minutes).
FITS = {"quick": 0.1, "full": 1.0}


@dataclass(frozen=True)
class TailRow:
    """One row of the tails table: a workflow, its data, the issue's fit count and its
    targets (``median``, ``p5``, ``min`` lower bounds; ``None`` where the issue sets none)."""

    name: str
    data: str
    fits: int
    make: Callable
    median: float | None = None
    p5: float | None = None
    minimum: float | None = None
    attribute: str | None = None  # report this fitted attribute's quantiles too
    #: Largest share of fits below 0.55 (and the noise-dominated warning in at least 90%
    #: of the fits below 0.6), where the issue sets it.
    below_055: float | None = None


def _ceiling_regressor(epsilon: float):
    """DPLinearRegression's sufficient statistics given the true centre of diabetes'
    targets (152) and bounds hand-tuned on test results (rows 0.2, targets 120): NOT a
    private workflow, the ceiling of the statistics' release (the default before
    ``solver="auto"``) with no budget spent on bounds."""
    from sklearn.compose import TransformedTargetRegressor

    from skdp import DPLinearRegression

    return TransformedTargetRegressor(
        DPLinearRegression(epsilon=epsilon, solver="sufficient_statistics", alpha=1e-2,
                           data_norm=0.2, y_bound=120.0),
        func=_minus_centre, inverse_func=_plus_centre, check_inverse=False)


def _declared_regressor(epsilon: float):
    """The default DPLinearRegression with the same declared bounds and true centre as
    :func:`_ceiling_regressor` (NOT private: the centre and bounds were tuned on the data):
    ``solver="auto"`` and ``alpha="auto"``, the latter in units of the declared bounds."""
    from sklearn.compose import TransformedTargetRegressor

    from skdp import DPLinearRegression

    return TransformedTargetRegressor(
        DPLinearRegression(epsilon=epsilon, data_norm=0.2, y_bound=120.0),
        func=_minus_centre, inverse_func=_plus_centre, check_inverse=False)


def _minus_centre(y):
    return y - 152.0


def _plus_centre(y):
    return y + 152.0


def _exact_ranges():
    """The exact per-feature ranges of raw breast cancer (read from the data: NOT
    private; the ceiling of a DP scaler that knew them)."""
    from sklearn.datasets import load_breast_cancer

    X = load_breast_cancer().data
    return X.min(axis=0), X.max(axis=0)


def _rows() -> list[TailRow]:
    from sklearn.pipeline import make_pipeline

    from skdp import DPHuberRegressor, DPLasso, DPLinearRegression, DPLogisticRegression
    from skdp.preprocessing import DPStandardScaler

    return [
        TailRow("DPLogisticRegression(), epsilon 1", "breast_cancer", 200,
                lambda: DPLogisticRegression(epsilon=1.0), 0.88, 0.80),
        TailRow("DPLogisticRegression(), epsilon 0.1", "breast_cancer", 200,
                # The majority class's test accuracy: 107 of the 171 test rows of every
                # stratified split (the issue's 0.626, rounded).
                lambda: DPLogisticRegression(epsilon=0.1), 107 / 171, below_055=0.05),
        TailRow("same, noise_dominated='fit' (DP-GD run anyway; no target)",
                "breast_cancer", 200,
                lambda: DPLogisticRegression(epsilon=0.1, noise_dominated="fit")),
        TailRow("DPStandardScaler(0.3) + DPLogisticRegression(0.7)", "breast_cancer", 200,
                lambda: make_pipeline(DPStandardScaler(epsilon=0.3),
                                      DPLogisticRegression(epsilon=0.7)), 0.86, 0.75),
        TailRow("DPLogisticRegression(0.7) alone, the pipeline's classifier on the raw "
                "rows (no target)", "breast_cancer", 200,
                lambda: DPLogisticRegression(epsilon=0.7)),
        TailRow("the pipeline with the exact per-feature ranges as the scaler's (box) "
                "bounds (not private; no target)", "breast_cancer", 200,
                lambda: make_pipeline(DPStandardScaler(epsilon=0.3, bounds=_exact_ranges()),
                                      DPLogisticRegression(epsilon=0.7))),
        TailRow("DPLinearRegression(), epsilon 1", "diabetes", 500,
                lambda: DPLinearRegression(epsilon=1.0), 0.20, None, -1.0),
        TailRow("ceiling of the sufficient statistics: epsilon 1, the true centre and "
                "bounds hand-tuned on test results (not private; no target)", "diabetes", 500,
                lambda: _ceiling_regressor(1.0)),
        TailRow("ceiling of the sufficient statistics: same at epsilon 0.6, what a fit "
                "gets after its private bounds (no target)", "diabetes", 500,
                lambda: _ceiling_regressor(0.6)),
        TailRow("the default with those declared bounds (solver and alpha 'auto'), "
                "epsilon 1 (not private; no target)", "diabetes", 500,
                lambda: _declared_regressor(1.0)),
        TailRow("DPLinearRegression(), epsilon 5", "diabetes", 500,
                lambda: DPLinearRegression(epsilon=5.0), 0.38, None, -1.0),
        TailRow("DPHuberRegressor(), epsilon 1", "diabetes", 500,
                lambda: DPHuberRegressor(epsilon=1.0), None, None, -1.0),
        TailRow("DPLasso(), epsilon 1", "diabetes", 200,
                lambda: DPLasso(epsilon=1.0), 0.0),
        TailRow("DPLasso(), epsilon 5", "diabetes", 200,
                lambda: DPLasso(epsilon=5.0), 0.25),
        TailRow("DPLogisticRegression(epsilon=2), digits with unit rows", "digits_unit", 50,
                lambda: DPLogisticRegression(epsilon=2.0), 0.75),
        TailRow("DPLogisticRegression(), 50 rows of norm <= 1, epsilon 1", "small_unit", 200,
                lambda: DPLogisticRegression(epsilon=1.0), attribute="data_norm_"),
    ]


def _data(name: str, rng: np.random.Generator):
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits

    if name == "breast_cancer":
        return load_breast_cancer(return_X_y=True)
    if name == "diabetes":
        return load_diabetes(return_X_y=True)
    if name == "digits_unit":
        X, y = load_digits(return_X_y=True)
        return X / np.maximum(np.linalg.norm(X, axis=1), 1e-12)[:, None], y
    # 72 rows (50 train after the split) of norm <= 1, a linear label.
    X = rng.normal(size=(72, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return X, (X[:, 0] + 0.3 * rng.normal(size=72) > 0).astype(int)


def tails(profile, log) -> list[dict]:
    """Each row of :func:`_rows` with its fit count scaled for the profile."""
    from sklearn.exceptions import ConvergenceWarning  # noqa: F401 (quiet below)
    from sklearn.model_selection import train_test_split

    from skdp.exceptions import NoiseDominatedWarning

    share = FITS.get(profile.name, 1.0)
    rng = np.random.default_rng()  # unseeded: OS entropy, as a user's fit
    out = []
    for row in _rows():
        fits = max(10, int(round(row.fits * share)))
        scores, attrs, warned = [], [], []
        for _ in range(fits):
            X, y = _data(row.data, rng)
            stratify = None if row.data == "diabetes" else y
            Xtr, Xte, ytr, yte = train_test_split(
                X, y, test_size=0.3, stratify=stratify,
                random_state=int(rng.integers(2**31)))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model = row.make().fit(Xtr, ytr)
            warned.append(any(issubclass(w.category, NoiseDominatedWarning)
                              for w in caught))
            scores.append(float(model.score(Xte, yte)))
            if row.attribute:
                attrs.append(float(getattr(model, row.attribute)))
        s = np.array(scores)
        result = dict(name=row.name, data=row.data, fits=fits, issue_fits=row.fits,
                      median=float(np.median(s)), p5=float(np.percentile(s, 5)),
                      min=float(s.min()), targets=dict(median=row.median, p5=row.p5,
                                                       min=row.minimum),
                      warned=float(np.mean(warned)),
                      warned_below_06=(float(np.mean(np.array(warned)[s < 0.6]))
                                       if np.any(s < 0.6) else math.nan),
                      share_below_055=float(np.mean(s < 0.55)))
        if attrs:
            a = np.array(attrs)
            result.update(attribute=row.attribute, attr_median=float(np.median(a)),
                          attr_max=float(a.max()), attr_share_le_4=float(np.mean(a <= 4.0)))
        met = all(v is None or result[k] >= v for k, v in
                  (("median", row.median), ("p5", row.p5), ("min", row.minimum)))
        if row.below_055 is not None:
            result["targets"]["below_055"] = row.below_055
            met = met and result["share_below_055"] <= row.below_055 and not (
                result["warned_below_06"] < 0.9)  # NaN (no fit below 0.6) meets it
        result["met"] = met
        out.append(result)
        log(f"  {row.name}: median {result['median']:.3f}, p5 {result['p5']:.3f}, "
            f"min {result['min']:.3g} ({fits} fits){'' if met else '  (target missed)'}")
    return out


def markdown(rows: list[dict]) -> list[str]:
    """The section of the results page."""
    def f(v):
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3g}"

    lines = ["| workflow | fits (issue) | median | p5 | min | below 0.55 "
             "| target (median / p5 / min) | noise-dominated warning | met |",
             "|---|---|---|---|---|---|---|---|---|"]

    def below(r):  # the share of fits below 0.55 (accuracy only)
        share = 100 * r.get("share_below_055", math.nan)
        return "-" if r["data"] == "diabetes" else f"{share:.0f}%"

    for r in rows:
        t = r["targets"]
        extra = ""
        if r.get("attribute"):
            extra = (f"; `{r['attribute']}` median {f(r['attr_median'])}, max "
                     f"{f(r['attr_max'])}, <= 4 in {100 * r['attr_share_le_4']:.1f}%")
        lines.append(
            f"| {r['name']} ({r['data']}){extra} | {r['fits']} ({r['issue_fits']}) | "
            f"{f(r['median'])} | {f(r['p5'])} | {f(r['min'])} | "
            f"{below(r)}"
            f"{' (<= ' + f(100 * t['below_055']) + '%)' if t.get('below_055') else ''} | "
            f"{f(t['median'])} / {f(t['p5'])} / {f(t['min'])} | "
            f"{100 * r['warned']:.0f}% of fits |"
            f" {'yes' if r['met'] else 'no'} |")
    return lines + [""]
