"""skdp's warnings: attributed to the user's line, and the privacy notices shown once.

A warning raised inside ``fit`` would otherwise point at scikit-learn's wrapper
(``sklearn/base.py``) or at skdp itself, and a notice that holds for every fit (a label set
read from ``y``, a seed) would repeat for every fold of a search. :func:`warn_user`
attributes each warning to the first frame outside skdp, scikit-learn and joblib (the
user's line), and shows a ``once`` warning once per process and message; process workers
(``n_jobs > 1``) stay quiet about them, since their parent shows the same notice at the
refit (or in :func:`skdp.privacy_report`).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import warnings
from contextlib import contextmanager

__all__ = ["reset_shown", "suppressed", "warn_user"]

_SHOWN: set[tuple[type, str]] = set()
#: Message prefixes silenced by :func:`suppressed` (not marked as shown).
_SUPPRESSED: list[str] = []


def _library_dirs() -> tuple[str, ...]:
    import joblib
    import sklearn

    import skdp

    return tuple(os.path.dirname(m.__file__) + os.sep for m in (skdp, sklearn, joblib))


_DIRS: tuple[str, ...] | None = None


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside skdp, scikit-learn and joblib, for a
    ``warnings.warn`` called from :func:`warn_user`."""
    global _DIRS
    if _DIRS is None:
        _DIRS = _library_dirs()
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_DIRS):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2


def warn_user(message: str, category: type[Warning], *, once: bool = False) -> None:
    """Warn with ``message``, attributed to the user's line.

    Parameters
    ----------
    message : str
        The text (public quantities only).
    category : type of Warning
        Its class.
    once : bool, default=False
        Show it once per process and message (not in process workers).
    """
    if any(message.startswith(prefix) for prefix in _SUPPRESSED):
        return
    if once:
        key = (category, message)
        if key in _SHOWN or multiprocessing.parent_process() is not None:
            return
        _SHOWN.add(key)
    warnings.warn(message, category, stacklevel=_user_stacklevel())


@contextmanager
def suppressed(prefix: str):
    """Silence the warnings whose message starts with ``prefix`` inside the block, without
    counting them as shown (a search that seeds its own candidates)."""
    _SUPPRESSED.append(prefix)
    try:
        yield
    finally:
        _SUPPRESSED.remove(prefix)


def reset_shown() -> None:
    """Forget which ``once`` warnings were shown (tests, or a user who wants them again)."""
    _SHOWN.clear()
