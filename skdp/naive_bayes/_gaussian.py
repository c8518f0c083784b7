"""Gaussian naive Bayes from ONE private release of the per-class sufficient statistics.

The privacy argument is written out in docs/naive_bayes.md; the comments below follow it.

Neighbouring data sets (replace-one): the same number ``n`` of records, one record
``(x, label)`` replaced by any ``(x', label')``; features AND label may both change, and
``n`` is public.

With public bounds, each feature is clipped to its bounds and mapped to the centred ``u
= clip((x - lower) / (upper - lower), 0, 1) - 1/2`` in ``[-1/2, 1/2]``; with ``"auto"``
bounds, each row is clipped to the l2 ball of a private radius ``C`` and ``u = x~ /
(2 C)`` (:func:`ball_features`, ``||u|| <= 1/2``). The statistics are

    c_k = #{i : y_i = k},   S_k = sum_{y_i = k} u_i  (d numbers per class),
    Q_k = sum_{y_i = k} u_i^2  (elementwise squares; d numbers per class), or, with
    pooled variances, Q = sum_i u_i^2 (d numbers in all).

They are released in ONE mechanism, after dividing each part by a public scale ``r_c``,
``r_s``, ``r_q`` (:func:`part_scales`, from the public ``budget_split``): the whitened
vector ``v = (c / r_c, S / r_s, Q / r_q)`` gets isotropic noise (Gaussian, or i.i.d.
Laplace for pure DP) calibrated to the sensitivity of ``v`` (:func:`joint_sensitivity`:
exact for the box, an upper bound for the ball), and the parts are multiplied back.
Everything else is post-processing of the released numbers and public constants
(:func:`post_process`).
"""

from __future__ import annotations

import math
from functools import partial
from numbers import Real

import numpy as np
from dp_accounting import dp_event as dpe
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from skdp._array_api import is_device_array
from skdp._base import ExactScoreNoticeMixin, start_release
from skdp._docstrings import fill_docstrings
from skdp._labels import CLASSES_DOC, checked_classes
from skdp._params import store_params
from skdp._report import PrivacyReprMixin
from skdp._sklearn_compat import HasMethods, Interval, StrOptions, _fit_context, validate_data
from skdp._warnings import warn_label_set_read
from skdp.losses import clip_rows
from skdp.mechanisms import bound_event
from skdp.preprocessing._scalers import RELEASE_DOCS, _check_bounds_param, fit_bounds
from skdp.privacy.accounting import ACCOUNTING_METHODS, PrivacyLedger, single_release
from skdp.privacy.budget import Budget, check_budget, release_budget
from skdp.privacy.charging import Charge
from skdp.privacy.composition import CompositeLedger
from skdp.privacy.noise import as_generator, as_noise_source

__all__ = ["DPGaussianNB", "class_statistics", "joint_sensitivity", "part_scales",
           "part_sensitivities", "post_process"]

#: Default shares of the budget of the counts, the sums and the sums of squares (chosen by
#: measurement, docs/naive_bayes.md, "Defaults").
BUDGET_SPLIT = (0.05, 0.8, 0.15)
#: Default public floor of the released variances of ``u`` (a fraction of the squared
#: range).
VAR_FLOOR = 1e-3
#: ``variances="auto"`` releases per-class sums of squares when the noise standard
#: deviation of a per-class variance of ``u`` at the average class size is at most this
#: (public: it depends on ``n``, ``d``, the number of classes and the budget only);
#: otherwise the pooled sums of squares (one shared variance per feature).
PER_CLASS_NOISE = 2e-3


