"""Sphinx configuration of the skdp documentation site.

Build (offline, warnings are errors)::

    pip install -e ".[docs]"
    sphinx-build -W -b html docs docs/_build/html

The build needs no network: intersphinx reads the inventories committed in
``docs/inventories`` (refresh them with ``python docs/inventories/refresh.py``), and the
gallery runs on bundled or generated data. Math is rendered by a copy of MathJax shipped
with the site (``sphinx-mathjax-offline``), so the formulas render offline too.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from numpydoc.numpydoc import mangle_docstrings

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: numpydoc depends on tomli there
    import tomli as tomllib

import skdp
from skdp._docstrings import constant_docstring

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))  # for the sphinx-gallery sort key below

project = "skdp"
author = "skdp developers"
copyright = "skdp developers"
version = release = skdp.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    # Math by MathJax, from a copy shipped with the site (sets mathjax_path to
    # _static/mathjax/tex-chtml.js): the formulas need no network (sphinx-gallery's
    # execution-times page still links its table styles from a CDN).
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "inventories",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.md5",
    "auto_examples/*.json",
    "**.ipynb_checkpoints",
]
templates_path = ["_templates"]

# -- MyST (the markdown pages) -----------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# -- autodoc / autosummary / numpydoc ----------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # numpydoc's Parameters section says it, once
autodoc_member_order = "groupwise"
autodoc_default_options: dict[str, object] = {}  # the class template asks for members
# dp_accounting's abstract methods carry docstrings that are not reStructuredText
autodoc_inherit_docstrings = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Docstring checks: the list declared once in pyproject.toml, [tool.numpydoc_validation]
# ("all" minus the codes it lists, with the reasons); with -W a violation fails the build.
with open(ROOT / "pyproject.toml", "rb") as _f:
    numpydoc_validation_checks = set(tomllib.load(_f)["tool"]["numpydoc_validation"]["checks"])


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document only what skdp defines: members inherited from scikit-learn or the
    standard library (``get_params``, ``set_fit_request``, ``__init__`` of dataclasses)
    are documented there, with cross-references this site does not hold."""
    if skip or what not in ("class", "exception"):
        return skip
    target = obj.fget if isinstance(obj, property) else obj
    target = getattr(target, "__func__", target)
    module = getattr(target, "__module__", None)
    if module is None or inspect.isbuiltin(target):
        return True
    if not module.startswith("skdp"):
        return True
    return None


def _constant_doc(app, what, name, obj, options, lines):
    """A module constant's page shows the ``#:`` comment of the module that defines it.

    Autodoc reads the comments of the module the page names only (the package that
    re-exports the constant) and otherwise shows the docstring of the value's type.
    """
    if what == "data":
        text = constant_docstring(name)
        if text is not None:
            lines[:] = text.splitlines() + [""]


class _Constant:
    """What numpydoc validates for a module constant: the text its page shows (the
    value's own ``__doc__`` is its type's, ``int``'s or ``dict``'s)."""

    def __init__(self, name: str, lines: list[str]) -> None:
        self.__module__, _, self.__name__ = name.rpartition(".")
        self.__doc__ = "\n".join(lines)


def _mangle_docstrings(app, what, name, obj, options, lines):
    """numpydoc's docstring processing (and validation), a constant read as its text."""
    if what == "data":
        obj = _Constant(name, lines)
    mangle_docstrings(app, what, name, obj, options, lines)


def _solver_table(app, docname, source):
    """The site's solver table is generated from the registry at every build, so a new
    solver's row appears with its registry line (the table in docs/solvers.md itself is
    kept in step by ``python -m skdp.solvers docs/solvers.md``, and a test fails while
    it is stale)."""
    if docname != "solvers":
        return
    from skdp.solvers import SOLVERS
    from skdp.solvers._capabilities import with_table

    source[0] = with_table(source[0], SOLVERS)


def setup(app):
    app.connect("source-read", _solver_table)
    app.connect("autodoc-skip-member", _skip_foreign_members)
    # The constants' text first, then numpydoc's processing in place of its own handler.
    for listener in list(app.events.listeners["autodoc-process-docstring"]):
        if listener.handler is mangle_docstrings:
            app.disconnect(listener.id)
    app.connect("autodoc-process-docstring", _constant_doc, priority=400)
    app.connect("autodoc-process-docstring", _mangle_docstrings)


# -- intersphinx: committed inventories, never the network -------------------------------
_INV = DOCS / "inventories"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", str(_INV / "python.inv")),
    "numpy": ("https://numpy.org/doc/stable/", str(_INV / "numpy.inv")),
    "scipy": ("https://docs.scipy.org/doc/scipy/", str(_INV / "scipy.inv")),
    "sklearn": ("https://scikit-learn.org/stable/", str(_INV / "sklearn.inv")),
}
intersphinx_timeout = 1

# -- sphinx-gallery ----------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",  # every plot_*.py is executed
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "plot_gallery": "True",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "doc_module": ("skdp",),
    "reference_url": {"skdp": None},
    "backreferences_dir": "gen_modules/backreferences",
    "matplotlib_animations": False,
    "show_memory": False,
    "min_reported_time": 0,
}

# -- HTML --------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skdp {release}"
html_static_path = ["_static"]
html_css_files = ["skdp.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": []}
html_show_sourcelink = False
