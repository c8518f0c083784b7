"""What a scikit-learn workflow will spend, priced from shapes and parameters only."""

from __future__ import annotations

import numpy as np
from sklearn.base import OneToOneFeatureMixin, clone, is_classifier
from sklearn.model_selection import (
    GridSearchCV,
    ParameterGrid,
    ParameterSampler,
    RandomizedSearchCV,
    check_cv,
)
from sklearn.pipeline import Pipeline

from skdp._sklearn_compat import BaseSearchCV
from skdp._warnings import warn_user
from skdp.exceptions import PrivacyLeakWarning
from skdp.model_selection._private_search import (
    PrivateRandomizedSearch,
    is_private_step,
    private_steps,
)
from skdp.privacy.accounting import PrivacyLedger, PrivacySpent
from skdp.privacy.composition import Totals, summarize

__all__ = ["fit_ledgers", "privacy_cost"]


def _rows(X, idx):
    return X.iloc[idx] if hasattr(X, "iloc") else X[idx]


def fit_ledgers(estimator, X, y, rows=None) -> list[PrivacyLedger]:
    """The ledgers ``estimator.fit(X[rows], y[rows])`` will record, one per private step.

    Read from the shape of ``X``, the label set of ``y`` (public for classifiers) and the
    parameters. A private step behind non-private transformers of a ``Pipeline`` is
    priced at the width those transformers output on the rows (they are fitted here for
    their output shape only; nothing private is spent).
    """
    rows = np.arange(X.shape[0]) if rows is None else np.asarray(rows)
    y_rows = None if y is None else _rows(np.asarray(y), rows)
    n_samples = int(rows.shape[0])
    if is_private_step(estimator):
        # With "auto" bounds: the reservation the fit charges (its solver is planned only
        # after the private bound estimate), an upper bound of what it spends.
        return [estimator._planned_ledger(n_samples, int(X.shape[1]), y_rows)]
    if isinstance(estimator, Pipeline):
        ledgers = []
        for i, (_, step) in enumerate(estimator.steps):
            if step is None or step == "passthrough" or not _private_inside(step):
                continue
            ledgers += fit_ledgers(step, np.empty((n_samples, _width(estimator, i, X, rows,
                                                                     y_rows))), y_rows)
        return ledgers
    if _private_inside(estimator):
        raise TypeError(
            f"privacy_cost prices skdp estimators and Pipelines of them; "
            f"{type(estimator).__name__} holds private steps it cannot price. Pass a "
            "BudgetAccountant to the private steps and read accountant.spent() instead.")
    return []


def _width(pipeline: Pipeline, i: int, X, rows, y_rows) -> int:
    """The number of features step ``i`` of ``pipeline`` receives. One-to-one steps
    (scalers, clippers, private or not) keep the width; a step that declares its output
    width from public quantities (``_public_width(n_samples, n_features)``, for example
    ``DPPCA`` with an integer ``n_components``) gives it; other non-private steps are
    fitted on the rows for their output shape only. A private step whose output width
    depends on its release cannot be priced without spending."""
    head = pipeline.steps[:i]
    width = int(X.shape[1])
    for k, (_, step) in enumerate(head):
        if step is None or step == "passthrough" or isinstance(step, OneToOneFeatureMixin):
            continue
        public = getattr(step, "_public_width", None)
        out = None if public is None else public(int(rows.shape[0]), width)
        if out is not None:
            width = int(out)
        elif any(_private_inside(s) for _, s in head[:k + 1]):
            raise TypeError("privacy_cost cannot price a private step behind a private "
                            "step whose number of output features depends on its release.")
        else:
            width = int(np.shape(clone(pipeline[:k + 1]).fit_transform(_rows(X, rows),
                                                                       y_rows))[1])
    return width


def _private_inside(obj) -> bool:
    if is_private_step(obj) or isinstance(obj, PrivateRandomizedSearch):
        return True
    if hasattr(obj, "get_params"):
        return any(is_private_step(v) or isinstance(v, PrivateRandomizedSearch)
                   for v in obj.get_params(deep=True).values())
    return False


def _candidates(search) -> list[dict]:
    if isinstance(search, GridSearchCV):
        return list(ParameterGrid(search.param_grid))
    if isinstance(search, RandomizedSearchCV):
        if not isinstance(search.random_state, int | np.integer):
            raise ValueError(
                "RandomizedSearchCV samples its candidates from random_state at fit time; "
                "set its random_state to an int so that privacy_cost prices the same "
                "candidates the search will fit.")
        return list(ParameterSampler(search.param_distributions, search.n_iter,
                                     random_state=search.random_state))
    raise TypeError(
        f"privacy_cost cannot price {type(search).__name__}: which candidates it fits "
        "depends on the data (successive halving keeps the best ones), so its price is not "
        "public. Use GridSearchCV, RandomizedSearchCV or skdp's PrivateRandomizedSearch.")


def _score_ledgers(scoring, return_train_score: bool = False) -> list[PrivacyLedger]:
    """The ledgers one fold's scoring charges: each private scorer of ``scoring`` (one, or
    the values of a dict) once per scored set (held-out, and training rows too with
    ``return_train_score``). Exact scorers charge nothing (and are not private)."""
    from skdp.metrics import PrivateScorer

    scorers = scoring.values() if isinstance(scoring, dict) else [scoring]
    ledgers = [s.ledger() for s in scorers
               if isinstance(s, PrivateScorer) and s.accountant is not None]
    return ledgers * (2 if return_train_score else 1)


