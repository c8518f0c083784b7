"""Constructors that only store their parameters, as scikit-learn's contract asks."""

from __future__ import annotations

import inspect
import sys
from numbers import Integral, Real

from skdp._sklearn_compat import Interval

__all__ = ["COUNT", "OPTIONAL_COUNT", "OPTIONAL_POSITIVE", "POSITIVE", "declared_init",
           "store_params"]

# Parameter constraints (scikit-learn's ``_parameter_constraints`` vocabulary) that many
# estimators and solvers share (tuples: one object serves many entries and cannot be
# changed through any of them); ``None`` leaves the choice to a documented default rule.
#: An integer count ``>= 1`` (iterations, batch size, phases).
COUNT = (Interval(Integral, 1, None, closed="left"),)
#: A finite real ``> 0`` (step size, clip, radius; 0, inf and nan refused).
POSITIVE = (Interval(Real, 0, None, closed="neither"),)
#: A count, or ``None``.
OPTIONAL_COUNT = (*COUNT, None)
#: A finite positive real, or ``None``.
OPTIONAL_POSITIVE = (*POSITIVE, None)


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

    For classes that share most of their parameters: each group is declared once (its
    names and defaults) and a class's constructor is ``__init__ = declared_init({...},
    {..., **GROUP, ...})`` in its body. The function carries the explicit signature as
    ``__signature__``, which ``inspect.signature`` (and so scikit-learn's ``get_params``,
    ``clone``, ``check_estimator``, Sphinx and numpydoc) reads, and the class's
    ``__qualname__`` and module, as :func:`collections.namedtuple` does. A call binds its
    arguments as a hand-written constructor would: the same defaults, and a ``TypeError``
    naming the class for an extra positional argument, a duplicate or an unknown keyword
    (in Python's own words); then it stores each, unchanged, in signature order, as
    :func:`store_params` does. The parameters carry no annotations.

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
    names = tuple(positional)
    defaults = {**positional, **keyword_only}

    def __init__(self, *args, **kwargs):
        # Bound by hand as Python binds a written signature (Signature.bind costs ten
        # times more, and clone calls this for every candidate of a search).
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}.__init__() takes from 1 to "
                            f"{1 + len(names)} positional arguments but {1 + len(args)} "
                            "were given")
        for name, value in zip(names, args, strict=False):  # len(args) <= len(names)
            if name in kwargs:
                raise TypeError(f"{type(self).__name__}.__init__() got multiple values for "
                                f"argument {name!r}")
            kwargs[name] = value
        for name in kwargs:
            if name not in defaults:
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected "
                                f"keyword argument {name!r}")
        for name, default in defaults.items():
            setattr(self, name, kwargs.get(name, default))

    # The defining class body's names, as collections.namedtuple reads its caller's module:
    # the function pickles by reference and reads as Class.__init__ in tracebacks and docs.
    caller = sys._getframe(1)
    owner = caller.f_locals.get("__qualname__")
    if owner is not None:
        __init__.__qualname__ = f"{owner}.__init__"
    __init__.__module__ = caller.f_globals.get("__name__", __name__)
    __init__.__signature__ = signature
    return __init__
