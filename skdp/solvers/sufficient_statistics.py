"""Sufficient-statistics perturbation for least squares (one noisy release of X'X, X'y, y'y).

The squared loss is a quadratic: its empirical risk is a function of the Gram matrix
``G = sum_i x'_i x'_i^T`` and the moment vector ``b = sum_i x'_i y_i`` only. Releasing
both once, with noise calibrated to their replace-one sensitivity, and minimising the
noisy quadratic (post-processing) gives a private ridge / constrained least-squares fit
(Dwork, Talwar, Thakurta & Zhang 2014, "Analyze Gauss"; the adaptive ridge of Wang 2018,
"Revisiting differentially private linear regression", here chosen from the noisy Gram
itself, so no budget is spent on it). The sum of squared labels, released with them where
the fit computes standard errors, gives their residual scale (docs/inference.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
import scipy.sparse as sp

from skdp._params import OPTIONAL_COUNT, store_params
from skdp._sklearn_compat import Interval, StrOptions
from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import Unconstrained
from skdp.losses import SquaredLoss
from skdp.privacy.accounting import check_sensitivity, single_release
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import (
    BaseDPSolver,
    Inference,
    Plan,
    Problem,
    ProblemSpec,
    Released,
)
from skdp.solvers._blocks import Block
from skdp.solvers._capabilities import Capabilities
from skdp.solvers._device import device_pass, statistics_pass
from skdp.solvers._problem import ROW_BOUND_TOLERANCE

__all__ = ["SufficientStatistics", "SufficientStatisticsPlan", "statistics_sensitivities"]

#: Largest number of parameters (the released Gram matrix has ``m^2`` entries: 128 MB).
MAX_PARAMS = 4096
#: Public row and label bounds outside this range are refused (float range of X'X).
SCALE_RANGE = (1e-75, 1e75)
#: Share of the normalised release's squared sensitivity given to the sum of squared
#: labels ``y^T y`` (the residual scale of the standard errors, docs/inference.md); the
#: Gram and the moments share the rest equally. 2% of it costs the coefficients 1% more
#: noise.
SQUARES_SHARE = 0.02
#: The auto ridge makes the smallest eigenvalue of the noisy Gram at least this many noise
#: operator norms (a utility rule; any ridge is post-processing).
RIDGE_MARGIN = 1.0


def statistics_sensitivities(spec: ProblemSpec) -> tuple[float, float]:
    """Replace-one l2 sensitivities ``(Delta_G, Delta_b)`` of the released statistics.

    The release holds the upper triangle (diagonal included) of ``G`` without the public
    intercept entry ``n c^2``, and ``b``. Rows ``x' = [x, c]`` with ``||x||_2 <= B``
    (``B^2 = R^2 - c^2``, ``R`` the public bound on the augmented l2 norm) and labels
    ``|y| <= Y``. Replacing ``(x, y)`` by ``(x2, y2)``:

    - feature block ``D = x x^T - x2 x2^T``: the upper triangle has squared norm
      ``(||D||_F^2 + sum_j D_jj^2) / 2``; ``||D||_F^2 = ||x||^4 + ||x2||^4 - 2 <x, x2>^2
      <= 2 B^4`` and ``sum_j (x_j^2 - x2_j^2)^2 <= ||x||^4 + ||x2||^4 <= 2 B^4``: at most
      ``2 B^4``;
    - intercept column ``c (x - x2)``: at most ``4 c^2 B^2``;

    so ``Delta_G^2 = 2 B^4 + 4 c^2 B^2``. And ``b``: ``||x' y - x2' y2|| <= 2 R Y``.
    """
    if not isinstance(spec.loss, SquaredLoss):
        raise IncompatibleSolverError(
            f"solver 'sufficient_statistics' needs the squared loss (DPLinearRegression), "
            f"not {type(spec.loss).__name__}."
        )
    R, Y = spec.row_bound(2.0), float(spec.loss.label_bound)
    c = abs(float(spec.intercept_feature))
    for value, name in ((R, "row bound (data_norm)"), (Y, "label bound (y_bound)")):
        # Keeps every product below (B^2, c B, R Y, n R^2) a normal float.
        if not SCALE_RANGE[0] <= value <= SCALE_RANGE[1]:
            raise IncompatibleSolverError(
                f"solver 'sufficient_statistics' needs a {name} between {SCALE_RANGE[0]:g} "
                f"and {SCALE_RANGE[1]:g} (got {value:g}): X'X would underflow or overflow. "
                "Rescale X or y by a public constant."
            )
    # B = sqrt(R^2 - c^2) (with the slack Problem.build accepts on R and the rounding of
    # the cancellation at c ~ R: ProblemSpec.feature_bound) and Delta_G =
    # sqrt(2 B^4 + 4 c^2 B^2) = sqrt(2) B hypot(B, sqrt(2) c), in forms that do not square
    # B twice; Delta_b = 2 R Y with R inflated by the same slack.
    B = spec.feature_bound()
    delta_gram = math.sqrt(2.0) * B * math.hypot(B, math.sqrt(2.0) * c)
    delta_moment = 2.0 * R * (1.0 + ROW_BOUND_TOLERANCE) * Y
    return (check_sensitivity(delta_gram, "Gram sensitivity"),
            check_sensitivity(delta_moment, "moment sensitivity"))


@dataclass(frozen=True, kw_only=True)
class SufficientStatisticsPlan(Plan):
    """Constants of the one release of ``(X'X, X'y, y'y)``, fixed before any data is read.

    The released vector is the upper triangle of the Gram (without the public ``n c^2``
    entry), the moments and (for standard errors) the sum of squared labels, each part
    divided by its sensitivity over the square root of its share (:data:`SQUARES_SHARE`).

    Attributes
    ----------
    gram_sensitivity : float
        Replace-one l2 sensitivity ``Delta_G`` of the Gram's released entries.
    moment_sensitivity : float
        Replace-one l2 sensitivity ``Delta_b`` of the moments.
    squares_sensitivity : float
        Replace-one sensitivity ``Y^2`` of the sum of squared (clipped) labels.
    n_released : int
        Number ``M`` of released coordinates.
    mechanism : {"gaussian", "l2_laplace", "none"}
        Noise of the normalised (sensitivity-1) vector.
    noise_multiplier : float
        Per-coordinate std ``z`` of the normalised vector's Gaussian noise (0 otherwise).
    laplace_scale : float
        Scale of its l2 Laplace noise, ``1 / epsilon`` (0 otherwise).
    gram_scale, moment_scale, squares_scale : float
        ``Delta / sqrt(share)`` of each part: the factors scaling the normalised noise
        back to it (``squares_scale = 0``: ``y'y`` is not released, where the fit
        computes no standard errors, ``ProblemSpec.standard_errors`` false, or under a
        constraint; the Gram and the moments then take half the share each).
    sigma_gram, sigma_moment, sigma_squares : float
        Per-entry noise std of the Gram, the moments and the sum of squares (data
        units).
    """

    gram_sensitivity: float
    moment_sensitivity: float
    squares_sensitivity: float
    n_released: int
    mechanism: str
    noise_multiplier: float
    laplace_scale: float
    gram_scale: float
    moment_scale: float
    squares_scale: float
    sigma_gram: float
    sigma_moment: float
    sigma_squares: float

    @property
    def releases_squares(self) -> bool:
        """Whether ``y'y`` is released (last): where the run gives standard errors
        (``squares_scale > 0``; ``ProblemSpec.standard_errors`` when planned)."""
        return self.squares_scale > 0.0


class SufficientStatistics(BaseDPSolver):
    """Least squares from one noisy release of the sufficient statistics ``(X'X, X'y, y'y)``.

    The noisy Gram ``G~`` and moments ``b~`` (rows clipped to ``data_norm``, labels to
    ``y_bound``, the intercept as the constant feature) define the quadratic
    ``F~(w) = (w^T G~ w / 2 - b~^T w) / n + (alpha / 2) ||w_pen||^2
    + (lambda / 2) ||w - w0||^2`` (``w0`` the release's intercept-only model), minimised
    over the constraint (exactly without one; accelerated projected gradient with any
    registered constraint); the noisy ``y'y`` gives the residual scale of the standard
    errors. Everything after the release is post-processing.

    Parameters
    ----------
    ridge : "auto" or float >= 0, default="auto"
        Extra L2 strength ``lambda`` (mean-loss units, like ``alpha``) on every
        coefficient. The noise makes ``G~`` indefinite when ``X'X`` has small eigenvalues;
        ``"auto"`` adds the least ridge that lifts the smallest eigenvalue of
        ``G~ + n alpha I_pen`` to ``nu = 2 s sqrt(m)``, the typical operator norm
        of the Gram noise (``s`` its per-entry standard deviation): Wang (2018)'s
        adaptive ridge, computed from the noisy Gram itself instead of a separate private
        estimate of ``lambda_min(X'X)`` (no budget is spent on it). ``0`` at
        ``epsilon = inf``. A float is used as given; negative eigenvalues left in the
        quadratic are then clipped to 0 (post-processing).
    max_iter : int, default=10000
        Iteration cap of the projected-gradient post-processing (constrained problems
        only; it stops earlier at a gradient-mapping tolerance, which is a function of the
        private release only).

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation (``n`` public). The released
    vector is the upper triangle of ``G`` (without the public entry ``n c^2``), ``b`` and
    (where the fit computes standard errors, unconstrained) ``S = y'y``, with l2
    sensitivities ``Delta_G = sqrt(2 B^4 + 4 c^2 B^2)``,
    ``Delta_b = 2 R Y`` (:func:`statistics_sensitivities`) and ``Delta_S = Y^2``. Each
    part is divided by its sensitivity over the square root of its share (``S``:
    :data:`SQUARES_SHARE`; ``G`` and ``b`` half of the rest each), so the joint vector has
    sensitivity at most 1, and receives one noise draw: ``delta > 0``, ``N(0, z^2 I)``
    with ``z`` the exact single-release Gaussian multiplier of the accounting method
    (analytic Gaussian by default); ``delta = 0``, density
    proportional to ``exp(-epsilon ||v||_2)`` (the l2 K-norm mechanism, epsilon-DP by the
    triangle inequality; ``PureDpEvent``). The ridge, the eigenvalue clipping and the
    minimisation read only the noisy release and public constants.

    Assumptions: squared loss, one target, at most 4096 parameters; rows clipped to the
    public ``data_norm`` (l2 bound ``R`` of the augmented row), labels clipped to the
    public ``y_bound`` ``Y``, both between ``1e-75`` and ``1e75``.

    Reference: Dwork, Talwar, Thakurta & Zhang 2014 ("Analyze Gauss"); the adaptive ridge
    after Wang 2018. Not one of the five papers' algorithms: it is here because output
    perturbation of the squared loss is unusable on small data sets (its sensitivity
    grows like ``1 / alpha``); see docs/privacy.md and
    docs/algorithms/sufficient_statistics.md.
    """

    name = "sufficient_statistics"
    releases_inference = True
    capabilities = Capabilities(
        algorithm=("sufficient-statistics perturbation (Dwork-Talwar-Thakurta-Zhang 2014; "
                   "adaptive ridge after Wang 2018)"),
        needs_delta=False, accounting_methods=("pure", "gaussian", "rdp", "pld"),
        default_accounting="gaussian", losses=("squared",),
        constraints=("none", "l2", "l1", "lp", "simplex"),
        max_outputs=1, max_params=MAX_PARAMS, row_norm="l2", out_of_core=True,
    )

    # Interval(Real, 0, None, "left") refuses inf and nan.
    _parameter_constraints = {
        "ridge": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "max_iter": OPTIONAL_COUNT,
    }

    def __init__(self, ridge="auto", max_iter=10_000):
        store_params(self, locals())

    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """The generic check, then: ``X'X`` and its noise must stay in float range.

        <<check_sections>>
            If a generic check fails or the public row and label bounds make the
            statistics' sensitivities overflow.
        """
        super().check_compatible(spec, accounting, relation)
        # The public row and label bounds must keep X'X and its noise in float range.
        statistics_sensitivities(spec)

    # -- plan ------------------------------------------------------------------------------
    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> SufficientStatisticsPlan:
        """Fix the one noisy release of ``X'X`` and ``X'y`` and its noise scales.

        <<plan_parameters>>

        Returns
        -------
        SufficientStatisticsPlan
            The sensitivities of the Gram matrix and the moments, the released count and
            the Gaussian or l2-Laplace noise of each part.
        """
        delta_gram, delta_moment = statistics_sensitivities(spec)
        m = spec.n_params
        intercept = spec.intercept_feature != 0.0
        # Released coordinates: the Gram's upper triangle without the public n c^2 entry,
        # the m moments and y'y.
        # y'y is read by the standard errors only: released where the run gives them.
        squares = spec.standard_errors
        n_released = m * (m + 1) // 2 - (1 if intercept else 0) + m + int(squares)
        # Clipped labels |y| <= Y: replacing one moves y'y by |y^2 - y2^2| <= Y^2.
        delta_squares = check_sensitivity(float(spec.loss.label_bound) ** 2,
                                          "label-squares sensitivity")
        # One release of the normalised vector (sensitivity 1): density ∝ exp(-eps ||v||_2)
        # or N(0, z^2 I).
        release = single_release(budget, accounting, relation)
        event, scale = release.event, release.unit_scale
        # Per-coordinate variance: z^2, or for the l2 Laplace in R^M, E||v||^2 / M with
        # E||v||^2 = E[Gamma(M, scale)^2] = M (M + 1) scale^2.
        unit_variance = ((n_released + 1) if release.mechanism == "l2_laplace" else 1.0
                         ) * scale**2
        # Each part is divided by its sensitivity over sqrt(share) before the noise, the
        # shares summing to 1 (the joint sensitivity is sqrt(sum of shares) = 1): the
        # noise of the normalised vector is scaled back by these factors. Per-entry noise
        # std of each part: factor * unit std.
        share = SQUARES_SHARE if squares else 0.0
        half = (1.0 - share) / 2.0
        gram_scale = delta_gram / math.sqrt(half)
        moment_scale = delta_moment / math.sqrt(half)
        squares_scale = delta_squares / math.sqrt(share) if squares else 0.0
        unit = math.sqrt(unit_variance)
        plan = SufficientStatisticsPlan(
            n_iter=1, event=event, accounting=accounting, relation=relation,
            gram_sensitivity=delta_gram,
            moment_sensitivity=delta_moment,
            squares_sensitivity=delta_squares,
            n_released=n_released,
            mechanism=release.mechanism,
            noise_multiplier=scale if release.mechanism == "gaussian" else 0.0,
            laplace_scale=scale if release.mechanism == "l2_laplace" else 0.0,
            gram_scale=gram_scale,
            moment_scale=moment_scale,
            squares_scale=squares_scale,
            sigma_gram=gram_scale * unit,
            sigma_moment=moment_scale * unit,
            sigma_squares=squares_scale * unit,
        )
        if budget.is_private:
            for key in ("gram_scale", "moment_scale", "sigma_gram", "sigma_moment",
                        *(("squares_scale", "sigma_squares") if squares else ())):
                check_sensitivity(getattr(plan, key), key.replace("_", " "))
        return plan

    # -- run -------------------------------------------------------------------------------
    def _run(self, problem: Problem, plan: SufficientStatisticsPlan, noise: NoiseSource
             ) -> np.ndarray:
        return self._run_released(problem, plan, noise).coef

    def _run_released(self, problem: Problem, plan: SufficientStatisticsPlan,
                      noise: NoiseSource) -> Released:
        """The release, its minimiser and, without a constraint, what the standard errors
        need (docs/inference.md): all post-processing of the one release."""
        gram, moments, squares = self.noisy_statistics(problem, plan, noise)
        spec = problem.spec
        ridge, values, vectors = self._penalised(gram, spec, plan.sigma_gram)
        centre = self._ridge_centre(gram, moments, spec)
        coef = self._minimize_penalised(values, vectors, moments + ridge * centre, spec)
        if not plan.releases_squares:
            # y'y was not released: a constrained minimiser (no normal sandwich) or a fit
            # that reads no standard errors (ProblemSpec.standard_errors).
            return Released(coef)
        return Released(coef, self._inference(values, vectors, ridge, gram, moments, squares,
                                              coef[:, 0], centre, plan, spec))

    def noisy_statistics(self, problem: Problem, plan: SufficientStatisticsPlan,
                         noise: NoiseSource) -> tuple[np.ndarray, np.ndarray, float]:
        """The release: ``(G~, b~, S~)``, the only access to the data.

        Parameters
        ----------
        <<release_inputs>>

        Returns
        -------
        gram : ndarray of shape (n_params, n_params)
            The noisy Gram matrix ``X'X`` (with the intercept feature).
        moments : ndarray of shape (n_params,)
            The noisy moments ``X'y``.
        squares : float
            The noisy sum of squared labels ``y'y`` (``nan`` where the plan does not
            release it: ``squares_scale = 0``).
        """
        # Noise of the normalised vector (sensitivity 1), drawn first, independently of
        # the data: N(0, z^2 I), or density ∝ exp(-eps ||v||_2).
        unit = noise.release(plan.mechanism, (plan.n_released,),
                             plan.laplace_scale or plan.noise_multiplier)
        gram, moments, squares = sufficient_statistics(problem)
        released = plan.releases_squares  # y'y is the last coordinate, when released
        noisy_gram, noisy_moments = add_statistics_noise(
            gram, moments, unit[:-1] if released else unit, plan.gram_scale,
            plan.moment_scale, intercept=problem.spec.intercept_feature != 0.0)
        return noisy_gram, noisy_moments, (squares + plan.squares_scale * float(unit[-1])
                                           if released else math.nan)

    def _penalised(self, gram: np.ndarray, spec: ProblemSpec, sigma_gram: float
                   ) -> tuple[float, np.ndarray, np.ndarray]:
        """``(n lambda, values, vectors)``: the ridge in sum units and the
        eigendecomposition of ``H = G~ + n alpha I_pen + n lambda I``, the Hessian of
        ``n F~``, with the ``"auto"`` ridge ``lambda`` (the least that lifts its smallest
        eigenvalue to the Gram noise's typical operator norm, from the per-entry noise
        std ``sigma_gram``) or the given one. A ridge shifts every eigenvalue and keeps
        the vectors, so one decomposition serves the ridge, the minimiser and the
        standard errors. Post-processing."""
        n, m, p = spec.n_samples, spec.n_params, spec.n_penalized
        H = gram.copy()
        H[np.arange(p), np.arange(p)] += n * spec.alpha
        values, vectors = np.linalg.eigh(H)
        if self.ridge == "auto":
            # Typical operator norm of a symmetric matrix of i.i.d. entries of std s in
            # R^(m x m) (semicircle edge 2 s sqrt(m)); a utility rule, not a privacy one.
            nu = 2.0 * sigma_gram * math.sqrt(m)
            extra = max(0.0, RIDGE_MARGIN * nu - float(values[0])) if nu > 0 else 0.0
        else:
            extra = n * float(self.ridge)
        return extra, values + extra, vectors

    @staticmethod
    def _ridge_centre(gram: np.ndarray, moments: np.ndarray, spec: ProblemSpec
                      ) -> np.ndarray:
        """``w0``, where the ridge ``lambda ||w - w0||^2 / 2`` pulls: the release's
        intercept-only model (slopes 0; with an intercept, its coefficient
        ``b~_c / (n c^2)`` from the public, exact Gram entry ``n c^2``: the mean of the
        centred labels). A ridge towards 0 would pull the intercept to the private
        ``y_centre_``, whose error the fit could then not correct (on diabetes at epsilon
        1 that made most fits with R^2 below -0.5). Post-processing."""
        centre = np.zeros(spec.n_params)
        if spec.intercept_feature != 0.0:
            centre[-1] = moments[-1] / gram[-1, -1]
        return centre

    def minimize(self, gram: np.ndarray, moments: np.ndarray, spec: ProblemSpec,
                 sigma_gram: float) -> np.ndarray:
        """Minimise the (noisy) quadratic: post-processing of the release only.

        Parameters
        ----------
        gram : ndarray of shape (n_params, n_params)
            The (noisy) Gram matrix.
        moments : ndarray of shape (n_params,)
            The (noisy) moments.
        <<spec>>
        sigma_gram : float
            Per-entry noise scale of the Gram matrix (the ``"auto"`` ridge grows with
            it).

        Returns
        -------
        ndarray of shape (n_params, 1)
            The minimiser of ``w'Hw / 2 - (b + n lambda w0)'w``, ``H`` the Gram with the
            L2 terms and ``w0`` the ridge's centre (the release's intercept-only model),
            on the PSD part of ``H`` (minimum-norm without a constraint, FISTA over the
            constraint).
        """
        ridge, values, vectors = self._penalised(gram, spec, sigma_gram)
        return self._minimize_penalised(
            values, vectors, moments + ridge * self._ridge_centre(gram, moments, spec), spec)

    def _minimize_penalised(self, values: np.ndarray, vectors: np.ndarray,
                            linear: np.ndarray, spec: ProblemSpec) -> np.ndarray:
        """The minimiser of ``w'Hw / 2 - linear'w`` on the PSD part of ``H`` (given by its
        eigendecomposition), as a column (see :meth:`minimize`)."""
        m = spec.n_params
        # Symmetric PSD part of H (eigenvalues clipped at 0; exact when H is PSD).
        # Relative threshold (scale-invariant): the pseudo-inverse drops rounding noise.
        tol = float(abs(values).max(initial=0.0)) * m * np.finfo(float).eps
        values = np.where(values > tol, values, 0.0)
        if isinstance(spec.constraint, Unconstrained):
            # The minimum-norm minimiser (pseudo-inverse on the PSD part).
            inv = np.divide(1.0, values, out=np.zeros_like(values), where=values > 0)
            w = vectors @ (inv * (vectors.T @ linear))
            return w[:, None]
        H_psd = (vectors * values) @ vectors.T
        return self._projected(H_psd, linear, spec, float(values.max(initial=0.0)))[:, None]

    @staticmethod
    def _inference(values: np.ndarray, vectors: np.ndarray, ridge: float, gram: np.ndarray,
                   moments: np.ndarray, squares: float, w: np.ndarray, centre: np.ndarray,
                   plan: SufficientStatisticsPlan, spec: ProblemSpec) -> Inference:
        """Standard-error inputs, from the release and the plan's public scales only.

        In mean units ``A = H / n`` (from ``H``'s eigendecomposition ``values``,
        ``vectors``; eigenvalues floored), the loss's Hessian ``G~ / n``,
        the penalty ``A - G~ / n``; the dispersion is the residual variance
        ``(S~ - 2 w'b~ + w'G~w) / (n - m)``, floored at 0 (at small ``n`` the noise of
        ``S~`` can make it 0, and the intervals then hold the privacy noise only); the
        output's mean gradient ``(G~ w - b~) / n`` carries the noise ``(E w - e) / n`` of covariance
        ``(s_b^2 I + C(w)) / n^2``, ``C(w)_ik = s_G^2 sum_j N_ij w_j^2`` for ``i = k`` and
        ``s_G^2 N_ik w_i w_k`` otherwise (``N``: the noised Gram entries, symmetric, one
        draw per upper-triangle entry; the public intercept entry has none).
        """
        n, m = spec.n_samples, spec.n_params
        mean_values = values / n  # the eigenvalues of A = H / n (same vectors)
        floor = max(float(mean_values.max(initial=0.0)) * 1e-12, np.finfo(float).tiny)
        A = (vectors * np.maximum(mean_values, floor)) @ vectors.T
        # The L2 terms' diagonal in A: alpha on the penalised coordinates, lambda on all.
        penalty = np.full(m, ridge / n)
        penalty[:spec.n_penalized] += spec.alpha
        rss = squares - 2.0 * float(w @ moments) + float(w @ gram @ w)
        dispersion = max(rss, 0.0) / max(n - m, 1)
        noised = np.ones((m, m))
        if spec.intercept_feature != 0.0:
            noised[m - 1, m - 1] = 0.0
        gram_noise = plan.sigma_gram ** 2 * (noised * np.outer(w, w))
        np.fill_diagonal(gram_noise, plan.sigma_gram ** 2 * (noised @ (w * w)))
        noise_cov = (plan.sigma_moment ** 2 * np.eye(m) + gram_noise) / n ** 2
        return Inference(hessian=A, penalty=penalty, noise_covariance=noise_cov,
                         n_samples=n, dispersion=dispersion, penalty_centre=centre)

    def _projected(self, H: np.ndarray, b: np.ndarray, spec: ProblemSpec,
                   lipschitz: float) -> np.ndarray:
        """FISTA with adaptive restart on ``w^T H w / 2 - b^T w`` over the constraint."""
        p = spec.n_penalized
        project = spec.constraint.project

        def proj(w: np.ndarray) -> np.ndarray:
            out = w.copy()
            out[:p] = project(w[:p, None])[:, 0]
            return out

        if lipschitz <= 0:
            return proj(np.zeros_like(b))
        step = 1.0 / lipschitz
        w = proj(np.zeros_like(b))
        y, t = w.copy(), 1.0
        scale = max(float(np.linalg.norm(b)), 1e-300)
        for _ in range(self.max_iter):
            w_next = proj(y - step * (H @ y - b))
            mapping = np.linalg.norm(w_next - y) / step
            t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            if float((w_next - w) @ (y - w_next)) > 0:  # restart when momentum overshoots
                y, t = w_next.copy(), 1.0
            else:
                y, t = w_next + ((t - 1.0) / t_next) * (w_next - w), t_next
            w = w_next
            if mapping <= 1e-13 * scale:
                break
        return w


@device_pass(statistics_pass)
def _statistics_block(block: Block) -> np.ndarray:
    """``[vec(X_b^T X_b), X_b^T y_b, 1^T X_b]`` of one block of clipped rows."""
    Xs = block.scaled_rows()
    d = Xs.shape[1]
    out = np.empty(d * d + 2 * d)
    product = Xs.T @ Xs
    out[: d * d] = (product.toarray() if sp.issparse(product) else product).ravel()
    out[d * d: d * d + d] = np.asarray(Xs.T @ block.Y[:, 0]).ravel()
    out[d * d + d:] = np.asarray(Xs.sum(axis=0)).ravel()
    return out


def sufficient_statistics(problem: Problem) -> tuple[np.ndarray, np.ndarray, float]:
    """Exact ``(G, b, S)`` of the augmented clipped rows and the clipped labels: ``G``
    and ``b`` in one blocked pass over ``X`` (:meth:`Problem.block_sum`: chunk by chunk,
    where they are, for a dask ``X``), the label sums (``1'y`` for the intercept's moment,
    ``S = y'y``) from the host labels."""
    spec = problem.spec
    m, c = spec.n_params, problem.intercept
    d = problem.X.shape[1]
    gram = np.zeros((m, m))
    moments = np.zeros(m)
    packed = problem.block_sum(_statistics_block, (d * d + 2 * d,))
    gram[:d, :d] = packed[: d * d].reshape(d, d)
    moments[:d] = packed[d * d: d * d + d]
    column_sums = packed[d * d + d:]
    labels = np.asarray(problem.Y[:, 0], dtype=float)
    if c:
        gram[:d, d] = gram[d, :d] = c * column_sums
        gram[d, d] = spec.n_samples * c * c
        moments[d] = c * float(np.sum(labels))
    return gram, moments, float(labels @ labels)


def add_statistics_noise(gram: np.ndarray, moments: np.ndarray, unit: np.ndarray,
                         gram_scale: float, moment_scale: float, *, intercept: bool
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Add the noise of the normalised release, scaled back by each part's factor
    ``Delta / sqrt(share)``.

    The Gram noise is symmetric (one draw per upper-triangle entry).

    Order of ``unit``: the upper triangle of the Gram row by row (``np.triu_indices``),
    without the last diagonal entry when there is an intercept (public ``n c^2``), then
    the ``m`` moments.
    """
    m = gram.shape[0]
    rows, cols = np.triu_indices(m)
    if intercept:
        keep = ~((rows == m - 1) & (cols == m - 1))
        rows, cols = rows[keep], cols[keep]
    k = rows.size
    noisy = gram.copy()
    noise = gram_scale * unit[:k]
    noisy[rows, cols] += noise
    off = rows != cols
    noisy[cols[off], rows[off]] += noise[off]
    return noisy, moments + moment_scale * unit[k:]
