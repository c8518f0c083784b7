"""Constructors that only store their parameters, as scikit-learn's contract asks."""

from __future__ import annotations

__all__ = ["store_params"]


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
