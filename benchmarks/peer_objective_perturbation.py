"""The pure-DP peer of ``bench_output_perturbation.py``: IBM's diffprivlib.

* Logistic regression: ``diffprivlib.models.LogisticRegression`` (objective perturbation,
  Chaudhuri, Monteleoni & Sarwate 2011, with diffprivlib's ``Vector`` mechanism).
* Linear regression: ``diffprivlib.models.LinearRegression`` (the functional mechanism of
  Zhang et al. 2012).

Compatibility shims (diffprivlib 0.6.6 predates the installed scikit-learn):

1. ``import diffprivlib`` imports its tree models, which import ``DOUBLE`` and ``DTYPE``
   from ``sklearn.tree._tree``; scikit-learn >= 1.8 no longer exports them. They are the
   dtypes ``np.float64`` and ``np.float32``; we set them on that module before the import
   if they are missing (only diffprivlib's forest models use them, and we use none).
2. ``diffprivlib.models.LogisticRegression.__init__`` passes ``multi_class="ovr"`` to
   scikit-learn's ``LogisticRegression``, which scikit-learn >= 1.8 rejects
   (``TypeError: ... unexpected keyword argument 'multi_class'``). When the class cannot be
   constructed, :class:`PeerLogisticRegression` runs the body of its ``fit`` for a binary
   target verbatim: validate, clip every row to ``data_norm`` with diffprivlib's own
   ``clip_to_norm``, and call diffprivlib's own module-level
   ``_logistic_regression_path`` (where the whole mechanism lives: the ``Vector``
   mechanism, the noisy objective and its L-BFGS-B minimisation) with the arguments
   ``fit`` passes. ``verify_against_class`` checks, in an environment where the class
   works (scikit-learn 1.5), that both give bit-identical coefficients for the same seed.

diffprivlib's private objective (``_logistic_regression_path``, diffprivlib 0.6.6), for
``C`` and ``n`` rows, ``theta = (w, b)`` (``b`` the intercept, feature value 1)::

    J(theta) = mean_i log(1 + exp(-s_i (x_i.w + b))) + (1 / (2 C n)) ||w||^2
               + <beta, theta> / n + (Delta / 2) ||theta||^2

``beta``: direction uniform, norm ~ Gamma(d + 1, 2 sqrt(data_norm^2 + 1) / eps'), with
``eps' = eps - 2 ln(1 + 0.25 sqrt(data_norm^2 + 1) C)``; if ``eps' <= 0``,
``Delta = (0.25 sqrt(data_norm^2 + 1) / (exp(eps / 4) - 1) - 1 / C) / n`` and
``eps' = eps / 2``, else ``Delta = 0``. The intercept is not penalised by
``1/(2Cn)`` (scikit-learn's ``LinearModelLoss``), so with ``C = 1 / (n alpha)`` the
non-noisy part is skdp's ``mean loss + (alpha/2)||w||^2`` with an UNPENALISED intercept,
whereas skdp's output perturbation penalises it (both are evaluated on skdp's objective in
the benchmark). Notes on the peer's calibration as implemented (we do not change it):
CMS11's bound uses the Hessian bound ``c ||x||^2`` of the per-example loss, i.e.
``0.25 (data_norm^2 + 1)``; diffprivlib passes ``data_sensitivity = sqrt(data_norm^2 + 1)``
and uses ``0.25 sqrt(data_norm^2 + 1)`` (smaller for an augmented norm of sqrt(2)), and its
proof needs the regulariser to be strongly convex in every coordinate, which the
unpenalised intercept is not. Both favour the peer (less noise than CMS11 would add).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = [
    "PeerLinearRegression",
    "PeerLogisticRegression",
    "diffprivlib_info",
    "import_diffprivlib",
    "verify_against_class",
]

_SHIMS: list[str] = []


def import_diffprivlib():
    """Import diffprivlib, applying the ``sklearn.tree._tree`` dtype shim if needed."""
    try:
        import sklearn.tree._tree as tree_mod

        for name, value in (("DOUBLE", np.float64), ("DTYPE", np.float32)):
            if not hasattr(tree_mod, name):
                setattr(tree_mod, name, value)
                _SHIMS.append(f"sklearn.tree._tree.{name} = np.{np.dtype(value).name} "
                              "(removed from scikit-learn; used only by diffprivlib's forests)")
    except ImportError:  # pragma: no cover
        pass
    import diffprivlib

    return diffprivlib


def _class_constructible() -> tuple[bool, str | None]:
    from diffprivlib.models import LogisticRegression

    try:
        LogisticRegression(epsilon=1.0, data_norm=1.0)
    except TypeError as exc:  # scikit-learn >= 1.8: no multi_class
        return False, f"{type(exc).__name__}: {exc}"
    return True, None


def diffprivlib_info() -> dict:
    """Version and the shims in use (for the benchmark's JSON)."""
    dpl = import_diffprivlib()
    ok, error = _class_constructible()
    return {
        "version": dpl.__version__,
        "import_shims": list(_SHIMS),
        "logistic_regression_class_constructible": ok,
        "logistic_regression_class_error": error,
        "logistic_regression_path": (
            "diffprivlib.models.LogisticRegression" if ok else
            "diffprivlib.models.logistic_regression._logistic_regression_path (the body of "
            "LogisticRegression.fit, run by PeerLogisticRegression)"),
    }


class PeerLogisticRegression:
    """diffprivlib's DP logistic regression (binary), usable with any scikit-learn.

    Parameters are diffprivlib's: ``epsilon``, ``data_norm``, ``C``, ``fit_intercept``,
    ``max_iter`` (100), ``tol`` (1e-4), ``random_state``. After ``fit``: ``coef_`` of shape
    ``(1, n_features)``, ``intercept_`` of shape ``(1,)``, ``classes_``, ``via``.
    """

    def __init__(self, epsilon=1.0, data_norm=1.0, C=1.0, fit_intercept=True, max_iter=100,
                 tol=1e-4, random_state=None):
        self.epsilon = epsilon
        self.data_norm = data_norm
        self.C = C
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y):
        import_diffprivlib()
        from diffprivlib.models import LogisticRegression

        ok, _ = _class_constructible()
        if ok:
            model = LogisticRegression(
                epsilon=self.epsilon, data_norm=self.data_norm, C=self.C,
                fit_intercept=self.fit_intercept, max_iter=self.max_iter, tol=self.tol,
                random_state=self.random_state)
            model.fit(X, y)
            self.coef_, self.intercept_ = model.coef_, model.intercept_
            self.classes_, self.n_iter_ = model.classes_, model.n_iter_
            self.via = "class"
            return self
        from diffprivlib.models.logistic_regression import _logistic_regression_path
        from diffprivlib.utils import check_random_state
        from diffprivlib.validation import clip_to_norm

        # LogisticRegression.fit of diffprivlib 0.6.6, binary case, line by line.
        random_state = check_random_state(self.random_state)
        X = np.ascontiguousarray(np.asarray(X, dtype=float))
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError("PeerLogisticRegression handles binary targets only.")
        n_features = X.shape[1]
        X = clip_to_norm(X, self.data_norm)
        coefs, _, n_iter = _logistic_regression_path(
            X, y, epsilon=self.epsilon, data_norm=self.data_norm, pos_class=self.classes_[1],
            Cs=[self.C], fit_intercept=self.fit_intercept, max_iter=self.max_iter,
            tol=self.tol, verbose=0, coef=None, random_state=random_state,
            check_input=False)
        coef = np.asarray(coefs).reshape(1, n_features + int(self.fit_intercept))
        self.n_iter_ = np.asarray(n_iter, dtype=np.int32)
        if self.fit_intercept:
            self.intercept_, self.coef_ = coef[:, -1].copy(), coef[:, :-1].copy()
        else:
            self.intercept_, self.coef_ = np.zeros(1), coef
        self.via = "path_function"
        return self

    def decision_function(self, X):
        return np.asarray(X) @ self.coef_.ravel() + self.intercept_[0]

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def score(self, X, y):
        return float(np.mean(self.predict(X) == np.asarray(y)))


