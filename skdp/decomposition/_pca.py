"""Private principal component analysis: one Gaussian release of the covariance.

Analyze Gauss (Dwork, Talwar, Thakurta & Zhang 2014): rows of bounded norm have a second
moment matrix of bounded sensitivity, so one symmetric Gaussian release of it, followed by
an eigendecomposition (post-processing), gives every principal component at once. The
argument is in docs/decomposition.md.
"""

from __future__ import annotations

import math
from functools import partial
from numbers import Integral, Real

import numpy as np
from dp_accounting import dp_event as dpe
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import RealNotInt
from sklearn.utils.validation import check_is_fitted

from skdp._array_api import (
    as_float64,
    check_same_namespace,
    clip_device_rows,
    device_blocks,
    device_norms,
    is_device_array,
    namespace,
    to_device,
    to_numpy,
)
from skdp._base import start_release, validate_device_rows, validate_fit_rows
from skdp._docstrings import fill_docstrings
from skdp._params import store_params
from skdp._report import PrivacyReprMixin
from skdp._sklearn_compat import HasMethods, Interval, StrOptions, _fit_context, validate_data
from skdp.losses import NORM_SAFETY, clip_rows, row_norms
from skdp.mechanisms import bound_event, private_bound
from skdp.preprocessing._scalers import RELEASE_DOCS
from skdp.privacy.accounting import (
    ACCOUNTING_METHODS,
    PrivacyLedger,
    PureDpEvent,
    calibrate_noise_multiplier,
    check_sensitivity,
    gaussian_event,
)
from skdp.privacy.budget import Budget, check_budget, release_budget
from skdp.privacy.charging import Charge
from skdp.privacy.composition import CompositeLedger
from skdp.privacy.noise import as_generator, as_noise_source

__all__ = ["DPPCA", "covariance_sensitivity"]

#: ``data_norm="auto"``: the quantile of the centred row norms that the covariance's clip
#: norm bounds at a finite epsilon (the maximum at ``epsilon=inf``). The release's noise
#: grows with the square of this norm, so clipping the largest quarter of the rows costs
#: less than covering them (measured on digits, docs/decomposition.md).
COVARIANCE_QUANTILE = 0.75
#: The same for the raw rows that the private mean clips (its noise grows linearly with
#: the norm, and clipping biases the mean, so it aims higher).
MEAN_QUANTILE = 0.9
#: Rows are summed in blocks of this many (no ``n x d`` temporary beyond a block).
_BLOCK = 4096
#: The covariance release has ``d (d + 1) / 2`` coordinates: refused beyond this ``d``
#: (the noisy matrix alone would take 128 MB).
MAX_FEATURES = 4096


def covariance_sensitivity(norm: float) -> float:
    """Replace-one l2 sensitivity of ``svec(sum_i x_i x_i^T)``.

    Rows clipped to ``||x||_2 <= R``. The released vector is ``svec``: the upper triangle,
    diagonal included, with the off-diagonal entries multiplied by ``sqrt(2)``, so that
    ``||svec(D)||_2 = ||D||_F`` for a symmetric ``D`` (the lower triangle is its mirror,
    not a release). Replacing ``x`` by ``x'`` changes the matrix by ``D = x x^T - x' x'^T``,
    a difference of two positive semidefinite matrices, so ``||D||_F^2 = ||x||^4 +
    ||x'||^4 - 2 <x, x'>^2 <= 2 R^4``: the sensitivity is ``sqrt(2) R^2``, reached by two
    orthogonal rows of norm ``R``. (Releasing the plain upper triangle has the same
    sensitivity with twice the noise variance on the off-diagonal entries.)

    Parameters
    ----------
    norm : float
        The public clip norm ``R`` of the rows.

    Returns
    -------
    float
        ``sqrt(2) R^2``.
    """
    return math.sqrt(2.0) * float(norm) ** 2


