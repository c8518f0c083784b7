"""Parameter descriptions shared by every skdp estimator (one text, many docstrings)."""

from __future__ import annotations

import textwrap

from skdp._docstrings import fill_docstrings
from skdp._labels import CLASSES_DOC
from skdp.linear_model._parameters import BOUNDS, OPTIONS, RUN_OPTIONS
from skdp.solvers import SOLVERS
from skdp.solvers._capabilities import accepts_any, summary

__all__ = ["shared_docs", "solver_list"]

# The shared entries, each written once at indentation 0 (``<<name>>`` or
# ``<<name:argument>>`` in an estimator's docstring; ``{arg}`` is the argument, and lines
# indented under the marker continue the description: what one estimator adds).
_PARAMS = {
    # -- parameters ----------------------------------------------------------------------
    'epsilon': """\
epsilon : float, default=1.0
    Privacy budget, in ``(0, inf]``. ``inf`` fits without privacy (a
    :class:`~skdp.exceptions.PrivacyLeakWarning` is emitted).
""",
    'delta': """\
delta : float, default={arg}
    Failure probability, in ``[0, 1)``; use much less than ``1 / n_samples``. ``0`` is
    pure epsilon-DP, with the solvers that offer it.
""",
    'solver': """\
solver : str or solver object, default={arg}
    A name from :data:`skdp.solvers.SOLVERS` or a solver instance
    (``DPSVRG(batch_size=64)``) whose parameters nest as ``solver__batch_size`` in
    parameter grids.
""",
    'alpha': """\
alpha : float, default={arg}
    Strength of the L2 penalty ``(alpha / 2) ||w||^2`` of the objective above.
""",
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
    'bounds_fraction': """\
bounds_fraction : float in (0, 1) or "auto", default={arg}
    Share of ``epsilon`` spent on the ``"auto"`` bounds; the fit gets the rest (and
    all of ``delta``). ``"auto"``: enough for ``n epsilon >= 30`` per estimate,
    between 0.2 and 0.4 of ``epsilon`` (public; docs/privacy.md, "Private bounds").
    Unused when every bound is a number.
""",
    'fit_intercept': """\
fit_intercept : bool, default=True
    Fit an intercept, as the coefficient of a constant feature of value ``data_norm / 2``
    (the augmented rows' bound, ``sqrt(5) / 2 data_norm`` in the l2 norm, enters the
    sensitivity; docs/design.md, "Estimator semantics").
""",
    'constraint': """\
constraint : {"l2", "l1", "lp"} or None, default=None
    Constrain ``coef`` to the l2, l1 or lp ball of radius ``radius``.
radius : float, default=None
    Public radius of the constraint.
p : float, default=None
    Exponent of ``constraint="lp"`` (``p > 1``).
""",
    'data_norm_ord': """\
data_norm_ord : "auto" or float >= 1, default="auto"
    Norm in which ``data_norm`` bounds the rows. ``"auto"`` is the dual norm of the
    constraint: l2 without a constraint or for ``"l2"``, l-infinity (the largest
    absolute feature) for ``"l1"``, ``p / (p - 1)`` for ``"lp"``.
""",
    'tilt': """\
tilt : float, default=None
    Tilted ERM (``"output_perturbation"`` only): minimise
    ``(1/tilt) ln(mean_i exp(tilt loss_i)) + (alpha/2)||w||^2``, which moves from the
    mean loss (``tilt -> 0``) towards the worst-case loss as ``tilt`` grows. Must be
    positive; ``None`` is plain ERM.
""",
    'adversarial': """\
adversarial_radius : float, default=None
    Adversarial training (``"output_perturbation"`` only, one output: a regression or
    two classes): minimise the worst-case loss over feature perturbations of norm
    ``<= adversarial_radius``.
""",
    'adversarial_norm': """\
adversarial_norm : {2, inf}, default=2
    Norm of the feature perturbations.
""",
    'accounting': """\
accounting : {"auto", "gaussian", "rdp", "pld", "pure", "basic"}, default="auto"
    How the privacy loss is accounted. ``"auto"`` uses each solver's default: the exact
    closed form for ``"gd"``; RDP for ``"svrg"``/``"svrg++"`` with batches sampled
    without replacement, PLD with Poisson batches; for ``"output_perturbation"`` pure DP
    when ``delta=0`` and the exact Gaussian otherwise.
""",
    'accountant': """\
accountant : BudgetAccountant or None, default=None
    A :class:`~skdp.BudgetAccountant` the user owns: ``fit`` records its ledger there
    and is refused (:class:`~skdp.exceptions.BudgetError`, before any value of ``X`` is
    read) if the accountant's total would pass its ceiling. Survives ``clone`` (the
    same object), so every fit of a ``GridSearchCV`` is counted; see
    docs/tuning_and_budgets.md.
""",
    'neighboring': """\
neighboring : {"replace_one"}, default="replace_one"
    Neighbouring relation of the guarantee: data sets of the same size differing in
    one record. (Add/remove needs a public dataset size, which is not offered yet.)
""",
    'random_state': """\
random_state : None, int, numpy Generator or RandomState, default=None
    Source of the noise. ``None`` draws fresh OS entropy: use it for real releases.
    An integer makes the noise reproducible by anyone who knows it.
""",
    'secure': """\
secure : bool, default=False
    Snap the released coefficients to a grid of spacing ``2^-10`` times the
    release's noise scale (a power of two, from public quantities): a mitigation of
    the floating-point attacks on textbook noise samplers (Mironov 2012), at a
    negligible accuracy cost. Not a proof; see docs/privacy.md, "Secure mode".
""",
    'verbose': """\
verbose : int, default=0
    ``1``: print the phases of the fit with public quantities only, and the solver's
    progress as it goes (``solving: 10%`` ... ``100%``: ten lines for every fit,
    reported by the solver at each tenth of its planned steps), the same text on
    neighbouring data sets; ``2``: also the planned step count and the step reached
    (they follow the private bounds) and elapsed times (a timing channel).
""",
    'noise_dominated': """\
noise_dominated : {"intercept_only", "fit"}, default="intercept_only"
    What a fit does when its planned noise would dominate any signal (the
    ``NoiseDominatedWarning``: ``n``, the number of coefficients and the budget only, so
    the choice is public). ``"intercept_only"``: release the intercept-only model (the
    private class shares or mean target, every coefficient 0) with the fit's budget, by
    solver ``"intercept_only"``, which predicts the majority class or the mean instead of
    a random linear rule. ``"fit"``: run ``solver`` anyway. See
    docs/algorithms/intercept_only.md.
""",
    'threshold_fraction': """\
threshold_fraction : float in [0, 1) or "auto", default="auto"
    Share of the fit's ``epsilon`` (what the private bounds leave) spent choosing the
    intercept of a binary model privately, the solver getting the rest: among
    public candidates (a function of the released coefficients and ``data_norm``), the
    one whose ``sign(X @ coef_ + intercept_)`` classifies the most training rows
    correctly, by report-noisy-max (pure DP, in the same ledger). A noisy fit's direction
    usually ranks the rows well while its intercept puts them all on one side (the
    majority class); this step fixes that tail. ``"auto"``: for two classes with an
    intercept at a finite ``epsilon``, 0.25, or on large data the smaller share whose
    counts' noise ``2 / epsilon_t`` is a thousandth of the rows (below ``n epsilon =
    8000`` the quarter), when that noise at the quarter is at most 5% of the rows; 0
    otherwise, with ``solver="newton"`` set by the user (whose released Hessian describes
    its own intercept, which ``conf_int`` reads), for the intercept-only model and where
    the intercept lies in the solver's constraint. ``0``: the solver's intercept. See
    docs/algorithms/threshold.md.
""",
    'classes': CLASSES_DOC,
    # -- attributes ----------------------------------------------------------------------
    'classes_': """\
classes_ : ndarray of shape (n_classes,)
    Class labels: ``classes`` when given, otherwise the labels of ``y`` (a label SET
    treated as public).
""",
    'coef_': """\
coef_ : ndarray of shape {arg}
    Coefficients of the released model, applied to the rows of ``X`` clipped to
    ``data_norm_``.
""",
    'intercept_': """\
intercept_ : {arg}
    Intercept of the released model (0 with ``fit_intercept=False``).
""",
    'n_iter_': """\
n_iter_ : int
    Number of noisy steps or releases run (1 for output perturbation), fixed in advance
    from public quantities (for ``"svrg"``/``"svrg++"``: the inner steps; their
    per-epoch snapshot releases are listed in the typed ``privacy_plan_``).
""",
    'privacy': """\
privacy_spent_ : PrivacySpent
    ``(epsilon, delta)`` spent, from re-accounting the ledger.
privacy_ledger_ : PrivacyLedger or CompositeLedger
    The ``dp_accounting`` events of everything that ran (as parts: ``"bounds"`` with
    ``"auto"`` bounds, ``"fit"``, and ``"threshold"`` where a binary classifier chose its
    intercept privately), their accounting methods and relation.
privacy_plan_ : Plan
    The public plan (iteration counts, noise levels, step size).
data_norm_ : float
    The row bound used: ``data_norm``, or its private estimate for ``"auto"``.
data_norm_ord_ : float
    The norm it bounds: ``data_norm_ord``, or what ``"auto"`` resolved to for the solver
    that ran (public); ``predict`` clips rows in it.
""",
    'y_bound_': """\
y_bound_, y_centre_ : float
    The target bound and centre used (declared: ``y_bound`` and 0; ``"auto"``: the
    private estimates).
""",
    'coef_covariance_': """\
coef_covariance_ : ndarray of shape (n_features + 1, n_features + 1) or None
    Approximate covariance of ``[coef_, intercept_]`` (the intercept last, when
    fitted), sampling plus privacy noise (post-processing; docs/inference.md):
""",
    'standard_errors_': """\
standard_errors_ : ndarray of shape (n_features + 1,) or None
    Square roots of its diagonal.
penalty_shift_ : ndarray of shape (n_features + 1,) or None
    First-order estimate of how far the penalty moved each coefficient; :meth:`conf_int`
    warns when it exceeds a quarter of a standard error.
""",
    'alpha_': """\
alpha_ : float
    The L2 strength the fit used, in the units of ``alpha`` (``"auto"``: in units of
    the bounds): a public function of the shape and the budget; 0 for the
    intercept-only model.
""",
    'solver_': """\
solver_ : BaseDPSolver
    The solver object used.
""",
    'n_features_in_': """\
n_features_in_ : int
    Number of features seen in ``fit``.
feature_names_in_ : ndarray of str
    Names of the features seen in ``fit``, only when ``X`` has string column names.
""",
    # -- methods -------------------------------------------------------------------------
    'parameters_X': """\
Parameters
----------
X : {array-like, sparse matrix} of shape (n_samples, n_features)
    The samples; rows are clipped to ``data_norm_`` (in the ``data_norm_ord`` norm), as
    in ``fit``.
""",
}

