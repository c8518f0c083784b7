"""Printed forms of skdp's value objects: every float at 6 significant digits.

``Budget(epsilon=0.30000000000000004, delta=3.0000000000000004e-05)`` prints as
``Budget(epsilon=0.3, delta=3e-05)``. Only the text is rounded: the objects keep every bit,
and their equality, hashing and serialised forms are unchanged.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import numpy as np

__all__ = ["dataclass_repr", "short_repr"]


def short_repr(value: Any) -> str:
    """``repr(value)`` with every float written with at most 6 significant digits.

    Parameters
    ----------
    value : object
        A float (``format(value, ".6g")``), a tuple, list or dict (element by
        element), a numpy array (shown by its shape), a ``dp_accounting`` event or
        another attrs object (field by field), or anything else (its ``repr``).

    Returns
    -------
    str
        The printed form.
    """
    if isinstance(value, bool | np.bool_) or value is None:
        return repr(value)
    if isinstance(value, float | np.floating):
        return format(float(value), ".6g")
    if isinstance(value, numbers.Integral):
        return repr(int(value))
    if isinstance(value, np.ndarray):
        return f"array(shape={value.shape})"
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        items = [short_repr(item) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, list):
        return f"[{', '.join(short_repr(item) for item in value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {short_repr(v)}" for k, v in value.items()) + "}"
    attributes = getattr(type(value), "__attrs_attrs__", None)
    if attributes is not None:  # dp_accounting's events
        shown = ", ".join(f"{a.name}={short_repr(getattr(value, a.name))}"
                          for a in attributes if a.repr)
        return f"{type(value).__name__}({shown})"
    return repr(value)


def dataclass_repr(obj: Any) -> str:
    """The repr a dataclass generates, with :func:`short_repr` for every field.

    Parameters
    ----------
    obj : dataclass instance
        The object; fields declared with ``repr=False`` are left out, as the generated
        repr does.

    Returns
    -------
    str
        ``ClassName(field=value, ...)``.
    """
    shown = ", ".join(f"{f.name}={short_repr(getattr(obj, f.name))}"
                      for f in dataclasses.fields(obj) if f.repr)
    return f"{type(obj).__name__}({shown})"