def _release_event(z: float, mean_share: float, accounting: str, relation: str
                   ) -> dpe.DpEvent:
    """The two Gaussian releases at overall multiplier ``z``: the mean with multiplier
    ``z / sqrt(mean_share)`` (if ``mean_share > 0``) and the covariance with
    ``z / sqrt(1 - mean_share)``. In Gaussian DP they compose to one Gaussian of
    multiplier ``z`` (``1 / z^2 = mean_share / z^2 + (1 - mean_share) / z^2``)."""
    parts = [gaussian_event(z / math.sqrt(1.0 - mean_share), 1.0, accounting=accounting,
                            relation=relation)]
    if mean_share > 0:
        parts.insert(0, gaussian_event(z / math.sqrt(mean_share), 1.0,
                                       accounting=accounting, relation=relation))
    return dpe.ComposedDpEvent(parts)


def _flip_signs(vectors: np.ndarray) -> np.ndarray:
    """Each row's largest-magnitude entry made positive (scikit-learn's ``svd_flip`` with
    ``u_based_decision=False``: components comparable with its ``PCA``)."""
    pivot = vectors[np.arange(vectors.shape[0]), np.argmax(np.abs(vectors), axis=1)]
    return vectors * np.where(pivot < 0, -1.0, 1.0)[:, None]


def _device_sums(X, centre: np.ndarray, norm: float, gram: bool) -> np.ndarray:
    """The sum (``gram=False``) or the Gram matrix (``gram=True``) of the rows of an array
    API ``X``, centred at ``centre`` and clipped to ``norm``, computed on its device by
    blocks of rows and returned to the host (``d`` or ``d x d`` values)."""
    c = to_device(centre, X)

    def block_sum(xp, rows):
        C = clip_device_rows(xp, rows - c, norm * NORM_SAFETY)
        return C.T @ C if gram else xp.sum(C, axis=0)

    return np.sum(device_blocks(X, block_sum), axis=0)


def _centred_norms(X, mean: np.ndarray) -> np.ndarray:
    """Host vector of the norms of the rows of ``X`` centred at ``mean``."""
    if is_device_array(X):
        m = to_device(mean, X)
        return np.concatenate(device_blocks(X, lambda xp, rows: device_norms(xp, rows - m,
                                                                             2.0)))
    return np.concatenate([row_norms(X[start:start + _BLOCK] - mean, 2.0)
                           for start in range(0, X.shape[0], _BLOCK)])


