"""Docstring templates: a description written once, filled into every docstring using it.

A line ``<<name>>`` or ``<<name:argument>>``, alone on its line, is replaced by the text
registered under ``name``, indented like the marker; ``{arg}`` in the text becomes the
argument (a text may also be a function of the argument). Markers are found at any
indentation: Python 3.13 strips a docstring's common indentation at compile time, older
versions keep it. Lines that follow a marker, indented one level deeper, continue the
filled description (what one docstring adds to the shared text).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable, Mapping

__all__ = ["fill_docstring", "fill_docstrings"]

_MARKER = re.compile(r"^([ \t]*)<<([A-Za-z_]+)(?::([^>\n]*))?>>[ \t]*$", flags=re.M)

Texts = Mapping[str, "str | Callable[[str], str]"]


def fill_docstring(doc: str, texts: Texts) -> str:
    """Replace the markers of ``texts``' names in ``doc`` by their texts.

    Parameters
    ----------
    doc : str
        A docstring, dedented or not.
    texts : mapping of str to str or callable
        The shared texts by name, each a numpydoc entry written at indentation 0 (its
        description lines indented by four spaces), or a function of the marker's
        argument that returns one. Markers of other names are left as they are.

    Returns
    -------
    str
        ``doc`` with every marker of a name in ``texts`` replaced.
    """

    def replace(match: re.Match) -> str:
        indent, name, argument = match.group(1), match.group(2), match.group(3) or ""
        if name not in texts:
            return match.group(0)
        text = texts[name]
        text = text(argument) if callable(text) else text.replace("{arg}", argument)
        return textwrap.indent(textwrap.dedent(text).strip("\n"), indent)

    return _MARKER.sub(replace, doc)


def fill_docstrings(obj, texts: Texts):
    """Fill the markers of ``obj``'s docstring and, for a class, of its own methods' and
    properties' docstrings.

    Parameters
    ----------
    obj : class or function
        What to fill in place (a class's inherited members are filled where they are
        defined).
    texts : mapping of str to str or callable
        The shared texts by name, as for :func:`fill_docstring`.

    Returns
    -------
    class or function
        ``obj`` itself, so that this serves as a decorator's body.
    """
    targets = [obj]
    if inspect.isclass(obj):
        for value in vars(obj).values():
            if isinstance(value, property):
                targets.append(value.fget)
            targets.append(getattr(value, "__func__", value))
    for target in targets:
        doc = getattr(target, "__doc__", None)
        if (inspect.isclass(target) or inspect.isfunction(target)
                or isinstance(target, property)) and doc and "<<" in doc:
            target.__doc__ = fill_docstring(doc, texts)
    return obj


def constant_docstring(name: str) -> str | None:
    """The ``#:`` comment of a module constant, read where the constant is defined.

    A constant re-exported by a package (``skdp.privacy.ACCOUNTING_METHODS``, defined in
    ``skdp/privacy/events.py``) carries no docstring of its own: its ``__doc__`` is its
    type's. Sphinx's autodoc reads ``#:`` comments in the named module only; this looks in
    the package and in its already imported modules. For the docs build and its tests
    (it needs Sphinx's source analyzer).

    Parameters
    ----------
    name : str
        The constant's public name, ``"package.NAME"``.

    Returns
    -------
    str or None
        The comment's text, its lines joined and ending with a newline, or ``None`` when
        no comment precedes the constant's assignment.
    """
    import importlib
    import pkgutil
    import sys

    from sphinx.pycode import ModuleAnalyzer

    modname, _, attr = name.rpartition(".")
    module = importlib.import_module(modname)
    value = getattr(module, attr)
    candidates = [modname] + [f"{modname}.{info.name}"
                              for info in pkgutil.iter_modules(getattr(module, "__path__", []))]
    for candidate in candidates:
        # The module that defines a re-exported constant is imported already.
        if getattr(sys.modules.get(candidate), attr, None) is not value:
            continue
        docs = ModuleAnalyzer.for_module(candidate).find_attr_docs()
        if ("", attr) in docs:
            return "\n".join(docs[("", attr)])  # its lines end with a blank one
    return None
