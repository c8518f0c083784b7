"""Refresh the intersphinx inventories committed in this folder.

The documentation build has no network, so ``docs/conf.py`` reads the ``objects.inv``
files of Python, NumPy, SciPy and scikit-learn from here (``python.inv``, ``numpy.inv``,
``scipy.inv``, ``sklearn.inv``) while the links still point to the projects' published
documentation.

Two ways to make them::

    python docs/inventories/refresh.py              # introspect the installed packages
    python docs/inventories/refresh.py --download   # the projects' real objects.inv

``--download`` fetches each project's own ``objects.inv`` (the best inventories: they hold
every documented object, label and glossary term). Use it where a network exists.

Without a network, the default builds *equivalent* inventories by importing the installed
packages and writing one entry per public name at the URL the project's documentation
publishes it under (its documented URL scheme):

- Python: ``library/<module>.html#<module>.<name>``; builtins on ``functions.html``,
  ``stdtypes.html``, ``exceptions.html`` and ``constants.html``.
- NumPy: ``reference/generated/numpy.<name>.html``; ``numpy.ndarray`` and
  ``numpy.random.Generator`` methods on their own pages.
- SciPy: ``reference/generated/scipy.<sub>.<name>.html``; subpackages on
  ``reference/<sub>.html``.
- scikit-learn: ``modules/generated/sklearn.<sub>.<name>.html``, methods on their class's
  page; the modules on ``api/sklearn.<sub>.html``; a few glossary terms.

These hold API objects only (no section labels), which is what skdp's pages and
docstrings reference. The header records the installed version and says how the file was
made. Rerun after upgrading a package, and commit the ``.inv`` files.
"""

from __future__ import annotations

import argparse
import builtins
import importlib
import inspect
import pkgutil
import sys
import types
import urllib.request
import warnings
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROJECTS = {
    # name: (project shown in the header, published base URL)
    "python": ("Python", "https://docs.python.org/3/"),
    "numpy": ("NumPy", "https://numpy.org/doc/stable/"),
    "scipy": ("SciPy", "https://docs.scipy.org/doc/scipy/"),
    "sklearn": ("scikit-learn", "https://scikit-learn.org/stable/"),
}


# --------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------
def write_inventory(path: Path, project: str, version: str, entries) -> int:
    """Write an intersphinx v2 inventory; ``entries`` are (name, domain:role, uri)."""
    seen: dict[tuple[str, str], str] = {}
    for name, role, uri in entries:
        seen.setdefault((name, role), uri)
    lines = []
    for (name, role), uri in sorted(seen.items()):
        if uri.endswith("#" + name):
            uri = uri[: -len(name)] + "$"
        lines.append(f"{name} {role} 1 {uri} -")
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        f"# Version: {version}\n"
        f"# The remainder of this file is compressed using zlib.\n"
    )
    body = zlib.compress(("\n".join(lines) + "\n").encode("utf-8"), 9)
    path.write_bytes(header.encode("utf-8") + body)
    return len(lines)


