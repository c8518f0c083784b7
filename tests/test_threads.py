"""One BLAS thread for narrow fits (skdp._threads): the limit holds during a fit of a
narrow host matrix, not for wide or unshaped input, and the library's count comes back
after every fit, failed ones included."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

from skdp import DPLogisticRegression
from skdp._threads import ONE_THREAD_WIDTH, fit_threads


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in ThreadpoolController().info()
            if lib["user_api"] == "blas"]


@pytest.fixture
def two_threads():
    """The BLAS pools at two threads for the test (skipped where no BLAS reports one)."""
    controller = ThreadpoolController()
    if not _blas_threads():
        pytest.skip("no BLAS library reports its threads")
    with controller.limit(limits=2, user_api="blas"):
        yield


def test_narrow_host_input_runs_on_one_thread(two_threads):
    before = _blas_threads()
    with fit_threads(np.zeros((10, ONE_THREAD_WIDTH))):
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == before
    for wide in (np.zeros((10, ONE_THREAD_WIDTH + 1)), [[0.0, 1.0]], np.zeros(5)):
        with fit_threads(wide):
            assert _blas_threads() == before


def test_a_fit_limits_and_restores_the_threads(two_threads, monkeypatch):
    """The limit is in force while the estimator's fit reads the data, and the count is
    restored after a fit and after a fit that fails."""
    import skdp._base as base

    seen = []
    fit = base.BaseDPLinearModel._fit

    def spy(self, X, y):
        seen.append(_blas_threads())
        return fit(self, X, y)

    monkeypatch.setattr(base.BaseDPLinearModel, "_fit", spy)
    before = _blas_threads()
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 3)), rng.integers(0, 2, size=200)
    DPLogisticRegression(data_norm=1.0, classes=[0, 1]).fit(X, y)
    assert set(seen[-1]) == {1} and _blas_threads() == before
    with pytest.raises(ValueError):
        DPLogisticRegression(data_norm=1.0, classes=[0, 1]).fit(X, np.full(200, 7))
    assert set(seen[-1]) == {1} and _blas_threads() == before


def test_fits_in_several_threads_share_one_limit(monkeypatch):
    """Fits running at once in threads share one limit: set by the first to enter,
    restored by the last to leave (a per-fit restore would leave one thread behind when
    they interleave). The process's BLAS state is global but a library may apply a
    limit set from a worker thread differently, so the controller is a recorder here."""
    import threading

    import skdp._threads as threads

    calls = []

    class Limiter:
        def restore_original_limits(self):
            calls.append("restore")

    class Controller:
        def limit(self, limits, user_api):
            calls.append(("limit", limits, user_api))
            return Limiter()

    monkeypatch.setattr(threads, "_blas", Controller)
    inside, release = threading.Event(), threading.Event()
    X = np.zeros((10, 3))

    def first():
        with threads.fit_threads(X):
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=first)
    worker.start()
    assert inside.wait(10)
    with threads.fit_threads(X):  # enters while the first holds the limit, leaves first
        assert calls == [("limit", 1, "blas")]
    assert calls == [("limit", 1, "blas")]  # the first fit still runs
    release.set()
    worker.join(10)
    assert calls == [("limit", 1, "blas"), "restore"] and threads._active == 0
