"""Every docstring of the documented API passes numpydoc's checks.

The names are those the two API pages list (``docs/api.rst`` and
``docs/developer/internals.rst``), with the public methods and properties their class
pages render (skdp's own, inherited ones included: ``:inherited-members:``); the checks
are the list declared once in pyproject.toml, ``[tool.numpydoc_validation]``, which the
docs build (``docs/conf.py``, warnings are errors) reads too. A module constant is
checked on the text its page shows: its ``#:`` comment where the constant is defined.
"""

from __future__ import annotations

import inspect
import types

from numpydoc import docscrape
from numpydoc import validate as validate_module

from skdp._docstrings import constant_docstring
from tests.test_docs_site import ROOT, _api_entries, _resolve

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: numpydoc depends on tomli there
    import tomli as tomllib


def _declared_checks() -> set[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        checks = tomllib.load(f)["tool"]["numpydoc_validation"]["checks"]
    return validate_module.get_validation_checks(set(checks))


def _own(cls: type, attr: str) -> bool:
    """Whether ``cls.attr`` is one of skdp's methods or properties: the docs render skdp's
    members only (docs/conf.py skips those of scikit-learn and Python)."""
    member = inspect.getattr_static(cls, attr)
    if isinstance(member, property):
        member = member.fget
    elif isinstance(member, (classmethod, staticmethod)):
        member = member.__func__
    else:
        # A descriptor (scikit-learn's available_if) as the class attribute reads it.
        member = getattr(cls, attr, None)
    return inspect.isfunction(member) and member.__module__.startswith("skdp")


def _members(name: str, cls: type) -> list[str]:
    """The public methods and properties of ``cls`` that its page renders."""
    return [f"{name}.{attr}" for attr in sorted(dir(cls))
            if not attr.startswith("_") and _own(cls, attr)]


def _documented() -> list[tuple[str, object]]:
    """(name, object) for every page entry and every member its class page renders (a
    member's object is None: numpydoc imports it by name)."""
    names = []
    for name in _api_entries():
        obj = _resolve(name)
        names.append((name, obj))
        if inspect.isclass(obj):
            names += [(member, None) for member in _members(name, obj)]
    return names


def _report(name: str, obj) -> list[tuple[str, str]]:
    """numpydoc's (code, message) list for the docstring of ``name``."""
    if obj is None or inspect.isclass(obj) or inspect.isroutine(obj):
        return validate_module.validate(name)["errors"]
    text = constant_docstring(name)
    if text is None:
        return [("GL08", "the constant has no #: comment where it is defined")]
    # A constant's own __doc__ is its type's (int, dict, ...): the text its page shows
    # stands in for it.
    module, _, attr = name.rpartition(".")
    stand_in = types.SimpleNamespace(__doc__=text, __name__=attr, __module__=module)
    return validate_module.validate(docscrape.get_doc_object(stand_in, "data", text))["errors"]


def test_the_documented_api_is_found():
    names = [name for name, _ in _documented()]
    assert len(names) > 150, len(names)
    assert "skdp.solvers.NoisyGD.check_compatible" in names  # inherited from BaseDPSolver
    assert "skdp.BudgetAccountant.spent" in names


def test_the_declared_checks_are_all_but_the_optional_sections():
    checks = _declared_checks()
    assert {"PR01", "RT01", "GL08", "SS01"} <= checks
    assert not {"ES01", "EX01", "SA01"} & checks  # the optional sections


def test_every_documented_docstring_passes_the_declared_checks():
    checks = _declared_checks()
    failures = []
    for name, obj in _documented():
        failures += [f"{name}: {code} {message}"
                     for code, message in _report(name, obj) if code in checks]
    assert not failures, (
        f"{len(failures)} numpydoc violations of the checks declared in pyproject.toml "
        "([tool.numpydoc_validation]):\n" + "\n".join(failures))
