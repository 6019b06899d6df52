"""The type stubs describe what the module has."""

import ast
import pathlib

import depengine
from depengine import _depengine

STUB = pathlib.Path(depengine.__file__).with_name("_depengine.pyi")


def stub_names():
    tree = ast.parse(STUB.read_text())
    names, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {
                n.name if isinstance(n, ast.FunctionDef) else n.target.id
                for n in node.body
                if isinstance(n, ast.FunctionDef) or (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
            }
    return names, members


def test_stubs_are_installed_with_the_marker():
    assert STUB.is_file()
    assert STUB.with_name("py.typed").is_file()


def test_every_public_name_of_the_module_is_in_the_stubs():
    names, members = stub_names()
    public = {n for n in dir(_depengine) if not n.startswith("__") and n != "_shutdown"}
    assert public <= names, public - names
    for cls in ("Engine", "Graph", "Tensor", "Var", "OpStats", "ProfiledOp", "_Profiler"):
        actual = {n for n in vars(getattr(_depengine, cls)) if not n.startswith("_") or n in members[cls]}
        assert actual <= members[cls], (cls, actual - members[cls])