class PeerLinearRegression:
    """``diffprivlib.models.LinearRegression`` (functional mechanism, pure epsilon-DP).

    Unregularised least squares; the intercept (``fit_intercept=True``) comes from
    privately estimated means of ``X`` and ``y`` (a ``1/(d+1)`` share of epsilon).
    """

    def __init__(self, epsilon=1.0, bounds_X=None, bounds_y=None, fit_intercept=True,
                 random_state=None):
        self.epsilon = epsilon
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def fit(self, X, y):
        import_diffprivlib()
        from diffprivlib.models import LinearRegression

        model = LinearRegression(epsilon=self.epsilon, bounds_X=self.bounds_X,
                                 bounds_y=self.bounds_y, fit_intercept=self.fit_intercept,
                                 random_state=self.random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            model.fit(X, y)
        self.coef_ = np.ravel(model.coef_)
        self.intercept_ = float(np.ravel(model.intercept_)[0]) if np.ndim(
            model.intercept_) else float(model.intercept_)
        self.via = "class"
        return self

    def predict(self, X):
        return np.asarray(X) @ self.coef_ + self.intercept_


def verify_against_class(seeds=range(5), epsilons=(0.1, 1.0, 5.0)):
    """Bit-identical check of the shim against diffprivlib's own class.

    Meaningful only where the class can be constructed (scikit-learn <= 1.7); elsewhere
    returns ``None``. Run: ``python benchmarks/peer_objective_perturbation.py``.
    """
    import_diffprivlib()
    from diffprivlib.models import LogisticRegression
    from diffprivlib.models.logistic_regression import _logistic_regression_path
    from diffprivlib.utils import check_random_state
    from diffprivlib.validation import clip_to_norm
    from sklearn.datasets import load_breast_cancer

    if not _class_constructible()[0]:
        return None
    X, y = load_breast_cancer(return_X_y=True)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    worst = 0.0
    for eps in epsilons:
        for seed in seeds:
            C = 1.0 / (X.shape[0] * 1e-2)
            ref = LogisticRegression(epsilon=eps, data_norm=1.0, C=C, random_state=seed).fit(X, y)
            # the shim's path, forced
            coefs, _, _ = _logistic_regression_path(
                clip_to_norm(X, 1.0), y, epsilon=eps, data_norm=1.0, pos_class=1, Cs=[C],
                fit_intercept=True, max_iter=100, tol=1e-4, verbose=0, coef=None,
                random_state=check_random_state(seed), check_input=False)
            theta = np.asarray(coefs).ravel()
            worst = max(worst, float(np.max(np.abs(theta[:-1] - ref.coef_.ravel()))),
                        abs(float(theta[-1] - ref.intercept_[0])))
    return worst


if __name__ == "__main__":
    info = diffprivlib_info()
    print(info)
    print("max |shim - class| over seeds and epsilons:", verify_against_class())
