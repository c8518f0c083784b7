"""skdp's warnings: attributed to the user's line, and the privacy notices shown once.

A warning raised inside ``fit`` would otherwise point at scikit-learn's wrapper
(``sklearn/base.py``) or at skdp itself, and a notice that holds for every fit (a label set
read from ``y``, a seed) would repeat for every fold of a search. :func:`warn_user`
attributes each warning to the first frame outside skdp, scikit-learn and joblib (the
user's line), and shows a ``once`` warning once per session and message: the main
process and its process workers (``n_jobs > 1``) share a marker file per notice, so the
workers of one search print it once between them, and the parent not again. An
``"always"`` filter on the category turns the deduplication off.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import shutil
import sys
import tempfile
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
        Show it once per session and message (the main process and its process
        workers; see the module docstring), unless an "always" filter asks for all.
    """
    if any(message.startswith(prefix) for prefix in _SUPPRESSED):
        return
    if once and not _always(category):
        key = (category, message)
        if key in _SHOWN:
            return
        _SHOWN.add(key)
        if _shown_in_session(category, message):
            return
    warnings.warn(message, category, stacklevel=_user_stacklevel())


def _always(category: type[Warning]) -> bool:
    """Whether the user asked for every occurrence of ``category`` (an ``"always"``
    filter): then nothing is deduplicated."""
    return any(action == "always" and issubclass(category, cat)
               for action, _, cat, _, _ in warnings.filters)


def _session() -> tuple[int, str] | None:
    """The session a ``once`` notice is shown once in: the main process and its process
    workers (``n_jobs > 1``), identified by the main process's id and start time (read
    from ``/proc``; ``None`` elsewhere)."""
    pid = os.getpid() if multiprocessing.parent_process() is None else os.getppid()
    try:
        with open(f"/proc/{pid}/stat") as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
    return pid, start


def _session_dir() -> str | None:
    """The folder of this session's marker files (``None`` where no session is known)."""
    session = _session()
    if session is None:
        return None
    return os.path.join(tempfile.gettempdir(), f"skdp-notices-{session[0]}-{session[1]}")


def _shown_in_session(category: type[Warning], message: str) -> bool:
    """Mark the notice shown for this session; whether another process of the session (a
    worker, or the main process) showed it first. A marker file per notice in the
    session's folder, created atomically, so that the workers of one search print it
    once between them."""
    folder = _session_dir()
    if folder is None:
        # No way to coordinate: the main process shows it, workers stay quiet.
        return multiprocessing.parent_process() is not None
    digest = hashlib.sha256(f"{category.__qualname__}:{message}".encode()).hexdigest()
    try:
        os.makedirs(folder, exist_ok=True)
        os.close(os.open(os.path.join(folder, digest[:32]),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return True
    except OSError:
        return multiprocessing.parent_process() is not None
    return False


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
    folder = _session_dir()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


#: The two privacy notices every private fit may give, written once (shown once per
#: session: one notice however many estimators give it).
SEEDED_NOISE = ("random_state is set: anyone who knows it, or who holds this estimator "
                "(pickle, get_params), can regenerate the noise and undo the privacy "
                "guarantee. Use random_state=None (fresh OS entropy) for releases.")
LABEL_SET_READ = ("the label set is read from y (classes=None): replacing the only record "
                  "of a class changes the model's shape, which the privacy guarantee does "
                  "not cover. Declare the public label set with classes=[...].")


def warn_if_seeded(random_state, private: bool = True) -> None:
    """The seeded-noise notice, when a private release is given a ``random_state``.

    Parameters
    ----------
    random_state : object
        The release's ``random_state`` parameter.
    private : bool, default=True
        Whether the release is private (``epsilon < inf``).
    """
    if private and random_state is not None:
        from skdp.exceptions import PrivacyLeakWarning

        warn_user(SEEDED_NOISE, PrivacyLeakWarning, once=True)


def warn_label_set_read() -> None:
    """The notice of a classifier that reads its label set from ``y``."""
    from skdp.exceptions import PrivacyLeakWarning

    warn_user(LABEL_SET_READ, PrivacyLeakWarning, once=True)
