"""Saving and loading (Paddle's ``fluid.io``): persistables (checkpoints of
parameters and optimizer state) and inference models. The files are the C++
API's (MANIFEST + checksummed tensor files, ``__model__``), so a model saved
from Python loads in C++ and back. Saves are atomic: a directory is written
under a temporary name and renamed into place."""

from typing import Any, List, Optional, Sequence, Tuple

from . import _core
from .dataloader import DataLoader, PyReader  # noqa: F401  (fluid.io.DataLoader)
from ._save_target import save_target
from .executor import Executor
from .framework import Program, Variable, default_main_program, global_scope


def _names(items: Sequence[Any]) -> List[str]:
    if isinstance(items, (Variable, str)):
        items = [items]
    return [v.name if isinstance(v, Variable) else str(v) for v in items]


def _no_filename(fn: str, **given: Any) -> None:
    for arg, value in given.items():
        if value is not None:
            raise NotImplementedError(
                f"fluid.io.{fn}({arg}=...): Flotilla writes one directory with a manifest and one "
                f"checksummed file per variable; nearest: omit {arg}")


def save_persistables(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                      filename: Optional[str] = None) -> None:
    """Writes every persistable variable of ``main_program`` (default: the
    default main program) from the global scope to ``dirname``, atomically."""
    _no_filename("save_persistables", filename=filename)
    with save_target(dirname) as target:
        _core.io.save_persistables(target, main_program or default_main_program(), global_scope())


def load_persistables(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                      filename: Optional[str] = None) -> None:
    """Reads what :func:`save_persistables` wrote into the global scope;
    raises CorruptionError for a damaged file and NotFoundError for a missing
    one, naming it."""
    _no_filename("load_persistables", filename=filename)
    _core.io.load_persistables(dirname, main_program or default_main_program(), global_scope())


def save_params(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                filename: Optional[str] = None) -> None:
    """Saves the persistable variables (parameters and optimizer state)."""
    save_persistables(executor, dirname, main_program, filename)


def load_params(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                filename: Optional[str] = None) -> None:
    """Loads what :func:`save_params` wrote."""
    load_persistables(executor, dirname, main_program, filename)


def save_inference_model(dirname: str, feeded_var_names: Sequence[Any], target_vars: Sequence[Any],
                         executor: Executor, main_program: Optional[Program] = None,
                         model_filename: Optional[str] = None, params_filename: Optional[str] = None,
                         export_for_deployment: bool = True, program_only: bool = False) -> List[str]:
    """Saves ``main_program`` pruned to ``target_vars`` and the parameters it
    reads (Paddle 1.x signature). Returns the fetch names."""
    _no_filename("save_inference_model", model_filename=model_filename, params_filename=params_filename)
    if program_only:
        raise NotImplementedError("save_inference_model(program_only=True) is not in Flotilla; "
                                  "nearest: Program.serialize()")
    fetches = _names(target_vars)
    _core.io.save_inference_model(dirname, _names(feeded_var_names), fetches, executor._exe,
                                  main_program or default_main_program(), global_scope())
    return fetches


def load_inference_model(dirname: str, executor: Executor, model_filename: Optional[str] = None,
                         params_filename: Optional[str] = None,
                         pserver_endpoints: Any = None) -> Tuple[Program, List[str], List[Variable]]:
    """Loads what :func:`save_inference_model` (Python or C++) wrote: returns
    ``[program, feed_target_names, fetch_targets]`` with its parameters in
    the global scope."""
    _no_filename("load_inference_model", model_filename=model_filename, params_filename=params_filename)
    program, feeds, fetches = _core.io.load_inference_model(dirname, global_scope())
    block = program.global_block()
    return [program, feeds, [block.var(n) for n in fetches]]


def save_inference_model_v2(path_prefix: str, feed_vars: Sequence[Variable], fetch_vars: Sequence[Variable],
                            executor: Executor, program: Optional[Program] = None, **kwargs: Any) -> None:
    """Paddle 2.x ``paddle.static.save_inference_model(path_prefix, feed_vars,
    fetch_vars, executor)``; the model is the directory ``path_prefix``."""
    save_inference_model(path_prefix, feed_vars, fetch_vars, executor, program)


def load_inference_model_v2(path_prefix: str, executor: Executor,
                            **kwargs: Any) -> Tuple[Program, List[str], List[Variable]]:
    """Paddle 2.x ``paddle.static.load_inference_model(path_prefix, executor)``."""
    return load_inference_model(path_prefix, executor)


def save_vars(*args: Any, **kwargs: Any) -> None:
    """Not in Flotilla: use :func:`save_persistables`."""
    raise NotImplementedError("fluid.io.save_vars is not in Flotilla; nearest: fluid.io.save_persistables")


def load_vars(*args: Any, **kwargs: Any) -> None:
    """Not in Flotilla: use :func:`load_persistables`."""
    raise NotImplementedError("fluid.io.load_vars is not in Flotilla; nearest: fluid.io.load_persistables")


__all__ = ["save_persistables", "load_persistables", "save_params", "load_params", "save_inference_model",
           "load_inference_model", "DataLoader", "PyReader"]
