"""Saving and loading (Paddle's ``fluid.io``): persistables (checkpoints of
parameters and optimizer state) and inference models. The files are the C++
API's, so a model saved from Python loads in C++ and back."""

import os
from typing import Any, List, Optional, Sequence, Tuple

from . import _core
from .dataloader import DataLoader  # noqa: F401  (fluid.io.DataLoader)
from .executor import Executor
from .framework import Program, Variable, default_main_program, global_scope


def _names(items: Sequence[Any]) -> List[str]:
    return [v.name if isinstance(v, Variable) else str(v) for v in items]


def save_persistables(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                      filename: Optional[str] = None) -> None:
    """Writes every persistable variable of ``main_program`` (default: the
    default main program) from the global scope to ``dirname``, atomically."""
    if filename is not None:
        raise NotImplementedError("save_persistables(filename=...): Flotilla writes one checkpoint "
                                  "directory with a manifest; omit filename")
    _core.io.save_persistables(dirname, main_program or default_main_program(), global_scope())


def load_persistables(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                      filename: Optional[str] = None) -> None:
    """Reads what :func:`save_persistables` wrote into the global scope;
    raises CorruptionError for a damaged file and NotFoundError for a missing one."""
    if filename is not None:
        raise NotImplementedError("load_persistables(filename=...): omit filename")
    _core.io.load_persistables(dirname, main_program or default_main_program(), global_scope())


def save_inference_model(dirname: str, feeded_var_names: Sequence[Any], target_vars: Sequence[Any],
                         executor: Executor, main_program: Optional[Program] = None, model_filename=None,
                         params_filename=None, export_for_deployment: bool = True,
                         program_only: bool = False) -> List[str]:
    """Saves the program pruned to ``target_vars`` and its parameters (Paddle
    1.x signature). Returns the fetch names."""
    if isinstance(target_vars, (Variable, str)):
        target_vars = [target_vars]
    fetches = _names(target_vars)
    _core.io.save_inference_model(dirname, _names(feeded_var_names), fetches, executor._exe,
                                  main_program or default_main_program(), global_scope())
    return fetches


def load_inference_model(dirname: str, executor: Executor, model_filename=None,
                         params_filename=None) -> Tuple[Program, List[str], List[Variable]]:
    """Loads what :func:`save_inference_model` wrote: returns ``[program,
    feed_target_names, fetch_targets]`` with its parameters in the global scope."""
    program, feeds, fetches = _core.io.load_inference_model(dirname, global_scope())
    block = program.global_block()
    return [program, feeds, [block.var(n) for n in fetches]]


def save_inference_model_v2(path_prefix: str, feed_vars: Sequence[Variable], fetch_vars: Sequence[Variable],
                            executor: Executor, program: Optional[Program] = None, **kwargs) -> None:
    """Paddle 2.x ``paddle.static.save_inference_model(path_prefix, feed_vars,
    fetch_vars, executor)``: the model goes to the directory ``path_prefix``."""
    if isinstance(feed_vars, Variable):
        feed_vars = [feed_vars]
    if isinstance(fetch_vars, Variable):
        fetch_vars = [fetch_vars]
    save_inference_model(path_prefix, feed_vars, fetch_vars, executor, program)


def load_inference_model_v2(path_prefix: str, executor: Executor, **kwargs):
    """Paddle 2.x ``paddle.static.load_inference_model(path_prefix, executor)``."""
    return load_inference_model(path_prefix, executor)


def save_vars(*args, **kwargs):
    raise NotImplementedError("fluid.io.save_vars is not in Flotilla; use save_persistables")


def load_vars(*args, **kwargs):
    raise NotImplementedError("fluid.io.load_vars is not in Flotilla; use load_persistables")


def save_params(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                filename: Optional[str] = None) -> None:
    """Saves the persistable variables (parameters and optimizer state)."""
    save_persistables(executor, dirname, main_program, filename)


def load_params(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                filename: Optional[str] = None) -> None:
    """Loads what :func:`save_params` wrote."""
    load_persistables(executor, dirname, main_program, filename)


def exists(path: str) -> bool:
    """True when ``path`` holds a Flotilla checkpoint or model."""
    return os.path.exists(path)
