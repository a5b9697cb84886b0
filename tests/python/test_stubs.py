"""The type stubs of flotilla._core (python/flotilla/_core/*.pyi, written by
python/stubgen.py) name exactly what the built module has: every submodule,
function and class, and every class's methods, properties and enum values —
so an IDE completes all of them and nothing that is gone."""

import ast
import inspect
import os
import types
from typing import Dict, Set

import flotilla
import flotilla._core as core

STUB_DIR = os.path.join(os.path.dirname(flotilla.__file__), "_core")
KEPT_DUNDERS = {"__init__", "__array__", "__enter__", "__exit__", "__call__"}


def submodules(module: types.ModuleType):
    for value in vars(module).values():
        if isinstance(value, types.ModuleType) and value.__name__.startswith(module.__name__ + "."):
            yield value
            yield from submodules(value)


def stub_path(module: types.ModuleType) -> str:
    relative = module.__name__[len("flotilla._core"):].lstrip(".").replace(".", os.sep)
    package = os.path.join(STUB_DIR, relative, "__init__.pyi")
    return package if os.path.exists(package) else os.path.join(STUB_DIR, relative + ".pyi")


def stub_names(tree: ast.Module) -> Dict[str, Set[str]]:
    """{"": module-level names, class name: its member names}."""
    names: Dict[str, Set[str]] = {"": set()}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module is None:
            names[""].update(a.name for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AnnAssign)):
            names[""].add(node.name if isinstance(node, ast.FunctionDef) else node.target.id)
        elif isinstance(node, ast.ClassDef):
            names[""].add(node.name)
            names[node.name] = {n.name if isinstance(n, ast.FunctionDef) else n.target.id for n in node.body
                                if isinstance(n, (ast.FunctionDef, ast.AnnAssign))}
    return names


def module_names(module: types.ModuleType) -> Dict[str, Set[str]]:
    names: Dict[str, Set[str]] = {"": {n for n in vars(module) if not n.startswith("__")}}
    for name, value in vars(module).items():
        if inspect.isclass(value) and not name.startswith("__"):
            names[name] = {a for a in vars(value) if not a.startswith("__") or a in KEPT_DUNDERS}
    return names


def test_every_submodule_has_a_stub():
    for module in [core] + list(submodules(core)):
        assert os.path.exists(stub_path(module)), f"no stub for {module.__name__}: run python/stubgen.py"


def test_stub_names_match_the_module():
    for module in [core] + list(submodules(core)):
        with open(stub_path(module)) as f:
            stubbed = stub_names(ast.parse(f.read()))
        actual = module_names(module)
        assert stubbed[""] == actual[""], (module.__name__, stubbed[""] ^ actual[""])
        for cls, members in actual.items():
            if cls:
                assert stubbed[cls] == members, (f"{module.__name__}.{cls}", stubbed[cls] ^ members)


def test_signatures_carry_the_parameter_names():
    with open(stub_path(core)) as f:
        tree = ast.parse(f.read())
    executor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Executor")
    run = next(n for n in executor.body if isinstance(n, ast.FunctionDef) and n.name == "_run")
    assert [a.arg for a in run.args.args] == ["self", "program", "feed", "fetch_list", "scope", "return_numpy"]
