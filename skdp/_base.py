"""The one fit pipeline shared by every skdp linear estimator."""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import replace
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import _check_y, check_is_fitted

from skdp._array_api import (
    as_float64,
    blocks,
    check_same_namespace,
    device_all_finite,
    device_has_nan,
    device_norms,
    is_device_array,
    namespace,
    to_device,
    to_numpy,
)
from skdp._params import OPTIONAL_POSITIVE
from skdp._planning import (
    NOISE_DOMINATED,
    SCALE_SLACK,
    FitBounds,
    PrivacyPlanning,
    noise_ratio,
)
from skdp._progress import Progress
from skdp._report import PrivacyReprMixin
from skdp._sklearn_compat import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
    _fit_context,
    validate_data,
)
from skdp._threads import fit_threads
from skdp._warnings import warn_if_seeded, warn_label_set_read, warn_user
from skdp.exceptions import (
    IncompatibleSolverError,
    NoiseDominatedWarning,
    PrivacyAccountingError,
    PrivacyLeakWarning,
)
from skdp.geometry import dual_exponent
from skdp.losses import GLMLoss, is_dask_array, row_norms
from skdp.mechanisms import (
    grid_ceil,
    grid_points,
    private_bound,
    private_mean,
    target_count,
    threshold_grid,
)
from skdp.mechanisms.threshold import choose_threshold, correct_counts
from skdp.privacy.accounting import ACCOUNTING_METHODS
from skdp.privacy.budget import Budget
from skdp.privacy.charging import Charge
from skdp.privacy.composition import CompositeLedger
from skdp.privacy.noise import as_generator
from skdp.solvers import (
    SOLVERS,
    BaseDPSolver,
    Problem,
)
from skdp.solvers._base import snap_release
from skdp.solvers._device import device_pass
from skdp.solvers._problem import non_finite_message

__all__ = ["BaseDPLinearModel", "FitBounds", "noise_ratio"]


def _threshold_counts_on_device(block, direction, grid) -> np.ndarray:
    """:func:`_threshold_counts` of a block on a device: its scores computed there and
    counted on the host (a block of scores crosses, never the rows)."""
    return correct_counts(to_numpy(block.scores(direction), np.float64)[:, 0],
                          to_numpy(block.Y, np.float64)[:, 0], to_numpy(grid, np.float64))