def _check_splitter(splitter) -> None:
    """Warn about folds that read the labels (once): each fit's guarantee then holds for
    groups of a few records only (docs/tuning_and_budgets.md, "Private scores")."""
    if "Stratified" in type(splitter).__name__:
        warn_user(
            f"{type(splitter).__name__} assigns records to folds by their labels: replacing "
            "one record can move up to three others between folds, which the accountant's "
            "per-record guarantee does not cover. Pass cv=KFold(n_splits, shuffle=True, "
            "random_state=0) (folds drawn independently of the data).",
            PrivacyLeakWarning, once=True)


def _total(ledgers, accountant=None) -> PrivacySpent:
    """Composed as the accountant that will record them composes (at its delta ceiling
    when the ledgers' deltas sum past it)."""
    cap = None if accountant is None else accountant.delta
    return Totals.of(summarize(ledger) for ledger in ledgers).spent(cap)[0]


def _shared_accountant(obj):
    """The one budget accountant that the private steps of ``obj`` share, or ``None``."""
    target = obj.estimator if isinstance(obj, BaseSearchCV) else obj
    found = {id(step.accountant): step.accountant for _, step in private_steps(target)
             if getattr(step, "accountant", None) is not None}
    return next(iter(found.values())) if len(found) == 1 else None


def _warn_exact_scores(scoring, scored: bool) -> None:
    """Warn (once) when a cross-validation or search scores exactly: its scores and any
    choice made from them are not covered by the price."""
    from skdp.metrics import PrivateScorer

    if not scored:
        return
    scorers = list(scoring.values()) if isinstance(scoring, dict) else [scoring]
    exact = [s for s in scorers if not isinstance(s, PrivateScorer)]
    if exact:
        warn_user(
            "the scores are exact (scoring is not a private scorer): they, and any choice "
            "made from them, are not covered by this price or by any accountant. Use "
            "scoring=skdp.metrics.make_private_scorer(..., accountant=acc).",
            PrivacyLeakWarning, once=True)


def privacy_cost(obj, X, y=None, *, cv=None, groups=None, scoring=None,
                 return_train_score=False) -> PrivacySpent:
    """The ``(epsilon, delta)`` a workflow will spend, computed before running it.

    Every fit of the workflow composes sequentially (cross-validation folds overlap, so
    they are not parallel composition); the total uses the same tightest bound as
    :class:`~skdp.BudgetAccountant`, so an accountant passed to the estimator reads this
    price after the run.

    Parameters
    ----------
    obj : estimator, GridSearchCV, RandomizedSearchCV or PrivateRandomizedSearch
        An skdp estimator or ``Pipeline`` (one fit, or ``cross_validate(obj, X, y, cv=cv)``
        when ``cv`` is given), a scikit-learn search over one (every candidate times every
        fold, plus the refit), or a private search (its fixed total).
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Only its shape is read (and, for pipelines, the width of non-private steps).
    y : array-like of shape (n_samples,), optional
        Its label set (public) and, for stratified splits, its class counts.
    cv : int, cross-validation generator or iterable, optional
        For an estimator: price ``cross_validate`` with this ``cv``.
    groups : array-like, optional
        Group labels of the split, as in scikit-learn.
    scoring : PrivateScorer or dict of them, optional
        For an estimator with ``cv``: the scoring of ``cross_validate``; each private
        scorer (:func:`skdp.metrics.make_private_scorer`) is charged once per fold (twice
        with ``return_train_score``). A search's own ``scoring`` is read from it.
    return_train_score : bool, default=False
        For an estimator with ``cv``: whether training scores are computed too.

    Returns
    -------
    PrivacySpent
        The total. For a search whose refit cost depends on the winning candidate, the
        largest over the candidates (an upper bound; exact when every candidate costs the
        same). Fits with ``"auto"`` bounds are priced by their reservation (the bound
        estimates plus the fit's budget), an upper bound of what they spend.
    """
    if (isinstance(obj, PrivateRandomizedSearch | BaseSearchCV)
            and (cv is not None or scoring is not None or return_train_score)):
        raise ValueError(
            f"privacy_cost prices one fit of {type(obj).__name__} with its own cv and "
            "scoring; cv=, scoring= and return_train_score= price cross-validation of an "
            "estimator. Nested cross-validation of a search (cross_validate(search, ...)) "
            "is not priced: price the search on each outer training part and add the "
            "outer scores, or read the accountant after the run.")
    accountant = _shared_accountant(obj)
    if isinstance(obj, PrivateRandomizedSearch):
        return obj._plan()[0].spent()
    _warn_exact_scores(obj.scoring if isinstance(obj, BaseSearchCV) else scoring,
                       cv is not None or isinstance(obj, BaseSearchCV))
    if isinstance(obj, BaseSearchCV):
        candidates = _candidates(obj)
        splitter = check_cv(obj.cv, y, classifier=is_classifier(obj.estimator))
        _check_splitter(splitter)
        splits = [train for train, _ in splitter.split(X, y, groups)]
        scores = _score_ledgers(obj.scoring, obj.return_train_score)
        ledgers = [ledger for params in candidates for train in splits
                   for ledger in fit_ledgers(clone(obj.estimator).set_params(**params),
                                             X, y, train) + scores]
        if not obj.refit:
            return _total(ledgers, accountant)
        totals = [_total(ledgers + fit_ledgers(clone(obj.estimator).set_params(**params),
                                               X, y), accountant)
                  for params in candidates]
        return max(totals, key=lambda s: (s.epsilon, s.delta))
    if cv is None:
        return _total(fit_ledgers(obj, X, y), accountant)
    splitter = check_cv(cv, y, classifier=is_classifier(obj))
    _check_splitter(splitter)
    scores = _score_ledgers(scoring, return_train_score)
    return _total([ledger for train, _ in splitter.split(X, y, groups)
                   for ledger in fit_ledgers(obj, X, y, train) + scores], accountant)
