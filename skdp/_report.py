"""What a fitted workflow spent, and a short report of how."""

from __future__ import annotations

import html
from collections import Counter

from dp_accounting import dp_event as dpe
from sklearn.pipeline import Pipeline
from sklearn.utils import estimator_html_repr

from skdp._sklearn_compat import BaseSearchCV
from skdp.privacy.accounting import PrivacySpent
from skdp.privacy.composition import CompositeLedger, Totals, summarize

__all__ = ["PrivacyReport", "PrivacyReprMixin", "privacy_html", "privacy_report",
           "privacy_spent"]


def _private_parts(obj, name: str = "") -> list[tuple[str, object]]:
    """``(name, fitted object)`` of every fitted private part of ``obj``."""
    if hasattr(obj, "privacy_ledger_"):
        # A private search's ledger covers the candidates it released.
        return [(name or type(obj).__name__, obj)]
    if isinstance(obj, BaseSearchCV):
        raise TypeError(
            f"{type(obj).__name__} does not record what its fits spent (each fit of each "
            "fold spends, and the choice reads exact scores). Pass a BudgetAccountant to "
            "the estimator and read accountant.spent(), price the search with "
            "skdp.model_selection.privacy_cost, or tune with PrivateRandomizedSearch.")
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
    parts = _private_parts(obj)
    return Totals.of(summarize(part.privacy_ledger_) for _, part in parts).spent()[0]


def _leaves(event: dpe.DpEvent, count: int, out: Counter) -> None:
    if isinstance(event, dpe.SelfComposedDpEvent):
        _leaves(event.event, count * event.count, out)
    elif isinstance(event, dpe.ComposedDpEvent):
        for sub in event.events:
            _leaves(sub, count, out)
    elif not isinstance(event, dpe.NoOpDpEvent):
        out[repr(event)] += count


class PrivacyReport:
    """What was spent, under which relation, by which mechanisms, and what is public."""

    def __init__(self, rows: list[dict], total: PrivacySpent):
        self.rows = rows
        self.total = total

    def __str__(self) -> str:
        lines = [f"Total: epsilon={self.total.epsilon:.4g}, delta={self.total.delta:.3g} "
                 "(replace-one neighbours: one record replaced by another; the private "
                 "steps compose sequentially)."]
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
    obj : fitted estimator, Pipeline, ColumnTransformer or PrivateRandomizedSearch

    Returns
    -------
    PrivacyReport
        Printable (``str``) and rendered as HTML in notebooks.
    """
    rows = []
    for name, part in _private_parts(obj):
        ledger = part.privacy_ledger_
        # A composite ledger (private bounds, then the fit) is reported part by part.
        pieces = (ledger.parts if isinstance(ledger, CompositeLedger)
                  else (("", ledger),))
        counts: Counter = Counter()
        for piece_name, piece in pieces:
            prefix = f"{piece_name}: " if piece_name else ""
            if isinstance(piece.event, dpe.RepeatAndSelectDpEvent):
                counts[prefix + repr(piece.event)] = 1
            else:
                leaves: Counter = Counter()
                _leaves(piece.event, 1, leaves)
                counts.update({prefix + leaf: c for leaf, c in leaves.items()})
        spent = ledger.spent()
        public = {k: getattr(part, k) for k in ("n_features_in_", "data_norm", "y_bound")
                  if hasattr(part, k)}
        released = {k: getattr(part, k) for k in ("data_norm_", "y_bound_", "y_centre_")
                    if hasattr(part, k)}
        if hasattr(part, "classes_"):
            public["classes_"] = part.classes_.tolist()
        accounting = ", ".join(f"{n or 'fit'} by {p.accountant!r}" for n, p in pieces)
        rows.append({"name": name, "class": type(part).__name__, "epsilon": spent.epsilon,
                     "delta": spent.delta, "accounting": accounting,
                     "mechanisms": counts.most_common(), "public": public,
                     "released_bounds": released})
    return PrivacyReport(rows, privacy_spent(obj))


def privacy_html(estimator) -> str:
    """An HTML line with the ``(epsilon, delta)`` a fitted estimator spent, or ``""``."""
    spent = getattr(estimator, "privacy_spent_", None)
    if spent is None:
        return ""
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