@device_pass(_threshold_counts_on_device)
def _threshold_counts(block, direction: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """:func:`~skdp.mechanisms.threshold.correct_counts` of one block of rows, at the
    released direction's scores (a pass function of ``Problem.block_sum``)."""
    return correct_counts(block.scores(direction)[:, 0], block.Y[:, 0], grid)


def check_out_of_core(solver, kind: str = "a dask array") -> None:
    """Raise :class:`IncompatibleSolverError` when ``solver`` cannot take a dask ``X`` or
    an array API ``X`` kept on its device (``kind`` names it), naming the registered
    solvers that can: those that read ``X`` only through the blocked passes
    (``Capabilities.out_of_core``).

    Public: it reads the solver's declaration and the type of ``X`` only.
    """
    if solver.capabilities.out_of_core:
        return
    capable = [key for key, cls in SOLVERS.items() if cls.capabilities.out_of_core]
    raise IncompatibleSolverError(
        f"solver {solver.name!r} needs X as a numpy array, and X is {kind}; set solver to "
        f"one of {capable}, or pass a numpy array (or a numpy.memmap)."
    )


def start_release(estimator, total: Budget, bound: str, shape=None) -> Progress:
    """The opening of a one-release fit (DPStandardScaler, DPPCA, DPGaussianNB).

    Prints its first progress line, from public quantities only (the shape when known,
    the budget, whether the bound named ``bound`` is private or declared), and says once
    that a seeded ``random_state`` is not for releases.

    Parameters
    ----------
    estimator : estimator
        The estimator being fitted.
    total : Budget
        Its validated budget.
    bound : str
        The name of its bounds parameter (``"bounds"`` or ``"data_norm"``).
    shape : tuple of int or None, default=None
        ``(n_samples, n_features)``, where the fit knows it before reading ``X``.

    Returns
    -------
    Progress
        The fit's progress printer, for its later lines.
    """
    progress = Progress(estimator, estimator.verbose)
    rows = "" if shape is None else f"{shape[0]} rows, {shape[1]} features, "
    kind = "private" if isinstance(getattr(estimator, bound), str) else "public"
    progress(f"fit: {rows}epsilon={estimator.epsilon:g}, delta={estimator.delta:g}, "
             f"{bound} {kind}")
    warn_if_seeded(estimator.random_state, total.is_private)
    return progress


def validate_fit_rows(estimator, X):
    """The rows a one-release transformer fits on, validated once inside its charge.

    An array API ``X`` is checked where it is and stays on its device
    (:func:`validate_device_rows`; docs/scaling_out.md); anything else goes through
    scikit-learn's ``validate_data`` as float64. Either way ``estimator.n_features_in_``
    is set.

    Parameters
    ----------
    estimator : estimator
        The estimator being fitted.
    X : array-like, or an array API array
        The private rows.

    Returns
    -------
    X : ndarray or array
        The validated rows.
    like : array or None
        ``X`` itself when it is an array API array (results go back to its namespace and
        device), else ``None``.
    """
    if is_device_array(X):
        X = validate_device_rows(X)
        estimator.n_features_in_ = int(X.shape[1])
        return X, X
    return validate_data(estimator, X, dtype=np.float64), None


def validate_device_rows(X, check_finite: bool = True, fitted=None, width: int | None = None):
    """An array API ``X`` checked where it is (docs/scaling_out.md): two dimensions, at
    least one row and one feature, a real dtype (integers and booleans become float64
    there), with ``check_finite`` no NaN or infinite entry, and with ``fitted`` the width
    the fitted estimator expects (scikit-learn's errors).

    Parameters
    ----------
    X : array
        Rows of an array API namespace, on any device.
    check_finite : bool, default=True
        Whether to refuse non-finite entries here.
    fitted : estimator or None, default=None
        A fitted estimator whose input ``X`` is (``predict``, ``transform``, ...).
    width : int or None, default=None
        The number of features ``fitted`` expects (default: its ``n_features_in_``).

    Returns
    -------
    array
        ``X``, float32 or float64, in its namespace and on its device.

    Raises
    ------
    ValueError
        If ``X`` has the wrong shape or dtype, or a non-finite entry.
    """
    xp = namespace(X)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array for X, got a {X.ndim}D array.")
    n, d = (int(v) for v in X.shape)
    if n < 1 or d < 1:
        raise ValueError(f"Found array with shape {tuple(X.shape)}: at least one sample "
                         "and one feature are required.")
    if X.dtype not in (xp.float64, xp.float32):
        if not xp.isdtype(X.dtype, ("real floating", "integral", "bool")):
            raise ValueError(f"X is an array of dtype {X.dtype}; skdp needs real numbers.")
        X = xp.astype(X, xp.float64)  # float16, bfloat16, integers and booleans
    if fitted is not None:
        width = fitted.n_features_in_ if width is None else width
        if d != width:
            raise ValueError(f"X has {d} features, but {type(fitted).__name__} is expecting "
                             f"{width} features as input.")
    if check_finite and not device_all_finite(X):
        raise ValueError(non_finite_message(device_has_nan(X), np.float64))
    return X


#: Shown once per session by ``score``: scikit-learn's searches and ``cross_val_score``
#: call it (``scoring=None``) on held-out PRIVATE rows.
EXACT_SCORE_NOTICE = (
    "score() is exact: on private rows (for example inside GridSearchCV or "
    "cross_val_score with scoring=None) the score, and any choice made from it, are not "
    "covered by the privacy guarantee or by any accountant. Pass scoring="
    "skdp.metrics.make_private_scorer(..., accountant=acc) there; on public test rows "
    "score() is fine.")


class ExactScoreNoticeMixin:
    """``score`` as scikit-learn's mixins define it, saying once per session that it is
    exact (:data:`EXACT_SCORE_NOTICE`). Placed before ``ClassifierMixin`` or
    ``RegressorMixin``."""

    def score(self, X, y, sample_weight=None):
        """Exact accuracy (classifiers) or R^2 (regressors) on ``(X, y)``.

        Not private: on private rows use :func:`skdp.metrics.make_private_scorer`
        (docs/tuning_and_budgets.md); a notice says so once per session.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,)
            Their targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights.

        Returns
        -------
        float
            The score of scikit-learn's ``ClassifierMixin`` or ``RegressorMixin``.
        """
        warn_user(EXACT_SCORE_NOTICE, PrivacyLeakWarning, once=True)
        return super().score(X, y, sample_weight=sample_weight)


class BaseDPLinearModel(PrivacyPlanning, PrivacyReprMixin, BaseEstimator):
    """Shared fit pipeline: validate, check the budget, clip, plan, solve, re-account.

    The public plan (solver, budget, spec, calibration, the bounds' budget split and the
    reservation) is :class:`skdp._planning.PrivacyPlanning`; this class adds the fit
    transaction (:meth:`_fit`: charge, estimate the bounds, solve, re-account, set the
    attributes, or leave everything as it was). Subclasses provide the loss and the target
    encoding (:meth:`_encode_targets`) and store the label information they need.
    """

    #: Whether ``y`` must be numeric (regression).
    _y_numeric = False
    #: Whether the intercept is a coordinate of the constrained (and penalised) vector.
    _intercept_constrained = False

    _parameter_constraints: dict = {
        # Validated once, by skdp.privacy.check_budget (BudgetError naming the setting).
        "epsilon": "no_validation",
        "delta": "no_validation",
        "solver": [StrOptions(SOLVERS.keys()), BaseDPSolver],  # live: registry additions count
        "alpha": [Interval(Real, 0, None, closed="left")],
        # Squared bounds enter the smoothness constant: keep them representable.
        "data_norm": [Interval(Real, 0, 1e150, closed="neither"), StrOptions({"auto"})],
        "bounds_fraction": [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "constraint": [StrOptions({"l2", "l1", "lp"}), None],
        "radius": OPTIONAL_POSITIVE,
        "p": [Interval(Real, 1, None, closed="neither"), None],
        "data_norm_ord": [StrOptions({"auto"}), Interval(Real, 1, None, closed="left")],
        "accounting": [StrOptions({"auto", *ACCOUNTING_METHODS})],
        "accountant": [HasMethods(["charge", "refund"]), None],
        # Negative tilts are rejected in fit with an explanation (non-convex objective).
        "tilt": [Interval(Real, None, None, closed="neither"), None],
        "adversarial_radius": [Interval(Real, 0, None, closed="left"), None],
        "adversarial_norm": [Options(Real, {2, math.inf})],
        # Replace-one only: an add/remove guarantee needs a public dataset size (every
        # denominator, rate and schedule depends on n), which the estimators do not take.
        "neighboring": [StrOptions({"replace_one"})],
        "random_state": ["random_state", np.random.Generator],
        "secure": ["boolean"],
        "verbose": ["verbose"],
        "noise_dominated": [StrOptions({"intercept_only", "fit"})],
    }

    # -- hooks -----------------------------------------------------------------------------
    @abstractmethod
    def _encode_targets(self, y: np.ndarray, bounds: FitBounds
                        ) -> tuple[np.ndarray, GLMLoss, dict]:
        """Targets for the loss, the loss, and fitted label attributes to set."""

    # -- fit -------------------------------------------------------------------------------------
    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "privacy_spent_")

    def _fitted_state(self) -> dict:
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, **fit_params):
        """Fit the model with the configured private solver.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; rows are clipped to ``data_norm`` (``X`` is not modified).
        y : array-like of shape (n_samples,)
            Targets.
        **fit_params
            None are accepted; ``sample_weight`` is refused with the reason.

        Returns
        -------
        object
            The fitted estimator (``self``).
        """
        if "sample_weight" in fit_params:
            raise TypeError(
                f"{type(self).__name__} refuses sample_weight: a weight multiplies its "
                "record's contribution to every gradient and statistic, so every "
                "sensitivity would have to grow by a declared public maximum weight, and "
                "weights computed from the data would leak. Repeat or subsample rows with "
                "public rules instead."
            )
        if fit_params:
            raise TypeError(f"{type(self).__name__}.fit() got unexpected keyword arguments "
                            f"{sorted(fit_params)}.")
        previous = self._fitted_state()
        try:
            # Floating-point warnings are off while the data is read: whether a sum, a
            # norm or an iterate overflows depends on the data (docs/privacy.md, 1.4).
            # Narrow data runs its many block-sized BLAS calls on one thread
            # (skdp._threads: a loaded machine stalls multithreaded small calls).
            with np.errstate(all="ignore"), fit_threads(X):
                return self._fit(X, y)
        except BaseException:
            # A failed fit leaves the estimator exactly as it was (and spends nothing).
            for name in self._fitted_state():
                delattr(self, name)
            for name, value in previous.items():
                setattr(self, name, value)
            raise

    def _estimate_bounds(self, X, y, shares: dict, rng) -> tuple[FitBounds, tuple | None]:
        """The private bound estimates: AboveThreshold over public grids
        (:func:`skdp.mechanisms.private_bound`), so every released bound is a grid point
        or a public function of grid points (docs/privacy.md, "Private bounds").

        ``data_norm``: the row norms' bound (the maximum at ``epsilon=inf``). With an
        intercept, the centre of ``y`` is the private mean of ``y`` clipped to a private
        bound of ``|y|`` (:func:`~skdp.mechanisms.private_mean`, on the grid of
        multiples of that bound over ``64 n``) and ``y_bound`` a private bound of
        ``|y - centre|`` (their maximum at ``epsilon=inf``: no target clipped). Without an
        intercept the centre is 0. Also returns ``(ord, norms)``, the rows' norms that
        ``data_norm`` read (``None`` without its share), which the problem reuses.
        """
        solver = self._solver(X.shape)
        rules = self._rules_for(solver)
        # Without a share (declared, or the intercept-only model, which reads no
        # feature): the declared bound, or the placeholder 1 (the constant feature's value).
        norms = None
        if "data_norm" in shares:
            ord = self._data_norm_ord(solver)
            norms = (ord, row_norms(X, ord))
            data_norm = private_bound(norms[1], shares["data_norm"], rng,
                                      quantile=rules.data_norm_quantile)
        else:
            data_norm = self._placeholder_bounds().data_norm
        y_bound = getattr(self, "y_bound", None)
        centre = 0.0
        if "y_bound" in shares:
            y = np.asarray(y, dtype=float)
        if "y_centre" in shares:
            scale = private_bound(np.abs(y), shares["y_scale"], rng, slack=SCALE_SLACK)
            # Post-processing: the clipped values' mean lies in [-scale, scale].
            centre = float(np.clip(private_mean(y, scale, shares["y_centre"], rng),
                                   -scale, scale))
        if "y_bound" in shares:
            # The search's lowest point is a function of the released scale (adaptive
            # composition; docs/privacy.md 1.6): 2^-octaves of it.
            lowest = (scale * 2.0 ** -rules.y_bound_octaves
                      if "y_scale" in shares and rules.y_bound_octaves is not None
                      else None)
            y_bound = private_bound(np.abs(y - centre), shares["y_bound"], rng,
                                    quantile=rules.y_bound_quantile,
                                    slack=rules.y_bound_slack, lowest=lowest)
            n = y.shape[0]
            if target_count(n, shares["y_bound"], rules.y_bound_quantile,
                            rules.y_bound_slack) <= rules.y_bound_widen_below * n:
                # Public: at small n epsilon the search's target falls to (near) the
                # median of |y - centre|, which would clip half the targets; twice it clips
                # few (the rule of the previous median-based bounds). A grid point times 2
                # is a grid point.
                y_bound = min(2.0 * y_bound, float(grid_points()[-1]))
            if "y_scale" in shares:
                # Post-processing of released values: the targets within the released
                # scale lie within scale + |centre| of the centre, so y_bound is capped at
                # the grid point at or above it. It catches the search's overshoot (about
                # 3e-4 per fit beyond 3x the data, the noise growing with it) and binds in
                # many fits with targets centred near 0, where scale + |centre| is itself
                # a tight bound (an independent review measured R^2 within 0.05 either way).
                y_bound = min(y_bound, grid_ceil(scale + abs(centre)))
        elif y_bound is not None:
            # Declared, or the placeholder 1 ("auto" without a share: the zero model).
            y_bound = self._placeholder_bounds().y_bound
        return FitBounds(float(data_norm), y_bound, float(centre), rescaled=True), norms

    def _fit(self, X, y):
        """One private fit, in the order the guarantee needs.

        1. *Public plan.* From the shape of ``X``, the label set and the parameters only:
           with declared bounds the solver's whole plan and ledger; with ``"auto"``
           bounds the budget split and the reservation (the bound estimates and the
           solver planned with placeholder bounds, :meth:`_bounds_plan`); whether the
           intercept-only model replaces the solver (:meth:`_intercept_only_instead`) and
           the private threshold's share (:meth:`_threshold_epsilon`).
        2. *Notices* that depend on parameters only (a seed, a label set read from ``y``).
        3. *Charge* the planned ledger to the accountant, before any value of ``X`` is
           read (:class:`~skdp.privacy.charging.Charge`; a refusal reads nothing).
        4. *Validate* ``X`` and ``y`` (input errors before any release are refunded).
        5. *Private bounds* (``"auto"``): estimate them on public grids; from here their
           share stays charged whatever happens. Plan the solver with them and amend the
           charge to what runs (the accountant re-checks its ceiling).
        6. *Solve* the planned, fixed-length algorithm with its calibrated noise; a
           binary classifier then chooses its intercept privately
           (:meth:`_private_intercept`); re-account the ledger; store the fitted
           attributes.
        """
        if is_dask_array(y):
            # The targets are O(n): gathered once (the label set is read from them as
            # before); X stays a dask array.
            y = np.asarray(y.compute())
        if is_dask_array(X):
            check_out_of_core(self._solver(self._public_shape(X)))
        like = X if is_device_array(X) else None
        if like is not None:
            # An array API X stays on its device; the targets (O(n)) come to the host.
            check_out_of_core(self._solver(self._public_shape(X)),
                              f"a {type(X).__module__.split('.')[0]} array kept on its device")
        if is_device_array(y):
            y = to_numpy(y)
        shape = self._public_shape(X) if y is not None else None
        if shape is None:
            # Lists, empty or malformed input: validation gives scikit-learn's errors.
            X, y = self._validate(X, y)
            shape = X.shape
        progress = Progress(self, getattr(self, "verbose", 0))
        auto = self._auto_bounds()
        # The budget is validated once, by check_budget in the plan below.
        if progress.verbose:
            # The solver the plan will run: its shape includes the number of outputs (an
            # estimator's solver="auto" rule reads it; public: the label set).
            outputs = self._public_targets(y, self._placeholder_bounds())[1]
            progress(f"fit: {shape[0]} rows, {shape[1]} features, epsilon={self.epsilon!s}, "
                     f"delta={self.delta!s}, solver {self._solver((*shape, outputs)).name!r}")
        if auto:
            total, shares, fit_budget, reservation, intercept_only, threshold = \
                self._bounds_plan(*shape, y)
            planned = reservation
            progress(f"private bounds: {', '.join(shares)} with epsilon "
                     f"{sum(shares.values()):.4g} in all (pure DP); the fit gets "
                     f"epsilon {fit_budget.epsilon:.4g}")
        else:
            bounds = self._declared_bounds()
            solver, total, spec, prepared, label_attrs, threshold, planned = \
                self._declared_plan(*shape, y)
        # A seed (or a generator, which can be rewound) stored on the estimator lets
        # anyone who holds it regenerate the noise and remove it.
        warn_if_seeded(self.random_state, total.is_private)
        if not self._y_numeric and getattr(self, "classes", None) is None:
            warn_label_set_read()
        # The budget is charged from the public plan, before any value of X is read; on
        # failure only what was released stays charged (skdp.privacy.charging).
        # The rows' norms the private data_norm reads, handed once to the problem.
        handed = {}
        with Charge.of(self, planned) as charge:
            # With declared bounds X is first read by Problem.build, whose row norms find
            # any non-finite entry (the same pass, instead of one more over X here).
            X, y = self._validate(X, y, finite_at_build=not auto)
            if auto:
                # Independent streams for the bound estimates, the solver's noise and the
                # private threshold.
                bounds_rng, fit_rng, threshold_rng = as_generator(self.random_state).spawn(3)
                bounds, handed["norms"] = self._estimate_bounds(X, y, shares, bounds_rng)
                # The private bounds are computed, and whether the rest fails can depend
                # on them (the solver is planned with them): their part stays charged.
                if shares:
                    charge.keep(CompositeLedger(self._bounds_parts(shares, total), total))
                solver, _, spec, prepared, label_attrs = self._privacy_plan(
                    *shape, y, bounds, fit_budget, intercept_only=intercept_only,
                    thresholded=bool(threshold))
                ledger = CompositeLedger((*self._bounds_parts(shares, total),
                                          ("fit", prepared[1]),
                                          *self._threshold_parts(threshold)), total)
                charge.amend(ledger)
            elif threshold:
                fit_rng, threshold_rng = as_generator(self.random_state).spawn(2)
                ledger = planned
            else:
                fit_rng, threshold_rng, ledger = self.random_state, None, planned
            self._warn_if_noise_dominated(spec, total, bounds, shape)
            if not total.is_private and isinstance(self.solver, str) and \
                    solver.capabilities.inexact_at_inf:
                # Public: the solver's declaration and the budget.
                warn_user(
                    f"solver {solver.name!r} does not reach its objective's optimum at "
                    f"epsilon=inf with its defaults: {solver.capabilities.inexact_at_inf}. "
                    "Set solver='gd' for the non-private optimum of the same objective, or "
                    "pass a solver object with more iterations.",
                    ConvergenceWarning)
            cells = shape[0] * shape[1]  # public: the solver's progress for long fits
            if progress.shows_steps(cells):
                progress("solving", f"{prepared[0].n_iter} planned steps, data_norm_="
                         f"{bounds.data_norm:.4g}")
            steps = progress.steps(prepared[0].n_iter, cells)
            result = self._fit_planned(X, y, solver, spec, prepared, bounds, fit_rng, steps,
                                       threshold=(threshold, threshold_rng),
                                       bound_norms=handed.pop("norms", None))
            if steps is not None:
                steps.finish()
            spent = ledger.spent()
            if total.is_private and not spent.within(total):
                raise PrivacyAccountingError(
                    f"re-accounting the fit's ledger gives (epsilon, delta) = "
                    f"{tuple(spent)} beyond the budget ({total.epsilon}, {total.delta})."
                )
        self._set_fitted(result, solver, spec, label_attrs, bounds, ledger, spent, like)
        progress("done", f"privacy spent ({spent.epsilon:.6g}, {spent.delta:.3g})")
        return self

    def _warn_if_noise_dominated(self, spec, total: Budget, bounds: FitBounds,
                                 shape: tuple[int, int]) -> None:
        """Warn when the fit cannot learn: the :func:`noise_ratio` of the fit its solver
        would get (:meth:`_decision_budget`) is at least :data:`NOISE_DOMINATED`, or a
        private bound fell on the edge of its public grid.

        Post-processing of public quantities and released (DP) bounds only: the warning
        costs no privacy and says what to change.
        """
        budget = self._decision_budget(total, shape)
        ratio = noise_ratio(spec.n_samples, spec.n_params, budget)
        fallback = self._intercept_only_instead(spec, budget)
        if ratio >= NOISE_DOMINATED:
            outcome = ("so it releases the intercept-only model instead (the private "
                       + ("mean target" if self._y_numeric else "class shares")
                       + ", every coefficient 0; noise_dominated='fit' runs the solver "
                       "anyway)" if fallback else "so expect a model near chance")
            warn_user(
                f"this fit is noise-dominated: {spec.n_samples} rows at epsilon "
                f"{budget.epsilon:.3g} for {spec.n_params} coefficients give noise "
                f"{ratio:.2g} times the largest signal, {outcome}. Raise epsilon, use "
                "fewer features, or declare public bounds (data_norm, y_bound) so that "
                "no budget goes to them.",
                NoiseDominatedWarning, once=True)
        grid = grid_points()
        auto = self._auto_bounds()
        estimated = (("y_bound", bounds.y_bound),) if fallback else (
            ("data_norm", bounds.data_norm), ("y_bound", bounds.y_bound))
        edges = [name for name, value in estimated
                 if name in auto
                 if value is not None and (value <= grid[0] or value >= grid[-1])]
        if edges:
            warn_user(
                f"the private {' and '.join(edges)} fell on the edge of its public grid "
                f"[{grid[0]:.2g}, {grid[-1]:.2g}]: n * epsilon is too small for private "
                "bounds, or the values are outside the grid. Declare a public "
                f"{edges[0]}, or raise epsilon or bounds_fraction.",
                NoiseDominatedWarning, once=True)

    def _validate(self, X, y, finite_at_build: bool = False):
        """``(X, y)`` checked as scikit-learn does; float32 ``X`` stays float32 (the
        solvers convert it one block of rows at a time, every sum is in float64), and a
        ``numpy.memmap`` stays mapped. A dask ``X`` is checked lazily
        (:meth:`_validate_lazy`). ``finite_at_build``: nothing reads ``X`` before
        :meth:`Problem.build <skdp.solvers.Problem.build>`, which refuses a NaN or
        infinite entry (scikit-learn's message) from the row norms it computes
        anyway, so scikit-learn's check (one more pass over ``X``) is left to it."""
        if is_dask_array(X):
            return self._validate_lazy(X, y)
        if is_device_array(X):
            return self._validate_device(X, y, finite_at_build)
        return validate_data(
            self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
            y_numeric=self._y_numeric, multi_output=False,
            ensure_all_finite=not finite_at_build,
        )

    def _validate_lazy(self, X, y):
        """Validate a dask ``X`` without gathering it: its shape and dtype, and (one pass,
        chunk by chunk) the finiteness check with scikit-learn's error. ``y`` is already
        in memory (:meth:`_fit`) and gets scikit-learn's checks."""
        import dask
        import dask.array as da

        if X.ndim != 2:
            raise ValueError(f"Expected a 2D array for X, got a {X.ndim}D dask array.")
        if any(math.isnan(c) for c in X.chunks[0] + X.chunks[1]):
            raise ValueError("X is a dask array with unknown chunk sizes; call "
                             "X.compute_chunk_sizes() first.")
        n, d = (int(v) for v in X.shape)
        if n < 1 or d < 1:
            raise ValueError(f"Found array with shape {X.shape}: at least one sample and "
                             "one feature are required.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X is a dask array of dtype {X.dtype}; skdp needs numbers.")
        if X.dtype not in (np.float64, np.float32):
            X = X.astype(np.float64)  # lazy, chunk by chunk
        has_nan, has_inf = dask.compute(da.isnan(X).any(), da.isinf(X).any())
        if has_nan or has_inf:
            raise ValueError(non_finite_message(bool(has_nan), X.dtype))
        return X, self._checked_targets(y, n, d)

    def _checked_targets(self, y, n: int, d: int):
        """scikit-learn's checks of in-memory targets for ``n`` rows of ``d`` features
        checked elsewhere (a dask or device ``X``); sets ``n_features_in_``."""
        y = _check_y(y, multi_output=False, y_numeric=self._y_numeric, estimator=self)
        if y.shape[0] != n:
            raise ValueError("Found input variables with inconsistent numbers of samples: "
                             f"[{n}, {y.shape[0]}]")
        self.n_features_in_ = d
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return y

    def _validate_device(self, X, y, finite_at_build: bool):
        """Validate an array API ``X`` where it is (:func:`validate_device_rows`; unless
        :meth:`Problem.build <skdp.solvers.Problem.build>` reads it first, with the
        finiteness check). ``y`` is already on the host (:meth:`_fit`)."""
        X = validate_device_rows(X, check_finite=not finite_at_build)
        return X, self._checked_targets(y, *X.shape)

    def _fit_planned(self, X, y, solver, spec, prepared, bounds, random_state,
                     on_steps=None, threshold=(0.0, None), bound_norms=None):
        n_features = spec.n_params - (1 if self.fit_intercept else 0)
        if X.shape != (spec.n_samples, n_features):
            raise PrivacyAccountingError(
                f"X has shape {X.shape} after validation but was planned as "
                f"({spec.n_samples}, {n_features})."
            )
        Y, loss, label_attrs = self._encode_targets(y, bounds)
        if Y.shape[1] != spec.n_outputs:
            raise PrivacyAccountingError(
                f"the targets have {Y.shape[1]} outputs but {spec.n_outputs} were planned."
            )
        # Rows are clipped to data_norm (in the data_norm_ord norm) and the intercept
        # feature (value INTERCEPT_SCALE data_norm) is appended implicitly: X is neither
        # copied nor modified.
        # The rows' norms that the private data_norm read, in the norm the rows are
        # clipped in: Problem.build reuses them instead of a second pass over X (and
        # nothing holds them while the solver runs: the caller handed its only reference).
        raw = (bound_norms[1] if bound_norms is not None
               and bound_norms[0] == spec.row_norm_ord else None)
        del bound_norms
        problem = Problem.build(
            X, Y, spec, data_norm=bounds.data_norm,
            intercept=self._intercept_feature(bounds.data_norm), on_steps=on_steps,
            raw_norms=raw,
        )
        del raw
        result = solver.solve(
            problem, prepared[1].budget, random_state,
            accounting=self.accounting, relation=self.neighboring, prepared=prepared,
        )
        # Independent re-accounting of the ledger the solver says it ran.
        spent = result.ledger.spent()
        budget = result.ledger.budget
        if budget.is_private and not spent.within(budget):
            raise PrivacyAccountingError(
                f"re-accounting the ledger gives (epsilon, delta) = {tuple(spent)} beyond "
                f"the budget ({budget.epsilon}, {budget.delta})."
            )
        epsilon, rng = threshold
        if epsilon:
            W = result.coef
            if getattr(self, "secure", False):
                # The threshold reads the direction as it will be released (snapped), not
                # its unsnapped low-order bits (snapping is idempotent in _set_fitted).
                W = snap_release(W, solver.release_noise_scale(result.plan))
            # The solver's inference (its Hessian) describes its own intercept, not the
            # chosen one: the intervals are withheld (conf_int says why).
            result = replace(result, coef=self._private_intercept(problem, W, epsilon, rng),
                             inference=None)
        return result

    def _private_intercept(self, problem, W: np.ndarray, epsilon: float, rng) -> np.ndarray:
        """``W`` with its intercept chosen by :func:`~skdp.mechanisms.private_threshold`:
        the training accuracy of ``sign(z_i + b)`` over public candidates, ``z_i`` the
        released direction's scores on the clipped rows (docs/algorithms/threshold.md).

        Public: the candidates read the released ``W`` and ``data_norm`` only (Hoelder:
        ``|w . x| <= ||w||_p ||x||_q`` with ``q`` the rows' norm and ``p`` its dual).
        """
        direction = W.copy()
        direction[-1] = 0.0
        dual = dual_exponent(problem.spec.row_norm_ord)
        radius = float(np.linalg.norm(W[:-1, 0], ord=dual)) * float(problem.clipped_to)
        grid = threshold_grid(radius)
        # The counts by blocks of rows (dask: where the chunks are; a device: its blocks'
        # scores): no n-vector of scores (memory-mapped X: 0.11 -> 0.08 of X at the peak,
        # 500,000 rows).
        counts = problem.block_sum(_threshold_counts, (grid.size,), direction, grid)
        b = choose_threshold(counts, grid, epsilon, rng)
        out = W.copy()
        out[-1] = b / problem.spec.intercept_feature
        return out

    def _set_fitted(self, result, solver, spec, label_attrs, bounds, ledger, spent,
                    like=None):
        secure = getattr(self, "secure", False)
        n_features = spec.n_params - (1 if self.fit_intercept else 0)
        W = result.coef
        if secure:
            # Post-processing with public quantities only (the plan's noise scale).
            W = snap_release(W, solver.release_noise_scale(result.plan))
        # Everything below is set only after the whole fit succeeded.
        for name, value in label_attrs.items():
            setattr(self, name, value)
        coef = np.ascontiguousarray(W[:n_features].T)
        intercept = (W[n_features] * self._intercept_feature(bounds.data_norm)
                     if self.fit_intercept
                     else np.zeros(W.shape[1]))
        if self._y_numeric:
            # Single-target regression: scikit-learn's shapes (n_features,) and a float;
            # the (public or private) centre of y is added back.
            coef, intercept = coef[0], float(intercept[0]) + bounds.y_centre
            self.y_bound_ = bounds.y_bound
            self.y_centre_ = bounds.y_centre
        if like is not None:
            # Fitted on an array API X: the model lives in its namespace, on its device, as
            # scikit-learn's estimators do (a regressor's intercept stays a float).
            coef = to_device(coef, like)
            intercept = intercept if self._y_numeric else to_device(intercept, like)
        self.coef_ = coef
        self.intercept_ = intercept
        self.data_norm_ = bounds.data_norm
        self.data_norm_ord_ = spec.row_norm_ord
        self.n_iter_ = result.n_iter
        # The L2 strength the fit used, in the parameter's units (``"auto"``: in units of
        # the bounds, PrivacyPlanning._raw_alpha): public, from the shape and the budget,
        # computed as the plan did (not divided back out of spec.alpha, which rounds);
        # 0 for the intercept-only model, which has no coefficient to penalise.
        self.alpha_ = (0.0 if solver.name == "intercept_only" else self._alpha(
            solver, spec.n_samples, spec.n_params * spec.n_outputs))
        self.solver_ = solver
        self.privacy_ledger_ = ledger
        self.privacy_spent_ = spent
        self.privacy_plan_ = result.plan

    def _decision_scores(self, X, method: str = "predict") -> np.ndarray:
        check_is_fitted(self)
        check_same_namespace(self.coef_, X, f"{type(self).__name__}.{method}()")
        if is_device_array(X):
            return self._device_decision_scores(X)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        # The model is a function of the clipped row s_i x_i, s_i = min(1, data_norm/||x_i||).
        # Rows are scaled before the product so that huge finite rows cannot overflow.
        with np.errstate(divide="ignore"):
            scale = np.minimum(1.0, self.data_norm_ / row_norms(X, self._data_norm_ord()))
        Xs = sp.diags(scale) @ X if sp.issparse(X) else X * scale[:, None]
        coef = np.atleast_2d(to_numpy(self.coef_))
        return np.asarray(Xs @ coef.T) + np.atleast_1d(to_numpy(self.intercept_))

    def _device_decision_scores(self, X):
        """:meth:`_decision_scores` of an array API ``X``, computed on its device by
        blocks of rows (float64) and returned in its namespace; the input checks of the
        host path (two dimensions, the fitted width, finite entries)."""
        X = validate_device_rows(X, fitted=self)
        xp = namespace(X)
        coef = to_device(np.atleast_2d(to_numpy(self.coef_)), X)
        intercept = to_device(np.atleast_1d(to_numpy(self.intercept_)), X)
        parts = []
        for rows in blocks(*X.shape, X.dtype == xp.float64):
            Xb = as_float64(xp, X[rows, ...])
            norms = device_norms(xp, Xb, self._data_norm_ord())
            # The model is a function of the clipped row s_i x_i (as on the host).
            scale = xp.where(norms > self.data_norm_, self.data_norm_ / norms,
                             xp.ones_like(norms))
            parts.append((Xb * scale[:, None]) @ coef.T + intercept)
        return parts[0] if len(parts) == 1 else xp.concat(parts, axis=0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = False
        # Array API input where the solver reads X only through the blocked passes (its
        # declaration; docs/scaling_out.md): scikit-learn's array API checks then run.
        try:
            tags.array_api_support = bool(self._solver().capabilities.out_of_core)
        except (TypeError, ValueError, KeyError):  # an invalid solver: refused at fit
            tags.array_api_support = False
        return tags