def part_sensitivities(n_features: int, norm: str, pooled: bool = False,
                       ball: bool = False) -> np.ndarray:
    """Each part's own replace-one sensitivity, ``(counts, sums, squares)``.

    ``ball=True`` (``bounds="auto"``: every ``u`` in the l2 ball of radius 1/2): ``(sqrt 2,
    1, sqrt(2) / 4)`` in l2 and ``(2, sqrt d, 1/2)`` in l1, pooled or not. Sums: ``||u' -
    u|| <= 1`` when the label stays, ``sqrt(||u||^2 + ||u'||^2) <= sqrt(1/2)`` when it
    moves (``||.||_1 <= sqrt d ||.||_2``: at most ``sqrt d`` in l1 either way). Squares:
    ``u^2`` and ``u'^2`` have non-negative entries and norms at most ``||u||^2 <= 1/4``,
    so ``||u'^2 - u^2||`` and ``sqrt(||u^2||^2 + ||u'^2||^2)`` are at most ``sqrt(2)/4``
    (in l1, ``||u||^2 + ||u'||^2 <= 1/2``).

    Otherwise (the box ``[-1/2, 1/2]^d`` of public bounds):

    ``norm="l2"``: ``(sqrt 2, sqrt d, sqrt(d/8))`` (pooled squares: ``sqrt(d) / 4``);
    ``norm="l1"``: ``(2, d, d / 2)`` (pooled squares: ``d / 4``). Counts: a record moving
    from class ``a`` to ``b`` changes ``c`` by ``e_b - e_a``. Sums: a record staying in its
    class moves ``S_k`` by ``u' - u``, every coordinate in ``[-1, 1]`` (moving class moves
    two rows by ``u`` and ``u'``, each coordinate at most ``1/2``: ``sqrt(d/2)`` in l2,
    ``d`` in l1). Per-class squares: moving class moves two rows by ``u^2`` and ``u'^2``,
    each coordinate at most ``1/4`` (``sqrt(2 d / 16)``, ``d / 2``), staying moves one
    by ``u'^2 - u^2`` in ``[-1/4, 1/4]`` (less). Pooled squares: ``u'^2 - u^2`` always.
    """
    d = float(n_features)
    if ball:
        if norm == "l2":
            return np.array([math.sqrt(2.0), 1.0, math.sqrt(2.0) / 4.0])
        return np.array([2.0, math.sqrt(d), 0.5])
    if norm == "l2":
        return np.array([math.sqrt(2.0), math.sqrt(d),
                         math.sqrt(d) / 4.0 if pooled else math.sqrt(d / 8.0)])
    return np.array([2.0, d, d / 4.0 if pooled else d / 2.0])


def part_scales(n_features: int, budget_split, norm: str, pooled: bool = False,
                ball: bool = False) -> np.ndarray:
    """The public scales ``(r_c, r_s, r_q)`` that divide the three parts before the noise.

    A part with sensitivity ``D_i`` (:func:`part_sensitivities`) and share ``w_i`` of the
    budget gets ``r_i = D_i / sqrt(w_i)`` in l2 (shares of ``mu^2``, the Gaussian
    privacy loss, which adds over releases) and ``r_i = D_i / w_i`` in l1 (shares of
    ``epsilon``). Released separately, the parts would then compose to exactly the whole
    budget; released together the whitened vector's sensitivity is at most 1
    (:func:`joint_sensitivity`), and the noise shrinks by that factor.
    """
    w = np.asarray(budget_split, dtype=float)
    w = w / w.sum()
    sens = part_sensitivities(n_features, norm, pooled, ball)
    return sens / (np.sqrt(w) if norm == "l2" else w)


def _max_same_class_l2(a: float, b: float) -> float:
    """``max_{0 <= t <= 1} t^2 (a + b (1 - t)^2)``: one coordinate of a record that stays
    in its class, ``t = |u' - u|``, with ``|u'^2 - u^2| = t |u + u'| <= t (1 - t)``."""
    candidates = [1.0]
    # Stationary points: a + b (1 - t)(1 - 2 t) = 0, i.e. 2 b t^2 - 3 b t + (a + b) = 0.
    disc = b * b - 8.0 * a * b
    if b > 0 and disc >= 0:
        root = math.sqrt(disc)
        candidates += [(3.0 * b - root) / (4.0 * b), (3.0 * b + root) / (4.0 * b)]
    return max(t * t * (a + b * (1.0 - t) ** 2) for t in candidates if 0.0 <= t <= 1.0)


def _max_same_class_l1(a: float, b: float) -> float:
    """``max_{0 <= t <= 1} t (a + b (1 - t))`` (the l1 analogue)."""
    t = min(1.0, (a + b) / (2.0 * b)) if b > 0 else 1.0
    return max(a, t * (a + b * (1.0 - t)))


