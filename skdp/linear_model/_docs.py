"""Parameter descriptions shared by every skdp estimator (one text, many docstrings)."""

from __future__ import annotations

import re
import textwrap

from skdp.solvers import SOLVERS
from skdp.solvers._capabilities import accepts_any, summary

__all__ = ["shared_docs", "solver_list"]

_PARAMS = {
    'data_norm': """\
    data_norm : float or "auto", default="auto"
        Bound on the norm of a row of ``X`` (in the ``data_norm_ord`` norm): rows are
        clipped to it in ``fit`` and ``predict``. ``"auto"``: a private bound of
        {factor},
        estimated on a public grid with a share ``bounds_fraction`` of ``epsilon`` (pure DP,
        in the same ledger; ``data_norm_`` holds the value), and ``alpha``, ``radius`` and
        ``huber_delta`` then refer to the rows divided by ``data_norm_`` (units-free). A
        number is a PUBLIC bound (never compute it from the private data) and keeps the raw
        units. See docs/privacy.md, "Private bounds".
""",
    'y_bound': """\
    y_bound : float or "auto", default="auto"
        Bound on ``|y - centre|``: targets are clipped to ``centre +- y_bound`` in ``fit``.
        ``"auto"``: with an intercept the centre is a private mean of ``y`` clipped to a
        private bound of ``|y|`` (otherwise 0), and the bound a private bound of
        ``|y - centre|`` on the public grid (``y_centre_``, ``y_bound_``; the exact range
        at ``epsilon=inf``), from a share of ``bounds_fraction * epsilon``; the model then
        fits ``(y - centre) / y_bound`` and predictions are clipped to
        ``y_centre_ +- y_bound_``. A number is a PUBLIC bound with centre 0 (raw units).
""",
    'accountant': """\
    accountant : BudgetAccountant or None, default=None
        A :class:`~skdp.BudgetAccountant` the user owns: ``fit`` records its ledger there
        and is refused (:class:`~skdp.exceptions.BudgetError`, before any value of ``X`` is
        read) if the accountant's total would pass its ceiling. Survives ``clone`` (the
        same object), so every fit of a ``GridSearchCV`` is counted; see
        docs/tuning_and_budgets.md.
""",
    'verbose': """\
    verbose : int, default=0
        ``1``: print the phases of the fit with public quantities only, and the solver's
        progress as it goes (``solving: 10%`` ... ``100%``: ten lines for every fit,
        reported by the solver at each tenth of its planned steps), the same text on
        neighbouring data sets; ``2``: also the planned step count and the step reached
        (they follow the private bounds) and elapsed times (a timing channel).
""",
    'classes': """\
    classes : array-like or None, default=None
        The PUBLIC label set. Given, ``fit`` never reads the label set from ``y``: labels
        outside it raise before any noise is drawn, classes absent from ``y`` still get
        coefficients, and the model's shape does not depend on any record. ``None``: the
        label set is read from ``y`` (treated as public; replacing the only record of a
        class changes the model's shape, see docs/privacy.md).
""",
    'bounds_fraction': """\
    bounds_fraction : float in (0, 1) or "auto", default={default}
        Share of ``epsilon`` spent on the ``"auto"`` bounds; the fit gets the rest (and
        all of ``delta``). ``"auto"``: enough for ``n epsilon >= 30`` per estimate,
        between 0.2 and 0.4 of ``epsilon`` (public; docs/privacy.md, "Private bounds").
        Unused when every bound is a number.
""",
}


def solver_list(losses: tuple[str, ...], constraints: tuple[str, ...],
                registry: dict | None = None) -> str:
    """The registered solvers an estimator with these loss names and constraint kinds can
    use, one bullet each, generated from their declared capabilities."""
    registry = SOLVERS if registry is None else registry
    lines = [f'        - ``"{key}"``: {summary(cls.capabilities, losses, constraints)}.'
             for key, cls in registry.items()
             if accepts_any(cls.capabilities, losses, constraints)]
    wrapped = []
    for line in lines:
        wrapped += textwrap.wrap(line, 92, subsequent_indent="          ",
                                 break_on_hyphens=False)
    return ("        Registered solvers for this estimator (from their declared capabilities; "
            "see\n        docs/solvers.md):\n\n" + "\n".join(wrapped) + "\n\n")


def shared_docs(cls):
    """Replace each line ``<<name>>`` or ``<<name:default>>`` of ``cls.__doc__`` (at any
    indentation) by the shared description of the parameter ``name``, and a line
    ``<<solvers>>`` by the list of solvers that accept the class's ``_solver_losses`` and
    ``_solver_constraints``."""

    quantile = getattr(cls, "_data_norm_quantile", 1.0)
    factor = ("the row norms' maximum" if quantile >= 1.0
              else f"the row norms' {quantile:g}-quantile (their maximum at epsilon=inf)")

    def fill(match):
        indent, name = match.group(1), match.group(2)
        name, _, default = name.partition(":")
        if name == "solvers":
            return match.group(0)
        text = _PARAMS[name].replace("{default}", default).replace("{factor}", factor)
        return textwrap.indent(textwrap.dedent(text), indent)

    # The markers are found at any indentation (Python 3.13 strips a docstring's common
    # indentation at compile time, older versions keep it) and the shared texts are
    # indented like their marker.
    doc = re.sub(r"^([ \t]*)<<([a-z_]+(?::[^>]*)?)>>[ \t]*(?:\n|\Z)", fill,
                 cls.__doc__ + "\n", flags=re.M)
    solvers = re.search(r"^([ \t]*)<<solvers>>[ \t]*\n", doc, flags=re.M)
    if solvers is not None:
        listing = textwrap.indent(textwrap.dedent(
            solver_list(cls._solver_losses, cls._solver_constraints)), solvers.group(1))
        doc = doc[:solvers.start()] + listing + doc[solvers.end():]
    cls.__doc__ = doc
    return cls
