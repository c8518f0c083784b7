"""Constructors that only store their parameters, as scikit-learn's contract asks."""

from __future__ import annotations

import inspect
from numbers import Integral, Real

from skdp._sklearn_compat import Interval

__all__ = ["COUNT", "OPTIONAL_COUNT", "OPTIONAL_POSITIVE", "POSITIVE", "declared_init",
           "store_params"]

# Parameter constraints (scikit-learn's ``_parameter_constraints`` vocabulary) that many
# estimators and solvers share; ``None`` leaves the choice to a documented default rule.
#: An integer count ``>= 1`` (iterations, batch size, phases).
COUNT = [Interval(Integral, 1, None, closed="left")]
#: A finite real ``> 0`` (step size, clip, radius; 0, inf and nan refused).
POSITIVE = [Interval(Real, 0, None, closed="neither")]
#: A count, or ``None``.
OPTIONAL_COUNT = [*COUNT, None]
#: A finite positive real, or ``None``.
OPTIONAL_POSITIVE = [*POSITIVE, None]


def store_params(obj, params: dict) -> None:
    """Store every constructor argument on ``obj`` under its own name, unchanged.

    Called as ``store_params(self, locals())`` on the first line of an ``__init__`` whose
    signature lists every parameter explicitly (scikit-learn's ``get_params`` reads that
    signature): nothing is validated or derived here, so ``clone`` and ``set_params``
    behave as for any scikit-learn estimator, and a new parameter cannot be forgotten.

    Parameters
    ----------
    obj : object
        The instance being constructed.
    params : dict
        The constructor's ``locals()`` before any other statement: its arguments (and
        ``self``, or ``__class__`` where the method uses ``super()``, which are skipped).
    """
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(obj, name, value)


def declared_init(positional: dict, keyword_only: dict):
    """An ``__init__`` that only stores its parameters, with a declared signature.

    For estimators that share most of their parameters: each group is declared once
    (its names and defaults, next to its documentation) and an estimator's constructor
    is ``__init__ = declared_init({...}, {..., **GROUP, ...})``. The function carries the
    explicit signature as ``__signature__``, which ``inspect.signature`` (and so
    scikit-learn's ``get_params``, ``clone``, ``check_estimator``, Sphinx and numpydoc)
    reads; a call binds its arguments against that signature exactly as a hand-written
    constructor would (same defaults, the same ``TypeError`` for an unknown or duplicate
    argument, which names the class), then stores them with :func:`store_params`.

    Parameters
    ----------
    positional : dict
        Names and defaults of the parameters that may be passed by position, in order.
    keyword_only : dict
        Names and defaults of the keyword-only parameters, in signature order.

    Returns
    -------
    function
        The constructor.
    """
    kinds = inspect.Parameter
    signature = inspect.Signature(
        [kinds("self", kinds.POSITIONAL_OR_KEYWORD)]
        + [kinds(name, kinds.POSITIONAL_OR_KEYWORD, default=value)
           for name, value in positional.items()]
        + [kinds(name, kinds.KEYWORD_ONLY, default=value)
           for name, value in keyword_only.items()])

    def __init__(self, *args, **kwargs):
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{type(self).__name__}.__init__() {exc}") from None
        bound.apply_defaults()
        store_params(self, bound.arguments)

    __init__.__signature__ = signature
    return __init__