def joint_sensitivity(n_features: int, scales, norm: str, pooled: bool = False,
                      ball: bool = False) -> float:
    """The replace-one sensitivity of the whitened statistics ``(c/r_c, S/r_s, Q/r_q)``
    (``norm`` "l2" or "l1"): exact with ``u`` in ``[-1/2, 1/2]^d``, an upper bound with
    ``u`` in the l2 ball of radius 1/2 (``ball``); ``pooled``: ``Q`` is one row (all
    records) instead of one row per class.

    ``ball=True`` (every ``u`` in the l2 ball of radius 1/2, ``bounds="auto"``): an upper
    bound from each part's largest move in each case (:func:`part_sensitivities`), which
    the parts may not reach together. In l2, label kept: ``A + B / 8``; label moved:
    ``2 / r_c^2 + A / 2 + B / 8`` (``A = 1/r_s^2``, ``B = 1/r_q^2``). In l1, label moved
    (the larger): ``2 / r_c + sqrt(d) / r_s + 1 / (2 r_q)``. Pooled or not alike.

    Two cases, and the larger is the sensitivity (both are attained):

    * *the label stays* (``y = y'``): the count does not move; every coordinate ``j``
      moves ``S_k`` by ``t = u'_j - u_j`` and ``Q_k`` (or ``Q``) by ``t (u_j + u'_j)``,
      with ``|u_j + u'_j| <= 1 - |t|``. In l2 the squared change is
      ``sum_j t_j^2 (1/r_s^2 + (u_j + u'_j)^2 / r_q^2) <= d max_t t^2 (A + B (1 - t)^2)``
      (``A = 1/r_s^2``, ``B = 1/r_q^2``; :func:`_max_same_class_l2`, attained at
      ``u'_j = 1/2``, ``u_j = 1/2 - t``); in l1 ``d max_t t (1/r_s + (1 - t) / r_q)``.
    * *the label changes* (``a -> b``): ``c`` moves by ``e_b - e_a`` (``2 / r_c^2`` in
      l2); the row ``S_a`` loses ``u``, the row ``S_b`` gains ``u'`` (different
      coordinates of ``v``, which combine in quadrature). Per-class squares: ``Q_a`` loses
      ``u^2`` and ``Q_b`` gains ``u'^2``, and in l2 the total is ``2 / r_c^2 + 2 d (1/4
      A + 1/16 B)`` (attained at ``|u_j| = |u'_j| = 1/2``). Pooled squares: ``Q`` moves by
      ``u'^2 - u^2``; per coordinate ``(p + q) A + (q - p)^2 B`` with ``p = u_j^2``,
      ``q = u'_j^2`` in ``[0, 1/4]``, convex, so its maximum is at a vertex:
      ``max(A / 2, A / 4 + B / 16)``. In l1, per class: ``2 / r_c + d / r_s + d / (2
      r_q)``; pooled: ``2 / r_c + d max_p (1/2 + p)(a + b (1/2 - p))`` (``a = 1/r_s``,
      ``b = 1/r_q``): per coordinate ``(p + q)(a + b |q - p|)`` with ``p = |u_j|``,
      ``q = |u'_j|`` in ``[0, 1/2]``, increasing in the larger one (``q = 1/2``) and
      concave in the other, whose best value is ``p = min(1/2, a / (2 b))``.

    Returns the l2 norm (or the l1 norm) of the largest change.
    """
    r_c, r_s, r_q = (float(v) for v in scales)
    d = float(n_features)
    if ball:
        if norm == "l2":
            a, b = 1.0 / r_s ** 2, 1.0 / r_q ** 2
            return math.sqrt(max(a + b / 8.0, 2.0 / r_c ** 2 + a / 2.0 + b / 8.0))
        return 2.0 / r_c + math.sqrt(d) / r_s + 0.5 / r_q
    if norm == "l2":
        a, b = 1.0 / r_s ** 2, 1.0 / r_q ** 2
        same = d * _max_same_class_l2(a, b)
        per_coordinate = max(a / 2.0, a / 4.0 + b / 16.0) if pooled else a / 2.0 + b / 8.0
        moved = 2.0 / r_c ** 2 + d * per_coordinate
        return math.sqrt(max(same, moved))
    a, b = 1.0 / r_s, 1.0 / r_q
    same = d * _max_same_class_l1(a, b)
    if pooled:
        p = min(0.5, a / (2.0 * b)) if b > 0 else 0.5
        per_coordinate = (0.5 + p) * (a + b * (0.5 - p))
    else:
        per_coordinate = a + b / 2.0
    moved = 2.0 / r_c + d * per_coordinate
    return max(same, moved)


