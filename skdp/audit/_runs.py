"""Audit runs over solvers and estimators (see :mod:`skdp.audit`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from skdp.audit._canaries import make_canary_pair
from skdp.audit._statistics import AuditResult, audit_scores
from skdp.exceptions import PrivacyAccountingError, PrivacyLeakWarning
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource, as_generator
from skdp.solvers._base import BaseDPSolver, Problem


# ---------------------------------------------------------------------------------------
# Audits
# ---------------------------------------------------------------------------------------
def _check_n_trials(n_trials: int) -> None:
    if isinstance(n_trials, bool) or not isinstance(n_trials, int | np.integer) or n_trials < 2:
        raise ValueError(f"n_trials must be an int >= 2, got {n_trials!r}.")


def _differing_rows(A: Any, B: Any) -> np.ndarray:
    """Boolean mask of the rows where two arrays (dense or sparse) differ."""
    if sp.issparse(A) or sp.issparse(B):
        diff = sp.csr_matrix(A) - sp.csr_matrix(B)
        diff.eliminate_zeros()
        return np.diff(diff.indptr) > 0
    A, B = np.asarray(A), np.asarray(B)
    if A.shape != B.shape:
        raise ValueError(f"D and D' must have the same shape, got {A.shape} and {B.shape}.")
    return np.any((A != B).reshape(A.shape[0], -1), axis=1)


def _check_neighbours(X: Any, Y: Any, X_prime: Any, Y_prime: Any) -> None:
    """Replace-one: same size, at most one record (row and label) differs."""
    if X.shape != X_prime.shape:
        raise ValueError(
            f"D and D' must have the same shape (replace-one), got {X.shape} and "
            f"{X_prime.shape}."
        )
    changed = _differing_rows(X, X_prime) | _differing_rows(Y, Y_prime)
    if np.count_nonzero(changed) > 1:
        raise ValueError(
            f"D and D' differ in {np.count_nonzero(changed)} records; replace-one "
            "neighbours differ in one."
        )


def audit_solver(
    solver: BaseDPSolver,
    problem: Problem,
    neighbour_problem: Problem,
    budget: Budget,
    *,
    statistic: Callable[[np.ndarray], float],
    n_trials: int = 1000,
    confidence: float = 0.95,
    accounting: str = "auto",
    random_state: Any = None,
    noise_factory: Callable[[np.random.Generator], NoiseSource] | None = None,
) -> AuditResult:
    """Audit a solver: ``n_trials`` runs on each of two neighbouring problems.

    The first run on each problem goes through ``solver.solve`` (plan from the public
    spec, ledger checked against ``budget``, private run); the two plans must be equal
    (:class:`~skdp.exceptions.PrivacyAccountingError` otherwise: a plan that depends on
    the data leaks). Every further run executes that plan with its own independent noise
    stream. ``statistic`` maps the released coefficients to a number and
    :func:`audit_scores` turns the two samples into a lower bound on epsilon. The
    claimed guarantee is what the solver's ledger says it spent.

    A passing audit is not a proof of privacy; a failing one (``violated``: the lower
    bound above the claimed epsilon at the stated confidence) is a bug.

    Parameters
    ----------
    solver : BaseDPSolver
        The solver, configured.
    problem, neighbour_problem : Problem
        ``D`` and ``D'``: same public size, at most one record different (checked).
    budget : Budget
        The budget the solver is asked to meet (private: finite epsilon).
    statistic : callable
        ``statistic(coef) -> float`` on :attr:`~skdp.solvers.SolverResult.coef`, for
        example :meth:`CanaryPair.coef_statistic`.
    n_trials : int, default=1000
        Runs on each problem.
    confidence : float, default=0.95
        Confidence of the lower bound.
    accounting : str, default="auto"
        The accounting method, passed to ``solve``.
    random_state : None, int or numpy Generator
        Seeds the independent streams of all runs (``None``: fresh entropy).
    noise_factory : callable, optional
        ``noise_factory(generator) -> NoiseSource`` builds each run's noise source
        (default :class:`~skdp.privacy.noise.NoiseSource`). Tests pass
        ``lambda g: ScaledNoiseSource(g, 5)`` to audit an under-noised twin.

    Returns
    -------
    AuditResult
        The audit of the solver's ``n_trials`` runs on each problem (see
        :func:`audit_scores`).
    """
    _check_n_trials(n_trials)
    if not budget.is_private:
        raise ValueError("an audit needs a private budget (finite epsilon).")
    if problem.spec.n_samples != neighbour_problem.spec.n_samples:
        raise ValueError("D and D' must have the same size (replace-one).")
    _check_neighbours(problem.X, problem.Y, neighbour_problem.X, neighbour_problem.Y)
    factory = NoiseSource if noise_factory is None else noise_factory
    streams = as_generator(random_state).spawn(2 * n_trials)
    problems = (problem, neighbour_problem)
    # The first trial goes through ``solve`` on each dataset: it plans from the public
    # spec and checks the ledger against the budget. The plan must not depend on the
    # data (a plan that differs between neighbours would itself leak); later trials run
    # the same planned mechanism.
    first = [solver.solve(prob, budget, factory(streams[k]), accounting=accounting)
             for k, prob in enumerate(problems)]
    if first[0].plan != first[1].plan:
        raise PrivacyAccountingError(
            f"solver {solver.name!r} planned differently on neighbouring datasets; the plan "
            "must depend on public quantities only."
        )
    plan, spent = first[0].plan, first[0].spent
    scores = np.empty((2, n_trials))
    scores[:, 0] = [statistic(result.coef) for result in first]
    for trial in range(1, n_trials):
        for k, prob in enumerate(problems):
            coef = solver._run(prob, plan, factory(streams[2 * trial + k]))
            scores[k, trial] = statistic(coef)
    return audit_scores(scores[0], scores[1], epsilon=spent.epsilon, delta=spent.delta,
                        confidence=confidence)


def audit_estimator(
    estimator: Any,
    X: Any,
    y: Any,
    X_prime: Any = None,
    y_prime: Any = None,
    *,
    statistic: Callable[[Any], float] | None = None,
    n_trials: int = 1000,
    confidence: float = 0.95,
    random_state: Any = None,
) -> AuditResult:
    """Audit an skdp estimator: ``n_trials`` fits on each of ``D`` and ``D'``.

    With ``X_prime`` and ``y_prime`` omitted, the neighbouring datasets are built from
    ``(X, y)`` by :func:`make_canary_pair` (``data_norm`` read from the estimator, or the
    largest row norm of ``X`` for ``data_norm="auto"``,
    canary in row 0, reference ``"flip"``) and the statistic is the canary coefficient.
    Otherwise ``(X, y)`` is ``D``, ``(X_prime, y_prime)`` is ``D'`` and ``statistic``
    must be given.

    Every fit uses a fresh :func:`sklearn.base.clone` of ``estimator`` with its own
    independent ``random_state`` (the estimator passed in is never fitted or modified;
    the expected :class:`~skdp.exceptions.PrivacyLeakWarning` about a set
    ``random_state`` is silenced inside the audit). The claimed guarantee is the fitted
    clones' ``privacy_spent_``.

    A passing audit is not a proof of privacy: it only means that this canary and
    statistic found no leak with this many trials. A failing one (``violated``: the
    lower bound above the claimed epsilon at the stated confidence) is a bug.

    Parameters
    ----------
    estimator : estimator
        An unfitted or fitted skdp estimator (it is cloned, not used).
    X, y : array-like
        ``D``.
    X_prime, y_prime : array-like, optional
        ``D'``: same shape as ``D``, at most one record different (checked).
    statistic : callable, optional
        ``statistic(fitted_estimator) -> float``. Default (built canary only):
        :meth:`CanaryPair.estimator_statistic`.
    n_trials : int, default=1000
        Fits on each dataset (``2 * n_trials`` fits in all).
    confidence : float, default=0.95
        Confidence of the lower bound.
    random_state : None, int or numpy Generator
        Seeds the independent streams of all fits (``None``: fresh entropy).

    Returns
    -------
    AuditResult
        The audit of the estimator's ``n_trials`` fits on each dataset (see
        :func:`audit_scores`).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression
    >>> from skdp.audit import audit_estimator
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(20, 2)), rng.integers(0, 2, 20)
    >>> clf = DPLogisticRegression(epsilon=1.0, delta=1e-5, data_norm=1.0)
    >>> result = audit_estimator(clf, X, y, n_trials=50, random_state=0)
    >>> result.violated
    False
    """
    from sklearn.base import clone  # estimator layer only: keep the module import light

    _check_n_trials(n_trials)
    params = estimator.get_params()
    if "epsilon" in params and not math.isfinite(float(params["epsilon"])):
        raise ValueError("an audit needs a private estimator (finite epsilon).")
    if (X_prime is None) != (y_prime is None):
        raise ValueError("give both X_prime and y_prime, or neither.")
    if X_prime is None:
        data_norm = params["data_norm"]
        if isinstance(data_norm, str):
            # Private bounds: the canary sits at the largest row norm of the audit's own
            # data (an audit runs on data the auditor may read).
            data_norm = float(np.max(np.linalg.norm(np.asarray(X, dtype=float), axis=1)))
        pair = make_canary_pair(X, y, data_norm=float(data_norm))
        X, y, X_prime, y_prime = pair.X, pair.y, pair.X_prime, pair.y_prime
        if statistic is None:
            statistic = pair.estimator_statistic
    elif statistic is None:
        raise ValueError("a statistic is needed when D' is given explicitly.")
    else:
        X, X_prime = (v if sp.issparse(v) else np.asarray(v) for v in (X, X_prime))
        y, y_prime = np.asarray(y), np.asarray(y_prime)
    _check_neighbours(X, y, X_prime, y_prime)
    streams = as_generator(random_state).spawn(2 * n_trials)
    scores = np.empty((2, n_trials))
    spent = None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="random_state is set",
                                category=PrivacyLeakWarning)
        for trial in range(n_trials):
            for k, (Xk, yk) in enumerate(((X, y), (X_prime, y_prime))):
                model = clone(estimator).set_params(random_state=streams[2 * trial + k])
                model.fit(Xk, yk)
                scores[k, trial] = statistic(model)
                spent = model.privacy_spent_
    if not math.isfinite(spent.epsilon):
        raise ValueError("an audit needs a private estimator (finite epsilon).")
    return audit_scores(scores[0], scores[1], epsilon=spent.epsilon, delta=spent.delta,
                        confidence=confidence)