# The entries of the parameter groups (skdp.linear_model._parameters), in signature order;
# a few parameters share one entry.
_ENTRY = {"radius": "constraint", "p": "constraint", "adversarial_radius": "adversarial"}


def _group(names) -> str:
    entries = list(dict.fromkeys(_ENTRY.get(name, name) for name in names))
    return "".join(_PARAMS[entry] for entry in entries)


_PARAMS["bounds"] = _group(BOUNDS).replace("{arg}", '"auto"')
_PARAMS["options"] = _group(OPTIONS)
_PARAMS["run_options"] = _group(RUN_OPTIONS)


def _attributes(kind: str) -> str:
    """The Attributes section of a fitted ``"classifier"`` or ``"regressor"``
    (``<<attributes:classifier>>``)."""
    if kind == "classifier":
        head = [_PARAMS["classes_"],
                _PARAMS["coef_"].replace("{arg}", "(1, n_features) or (n_classes, n_features)"),
                _PARAMS["intercept_"].replace("{arg}", "ndarray of shape (1,) or (n_classes,)")]
        middle = []
    else:
        head = [_PARAMS["coef_"].replace("{arg}", "(n_features,)"),
                _PARAMS["intercept_"].replace("{arg}", "float")]
        middle = [_PARAMS["y_bound_"]]
    return "Attributes\n----------\n" + "".join(
        head + [_PARAMS["n_iter_"], _PARAMS["privacy"]] + middle
        + [_PARAMS["alpha_"], _PARAMS["solver_"], _PARAMS["n_features_in_"]])