def centred_features(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``u = clip((x - lower) / (upper - lower), 0, 1) - 1/2``, in ``[-1/2, 1/2]``."""
    return np.clip((X - lower) / (upper - lower), 0.0, 1.0) - 0.5


def ball_features(X: np.ndarray, c: float, norms: np.ndarray | None = None) -> np.ndarray:
    """``u = x~ / (2 c)``, ``x~`` the row clipped to the l2 ball of radius ``c``
    (:func:`~skdp.losses.clip_rows`, with the rows' l2 ``norms`` when known): ``||u|| <=
    1/2``, every coordinate in ``[-1/2, 1/2]`` (the units of the box ``[-c, c]``)."""
    return clip_rows(X, c, norms) / (2.0 * c)


def class_statistics(u: np.ndarray, y: np.ndarray, classes: np.ndarray,
                     pooled: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact (noise-free) statistics ``(c, S, Q)``: shapes ``(K,)``, ``(K, d)`` and
    ``(K, d)`` (``(1, d)`` when ``pooled``), from the centred features ``u``."""
    K, d = classes.size, u.shape[1]
    counts, sums, squares = np.zeros(K), np.zeros((K, d)), np.zeros((K, d))
    for k, label in enumerate(classes):
        rows = u[y == label]
        counts[k] = rows.shape[0]
        sums[k] = rows.sum(axis=0)
        squares[k] = (rows * rows).sum(axis=0)
    if pooled:
        squares = squares.sum(axis=0, keepdims=True)
    return counts, sums, squares


def post_process(counts, sums, squares, n: int, noise_std, var_floor: float):
    """Class counts, means and variances of ``u`` from the RELEASED statistics.

    Reads only the released ``counts`` (K,), ``sums`` (K, d), ``squares`` ((K, d) per
    class or (1, d) pooled), the public ``n``, the public per-coordinate noise standard
    deviations ``noise_std`` of the three parts and the public ``var_floor``:
    post-processing, which costs no privacy.

    1. The counts are made to sum to ``n`` (public), then floored at 1.
    2. Each class mean is shrunk toward the pooled mean (all classes) by the Wiener
       factor ``T / (T + s_k^2)``: ``s_k = noise_std[1] / c_k`` is the known noise of the
       class mean and ``T`` the released total variance of the feature, an upper bound
       of the spread of the true class means around the pooled one (law of total
       variance). A feature whose classes cannot differ by more than the noise gets the
       same mean in every class instead of a random difference, which would shift every
       prediction by the same amount.
    3. Variances: per class ``Q_k / c_k - m_k^2``, or pooled ``(Q - sum_k c_k m_k^2) / n``
       (one per feature, shared by the classes), clipped to ``[var_floor, 1/4]``, plus
       the average over classes of ``s_k^2``: the predictive variance of a row given
       noisy means, the same for every class (a class-dependent term would favour the
       larger classes in every prediction).
    """
    counts = np.asarray(counts, dtype=float)
    K = counts.size
    counts = np.maximum(counts + (n - counts.sum()) / K, 1.0)
    _, std_s, std_q = (float(v) for v in noise_std)
    mean_u = sums / counts[:, None]
    pooled_mean = np.clip(sums.sum(axis=0) / n, -0.5, 0.5)
    total = np.maximum(squares.sum(axis=0) / n - pooled_mean ** 2, 0.0)
    mean_var = (std_s / counts) ** 2
    with np.errstate(invalid="ignore"):  # 0 / 0 when there is no noise
        factor = np.where(mean_var[:, None] > 0,
                          total / (total + mean_var[:, None]), 1.0)
    mean_u = np.clip(pooled_mean + factor * (mean_u - pooled_mean), -0.5, 0.5)
    if squares.shape[0] == 1:
        pooled_var = (squares[0] - (counts[:, None] * mean_u ** 2).sum(axis=0)) / n
        var_u = np.tile(pooled_var, (K, 1))
    else:
        var_u = squares / counts[:, None] - mean_u ** 2
    var_u = np.clip(var_u, var_floor, 0.25) + np.mean(mean_var)
    return counts, mean_u, var_u


@partial(fill_docstrings, texts={**RELEASE_DOCS, "classes": CLASSES_DOC})
class DPGaussianNB(PrivacyReprMixin, ExactScoreNoticeMixin, ClassifierMixin, BaseEstimator):
    """Gaussian naive Bayes with ``(epsilon, delta)``-differential privacy.

    Each feature is clipped to ``[lower, upper]`` and mapped to the centred ``u`` in
    ``[-1/2, 1/2]``; the per-class counts, per-class sums of ``u`` and sums of ``u^2``
    (pooled over the classes, or per class: ``variances``) are released ONCE, each part
    divided by a public scale from ``budget_split`` and the whole vector given noise
    calibrated to its exact joint sensitivity (:func:`joint_sensitivity`): Gaussian
    noise (``delta > 0``), or i.i.d. Laplace noise with the l1 sensitivity (``delta=0``,
    pure DP). Class counts, priors, means and variances follow by post-processing. The
    guarantee covers every fitted attribute under replace-one (a record is ``(x,
    label)``; both may change), with ``n`` and the label set public.
    The derivation is in docs/naive_bayes.md.

    At ``epsilon=inf`` the model equals scikit-learn's ``GaussianNB`` fitted on the
    clipped features.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of the fit (the ``"auto"`` bound included).
    delta : float, default=1e-5
        ``> 0``: Gaussian noise; ``0``: pure DP (Laplace noise).
    bounds : "auto" or tuple (lower, upper), default="auto"
        Public per-feature bounds (scalars or arrays of length ``n_features``), or
        ``"auto"``: every row clipped to the l2 ball of radius ``C`` (so every feature
        lies in ``[-C, C]``), ``C`` a private bound (on a public grid) of the
        0.75-quantile of the rows' l2 norms (the maximum at ``epsilon=inf``), for a
        share ``bounds_fraction`` of ``epsilon``. One bound for all features: features
        far smaller than ``C`` carry little signal, so give public bounds where they
        are known.
    bounds_fraction : float in (0, 1), default=0.1
        Share of ``epsilon`` spent on the ``"auto"`` bound.
    <<classes:statistics>>
    priors : array-like of shape (n_classes,) or None, default=None
        Public class priors; ``None``: from the released counts.
    var_smoothing : float, default=1e-9
        Added to every variance: ``var_smoothing`` times the largest variance a clipped
        feature can have, ``max_j ((upper_j - lower_j) / 2)^2`` (public; at
        ``epsilon=inf``, as scikit-learn, times the largest variance of the clipped
        features).
    budget_split : tuple of 3 positive floats, default=(0.05, 0.8, 0.15)
        Public shares of the budget of the counts, the sums and the sums of squares
        (normalised to sum to 1; shares of ``mu^2`` for Gaussian noise, of ``epsilon``
        for Laplace noise, see :func:`part_scales`).
    var_floor : float in (0, 0.25], default=1e-3
        Public floor of the released variances, as a fraction of the squared range
        ``(upper - lower)^2`` (not applied at ``epsilon=inf``).
    variances : {"auto", "pooled", "per_class"}, default="auto"
        ``"per_class"``: release every class's sums of squares (one variance per class
        and feature, as scikit-learn); ``"pooled"``: release the sums of squares over all
        records (one within-class variance per feature, shared by the classes: ``K``
        times fewer numbers and no class-dependent variance noise). ``"auto"``:
        per-class when the noise of a per-class variance at the average class size is
        small (at most ``2e-3`` of the squared range, a public rule of ``n``, ``d``, the
        number of classes and the budget), pooled otherwise. At ``epsilon=inf``, per
        class (scikit-learn's model).
    <<release_options>>

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels: ``classes`` when given, otherwise the labels of ``y`` (a label SET
        treated as public).
    class_count_ : ndarray of shape (n_classes,)
        Released counts (made to sum to ``n``, then floored at 1).
    class_prior_ : ndarray of shape (n_classes,)
        ``priors``, or the released counts normalised.
    theta_ : ndarray of shape (n_classes, n_features)
        Class means: the released ones shrunk toward the pooled mean by their known noise
        level, inside the bounds (:func:`post_process`).
    var_ : ndarray of shape (n_classes, n_features)
        Class variances: the released ones (per class, or pooled), floored, plus the
        noise variance of the means, plus ``epsilon_``.
    variances_ : {"pooled", "per_class"}
        Which sums of squares were released (public: ``variances`` and its rule).
    epsilon_ : float
        The variance smoothing added to ``var_``.
    lower_, upper_ : ndarray of shape (n_features,)
        The bounds used (public, or released privately).
    noise_scales_ : ndarray of shape (3,)
        The noise of the counts, sums and sums of squares (sums of the centred ``u``):
        Gaussian standard deviations, or Laplace scales; zeros at ``epsilon=inf``.
    privacy_ledger_ : PrivacyLedger or CompositeLedger
        What the fit ran.
    privacy_spent_ : PrivacySpent
        Its re-accounted ``(epsilon, delta)``.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of shape (n_features_in,)
        Names of features seen during fit (only when ``X`` has string column names).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from skdp.naive_bayes import DPGaussianNB
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = DPGaussianNB(epsilon=1.0, bounds=(0, 16), classes=list(range(10)))
    >>> clf.fit(X, y).predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "bounds": [StrOptions({"auto"}), tuple, list],
        "bounds_fraction": [Interval(Real, 0, 1, closed="neither")],
        "classes": ["array-like", None],
        "priors": ["array-like", None],
        "var_smoothing": [Interval(Real, 0, None, closed="left")],
        "budget_split": [tuple, list],
        "var_floor": [Interval(Real, 0, 0.25, closed="right")],
        "variances": [StrOptions({"auto", "pooled", "per_class"})],
        "accounting": [StrOptions({"auto", *ACCOUNTING_METHODS} - {"basic"})],
        "accountant": [HasMethods(["charge", "refund"]), None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, epsilon=1.0, delta=1e-5, *, bounds="auto", bounds_fraction=0.1,
                 classes=None, priors=None, var_smoothing=1e-9, budget_split=BUDGET_SPLIT,
                 var_floor=VAR_FLOOR, variances="auto", accounting="auto", accountant=None,
                 random_state=None, verbose=0):
        store_params(self, locals())

    # -- the public plan -------------------------------------------------------------------
    def _check_split(self) -> np.ndarray:
        split = np.asarray(self.budget_split, dtype=float)
        if split.shape != (3,) or not np.all(np.isfinite(split)) or not np.all(split > 0):
            raise ValueError("budget_split must be 3 positive finite shares (counts, sums, "
                             "sums of squares); set budget_split accordingly.")
        return split / split.sum()

    def _plan(self):
        """Budgets, the mechanism and the ledger, from the parameters only (the ledger
        does not depend on ``n``, ``d`` or the label set: the whitened release has a
        sensitivity that :func:`joint_sensitivity` computes and the noise is scaled by)."""
        _check_bounds_param(self.bounds)
        self._check_split()
        total = check_budget(self.epsilon, self.delta, needs_delta=False)
        auto = isinstance(self.bounds, str) and total.is_private
        eps_bounds, stats, accounting = release_budget(
            total, self.bounds_fraction if auto else None, self.accounting)
        if not stats.is_private:
            mechanism, event, unit = "none", dpe.NonPrivateDpEvent(), 0.0
        elif accounting == "pure":
            # i.i.d. Laplace of scale Delta_1 / epsilon on every coordinate of the whitened
            # vector (l1 sensitivity Delta_1): epsilon-DP (Dwork & Roth 2014, Thm. 3.6).
            # LaplaceDpEvent(z) is read as epsilon = 1 / z; the scale is z Delta_1.
            mechanism, event, unit = "laplace", dpe.LaplaceDpEvent(1.0 / stats.epsilon), \
                1.0 / stats.epsilon
        else:
            release = single_release(stats, accounting, "replace_one")
            mechanism, event, unit = release.mechanism, release.event, release.unit_scale
        ledger = PrivacyLedger(event, accounting, "replace_one", stats)
        if auto:
            bounds_ledger = PrivacyLedger(dpe.ComposedDpEvent([bound_event(eps_bounds)]),
                                          "pure", "replace_one", Budget(eps_bounds, 0.0))
            ledger = CompositeLedger((("bounds", bounds_ledger), ("statistics", ledger)),
                                     total)
        return total, mechanism, unit, ledger, eps_bounds

    def _planned_ledger(self, n_samples: int, n_features: int, y=None):
        """The ledger ``fit`` charges before reading ``X`` (used for pricing)."""
        return self._plan()[3]

    def _check_classes(self, y) -> np.ndarray:
        """The sorted label set, checked as every skdp classifier checks it
        (:func:`skdp._labels.checked_classes`)."""
        return checked_classes(type(self).__name__, self.classes, y)

    def _check_priors(self, n_classes: int):
        if self.priors is None:
            return None
        priors = np.asarray(self.priors, dtype=float)
        if priors.shape != (n_classes,):
            raise ValueError("Number of priors must match number of classes.")
        if not np.isclose(priors.sum(), 1.0):
            raise ValueError("The sum of the priors should be 1.")
        if (priors < 0).any():
            raise ValueError("Priors must be non-negative.")
        return priors

    # -- fit -------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Release the per-class statistics privately; the model is post-processing.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The private rows; each feature is clipped to its bounds (each row to the l2
            ball of radius ``C`` with ``"auto"`` bounds).
        y : array-like of shape (n_samples,)
            Their labels (private; the label SET is public).

        Returns
        -------
        DPGaussianNB
            The fitted classifier (``self``).
        """
        # Floating-point warnings are off while the data is read: whether a sum
        # overflows depends on the data (docs/privacy.md, 1.4).
        with np.errstate(all="ignore"):
            return self._fit(X, y)

    def _fit(self, X, y):
        """Plan from the parameters (public), charge, estimate the bound (``"auto"``),
        release the statistics once; the rest is post-processing."""
        if is_device_array(X) or is_device_array(y):
            # Public (the input's type): refused before anything is charged.
            raise TypeError(
                f"{type(self).__name__} takes NumPy arrays, and X is an array API array "
                "kept on its device; pass np.asarray(X) (X.cpu().numpy() for a GPU tensor). "
                "docs/scaling_out.md lists the estimators and transformers that fit on a "
                "device.")
        if y is None:
            # scikit-learn's error for a missing y, before anything is charged.
            validate_data(self, X, y, dtype=np.float64)
        total, mechanism, unit, ledger, eps_bounds = self._plan()
        progress = start_release(self, total, "bounds")
        if self.classes is None:
            warn_label_set_read()
        with Charge.of(self, ledger) as charge:
            # Input errors (format, non-finite values, labels outside classes) raise
            # here, before anything is released: the charge is refunded.
            X, y = validate_data(self, X, y, dtype=np.float64)
            classes = self._check_classes(y)
            priors = self._check_priors(classes.size)
            n, d = X.shape
            progress(f"{n} rows, {d} features, {classes.size} classes")
            bounds_rng, noise_rng = as_generator(self.random_state).spawn(2)
            # "auto": one private bound C of the row norms, kept charged from here, and
            # every row clipped to the l2 ball of radius C (ball_features; norms: the
            # rows' l2 norms, read once, None with public bounds).
            lower, upper, norms = fit_bounds(self.bounds, X, eps_bounds, bounds_rng, charge,
                                             ledger, total)
            width = upper - lower
            if total.is_private:
                fitted = self._private_statistics(X, y, classes, lower, upper, mechanism,
                                                  unit, noise_rng, norms)
            else:
                fitted = self._exact_statistics(X, y, classes, lower, upper, norms)
        counts, theta, var, epsilon_, scales, variances = fitted
        self.classes_ = classes
        self.class_count_ = counts
        self.class_prior_ = counts / counts.sum() if priors is None else priors
        self.theta_ = theta
        self.var_ = var
        self.epsilon_ = epsilon_
        self.lower_, self.upper_ = lower, upper
        self.noise_scales_ = scales
        self.variances_ = variances
        self.privacy_ledger_ = ledger
        self.privacy_spent_ = ledger.spent()
        progress("done", f"privacy spent ({self.privacy_spent_.epsilon:.6g}, "
                         f"{self.privacy_spent_.delta:.3g}); width {np.max(width):.4g}")
        return self

    def _release_plan(self, n: int, d: int, n_classes: int, mechanism: str, unit: float):
        """The public part of the release: ``(norm, scales, sensitivity, pooled,
        noise_std)`` from ``n``, ``d``, the number of classes and the plan only (the
        geometry too: the l2 ball of ``"auto"`` bounds, or the box of public ones)."""
        norm = "l1" if mechanism == "laplace" else "l2"
        ball = isinstance(self.bounds, str)
        split = self._check_split()
        per_coordinate = math.sqrt(2.0) if norm == "l1" else 1.0  # Laplace std: sqrt(2) b
        pooled = self.variances == "pooled"
        if self.variances == "auto":
            # Public: the noise std of a per-class variance of u at the average class size.
            scales = part_scales(d, split, norm, ball=ball)
            noise = (unit * joint_sensitivity(d, scales, norm, ball=ball) * scales[2]
                     * per_coordinate / (n / n_classes))
            pooled = noise > PER_CLASS_NOISE
        scales = part_scales(d, split, norm, pooled, ball)
        # Sensitivity of the whitened vector (c / r_c, S / r_s, Q / r_q), at most 1.
        sensitivity = joint_sensitivity(d, scales, norm, pooled, ball)
        return norm, scales, sensitivity, pooled, unit * sensitivity * scales * per_coordinate

    def _private_statistics(self, X, y, classes, lower, upper, mechanism, unit, rng,
                            norms=None):
        """The one release and its post-processing."""
        n, d = X.shape
        K = classes.size
        _, scales, sensitivity, pooled, noise_std = self._release_plan(n, d, K, mechanism,
                                                                       unit)
        u = (ball_features(X, float(upper[0]), norms) if isinstance(self.bounds, str)
             else centred_features(X, lower, upper))
        counts, sums, squares = class_statistics(u, y, classes, pooled)
        noise = as_noise_source(rng)
        # The whitened vector v = (c / r_c, S / r_s, Q / r_q), K + K d + (K or 1) d
        # numbers, gets ONE draw of isotropic noise of scale unit * sensitivity (Gaussian
        # std, or Laplace scale); the release is reported as (c, S, Q) + r * noise.
        shape = (K + K * d + squares.size,)
        if mechanism == "laplace":
            draw = noise.laplace(shape, unit * sensitivity)
        else:
            draw = noise.gaussian(shape, unit * sensitivity)
        counts = counts + scales[0] * draw[:K]
        sums = sums + scales[1] * draw[K:K + K * d].reshape(K, d)
        squares = squares + scales[2] * draw[K + K * d:].reshape(squares.shape)
        # -- post-processing: released numbers and public constants only ------------------
        counts, mean_u, var_u = post_process(counts, sums, squares, n, noise_std,
                                             float(self.var_floor))
        width = upper - lower
        epsilon_ = float(self.var_smoothing) * float(np.max((width / 2.0) ** 2))
        theta = lower + width * (mean_u + 0.5)
        var = width ** 2 * var_u + epsilon_
        return (counts, theta, var, epsilon_, unit * sensitivity * scales,
                "pooled" if pooled else "per_class")

    def _exact_statistics(self, X, y, classes, lower, upper, norms=None):
        """``epsilon=inf``: scikit-learn's ``GaussianNB`` on the clipped features (the
        same formulas: ``np.average`` and its variance, ``var_smoothing`` times the
        largest variance of the clipped features). Clipped as a private fit clips them:
        to the box, or to the l2 ball of ``"auto"`` bounds (whose radius, the largest row
        norm rounded up onto the grid, clips no row below the grid's top)."""
        Xc = (clip_rows(X, float(upper[0]), norms) if isinstance(self.bounds, str)
              else np.clip(X, lower, upper))
        K, d = classes.size, X.shape[1]
        epsilon_ = float(self.var_smoothing) * float(np.var(Xc, axis=0).max())
        counts = np.zeros(K)
        theta = np.tile(lower + (upper - lower) / 2.0, (K, 1))
        var = np.zeros((K, d))
        for k, label in enumerate(classes):
            rows = Xc[y == label]
            if rows.shape[0] == 0:
                continue
            counts[k] = rows.shape[0]
            theta[k] = np.average(rows, axis=0)
            var[k] = np.average((rows - theta[k]) ** 2, axis=0)
        return counts, theta, var + epsilon_, epsilon_, np.zeros(3), "per_class"

    # -- prediction (scikit-learn's GaussianNB formulas) ---------------------------------
    def _joint_log_likelihood(self, X) -> np.ndarray:
        check_is_fitted(self, "theta_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        jll = []
        # Silent: the rows may be private (a score inside a search), and whether a square
        # overflows depends on them; a declared class with prior 0 gets -inf.
        with np.errstate(all="ignore"):
            log_prior = np.log(self.class_prior_)
            for i in range(self.classes_.size):
                jointi = log_prior[i]
                n_ij = -0.5 * np.sum(np.log(2.0 * np.pi * self.var_[i, :]))
                n_ij -= 0.5 * np.sum(((X - self.theta_[i, :]) ** 2) / (self.var_[i, :]), 1)
                jll.append(jointi + n_ij)
        return np.array(jll).T

    def predict_joint_log_proba(self, X):
        """Joint log probability ``log P(x, c)`` of each row and class.

        <<parameters_rows:The rows.>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            ``log P(c) + log P(x | c)``, columns in the order of ``classes_``.
        """
        return self._joint_log_likelihood(X)

    def predict(self, X):
        """The most probable class of each row.

        <<parameters_rows:The rows.>>

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels of ``classes_``.
        """
        jll = self._joint_log_likelihood(X)  # checks that the model is fitted first
        return self.classes_[np.argmax(jll, axis=1)]

    def predict_log_proba(self, X):
        """Log class probabilities.

        <<parameters_rows:The rows.>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            ``log P(c | x)``, columns in the order of ``classes_``.
        """
        jll = self._joint_log_likelihood(X)
        with np.errstate(all="ignore"):
            return jll - np.atleast_2d(logsumexp(jll, axis=1)).T

    def predict_proba(self, X):
        """Probability of each class for each row.

        <<parameters_rows:The rows.>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            ``P(c | x)``, columns in the order of ``classes_``.
        """
        return np.exp(self.predict_log_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Noise-dominated on scikit-learn's toy checks at the default epsilon, by design
        # (the 0.83 accuracy bar of check_classifiers_train; it passes at epsilon=inf).
        tags.classifier_tags.poor_score = True
        return tags

