"""What a fitted workflow spent, and a short report of how."""

from __future__ import annotations

import html
import warnings
from collections import Counter

from dp_accounting import dp_event as dpe
from sklearn.pipeline import Pipeline
from sklearn.utils import estimator_html_repr

from skdp._repr import short_repr
from skdp._sklearn_compat import BaseSearchCV
from skdp._warnings import warn_user
from skdp.exceptions import PrivacyLeakWarning
from skdp.privacy.accounting import PrivacySpent
from skdp.privacy.composition import CompositeLedger, Totals, summarize

__all__ = ["STATELESS_STEPS", "PrivacyReport", "PrivacyReprMixin", "non_private_steps",
           "privacy_html", "privacy_report", "privacy_spent"]


#: Steps that learn nothing from the data (their fit reads the public shape only).
STATELESS_STEPS = ("FunctionTransformer",)


def non_private_steps(obj, name: str = "") -> list[tuple[str, str]]:
    """``(name, class)`` of every step of ``obj`` (a Pipeline or ColumnTransformer, fitted
    or not) that learns from the data without a privacy guarantee: not an skdp private
    step, not ``"passthrough"``/``"drop"``, not a stateless transformer
    (:data:`STATELESS_STEPS`, or a class that declares ``_learns_from_data = False``)."""
    if hasattr(obj, "_planned_ledger") or hasattr(obj, "privacy_ledger_"):
        return []
    if isinstance(obj, Pipeline):
        return [found for step_name, step in obj.steps if step is not None
                for found in non_private_steps(step, f"{name}{step_name}")]
    items = getattr(obj, "transformers_", None) or getattr(obj, "transformers", None)
    if items is not None and hasattr(obj, "get_params"):
        return [found for step_name, step, _ in items if not isinstance(step, str)
                for found in non_private_steps(step, f"{name}{step_name}")]
    if (isinstance(obj, str) or type(obj).__name__ in STATELESS_STEPS
            or getattr(obj, "_learns_from_data", True) is False):
        return []
    if hasattr(obj, "get_params") and any(
            hasattr(v, "_planned_ledger") for v in obj.get_params(deep=True).values()):
        return []  # a meta-estimator of private steps (one-vs-rest, voting)
    return [(name or type(obj).__name__, type(obj).__name__)]


def _search_note(search) -> str:
    """What a fitted scikit-learn search released beyond its refit, and who counted it."""
    from skdp.metrics import PrivateScorer

    scoring = search.scoring
    scorers = list(scoring.values()) if isinstance(scoring, dict) else [scoring]
    steps = [v for v in search.estimator.get_params(deep=True).values()
             if hasattr(v, "_planned_ledger")]
    if hasattr(search.estimator, "_planned_ledger"):
        steps.append(search.estimator)
    accountants = {id(getattr(x, "accountant", None))
                   for x in [*steps, *scorers]}
    if (scorers and all(isinstance(s, PrivateScorer) for s in scorers)
            and len(accountants) == 1 and scorers[0].accountant is not None):
        return (f"{type(search).__name__}: every fit, every score (private scorers) and "
                "the refit were charged to one accountant: its spent() covers the whole "
                "search (and whatever else it recorded); best_params_ and cv_results_ "
                "are post-processing of noisy scores. The total below is the refit's "
                "alone.")
    if scorers and all(isinstance(s, PrivateScorer) for s in scorers):
        return (f"{type(search).__name__}: its scores are private, but its fits and scores "
                "are not all charged to one accountant (a step or a scorer has none, or "
                "another): no single spent() covers the search. Give the estimator's "
                "private steps and the scorer the same accountant.")
    return (f"{type(search).__name__}: NOT private end to end: its scores (cv_results_) "
            "are exact and best_params_ is chosen from them, which no accountant counts. "
            "Use scoring=skdp.metrics.make_private_scorer(..., accountant=acc), or "
            "PrivateRandomizedSearch.")


def _stratified(search) -> bool:
    """Whether a scikit-learn search's folds read the labels (public: its parameters)."""
    from sklearn.base import is_classifier

    cv = search.cv
    if cv is None or isinstance(cv, int):
        return is_classifier(search.estimator)
    return "Stratified" in type(cv).__name__


def _private_parts(obj, name: str = "") -> list[tuple[str, object]]:
    """``(name, fitted object)`` of every fitted private part of ``obj``."""
    if hasattr(obj, "privacy_ledger_"):
        # A private search's ledger covers the candidates it released.
        return [(name or type(obj).__name__, obj)]
    if isinstance(obj, BaseSearchCV):
        raise TypeError(
            f"{type(obj).__name__} does not record what its fits spent (each fit of each "
            "fold spends, and the scores may be exact). Pass a BudgetAccountant to the "
            "estimator and to skdp.metrics.make_private_scorer and read "
            "accountant.spent() (privacy_report(accountant) lists every release), price "
            "the search with skdp.model_selection.privacy_cost, or tune with "
            "PrivateRandomizedSearch.")
    parts = []
    if isinstance(obj, Pipeline):
        for step_name, step in obj.steps:
            parts += _private_parts(step, f"{name}{step_name}")
    elif hasattr(obj, "transformers_"):
        for step_name, step, _ in obj.transformers_:
            if not isinstance(step, str):
                parts += _private_parts(step, f"{name}{step_name}")
    return parts


