"""The documentation's solver table and set-up commands stay in sync with the code."""

import re
from pathlib import Path

from skdp.solvers import SOLVERS

ROOT = Path(__file__).resolve().parents[1]


def test_solver_table_lists_exactly_the_registry():
    text = (ROOT / "docs" / "solvers.md").read_text()
    names = set(re.findall(r"^\| `([^`]+)` \|", text, flags=re.MULTILINE))
    assert names == set(SOLVERS)


def test_every_solver_has_a_privacy_section():
    text = (ROOT / "docs" / "privacy.md").read_text()
    for name in SOLVERS:
        assert f'(`"{name}"`' in text, f"docs/privacy.md has no section for {name!r}"


def test_readme_gives_the_two_setup_commands_and_ci_runs_the_tests():
    readme = (ROOT / "README.md").read_text()
    assert "pip install . && python -m skdp demo" in readme
    assert 'pip install ".[test]" && python -m pytest -n auto' in readme
    assert "python -m pytest -n auto" in (ROOT / ".ci" / "run").read_text()
    docs_command = "python -m sphinx -W -b html docs docs/_build/html"
    assert f'pip install ".[docs]" && {docs_command}' in readme
    assert docs_command.removeprefix("python ") in (ROOT / ".ci" / "docs").read_text()


def test_shared_docstrings_fill_in_at_any_indentation():
    """Python 3.13 strips a docstring's common indentation at compile time: the markers
    and the solver list must fill in the same whether the docstring is dedented or not
    (issue 36: ``import skdp`` failed on 3.13 with KeyError 'solvers')."""
    import inspect

    from skdp.linear_model._docs import shared_docs

    template = '''Summary.

    Parameters
    ----------
    classes : see below
    <<classes>>
    solver : str
        The solver.

        <<solvers>>
    <<data_norm>>
    <<bounds_fraction:0.2>>
    '''
    docs = []
    for text in (template, inspect.cleandoc(template)):
        cls = type("Toy", (), {"__doc__": text, "_solver_losses": ("logistic",),
                               "_solver_constraints": ("none",)})
        docs.append(inspect.cleandoc(shared_docs(cls).__doc__))
    assert docs[0] == docs[1]
    assert "<<" not in docs[0] and "Registered solvers" in docs[0]
    assert "\nclasses : array-like or None, default=None\n    The PUBLIC label set." in \
        docs[0]
    assert "default=0.2" in docs[0]
