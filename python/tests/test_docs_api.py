"""The Python API reference, generated from the docstrings with pdoc (docs/README.md, "Python API
reference"): it builds, every public name of the package has a docstring, and none is longer
than a terminal's screen."""

import inspect

import pytest

import stoker

pdoc = pytest.importorskip("pdoc")  # scripts/requirements.txt; a GPU machine may lack it
import pdoc.doc  # noqa: E402  (after the skip)

SCREEN = 30  # lines a docstring may take: the details go to the guides


def public_names(module: pdoc.doc.Module) -> list:
    """The documented objects of `module` and its public submodules: the modules, their public
    names (`__all__` where there is one), and each public class's own methods and properties
    (attributes are the class docstring's to describe)."""
    found, stack = [], [module]
    while stack:
        doc = stack.pop()
        found.append(doc)
        if isinstance(doc, pdoc.doc.Module):
            stack += list(doc.submodules)
            listed = getattr(doc.obj, "__all__", ())
            stack += [m for m in doc.members.values()
                      if not m.name.startswith("_") or m.name in listed]
        elif isinstance(doc, pdoc.doc.Class):
            for member in doc.own_members:
                static = inspect.getattr_static(doc.obj, member.name, None)
                if member.name.startswith("_") or (
                        isinstance(member, pdoc.doc.Variable) and not isinstance(static, property)):
                    continue
                stack.append(member)
    return found


def undocumented(module) -> list:
    return sorted(doc.fullname for doc in public_names(pdoc.doc.Module(module))
                  if not doc.docstring.strip())


def too_long(module) -> list:
    return sorted(f"{doc.fullname}: {doc.docstring.count(chr(10)) + 1} lines"
                  for doc in public_names(pdoc.doc.Module(module))
                  if doc.docstring.count("\n") + 1 > SCREEN)


def test_the_reference_builds(tmp_path):
    pdoc.pdoc("stoker", output_directory=tmp_path)
    page = (tmp_path / "stoker.html").read_text()
    assert 'id="Loader"' in page and 'id="write_dataset"' in page
    assert (tmp_path / "stoker" / "transforms.html").exists()


def test_every_public_name_has_a_docstring():
    assert undocumented(stoker) == []


def test_docstrings_fit_a_terminal():
    assert too_long(stoker) == []


def test_a_name_without_a_docstring_is_found(tmp_path, monkeypatch):
    package = tmp_path / "sample_api"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""A package."""\n\n'
        'LIMIT = 3\n"""The limit."""\n\n'
        'BARE = 4\n\n'
        'def documented():\n    """Does it."""\n\n'
        'def bare():\n    pass\n\n'
        'def _private():\n    pass\n\n'
        'class Thing:\n    """A thing."""\n\n'
        '    size = 1\n\n'
        '    def method(self):\n        pass\n\n'
        '    @property\n    def shape(self):\n        return 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    module = pytest.importorskip("sample_api")
    assert undocumented(module) == ["sample_api.BARE", "sample_api.Thing.method",
                                    "sample_api.Thing.shape", "sample_api.bare"]