def privacy_spent(obj) -> PrivacySpent:
    """The composed ``(epsilon, delta)`` of every private step of a fitted object.

    Parameters
    ----------
    obj : fitted estimator, Pipeline, ColumnTransformer or PrivateRandomizedSearch
        Its private steps' ledgers compose sequentially (they saw the same records), with
        the tightest bound of :class:`~skdp.BudgetAccountant`.

    Returns
    -------
    PrivacySpent
        ``(0, 0)`` when nothing private was fitted.

    Raises
    ------
    TypeError
        For scikit-learn searches, which do not record the spend of their fits.
    """
    if hasattr(obj, "charge") and hasattr(obj, "entries"):
        return obj.spent()
    parts = _private_parts(obj)
    leaks = non_private_steps(obj)
    if leaks:
        warn_user(
            "not covered by this total: " + ", ".join(f"step {n!r} ({c})" for n, c in leaks)
            + " learned from the data without differential privacy.",
            PrivacyLeakWarning, once=True)
    return Totals.of(summarize(part.privacy_ledger_) for _, part in parts).spent()[0]


def _leaves(event: dpe.DpEvent, count: int, out: Counter) -> None:
    if isinstance(event, dpe.SelfComposedDpEvent):
        _leaves(event.event, count * event.count, out)
    elif isinstance(event, dpe.ComposedDpEvent):
        for sub in event.events:
            _leaves(sub, count, out)
    elif not isinstance(event, dpe.NoOpDpEvent):
        out[repr(event), event] += count


def _mechanisms(ledger) -> tuple[tuple, Counter]:
    """The ledger's parts (a composite ledger, private bounds, the fit and the private
    threshold, is reported part by part) and its mechanisms with their counts; a
    repeat-and-select event (a private search) is one mechanism, not its inner event."""
    pieces = ledger.parts if isinstance(ledger, CompositeLedger) else (("", ledger),)
    # Counted by the events' full reprs; each is shown at 6 significant digits, or in
    # full where two different events would read the same.
    found: Counter = Counter()
    events: dict = {}
    for piece_name, piece in pieces:
        if isinstance(piece.event, dpe.RepeatAndSelectDpEvent):
            leaves: Counter = Counter({(repr(piece.event), piece.event): 1})
        else:
            leaves = Counter()
            _leaves(piece.event, 1, leaves)
        for (full, event), c in leaves.items():
            found[piece_name, full] += c
            events[piece_name, full] = event
    short = {key: short_repr(events[key]) for key in found}
    readings = Counter((key[0], text) for key, text in short.items())
    counts: Counter = Counter()
    for (piece_name, full), c in found.items():
        prefix = f"{piece_name}: " if piece_name else ""
        text = short[piece_name, full]
        counts[prefix + (text if readings[piece_name, text] == 1 else full)] += c
    return pieces, counts


class PrivacyReport:
    """What was spent, under which relation, by which mechanisms, and what is public.

    ``not_private`` names what read data without a privacy guarantee (Pipeline steps,
    a search's exact scores); ``notes`` says who counted what.
    """

    def __init__(self, rows: list[dict], total: PrivacySpent, not_private=(), notes=()):
        self.rows = rows
        self.total = total
        self.not_private = list(not_private)
        self.notes = list(notes)

    def __str__(self) -> str:
        lines = [f"Total: epsilon={self.total.epsilon:.4g}, delta={self.total.delta:.3g} "
                 "(replace-one neighbours: one record replaced by another; the private "
                 "steps compose sequentially)."]
        lines += [f"NOT private: {item}" for item in self.not_private]
        lines += [f"Note: {note}" for note in self.notes]
        for row in self.rows:
            lines.append(f"- {row['name']} ({row['class']}): epsilon={row['epsilon']:.4g}, "
                         f"delta={row['delta']:.3g}, accounted: {row['accounting']}")
            lines += [f"    {count} x {leaf}" for leaf, count in row["mechanisms"]]
            lines.append(f"    public: {row['public']}")
            if row.get("released_bounds"):
                lines.append(f"    released bounds (DP outputs): {row['released_bounds']}")
        lines.append("Not protected: the dataset size, the number of features and the label "
                     "set (public), the hyperparameters, and anything fitted by "
                     "non-private steps.")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return "<pre>" + html.escape(str(self)) + "</pre>"