def _quiet_import(modname: str):
    """The module, or None where it does not import here (its warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return importlib.import_module(modname)
        except Exception:
            return None


def _public(names):
    return [n for n in names if not n.startswith("_")]


def _members(obj):
    names = getattr(obj, "__all__", None)
    if names is None:
        names = dir(obj)
    out = []
    for name in _public(names):
        try:
            out.append((name, getattr(obj, name)))
        except Exception:
            continue
    return out


def _role(obj) -> str:
    if isinstance(obj, type):
        return "py:exception" if issubclass(obj, BaseException) else "py:class"
    if isinstance(obj, types.ModuleType):
        return "py:module"
    if callable(obj):
        return "py:function"
    return "py:data"


def _class_members(cls):
    """(name, role) of the public methods, properties and attributes of ``cls``."""
    out = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            out.append((name, "py:property"))
        elif isinstance(value, (staticmethod, classmethod)) or inspect.isroutine(value):
            out.append((name, "py:method"))
        elif inspect.isdatadescriptor(value) or inspect.ismethoddescriptor(value):
            out.append((name, "py:attribute"))
    return out


# --------------------------------------------------------------------------------------
# per project (introspection)
# --------------------------------------------------------------------------------------
def _member_entries(prefix, namespace, url, members=True, keep=lambda obj: True):
    """Entries of the public members of ``namespace`` named ``prefix.name`` (modules left
    out), and of their classes' members when ``members``; ``url(full)`` is a name's
    page and anchor."""
    entries = []
    for name, obj in _members(namespace):
        if isinstance(obj, types.ModuleType) or not keep(obj):
            continue
        full = f"{prefix}.{name}"
        entries.append((full, _role(obj), url(full)))
        if members and isinstance(obj, type):
            entries += [(f"{full}.{member}", role, url(f"{full}.{member}"))
                        for member, role in _class_members(obj)]
    return entries


def python_entries():
    entries = []
    for name, obj in vars(builtins).items():
        if name.startswith("_"):
            continue
        if isinstance(obj, type) and issubclass(obj, BaseException):
            entries.append((name, "py:exception", f"library/exceptions.html#{name}"))
        elif name in {"None", "True", "False", "Ellipsis", "NotImplemented"}:
            entries.append((name, "py:data", f"library/constants.html#{name}"))
        elif isinstance(obj, type) and name in {
            "bool", "int", "float", "complex", "list", "tuple", "range", "str", "bytes",
            "bytearray", "memoryview", "set", "frozenset", "dict",
        }:  # fmt: skip
            page = "functions" if name in {"bool", "int", "float", "complex"} else "stdtypes"
            entries.append((name, "py:class", f"library/{page}.html#{name}"))
            for member, role in _class_members(obj):
                entries.append((f"{name}.{member}", role, f"library/stdtypes.html#{name}.{member}"))
        elif callable(obj):
            role = "py:class" if isinstance(obj, type) else "py:function"
            entries.append((name, role, f"library/functions.html#{name}"))
    modules = sorted(
        m for m in getattr(sys, "stdlib_module_names", ()) if not m.startswith("_")
    )
    modules += ["collections.abc", "os.path", "importlib.metadata", "concurrent.futures",
                "multiprocessing.pool", "urllib.request", "xml.etree.ElementTree",
                "logging.handlers", "unittest.mock", "email.message"]  # fmt: skip
    skip = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3"}
    for modname in modules:
        if modname in skip:
            continue
        module = _quiet_import(modname)
        if module is None:
            continue
        page = f"library/{modname}.html"
        entries.append((modname, "py:module", f"{page}#module-{modname}"))

        def defined_here(obj, modname=modname):  # not re-exported from elsewhere
            owner = getattr(obj, "__module__", modname) or modname
            return not (isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType))
                        and owner.lstrip("_").split(".")[0] != modname.split(".")[0])

        entries += _member_entries(modname, module, lambda full, page=page: f"{page}#{full}",
                                   keep=defined_here)
    return entries


def numpy_entries():
    import numpy as np

    entries = [("numpy", "py:module", "reference/index.html#module-numpy")]
    gen = "reference/generated/"

    def add(prefix, namespace, members=True):
        entries.extend(_member_entries(prefix, namespace,
                                       lambda full: f"{gen}{full}.html#{full}", members))

    add("numpy", np, members=False)
    for member, role in _class_members(np.ndarray):
        full = f"numpy.ndarray.{member}"
        entries.append((full, role, f"{gen}{full}.html#{full}"))
    for sub in ("linalg", "fft", "polynomial", "ma", "testing", "lib", "typing"):
        try:
            module = importlib.import_module(f"numpy.{sub}")
        except ImportError:
            continue
        entries.append((f"numpy.{sub}", "py:module",
                        f"reference/routines.{sub}.html#module-numpy.{sub}"))
        add(f"numpy.{sub}", module, members=False)
    # numpy.random: the Generator API has its own pages
    entries.append(("numpy.random", "py:module", "reference/random/index.html#module-numpy.random"))
    random_pages = {
        "Generator": "reference/random/generator.html",
        "default_rng": "reference/random/generator.html",
        "RandomState": "reference/random/legacy.html",
        "SeedSequence": f"{gen}numpy.random.SeedSequence.html",
        "BitGenerator": "reference/random/bit_generators/generated/numpy.random.BitGenerator.html",
        "PCG64": "reference/random/bit_generators/pcg64.html",
        "Philox": "reference/random/bit_generators/philox.html",
        "SFC64": "reference/random/bit_generators/sfc64.html",
        "MT19937": "reference/random/bit_generators/mt19937.html",
    }
    for name, page in random_pages.items():
        obj = getattr(np.random, name)
        full = f"numpy.random.{name}"
        entries.append((full, _role(obj), f"{page}#{full}"))
    for member, role in _class_members(np.random.Generator):
        full = f"numpy.random.Generator.{member}"
        entries.append((full, role, f"reference/random/generated/{full}.html#{full}"))
    for member, role in _class_members(np.random.RandomState):
        full = f"numpy.random.RandomState.{member}"
        entries.append((full, role, f"reference/random/generated/{full}.html#{full}"))
    for term in ("array_like", "array-like", "dtype", "ndarray", "broadcast", "view"):
        slug = term.replace("_", "-") if term != "array_like" else "array-like"
        entries.append((term, "std:term", f"glossary.html#term-{slug}"))
    return entries, np.__version__


def scipy_entries():
    import scipy

    entries = [("scipy", "py:module", "reference/index.html#module-scipy")]
    subs = ("optimize", "special", "stats", "sparse", "sparse.linalg", "linalg", "integrate",
            "interpolate", "spatial", "fft", "signal", "ndimage", "cluster", "io")  # fmt: skip
    for sub in subs:
        try:
            module = importlib.import_module(f"scipy.{sub}")
        except ImportError:
            continue
        modname = f"scipy.{sub}"
        entries.append((modname, "py:module", f"reference/{sub}.html#module-{modname}"))
        entries += _member_entries(modname, module,
                                   lambda full: f"reference/generated/{full}.html#{full}")
    return entries, scipy.__version__


def sklearn_entries():
    import sklearn

    entries = [("sklearn", "py:module", "api/index.html#module-sklearn")]
    for top in ("config_context", "get_config", "set_config", "show_versions"):
        full = f"sklearn.{top}"
        entries.append((full, "py:function", f"modules/generated/{full}.html#{full}"))
    for info in pkgutil.walk_packages(sklearn.__path__, "sklearn."):
        modname = info.name
        parts = modname.split(".")
        if any(part.startswith("_") or part in {"tests", "externals"} for part in parts):
            continue
        module = _quiet_import(modname)
        if module is None:
            continue
        if not hasattr(module, "__all__"):
            continue
        entries.append((modname, "py:module", f"api/{modname}.html#module-{modname}"))
        for name in _public(module.__all__):
            obj = getattr(module, name, None)
            if obj is None or isinstance(obj, types.ModuleType):
                continue
            full = f"{modname}.{name}"
            page = f"modules/generated/{full}.html"
            entries.append((full, _role(obj), f"{page}#{full}"))
            if isinstance(obj, type):
                for klass in obj.__mro__:
                    if not klass.__module__.startswith("sklearn"):
                        continue
                    for member, role in _class_members(klass):
                        entries.append((f"{full}.{member}", role, f"{page}#{full}.{member}"))
    for term in ("estimator", "estimators", "classifier", "regressor", "transformer",
                 "fit", "predict", "transform", "random_state", "n_jobs", "cv",
                 "meta-estimator", "pipeline", "hyperparameter", "parameter",
                 "attributes", "clone", "array-like", "sparse matrix", "sample"):  # fmt: skip
        entries.append((term, "std:term", f"glossary.html#term-{term.replace(' ', '-')}"))
    return entries, sklearn.__version__


# --------------------------------------------------------------------------------------
def download(name: str, base: str) -> bytes:
    with urllib.request.urlopen(base + "objects.inv", timeout=60) as response:
        data = response.read()
    if not data.startswith(b"# Sphinx inventory version 2"):
        raise RuntimeError(f"{name}: {base}objects.inv is not a v2 inventory")
    return data


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--download", action="store_true",
                        help="fetch the projects' real objects.inv (needs a network)")  # fmt: skip
    parser.add_argument("projects", nargs="*", choices=[[], *PROJECTS], default=[],
                        help="which inventories (default: all)")  # fmt: skip
    args = parser.parse_args(argv)
    names = args.projects or list(PROJECTS)
    for name in names:
        project, base = PROJECTS[name]
        path = HERE / f"{name}.inv"
        if args.download:
            path.write_bytes(download(name, base))
            print(f"{path.name}: downloaded from {base}objects.inv")
            continue
        if name == "python":
            entries, version = python_entries(), ".".join(map(str, sys.version_info[:2]))
        else:
            entries, version = {"numpy": numpy_entries, "scipy": scipy_entries,
                                "sklearn": sklearn_entries}[name]()  # fmt: skip
        count = write_inventory(path, project, version, entries)
        print(f"{path.name}: {count} objects introspected from {project} {version}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