@partial(fill_docstrings, texts=RELEASE_DOCS)
class DPPCA(PrivacyReprMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
            BaseEstimator):
    """Principal component analysis with a differentially private covariance.

    ``fit`` releases, with calibrated Gaussian noise (l2-Laplace for ``delta=0``):

    1. the mean: the sum of the rows clipped to the l2 norm ``R_0``, replace-one
       sensitivity ``2 R_0``;
    2. the covariance: ``svec`` of ``sum_i c_i c_i^T``, ``c_i`` the row centred
       at the released mean and clipped to the norm ``R``, sensitivity ``sqrt(2) R^2``
       (:func:`covariance_sensitivity`);

    and the components are the eigenvectors of the noisy covariance (post-processing, as
    are the explained variances, ``n_components`` chosen by a variance fraction, and
    :meth:`transform`). ``n`` is public. ``data_norm="auto"`` first releases the two norms
    privately (a share ``bounds_fraction`` of ``epsilon``). The argument:
    docs/decomposition.md.

    Parameters
    ----------
    n_components : int, float in (0, 1) or None, default=None
        Number of components kept; a float keeps the fewest components whose (noisy)
        explained variance reaches that fraction; ``None`` keeps ``min(n_samples,
        n_features)``. Fewer components do not lower the noise: the whole covariance is
        released once.
    epsilon : float, default=1.0
        Privacy budget of this step (a pipeline's total is the sum of its steps').
    delta : float, default=1e-5
        ``0`` for pure DP (l2-Laplace noise, which needs far larger ``epsilon`` for the
        ``d (d + 1) / 2`` released entries).
    data_norm : "auto" or float, default="auto"
        Public l2 bound on the rows, used to clip both the raw rows (for the mean) and
        the centred rows (for the covariance); or ``"auto"``: both norms released
        privately on a public grid, the centred one at the 0.75-quantile of the centred
        row norms (the maxima at ``epsilon=inf``; docs/privacy.md, "Private bounds").
    center : bool, default=True
        Centre at a private mean (a share ``mean_fraction`` of the release). ``False``:
        the data is taken as centred (for example after :class:`~skdp.preprocessing.
        DPStandardScaler`), ``mean_`` is zero and the whole release goes to the
        covariance.
    whiten : bool, default=False
        Divide the projections by the square roots of the explained variances.
    mean_fraction : float in (0, 1), default=0.2
        Share of the release's precision (``1 / z^2`` in Gaussian DP; of ``epsilon`` for
        pure DP) spent on the mean when ``center=True``.
    bounds_fraction : float in (0, 1), default=0.2
        Share of ``epsilon`` spent on the private norms when ``data_norm="auto"``.
    <<release_options>>

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The principal axes (unit rows, largest entry positive), by decreasing noisy
        explained variance.
    explained_variance_ : ndarray of shape (n_components,)
        The noisy eigenvalues of the covariance (denominator ``n - 1``), floored at 0.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        Their fractions of the noisy total variance (the positive eigenvalues' sum).
    singular_values_ : ndarray of shape (n_components,)
        ``sqrt((n - 1) explained_variance_)``, as scikit-learn's ``PCA``.
    mean_ : ndarray of shape (n_features,)
        The private mean (zeros for ``center=False``).
    n_components_ : int
        The number of components kept.
    noise_variance_ : float
        Mean of the dropped noisy eigenvalues (0 when none is dropped), as
        scikit-learn's ``PCA``.
    n_samples_ : int
        The (public) number of rows.
    data_norm_ : float
        The clip norm ``R`` of the centred rows (public, or a released grid point).
    mean_norm_ : float or None
        The clip norm ``R_0`` of the raw rows for the mean (``None`` for
        ``center=False``).
    noise_scale_ : float
        Noise standard deviation of each released ``svec`` entry of the second-moment
        matrix (its diagonal; the off-diagonal entries get this over ``sqrt(2)``; 0 at
        ``epsilon=inf``; for ``delta=0``, the l2-Laplace scale).
    privacy_ledger_ : PrivacyLedger or CompositeLedger
        What the fit released and how it is accounted.
    privacy_spent_ : PrivacySpent
        Its ``(epsilon, delta)``.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Their names, when ``X`` has string column names.

    See Also
    --------
    sklearn.decomposition.PCA : The non-private estimator (equal at ``epsilon=inf``).

    Notes
    -----
    Guarantee: ``(epsilon, delta)``-DP under replace-one neighbouring data sets of public
    size, for every input (rows are clipped, never assumed bounded).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.decomposition import DPPCA
    >>> X = np.random.default_rng(0).normal(size=(2000, 5)) * [5, 2, 1, 1, 1]
    >>> pca = DPPCA(n_components=2, epsilon=1.0, random_state=0).fit(X)
    >>> pca.transform(X).shape
    (2000, 2)
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"),
                         Interval(RealNotInt, 0, 1, closed="neither"), None],
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "data_norm": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "center": ["boolean"],
        "whiten": ["boolean"],
        "mean_fraction": [Interval(Real, 0, 1, closed="neither")],
        "bounds_fraction": [Interval(Real, 0, 1, closed="neither")],
        "accounting": [StrOptions({"auto", *ACCOUNTING_METHODS} - {"basic"})],
        "accountant": [HasMethods(["charge", "refund"]), None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, n_components=None, *, epsilon=1.0, delta=1e-5, data_norm="auto",
                 center=True, whiten=False, mean_fraction=0.2, bounds_fraction=0.2,
                 accounting="auto", accountant=None, random_state=None, verbose=0):
        store_params(self, locals())

    # -- plan (public quantities only) -----------------------------------------------------
    def _plan(self, n_samples: int, n_features: int) -> dict:
        """Budgets, noise multipliers and the ledger charged before ``X`` is read."""
        if isinstance(self.n_components, Integral) and self.n_components > min(
                n_samples, n_features):
            raise ValueError(
                f"n_components={self.n_components} must be at most min(n_samples, "
                f"n_features) = {min(n_samples, n_features)}; set n_components lower.")
        if n_features > MAX_FEATURES:
            raise ValueError(
                f"DPPCA releases a d x d covariance: at most {MAX_FEATURES} features, got "
                f"{n_features}; reduce the features first (for example with a public "
                "random projection).")
        total = check_budget(self.epsilon, self.delta, needs_delta=False)
        auto = isinstance(self.data_norm, str) and total.is_private
        eps_bounds, release, accounting = release_budget(
            total, self.bounds_fraction if auto else None, self.accounting)
        mean_share = float(self.mean_fraction) if self.center else 0.0
        n_bounds = 2 if self.center else 1
        relation = "replace_one"
        z_mean = z_cov = 0.0
        if not release.is_private:
            event = dpe.NonPrivateDpEvent()
            mechanism = "none"
        elif accounting == "pure":
            # Two l2-Laplace releases (K-norm mechanism, epsilon_k-DP each for sensitivity
            # 1 after scaling): basic composition of the split epsilon.
            eps_cov = (1.0 - mean_share) * release.epsilon
            eps_mean = release.epsilon - eps_cov
            while eps_mean + eps_cov > release.epsilon:
                eps_cov = math.nextafter(eps_cov, 0.0)
            parts = [PureDpEvent(eps_cov)]
            if mean_share > 0:
                parts.insert(0, PureDpEvent(eps_mean))
            event = dpe.ComposedDpEvent(parts)
            mechanism = "l2_laplace"
            z_mean = 1.0 / eps_mean if mean_share > 0 else 0.0
            z_cov = 1.0 / eps_cov
        else:
            if release.delta <= 0:
                raise ValueError("delta=0 asks for pure DP, which the Gaussian mechanism "
                                 "cannot give; set accounting='pure' or 'auto'.")
            # The overall multiplier z solved exactly for the composed event; each part's
            # multiplier follows from its share of the precision 1 / z^2.
            z = calibrate_noise_multiplier(_release_event, (mean_share, accounting, relation),
                                           release, accounting=accounting, relation=relation)
            event = _release_event(z, mean_share, accounting, relation)
            mechanism = "gaussian"
            # The drawn multipliers, per unit of replace-one sensitivity (not read back
            # from the events: some accounting methods record them in another relation's
            # units).
            z_cov = z / math.sqrt(1.0 - mean_share)
            z_mean = z / math.sqrt(mean_share) if mean_share > 0 else 0.0
        ledger = PrivacyLedger(event, accounting, relation, release)
        if auto:
            # One pure release per private norm (two with a mean), epsilon split evenly.
            bounds = [bound_event(eps_bounds / n_bounds) for _ in range(n_bounds)]
            bounds_ledger = PrivacyLedger(dpe.ComposedDpEvent(bounds), "pure", relation,
                                          Budget(eps_bounds, 0.0))
            ledger = CompositeLedger((("bounds", bounds_ledger), ("release", ledger)), total)
        return dict(total=total, auto=auto, eps_bound=eps_bounds / n_bounds,
                    mechanism=mechanism, z_mean=z_mean, z_cov=z_cov, ledger=ledger)

    def _public_width(self, n_samples: int, n_features: int) -> int | None:
        """The number of output features when public (``n_components`` an integer or
        ``None``); ``None`` when a variance fraction chooses it from the release."""
        if self.n_components is None:
            return min(n_samples, n_features)
        if isinstance(self.n_components, Integral):
            return int(self.n_components)
        return None

    def _planned_ledger(self, n_samples: int, n_features: int, y=None):
        """The ledger ``fit`` charges before reading ``X`` (used for pricing)."""
        return self._plan(n_samples, n_features)["ledger"]

    # -- fit -------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.array_api_support = True  # sums computed where X is (docs/scaling_out.md)
        return tags

    def fit(self, X, y=None):
        """Release a private covariance of ``X`` and keep its leading eigenvectors.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The private rows (clipped to the norms, never assumed bounded).
        y : None
            Ignored.

        Returns
        -------
        DPPCA
            The fitted estimator (``self``).
        """
        # Floating-point warnings are off while the data is read: whether a sum overflows
        # depends on the data (docs/privacy.md, 1.4).
        with np.errstate(all="ignore"):
            self._fit(X)
        return self

    def fit_transform(self, X, y=None):
        """Fit, then project ``X`` on the components.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The private rows.
        y : None
            Ignored.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The projections (post-processing of the release).
        """
        return self.fit(X).transform(X)

    def _fit(self, X) -> None:
        """Plan from the shape, charge, release the norms ("auto"), the mean and the
        covariance; the eigendecomposition is post-processing."""
        shape = getattr(X, "shape", None)
        dtype = getattr(X, "dtype", None)
        if (shape is None or len(shape) != 2 or min(shape) < 1
                or (isinstance(dtype, np.dtype) and np.issubdtype(dtype, np.complexfloating))):
            X = validate_data(self, X, dtype=np.float64)
            shape = X.shape
        n, d = int(shape[0]), int(shape[1])
        plan = self._plan(n, d)
        total, ledger = plan["total"], plan["ledger"]
        progress = start_release(self, total, "data_norm", (n, d))
        with Charge.of(self, ledger) as charge:
            X, like = validate_fit_rows(self, X)
            bounds_rng, mean_rng, cov_rng = as_generator(self.random_state).spawn(3)
            public = None if isinstance(self.data_norm, str) else float(self.data_norm)
            # --- 1. the mean: sum of rows clipped to R_0, sensitivity 2 R_0 -------------
            mean = np.zeros(d)
            mean_norm = None
            if self.center:
                mean_norm = public if public is not None else private_bound(
                    row_norms(X, 2.0), plan["eps_bound"], bounds_rng,
                    quantile=MEAN_QUANTILE)
                # Once a private quantity is computed its charge stays, whatever follows.
                charge.keep(ledger)
                if like is not None:
                    total_sum = _device_sums(X, np.zeros(d), mean_norm, gram=False)
                else:
                    total_sum = np.zeros(d)
                    for start in range(0, n, _BLOCK):
                        total_sum += clip_rows(X[start:start + _BLOCK],
                                                mean_norm).sum(axis=0)
                # Replace-one: the clipped sum moves by ||c(x) - c(x')|| <= 2 R_0.
                scale = plan["z_mean"] * check_sensitivity(2.0 * mean_norm,
                                                            "mean sensitivity (data_norm)")
                total_sum += as_noise_source(mean_rng).release(plan["mechanism"], (d,),
                                                               scale)
                # Post-processing: the mean of rows of norm <= R_0 lies in that ball.
                mean = clip_rows((total_sum / n)[None, :], mean_norm)[0]
            # --- 2. the covariance of the centred rows clipped to R --------------------
            if public is not None:
                norm = public
            else:
                norm = private_bound(_centred_norms(X, mean), plan["eps_bound"], bounds_rng,
                                     quantile=COVARIANCE_QUANTILE)
                charge.keep(ledger)
            if like is not None:
                gram = _device_sums(X, mean, norm, gram=True)
            else:
                gram = np.zeros((d, d))
                for start in range(0, n, _BLOCK):
                    C = clip_rows(X[start:start + _BLOCK] - mean, norm)
                    gram += C.T @ C
            rows, cols = np.triu_indices(d)
            # One draw per entry of svec(G) (off-diagonal entries times sqrt(2)), of
            # sensitivity sqrt(2) R^2 (covariance_sensitivity); unscaled back to the
            # matrix, an off-diagonal entry's noise is the draw over sqrt(2), and the
            # lower triangle is the mirror.
            scale = plan["z_cov"] * check_sensitivity(covariance_sensitivity(norm),
                                                      "covariance sensitivity (data_norm)")
            noise = as_noise_source(cov_rng).release(plan["mechanism"], (rows.size,), scale)
            noise[rows != cols] /= math.sqrt(2.0)
            upper = gram[rows, cols] + noise
        # --- post-processing: only the released mean, upper triangle and public n -------
        cov = np.empty((d, d))
        cov[rows, cols] = upper
        cov[cols, rows] = upper
        cov /= max(n - 1, 1)
        values, vectors = np.linalg.eigh(cov)
        order = np.argsort(values)[::-1]
        values = np.maximum(values[order], 0.0)
        vectors = _flip_signs(vectors[:, order].T)
        k_max = min(n, d)
        values, vectors = values[:k_max], vectors[:k_max]
        total_var = float(values.sum())
        ratio = values / total_var if total_var > 0 else np.zeros_like(values)
        if self.n_components is None:
            k = k_max
        elif isinstance(self.n_components, Integral):
            k = int(self.n_components)
        else:  # a fraction of the (noisy) explained variance
            k = int(min(np.searchsorted(np.cumsum(ratio), float(self.n_components),
                                        side="right") + 1, k_max))
        self.components_ = vectors[:k]
        self.explained_variance_ = values[:k]
        self.explained_variance_ratio_ = ratio[:k]
        self.singular_values_ = np.sqrt(values[:k] * max(n - 1, 1))
        self.noise_variance_ = float(values[k:].mean()) if k < k_max else 0.0
        self.mean_ = mean
        self.n_components_ = k
        self.n_samples_ = n
        self.data_norm_ = float(norm)
        self.mean_norm_ = None if mean_norm is None else float(mean_norm)
        self.noise_scale_ = float(scale)
        self.privacy_ledger_ = ledger
        self.privacy_spent_ = ledger.spent()
        if like is not None:
            # Fitted on an array API X: the released arrays in its namespace, on its device.
            for name in ("components_", "explained_variance_", "explained_variance_ratio_",
                         "singular_values_", "mean_"):
                setattr(self, name, to_device(getattr(self, name), like))
        progress("done")

    # -- transform (post-processing) -------------------------------------------------------
    @property
    def _n_features_out(self) -> int:
        """Number of output features (for ``get_feature_names_out``)."""
        return self.n_components_

    def transform(self, X):
        """Project the rows on the components (whitened if ``whiten=True``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows (not clipped: the projection is a per-row map with released
            constants).

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The projections.
        """
        check_is_fitted(self)
        check_same_namespace(self.components_, X, f"{type(self).__name__}.transform()")
        whiten = (np.sqrt(np.maximum(to_numpy(self.explained_variance_), np.finfo(float).tiny))
                  if self.whiten else None)
        if is_device_array(X):
            X = validate_device_rows(X, check_finite=False, fitted=self)
            xp = namespace(X)
            with np.errstate(all="ignore"):
                Z = (as_float64(xp, X) - self.mean_) @ self.components_.T
                return Z if whiten is None else Z / to_device(whiten, X)
        with np.errstate(all="ignore"):  # in a pipeline's fit these are private rows
            X = validate_data(self, X, dtype=np.float64, reset=False)
            Z = (X - self.mean_) @ self.components_.T
            if whiten is not None:
                Z /= whiten
        return Z

    def inverse_transform(self, X):
        """Map projections back to the feature space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Projections, as :meth:`transform` returns them.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``X components_ + mean_`` (with the whitening undone).
        """
        check_is_fitted(self)
        check_same_namespace(self.components_, X,
                             f"{type(self).__name__}.inverse_transform()")
        whiten = (np.sqrt(np.maximum(to_numpy(self.explained_variance_), np.finfo(float).tiny))
                  if self.whiten else None)
        if is_device_array(X):
            Z = as_float64(namespace(X), validate_device_rows(X, check_finite=False, fitted=self,
                                                         width=self.n_components_))
            with np.errstate(all="ignore"):
                if whiten is not None:
                    Z = Z * to_device(whiten, X)
                return Z @ self.components_ + self.mean_
        Z = np.asarray(X, dtype=float)
        with np.errstate(all="ignore"):
            if whiten is not None:
                Z = Z * whiten
            return Z @ self.components_ + self.mean_