def privacy_report(obj) -> PrivacyReport:
    """A short report of a fitted object's privacy: total, mechanisms, public facts.

    Parameters
    ----------
    obj : fitted estimator, Pipeline, ColumnTransformer, search or BudgetAccountant
        What to report on: an skdp estimator or transformer, a scikit-learn
        composition of them, a private or scikit-learn search, or an accountant.

    Returns
    -------
    PrivacyReport
        Printable (``str``) and rendered as HTML in notebooks. For a
        :class:`~skdp.BudgetAccountant`: its total and one row per entry. For a fitted
        scikit-learn search: its refit, and whether its scores were private (charged) or
        exact. Steps that learn from the data without a guarantee are named.
    """
    if hasattr(obj, "charge") and hasattr(obj, "entries"):
        return _accountant_report(obj)
    notes = []
    if isinstance(obj, BaseSearchCV):
        notes.append(_search_note(obj))
        if _stratified(obj):
            notes.append("its folds were stratified by the labels (a classifier's integer "
                         "cv): replacing one record can move others between folds, which "
                         "the per-record guarantee does not cover; use cv=KFold(k, "
                         "shuffle=True, random_state=0).")
        if not hasattr(obj, "best_estimator_"):
            return PrivacyReport([], PrivacySpent(0.0, 0.0), [], notes)
        report = privacy_report(obj.best_estimator_)
        report.notes = notes + report.notes
        if "NOT private" in notes[0]:
            report.not_private.insert(0, "the exact validation scores and the choice of "
                                         "best_params_")
        return report
    rows = []
    for name, part in _private_parts(obj):
        ledger = part.privacy_ledger_
        pieces, counts = _mechanisms(ledger)
        spent = ledger.spent()
        public = {k: getattr(part, k) for k in ("n_features_in_", "data_norm", "y_bound")
                  if hasattr(part, k)}
        released = {k: getattr(part, k) for k in ("data_norm_", "y_bound_", "y_centre_")
                    if hasattr(part, k)}
        if hasattr(part, "classes_"):
            public["classes_"] = part.classes_.tolist()
        accounting = ", ".join(f"{n or 'fit'} by {p.accounting!r}" for n, p in pieces)
        rows.append({"name": name, "class": type(part).__name__, "epsilon": spent.epsilon,
                     "delta": spent.delta, "accounting": accounting,
                     "mechanisms": counts.most_common(), "public": public,
                     "released_bounds": released})
    leaks = [f"step {n!r} ({c}) learned from the data without differential privacy"
             for n, c in non_private_steps(obj)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # named in the report
        total = privacy_spent(obj)
    return PrivacyReport(rows, total, leaks)


def _accountant_report(accountant) -> PrivacyReport:
    """One row per entry of a budget accountant, and its composed total."""
    rows = []
    for e in accountant.entries:
        pieces, counts = _mechanisms(e.ledger)
        rows.append({"name": f"#{e.index} {e.timestamp[:19]}", "class": e.source,
                     "epsilon": e.spent.epsilon, "delta": e.spent.delta,
                     "accounting": ", ".join(f"{n or 'release'} by {p.accounting!r}"
                                             for n, p in pieces),
                     "mechanisms": counts.most_common(),
                     "public": {k: v for k, v in e.params.items()
                                if k.split("__")[-1] in ("epsilon", "delta", "solver",
                                                         "metric", "n_rows", "alpha")}})
    return PrivacyReport(rows, accountant.spent(),
                         notes=[f"{len(rows)} entries composed by "
                                f"{accountant.composition} composition; ceiling "
                                f"({accountant.epsilon:g}, {accountant.delta:g})."])


def privacy_html(estimator) -> str:
    """An HTML line with the ``(epsilon, delta)`` a fitted estimator spent, or, before it
    is fitted, its budget (scikit-learn's repr shows only parameters changed from their
    defaults, so a default ``epsilon`` would not appear)."""
    spent = getattr(estimator, "privacy_spent_", None)
    if spent is None:
        params = estimator.get_params(deep=False) if hasattr(estimator, "get_params") else {}
        if "epsilon" not in params:
            return ""
        return (f'<div class="skdp-privacy" style="font-family: monospace">privacy budget: '
                f"epsilon={params['epsilon']!s}, delta={params.get('delta', 0.0)!s} "
                "(replace-one; not fitted)</div>")
    return (f'<div class="skdp-privacy" style="font-family: monospace">privacy spent: '
            f"epsilon={spent.epsilon:.6g}, delta={spent.delta:.3g} "
            f"(replace-one)</div>")


class PrivacyReprMixin:
    """In notebooks, the HTML repr of a fitted private object shows what it spent."""

    def _html_repr(self):
        return estimator_html_repr(self) + privacy_html(self)

    def _repr_html_inner(self):
        return self._html_repr()

    def _repr_mimebundle_(self, **kwargs):
        output = super()._repr_mimebundle_(**kwargs)
        if "text/html" in output:
            output["text/html"] = self._html_repr()
        return output
