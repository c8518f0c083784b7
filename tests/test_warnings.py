"""Quiet by default: privacy notices point at the user's line and are shown once."""

import os
import subprocess
import sys
import textwrap
import warnings

import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import KFold, cross_val_score

from skdp import DPLinearRegression, DPLogisticRegression, PrivacyLeakWarning

SCRIPT = textwrap.dedent("""
    import warnings
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import GridSearchCV, KFold
    from skdp import DPLogisticRegression, BudgetAccountant
    X, y = load_breast_cancer(return_X_y=True)
    {body}
""")


def run(body: str) -> str:
    """The stderr of a fresh interpreter running ``body`` (default warning filters)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(body=body)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stderr


@pytest.mark.slow
def test_eleven_default_fits_print_the_label_notice_once_at_the_users_line():
    err = run("\n".join(["DPLogisticRegression().fit(X, y)"] * 11))
    assert err.count("the label set is read from y") == 1
    assert "<string>:" in err  # attributed to the script, not to sklearn/base.py
    assert "sklearn" not in err.split("PrivacyLeakWarning")[0].splitlines()[-1]


@pytest.mark.slow
def test_a_gridsearch_with_two_workers_prints_it_once():
    err = run("GridSearchCV(DPLogisticRegression(), {'alpha': [0.01, 0.1, 1.0]}, "
              "cv=KFold(5), n_jobs=2).fit(X, y)")
    assert err.count("the label set is read from y") == 1


def notices(action: str, fit, text: str) -> list[str]:
    """The privacy notices containing ``text`` that ``fit()`` emits in this process under
    the warnings filter ``action``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        fit()
    return [str(w.message) for w in caught
            if issubclass(w.category, PrivacyLeakWarning) and text in str(w.message)]


def test_declared_classes_print_no_label_notice():
    X, y = load_breast_cancer(return_X_y=True)
    assert not notices("always", lambda: DPLogisticRegression(classes=[0, 1]).fit(X, y), "")


def test_an_exact_score_says_once_that_it_is_not_private():
    X, y = load_breast_cancer(return_X_y=True)

    def fits():
        cross_val_score(DPLogisticRegression(classes=[0, 1]), X, y,
                        cv=KFold(3, shuffle=True, random_state=0))
        DPLinearRegression().fit(X, y.astype(float)).score(X, y.astype(float))

    # "default", not "always": "always" turns the deduplication off.
    found = notices("default", fits, "score() is exact")
    assert len(found) == 1 and "make_private_scorer" in found[0]


@pytest.mark.slow
def test_workers_of_a_search_without_a_parent_fit_print_the_notice_once():
    # cross_validate with n_jobs=2 fits only in workers: the notice must appear (once).
    err = run("from sklearn.model_selection import cross_validate\n"
              "cross_validate(DPLogisticRegression(), X, y, cv=KFold(4), n_jobs=2)")
    assert err.count("the label set is read from y") == 1


def test_an_always_filter_shows_every_notice():
    X, y = load_breast_cancer(return_X_y=True)

    def fits():
        for _ in range(2):
            DPLogisticRegression().fit(X, y)

    assert len(notices("always", fits, "label set is read")) == 2


@pytest.mark.slow
def test_a_noise_dominated_candidate_warns_once_per_message_in_a_search():
    # The bottom candidate (epsilon 0.1) of a grid over epsilon is noise-dominated in all
    # five folds, and again in a second search: scikit-learn's catch_warnings blocks reset
    # Python's own registry, so without skdp's deduplication it printed ten lines. The
    # folds hold 455 or 456 rows: two messages, each printed once.
    err = run("grid = {'epsilon': [0.1, 3.0]}\n"
              "for _ in range(2):\n"
              "    GridSearchCV(DPLogisticRegression(classes=[0, 1]), grid,\n"
              "                 cv=KFold(5)).fit(X, y)")
    lines = [line for line in err.splitlines() if "NoiseDominatedWarning" in line]
    assert len(lines) == 2, err
    assert len(set(lines)) == 2 and all("<string>:" in line for line in lines)
