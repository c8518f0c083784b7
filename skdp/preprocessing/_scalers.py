"""Transformers for private pipelines: public-bounds scaling, row clipping, a DP scaler."""

from __future__ import annotations

import math
from functools import partial
from numbers import Real

import numpy as np
from dp_accounting import dp_event as dpe
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from skdp._array_api import (
    as_float64,
    check_same_namespace,
    clip_device_rows,
    device_blocks,
    is_device_array,
    namespace,
    to_device,
    to_numpy,
)
from skdp._base import (
    start_release,
    validate_device_rows,
    validate_fit_rows,
)
from skdp._docstrings import fill_docstrings
from skdp._params import POSITIVE, store_params
from skdp._report import PrivacyReprMixin
from skdp._sklearn_compat import HasMethods, Interval, StrOptions, _fit_context, validate_data
from skdp.losses import NORM_SAFETY, clip_rows, row_norms
from skdp.mechanisms import bound_event, private_bound
from skdp.privacy.accounting import ACCOUNTING_METHODS, PrivacyLedger, single_release
from skdp.privacy.budget import Budget, check_budget, release_budget
from skdp.privacy.charging import Charge
from skdp.privacy.composition import CompositeLedger
from skdp.privacy.noise import as_generator, as_noise_source

__all__ = ["RELEASE_DOCS", "DPStandardScaler", "PublicBoundsScaler", "RowNormClipper"]