_PARAMS["attributes"] = _attributes


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
    """Fill the shared descriptions into an estimator's docstrings.

    Each line ``<<name>>`` or ``<<name:argument>>`` of ``cls.__doc__`` and of the
    docstrings of the methods ``cls`` defines (at any indentation) is replaced by the
    shared description of ``name`` (:mod:`skdp._docstrings`), and a line ``<<solvers>>``
    by the list of the registered solvers that accept the class's ``_solver_losses`` and
    ``_solver_constraints``.

    Parameters
    ----------
    cls : type
        The estimator class (or a base class of estimators, without ``<<solvers>>``).

    Returns
    -------
    type
        ``cls``, its docstrings filled in place.
    """
    rules = getattr(cls, "_bound_rules", None)
    quantile = 1.0 if rules is None else rules.data_norm_quantile
    factor = getattr(cls, "_data_norm_factor", None) or (
        "the row norms' maximum" if quantile >= 1.0
        else f"the row norms' {quantile:g}-quantile (their maximum at epsilon=inf)")
    texts = {name: text if callable(text) else text.replace("{factor}", factor)
             for name, text in _PARAMS.items()}
    if hasattr(cls, "_solver_losses"):
        texts["solvers"] = solver_list(cls._solver_losses, cls._solver_constraints)
    return fill_docstrings(cls, texts)