def _public_bounds(bounds, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` arrays of length ``n_features`` from scalars or per-feature arrays."""
    lower, upper = (np.broadcast_to(np.asarray(b, dtype=float), (n_features,)).copy()
                    for b in bounds)
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
            and np.all(upper > lower) and np.all(np.isfinite(upper - lower))):
        raise ValueError("bounds must be finite (lower, upper) with upper > lower for every "
                         "feature; set bounds to public per-feature ranges.")
    return lower, upper


#: ``bounds="auto"`` of the one-release transformers (:func:`fit_bounds`): the quantile of
#: the rows' l2 norms that the private bound ``C`` targets at a finite epsilon (the
#: maximum at ``epsilon=inf``; :func:`skdp.mechanisms.target_count`).
BOUNDS_QUANTILE = 0.75


def fit_bounds(bounds, X, epsilon: float, rng, charge, ledger, total: Budget):
    """The per-feature bounds a one-release transformer fits with, and its row norms.

    Public ``bounds`` give ``(lower, upper)`` as declared. ``"auto"`` reads the rows' l2
    norms once and releases :func:`~skdp.mechanisms.private_bound` of them at
    :data:`BOUNDS_QUANTILE` (their maximum at ``epsilon=inf``), ``C``, a point of the
    public grid: every row is then clipped to the l2 ball of radius ``C``, so every
    feature lies in ``[-C, C]`` (docs/privacy.md, 1.7). Once ``C`` is computed, the bounds
    part of ``ledger`` (its first) stays charged whatever happens next; at
    ``epsilon=inf`` the ledger has no such part and nothing is kept.

    Parameters
    ----------
    bounds : "auto" or (lower, upper)
        The transformer's ``bounds`` parameter.
    X : array of shape (n_samples, n_features)
        The validated private rows.
    epsilon : float
        The bound's budget (``"auto"`` only).
    rng : numpy.random.Generator
        Its noise's source.
    charge : Charge
        The fit's open charge.
    ledger : PrivacyLedger or CompositeLedger
        The planned ledger, ``("bounds", ...)`` first when private with ``"auto"``.
    total : Budget
        The fit's total budget.

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
        The bounds (``-C`` and ``C`` for ``"auto"``).
    norms : ndarray of shape (n_samples,) or None
        The rows' l2 norms that ``C`` was computed from, for the clip to the same ball
        (``None`` with public bounds).
    """
    d = X.shape[1]
    if not isinstance(bounds, str):
        return (*_public_bounds(bounds, d), None)
    norms = row_norms(X, 2.0)
    c = private_bound(norms, epsilon, rng, quantile=BOUNDS_QUANTILE)
    if isinstance(ledger, CompositeLedger):
        charge.keep(CompositeLedger((ledger.parts[0],), total))
    return np.full(d, -c), np.full(d, c), norms


def _check_bounds_param(bounds) -> None:
    if isinstance(bounds, str):
        return
    if not (isinstance(bounds, tuple | list) and len(bounds) == 2):
        raise ValueError("bounds must be 'auto' or a pair (lower, upper) of numbers or "
                         "per-feature arrays; set bounds accordingly.")


class _PublicMap(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """A per-record map with public constants: ``fit`` reads the shape only."""

    #: Read by :func:`skdp._report.non_private_steps`: this step learns nothing from data.
    _learns_from_data = False

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the shape and the settings (no statistic of ``X`` is read).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows of the shape to map; only their number of features is read.
        y : None
            Ignored (the pipeline API passes it).

        Returns
        -------
        object
            The fitted transformer (``self``).
        """
        like = None
        with np.errstate(all="ignore"):  # validation sums X: silent (docs/privacy.md 1.4)
            if is_device_array(X):  # an array API X (docs/scaling_out.md)
                X = like = validate_device_rows(X)
                self.n_features_in_ = int(X.shape[1])
            else:
                X = validate_data(self, X, dtype=np.float64)
        self._set_public(X.shape[1])
        if like is not None:
            for name in self._public_arrays:
                setattr(self, name, to_device(getattr(self, name), like))
        return self

    #: Fitted array attributes (kept in the namespace and on the device of the fit's X).
    _public_arrays: tuple[str, ...] = ()

    def _set_public(self, n_features: int) -> None:
        """Fitted attributes from the settings and the number of features only."""

    def transform(self, X):
        """Apply the map to every row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows (not modified).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The mapped rows, each a function of its own row and public constants.
        """
        check_is_fitted(self, "n_features_in_")
        if self._public_arrays:
            check_same_namespace(getattr(self, self._public_arrays[0]), X,
                                 f"{type(self).__name__}.transform()")
        # Silent: in a pipeline's fit this maps private rows (docs/privacy.md, 1.4).
        with np.errstate(all="ignore"):
            if is_device_array(X):
                X = validate_device_rows(X, fitted=self)
                return self._map(as_float64(namespace(X), X))
            return self._map(validate_data(self, X, dtype=np.float64, reset=False))


class PublicBoundsScaler(_PublicMap):
    """Map declared per-feature bounds to ``[-1, 1]``, clipping outside: reads no statistic.

    ``x -> clip(2 (x - lower) / (upper - lower) - 1, -1, 1)``: a fixed per-record map with
    PUBLIC constants, so it costs no privacy.

    Parameters
    ----------
    bounds : tuple (lower, upper), default=(-1.0, 1.0)
        Public bounds: scalars, or arrays of length ``n_features`` (for example the ranges
        published with a data set, or physical limits). Never compute them from the
        private data.
    """

    _parameter_constraints: dict = {"bounds": [tuple, list]}

    def __init__(self, bounds=(-1.0, 1.0)):
        self.bounds = bounds

    def _set_public(self, n_features: int) -> None:
        _check_bounds_param(self.bounds)
        self.lower_, self.upper_ = _public_bounds(self.bounds, n_features)

    _public_arrays = ("lower_", "upper_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.array_api_support = True  # an elementwise map where X is (docs/scaling_out.md)
        return tags

    def _map(self, X):
        # float64 rows, of NumPy or of the namespace (and device) of the fit's X.
        out = (X - self.lower_) * (2.0 / (self.upper_ - self.lower_)) - 1.0
        if isinstance(out, np.ndarray):
            return np.clip(out, -1.0, 1.0, out=out)
        return namespace(out).clip(out, min=-1.0, max=1.0)


class RowNormClipper(_PublicMap):
    """Clip every row to a public norm bound: reads no statistic.

    Parameters
    ----------
    max_norm : float, default=1.0
        Public bound; rows with a larger norm are scaled down to it.
    norm : float >= 1 or inf, default=2.0
        The norm in which rows are measured.
    """

    _parameter_constraints: dict = {
        "max_norm": POSITIVE,
        "norm": [Interval(Real, 1, None, closed="left")],
    }

    def __init__(self, max_norm=1.0, norm=2.0):
        store_params(self, locals())

    def _map(self, X):
        # float64 rows, of NumPy or of an array API namespace (on their device).
        if not isinstance(X, np.ndarray):
            return clip_device_rows(namespace(X), X, float(self.max_norm) * NORM_SAFETY,
                                    float(self.norm))
        with np.errstate(divide="ignore"):
            scale = np.minimum(1.0, float(self.max_norm) * NORM_SAFETY
                               / row_norms(X, float(self.norm)))
        return X * scale[:, None]


_FLOAT_MAX = float(np.finfo(np.float64).max)

#: The options of every one-release transformer and estimator (DPStandardScaler, DPPCA,
#: DPGaussianNB), described once: a line ``<<release_options>>`` in their docstrings, and
#: ``<<parameters_rows:what the rows are>>`` for their methods that read ``X`` only.
RELEASE_DOCS = {"release_options": """\
accounting : {"auto", "gaussian", "rdp", "pld", "pure"}, default="auto"
    How the release is accounted (``"auto"``: exact Gaussian, or pure for ``delta=0``).
accountant : BudgetAccountant or None, default=None
    Charged before ``X`` is read, as every skdp fit.
random_state : None, int or Generator, default=None
    Source of the noise (``None``: OS entropy; use it for releases).
verbose : int, default=0
    ``1``: print the phases with public quantities only; ``2``: also elapsed times.
""",
    # The Parameters section of a method that reads only rows ``X``.
    "parameters_rows": """\
Parameters
----------
X : array-like of shape (n_samples, n_features)
    {arg}
"""}

#: A released mean this many noise standard deviations from its public default keeps
#: ``1 - 1/SHRINK_LEVEL^2`` (75% at 2) of its distance; closer ones fall to the default.
SHRINK_LEVEL = 2.0


#: ``bounds="auto"``: l2 sensitivity of the released ``[sum_i x~_i / (2 C), sum_i x~_i^2 /
#: (sqrt(2) C^2)]`` (``x~_i`` the row clipped to the l2 ball of radius ``C``, squares taken
#: per feature). Replacing one row moves the first half by ``||a - b|| <= 2 C`` and the
#: second by ``||a^2 - b^2|| <= sqrt(||a^2||^2 + ||b^2||^2) <= sqrt(2) C^2`` (two vectors
#: of non-negative entries, each of norm at most ``||a||^2 <= C^2``): ``sqrt(1 + 1)``,
#: against ``sqrt(2 d)`` for the per-feature box ``[-C, C]^d`` (docs/privacy.md, DP
#: scaler).
BALL_SENSITIVITY = math.sqrt(2.0)


def _ball_sums(X, c: float, norms: np.ndarray) -> np.ndarray:
    """The exact part of the ``"auto"`` release: the per-feature sums of the rows clipped
    to the l2 ball of radius ``c`` (:func:`~skdp.losses.clip_rows`: divided by their norm
    first, at ``c`` times :data:`~skdp.losses.NORM_SAFETY`, so that no rounding leaves
    one outside; ``norms``, the rows' l2 norms, are those the private bound read) over
    ``2 c``, and of their squares over ``sqrt(2) c^2`` (``2 d`` values), block by block
    (no ``n x d`` temporary beyond one block)."""
    n, d = X.shape
    sums = np.zeros(2 * d)
    for start in range(0, n, 4096):
        rows = clip_rows(X[start:start + 4096], c, norms[start:start + 4096])
        sums[:d] += rows.sum(axis=0)
        sums[d:] += (rows * rows).sum(axis=0)
    sums[:d] /= 2.0 * c
    sums[d:] /= BALL_SENSITIVITY * c * c
    return sums


def _device_ball_sums(X, c: float) -> np.ndarray:
    """:func:`_ball_sums` for an array API ``X``, on its device (the rows clipped as the
    host clips them, :func:`~skdp._array_api.clip_device_rows`)."""
    def block_sums(xp, rows):
        clipped = clip_device_rows(xp, rows, c * NORM_SAFETY)
        return xp.concat([xp.sum(clipped, axis=0) / (2.0 * c),
                          xp.sum(clipped * clipped, axis=0) / (BALL_SENSITIVITY * c * c)])

    return np.sum(device_blocks(X, block_sums), axis=0)


def _device_sums(X, lower: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The released statistic's exact part for an array API ``X``, on its device: the
    per-feature sums of ``u`` and ``u^2``, ``u = clip((x - lower) / width, 0, 1)``,
    returned to the host (``2 d`` values)."""
    low, wide = to_device(lower, X), to_device(width, X)

    def block_sums(xp, rows):
        u = xp.clip((rows - low) / wide, min=0.0, max=1.0)
        return xp.concat([xp.sum(u, axis=0), xp.sum(u * u, axis=0)])

    return np.sum(device_blocks(X, block_sums), axis=0)


def shrink_to_centre(mean_u: np.ndarray, std: float) -> tuple[np.ndarray, np.ndarray]:
    """Shrink released means of ``u`` (in ``[0, 1]``) toward the public centre of the
    bounds (``u = 1/2``) by their known noise standard deviation ``std``.

    The non-negative garrote, coordinate by coordinate: the distance ``z`` to the centre
    becomes ``z max(0, 1 - (k std / z)^2)``, ``k`` = :data:`SHRINK_LEVEL`. It reads only the
    released means and public constants: post-processing. Returns the means and the
    features whose mean fell to the centre.
    """
    z = mean_u - 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = np.where(z != 0, np.maximum(0.0, 1.0 - (SHRINK_LEVEL * std / z) ** 2), 0.0)
    return 0.5 + z * keep, keep == 0


@partial(fill_docstrings, texts=RELEASE_DOCS)
class DPStandardScaler(PrivacyReprMixin, OneToOneFeatureMixin, TransformerMixin,
                       BaseEstimator):
    """Standardize features with differentially private means and variances.

    With public bounds, each feature is clipped to ``[lower, upper]`` and mapped to ``u =
    (x - lower) / (upper - lower)`` in ``[0, 1]``; the vectors ``sum_i u_i`` and ``sum_i
    u_i^2`` (2 d numbers, l2 sensitivity ``sqrt(2 d)`` under replace-one: each coordinate
    of one row moves by at most 1) are released once with calibrated noise (Gaussian, or
    l2-Laplace for ``delta=0``). With ``bounds="auto"``, each row is clipped to the l2 ball
    of radius ``C`` and ``[sum_i x_i / (2 C), sum_i x_i^2 / (sqrt(2) C^2)]`` is released
    instead: l2 sensitivity ``sqrt(2)``, ``sqrt(d)`` times less noise than the box
    ``[-C, C]^d``. Either way ``mean_``, ``var_`` follow by post-processing (variances floored at
    ``1e-4`` of the squared range and, at a finite epsilon, at the noise level of their
    released moment, so that a feature the noise swamps is not amplified). ``n`` is
    public. Details: docs/privacy.md, "DP scaler".

    Parameters
    ----------
    epsilon : float, default=0.3
        Privacy budget of this step (a pipeline's total is the sum of its steps').
    delta : float, default=1e-5
        ``0`` for pure DP (l2-Laplace noise).
    bounds : "auto" or tuple (lower, upper), default="auto"
        Public per-feature bounds (scalars or arrays), or ``"auto"``: every row clipped
        to the l2 ball of radius ``C`` (so every feature lies in ``[-C, C]``), ``C`` a
        private bound of the row norms' 0.75-quantile on a public grid (their maximum at
        ``epsilon=inf``; a share ``bounds_fraction`` of ``epsilon``; docs/privacy.md,
        "Private bounds" and "DP scaler"). Features far smaller than the row norm get
        little signal with ``"auto"`` (their means fall to 0, see ``shrink_mean``; give
        public bounds for them).
    bounds_fraction : float in (0, 1), default=0.5
        Share of ``epsilon`` spent on ``"auto"`` bounds (one private bound, which must
        not fail at small ``n epsilon``: a far bound wipes out every feature).
    shrink_mean : bool, default=True
        Shrink each released mean toward the public centre of its bounds by its known
        noise level (:func:`shrink_to_centre`, post-processing). A centring error moves every
        row by the same offset, which adds up over the features in every row norm (and
        so in a downstream clip and its noise), while a scale error only reweights one
        feature: a budget too small to centre a feature leaves it uncentred instead of
        shifted by noise. ``shrunk_`` lists those features. ``False``: the raw means.
    <<release_options>>

    Attributes
    ----------
    mean_, var_, scale_ : ndarray of shape (n_features,)
    shrunk_ : ndarray of bool, shape (n_features,)
        Features whose mean fell to the centre of the bounds (``shrink_mean``).
    lower_, upper_ : ndarray of shape (n_features,)
        The bounds used: public, or ``-C`` and ``C`` with ``"auto"`` (``C`` released
        privately; the rows were clipped to the l2 ball of that radius).
    privacy_ledger_ : PrivacyLedger or CompositeLedger
    privacy_spent_ : PrivacySpent
    n_features_in_ : int
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "bounds": [StrOptions({"auto"}), tuple, list],
        "bounds_fraction": [Interval(Real, 0, 1, closed="neither")],
        "shrink_mean": ["boolean"],
        "accounting": [StrOptions({"auto", *ACCOUNTING_METHODS} - {"basic"})],
        "accountant": [HasMethods(["charge", "refund"]), None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, epsilon=0.3, delta=1e-5, *, bounds="auto", bounds_fraction=0.5,
                 shrink_mean=True, accounting="auto", accountant=None, random_state=None,
                 verbose=0):
        store_params(self, locals())

    def _plan(self, n_features: int):
        """Budgets and the ledger charged before reading ``X`` (public quantities only)."""
        _check_bounds_param(self.bounds)
        total = check_budget(self.epsilon, self.delta, needs_delta=False)
        auto = isinstance(self.bounds, str)
        eps_bounds, moments, accounting = release_budget(
            total, self.bounds_fraction if auto else None, self.accounting)
        release = single_release(moments, accounting, "replace_one")
        ledger = PrivacyLedger(release.event, accounting, "replace_one", moments)
        if auto and total.is_private:
            bounds_ledger = PrivacyLedger(dpe.ComposedDpEvent([bound_event(eps_bounds)]),
                                          "pure", "replace_one", Budget(eps_bounds, 0.0))
            ledger = CompositeLedger((("bounds", bounds_ledger), ("moments", ledger)), total)
        return total, release, ledger, eps_bounds

    def _planned_ledger(self, n_samples: int, n_features: int, y=None):
        """The ledger ``fit`` charges before reading ``X`` (used for pricing)."""
        return self._plan(n_features)[2]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release private means and variances of the (clipped) features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The private rows; each feature is clipped to its bounds before the sums.
        y : None
            Ignored.

        Returns
        -------
        DPStandardScaler
            The fitted scaler (``self``), with ``mean_``, ``scale_`` and its ledger.
        """
        # Floating-point warnings are off while the data is read: whether a sum or a
        # scaled value overflows depends on the data (docs/privacy.md, 1.4).
        with np.errstate(all="ignore"):
            return self._fit(X)

    def _fit(self, X):
        """Plan from the shape (public), charge, estimate the bounds (``"auto"``), then
        release the clipped sums of ``u`` and ``u^2`` once with calibrated noise; the
        means and variances are post-processing."""
        shape = getattr(X, "shape", None)
        if shape is None or len(shape) != 2 or min(shape) < 1:
            X = validate_data(self, X, dtype=np.float64)
            shape = X.shape
        total, release, ledger, eps_bounds = self._plan(int(shape[1]))
        progress = start_release(self, total, "bounds", shape)
        with Charge.of(self, ledger) as charge:
            X, like = validate_fit_rows(self, X)
            n, d = X.shape
            bounds_rng, noise_rng = as_generator(self.random_state).spawn(2)
            # "auto": one private bound C of the row norms, kept charged from here, and
            # every row clipped to the l2 ball of radius C.
            lower, upper, norms = fit_bounds(self.bounds, X, eps_bounds, bounds_rng, charge,
                                             ledger, total)
            ball = norms is not None
            c, width = float(upper[0]), upper - lower
            if ball:
                # The released 2d-vector [sum x~ / (2C), sum x~^2 / (sqrt(2) C^2)], rows
                # clipped to the ball: l2 sensitivity sqrt(2) (BALL_SENSITIVITY), a
                # factor sqrt(d) below the box's, as no row can be extreme in every
                # feature at once.
                sums = (_device_ball_sums(X, c) if like is not None
                        else _ball_sums(X, c, norms))
                sensitivity = BALL_SENSITIVITY
            else:
                # Per-feature sums of u and u^2, u in [0, 1]; one replaced row moves each
                # of its 2d coordinates by at most 1: sensitivity sqrt(2 d) (l2).
                if like is not None:
                    sums = _device_sums(X, lower, width)
                else:
                    sums = np.zeros(2 * d)
                    for start in range(0, n, 4096):  # blocks: no n x d temporary beyond one
                        u = np.clip((X[start:start + 4096] - lower) / width, 0.0, 1.0)
                        sums[:d] += u.sum(axis=0)
                        sums[d:] += (u * u).sum(axis=0)
                sensitivity = math.sqrt(2.0 * d)
            noise = as_noise_source(noise_rng)
            if release.mechanism == "gaussian":
                sums = sums + noise.gaussian((2 * d,), release.unit_scale * sensitivity)
            elif release.mechanism == "l2_laplace":
                sums = sums + noise.l2_laplace((2 * d,), release.unit_scale * sensitivity)
            if ball:
                # In the units of u = (x + C) / (2C) (post-processing): the mean of x / (2C)
                # is sums[:d] / n, the mean of (x / (2C))^2 is sums[d:] sqrt(2) / (4 n).
                mean_u = np.clip(0.5 + sums[:d] / n, 0.0, 1.0)
                second = BALL_SENSITIVITY / 4.0
                var_u = np.clip(second * sums[d:] / n - (mean_u - 0.5) ** 2, 1e-4, 0.25)
            else:
                mean_u = np.clip(sums[:d] / n, 0.0, 1.0)
                second = 1.0
                var_u = np.clip(sums[d:] / n - mean_u ** 2, 1e-4, 0.25)
            shrunk = np.zeros(d, dtype=bool)
            if total.is_private:
                # Per-coordinate noise std of the released sums (public): sigma for the
                # Gaussian; an l2-Laplace of scale b in k = 2d dimensions has per-coordinate
                # variance (k + 1) b^2 (its radius is Gamma(k, b): E r^2 = k (k + 1) b^2).
                std = release.unit_scale * sensitivity * (
                    1.0 if release.mechanism == "gaussian" else math.sqrt(2 * d + 1))
                # A variance below the noise of its own released moment (second * std / n
                # in u^2 units) cannot be told from 0: it is raised to that level (at most
                # 1/4, the largest variance in [0, 1]), so that no noise-dominated feature
                # is amplified by 1 / sqrt(var). Post-processing; docs/privacy.md, DP scaler.
                var_u = np.maximum(var_u, min(second * std / n, 0.25))
                if self.shrink_mean:
                    mean_u, shrunk = shrink_to_centre(mean_u, std / n)
        self.lower_, self.upper_ = lower, upper
        self.mean_ = lower + width * mean_u
        self.var_ = width ** 2 * var_u
        self.scale_ = np.sqrt(self.var_)
        if like is not None:
            # Fitted on an array API X: the statistics in its namespace, on its device.
            for name in ("lower_", "upper_", "mean_", "var_", "scale_"):
                setattr(self, name, to_device(getattr(self, name), like))
            shrunk = to_device(shrunk, like, dtype=namespace(like).bool)
        self.n_samples_seen_ = n
        self.noise_scale_ = float(release.unit_scale * sensitivity)
        self.shrunk_ = shrunk
        self.privacy_ledger_ = ledger
        self.privacy_spent_ = ledger.spent()
        progress("done")
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.array_api_support = True  # statistics computed where X is (docs/scaling_out.md)
        return tags

    def transform(self, X):
        """Standardise the rows: ``(x - mean_) / scale_``.

        <<parameters_rows:The rows to scale.>>

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The scaled rows (post-processing of the released statistics), saturated at
            the largest finite float.
        """
        check_is_fitted(self)
        check_same_namespace(self.mean_, X, f"{type(self).__name__}.transform()")
        # In a pipeline's fit this maps private rows: silent, and a finite value stays
        # finite (one that overflows saturates at the largest float, which the next
        # step's row clipping handles, instead of an inf that it would refuse: an error
        # that would depend on the data). docs/privacy.md, 1.4.
        if is_device_array(X):
            X = validate_device_rows(X, check_finite=False, fitted=self)
            xp = namespace(X)
            with np.errstate(all="ignore"):  # silent, as on the host (array_api_strict)
                out = (as_float64(xp, X) - self._fitted_like("mean_", X)) / \
                    self._fitted_like("scale_", X)
                return xp.clip(out, min=-_FLOAT_MAX, max=_FLOAT_MAX)
        with np.errstate(all="ignore"):
            X = validate_data(self, X, dtype=np.float64, reset=False)
            out = (X - to_numpy(self.mean_)) / to_numpy(self.scale_)
        return np.clip(out, -_FLOAT_MAX, _FLOAT_MAX, out=out)

    def _fitted_like(self, name: str, X):
        """A fitted statistic in ``X``'s namespace and on its device."""
        return to_device(to_numpy(getattr(self, name)), X)

    def inverse_transform(self, X):
        """Undo :meth:`transform`: ``x * scale_ + mean_``.

        <<parameters_rows:Scaled rows.>>

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The rows in the original units.
        """
        check_is_fitted(self)
        check_same_namespace(self.mean_, X, f"{type(self).__name__}.inverse_transform()")
        if is_device_array(X):
            X = validate_device_rows(X, check_finite=False, fitted=self)
            xp = namespace(X)
            with np.errstate(all="ignore"):
                return (as_float64(xp, X) * self._fitted_like("scale_", X)
                        + self._fitted_like("mean_", X))
        with np.errstate(all="ignore"):
            return np.asarray(X, dtype=float) * to_numpy(self.scale_) + to_numpy(self.mean_)
