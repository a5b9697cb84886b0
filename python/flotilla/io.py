"""Saving and loading (Paddle's ``fluid.io``): persistables (checkpoints of
parameters and optimizer state) and inference models. The files are the C++
API's (MANIFEST + checksummed tensor files, ``__model__``), so a model saved
from Python loads in C++ and back. Saves are atomic: a directory is written
under a temporary name and renamed into place."""

import os
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple

from . import _core
from .dataloader import DataLoader, PyReader  # noqa: F401  (fluid.io.DataLoader)
from ._save_target import save_target
from .executor import Executor
from .framework import Program, Variable, default_main_program, global_scope


def _names(items: Sequence[Any]) -> List[str]:
    if isinstance(items, (Variable, str)):
        items = [items]
    return [v.name if isinstance(v, Variable) else str(v) for v in items]


def program_of(program: Optional[Program], fn: str) -> Program:
    """``program`` (a Program, or a CompiledProgram's), default: the default
    main program; TypeError naming ``fn`` for anything else."""
    if program is None:
        return default_main_program()
    inner = getattr(program, "_program", program)
    if not isinstance(inner, Program):
        raise TypeError(f"{fn}: program type must be `fluid.Program`, but received `{type(program).__name__}`")
    return inner


def _dirname(dirname: Any, fn: str) -> str:
    if not isinstance(dirname, (str, os.PathLike)):
        raise TypeError(f"{fn}: dirname must be a directory path (a str), got {type(dirname).__name__} "
                        f"{dirname!r}")
    return os.fspath(dirname)


def _is_persistable(var: Variable) -> bool:
    return var.persistable


def _is_parameter(var: Variable) -> bool:
    return var.is_parameter


def _vars_of(program: Program, vars: Optional[Sequence[Any]], predicate: Optional[Callable]) -> List[str]:
    """The names ``vars`` lists, or those of block 0 ``predicate`` accepts
    (default and Flotilla's own predicates: among the saveable persistables,
    dense tensors without feed/fetch), sorted: the order Paddle's combined
    files keep."""
    if vars is not None:
        return sorted(set(_names(vars)))
    block = program.global_block()
    accept = predicate or _is_persistable
    candidates = _core.io.persistable_names(program) if accept in (_is_persistable, _is_parameter) \
        else block.var_names()
    return sorted(n for n in candidates if accept(block.var(n)))


def save_vars(executor: Executor, dirname: Optional[str], main_program: Optional[Program] = None,
              vars: Optional[Sequence[Any]] = None, predicate: Optional[Callable] = None,
              filename: Optional[str] = None) -> Optional[bytes]:
    """Writes ``vars`` (or the variables of ``main_program`` that ``predicate``
    accepts) from the global scope. Without ``filename``: Flotilla's checkpoint
    directory (MANIFEST + checksummed files, written atomically); with it: one
    file ``dirname/filename`` in Paddle's combined format, variables sorted by
    name, which Paddle's ``load_vars(..., filename=...)`` reads. With neither
    ``dirname`` nor ``filename`` it returns those combined bytes instead."""
    names = _vars_of(program_of(main_program, "fluid.io.save_vars"), vars, predicate)
    if dirname is None and filename is None:
        return _core.io.serialize_vars(names, global_scope())
    dirname = _dirname(dirname, "fluid.io.save_vars")
    if filename is not None:
        _core.io.save_combined(os.path.join(dirname, os.path.basename(filename)), names, global_scope())
        return None
    with save_target(dirname) as target:
        _core.io.save_vars(target, names, global_scope())
    return None


def load_vars(executor: Executor, dirname: str, main_program: Optional[Program] = None,
              vars: Optional[Sequence[Any]] = None, predicate: Optional[Callable] = None,
              filename: Optional[str] = None) -> None:
    """Reads what :func:`save_vars` wrote — or what Paddle's ``save_vars``
    wrote: its combined file, or its one file per variable — into the global
    scope. Shapes and dtypes are checked against ``main_program``; a damaged
    file raises CorruptionError, a missing one NotFoundError, naming it."""
    dirname = _dirname(dirname, "fluid.io.load_vars")
    program = program_of(main_program, "fluid.io.load_vars")
    names = _vars_of(program, vars, predicate)
    if filename is not None:
        _core.io.load_combined(os.path.join(dirname, os.path.basename(filename)), names, global_scope(), program)
        return
    _core.io.load_vars_from_dir(dirname, names, global_scope(), program)


def save_persistables(executor: Executor, dirname: Optional[str], main_program: Optional[Program] = None,
                      filename: Optional[str] = None) -> Optional[bytes]:
    """Writes every persistable variable of ``main_program`` (default: the
    default main program): parameters and optimizer state. See :func:`save_vars`."""
    return save_vars(executor, dirname, main_program, None, _is_persistable, filename)


def load_persistables(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                      filename: Optional[str] = None) -> None:
    """Reads what :func:`save_persistables` (Flotilla's or Paddle's) wrote."""
    load_vars(executor, dirname, main_program, None, _is_persistable, filename)


def save_params(executor: Executor, dirname: Optional[str], main_program: Optional[Program] = None,
                filename: Optional[str] = None) -> Optional[bytes]:
    """Writes the parameters of ``main_program`` (not the optimizer state)."""
    return save_vars(executor, dirname, main_program, None, _is_parameter, filename)


def load_params(executor: Executor, dirname: str, main_program: Optional[Program] = None,
                filename: Optional[str] = None) -> None:
    """Reads what :func:`save_params` (Flotilla's or Paddle's) wrote."""
    load_vars(executor, dirname, main_program, None, _is_parameter, filename)


def _files(model_filename: Optional[str], params_filename: Optional[str], export_for_deployment: bool = True,
           program_only: bool = False) -> "_core.io.InferenceModelFiles":
    base = lambda f: os.path.basename(f) if f else ""  # noqa: E731  (Paddle keeps base names only)
    return _core.io.InferenceModelFiles(base(model_filename), base(params_filename), bool(export_for_deployment),
                                        bool(program_only))


def _check_feeds_and_targets(feeded_var_names: Any, target_vars: Any, export_for_deployment: bool) -> None:
    names = [feeded_var_names] if isinstance(feeded_var_names, str) else feeded_var_names
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise ValueError("'feed_var_names' should be a list of str.")
    targets = [target_vars] if isinstance(target_vars, Variable) else target_vars
    if not isinstance(targets, (list, tuple)) or not all(isinstance(v, Variable) for v in targets):
        raise ValueError("'target_vars' should be a list of Variable.")
    if export_for_deployment and not targets:
        raise ValueError("save_inference_model: target_vars is empty; give the prediction Variables, or "
                         "export_for_deployment=False to save the whole program")


def save_inference_model(dirname: str, feeded_var_names: Sequence[Any], target_vars: Sequence[Any],
                         executor: Executor, main_program: Optional[Program] = None,
                         model_filename: Optional[str] = None, params_filename: Optional[str] = None,
                         export_for_deployment: bool = True, program_only: bool = False,
                         clip_extra: bool = False) -> List[str]:
    """Saves ``main_program`` pruned to ``target_vars`` and the parameters it
    reads (Paddle 1.x signature). Returns the fetch names.

    Without file names the directory is Flotilla's (``__model__``,
    ``__feed_fetch__``, a checkpoint), written atomically. ``model_filename``
    / ``params_filename`` give Paddle's layout: the model in that file, the
    parameters in one combined file (Paddle's format, sorted by name) or one
    Paddle file per variable, each file written into ``dirname`` keeping
    its other files; the feed/fetch names go to ``<model_filename>.feed_fetch``.
    ``export_for_deployment=False`` saves the whole program unpruned as
    ``<model>.main_program`` (targets may be empty) and every persistable;
    ``program_only`` saves no parameters."""
    dirname = _dirname(dirname, "save_inference_model")
    _check_feeds_and_targets(feeded_var_names, target_vars, export_for_deployment)
    program = program_of(main_program, "save_inference_model")
    if not isinstance(executor, Executor):
        raise TypeError(f"save_inference_model: executor must be an Executor, got {type(executor).__name__}")
    if "auc" in program.global_block().ops:
        warnings.warn("please ensure that you have set the auc states to zeros before saving inference model")
    fetches = _names(target_vars)
    feeds = _names(feeded_var_names)
    if not program_only:
        saved = program._prune(fetches) if export_for_deployment else program
        if not _core.io.persistable_names(saved):
            # Paddle's save_vars says so, and writes the model anyway.
            warnings.warn("no variable in your model, please ensure there are any variables in your model to save")
    files = _files(model_filename, params_filename, export_for_deployment, program_only)
    if files.paddle_layout():
        _core.io.save_inference_model(dirname, feeds, fetches, executor._exe, program, global_scope(), files)
        return fetches
    with save_target(dirname) as target:
        _core.io.save_inference_model(target, feeds, fetches, executor._exe, program, global_scope(), files)
    return fetches


def load_inference_model(dirname: Optional[str], executor: Executor, model_filename: Any = None,
                         params_filename: Any = None,
                         pserver_endpoints: Any = None) -> Tuple[Program, List[str], List[Variable]]:
    """Loads what :func:`save_inference_model` (Python or C++) wrote, with the
    same file names: returns ``[program, feed_target_names, fetch_targets]``
    with its parameters in the global scope. With ``dirname=None``,
    ``model_filename`` and ``params_filename`` are the model's bytes (a saved
    model file, ``serialize_program``) and its parameters' (``save_persistables(exe,
    None, program)``, ``serialize_persistables``)."""
    if pserver_endpoints is not None:
        raise NotImplementedError("load_inference_model(pserver_endpoints=...) (a distributed lookup table "
                                  "served for inference) is not in Flotilla; nearest: omit it")
    if dirname is None:
        if params_filename is None:
            raise ValueError("The path of params cannot be None when the directory path is None.")
        if not isinstance(model_filename, bytes) or not isinstance(params_filename, bytes):
            raise ValueError("load_inference_model(None, ...): model_filename and params_filename must be the "
                             "model's and the parameters' bytes")
        program, feeds, fetches = _core.io.load_inference_model_from_memory(model_filename, params_filename,
                                                                            global_scope())
    else:
        dirname = _dirname(dirname, "load_inference_model")
        if not os.path.isdir(dirname):
            raise ValueError(f"There is no directory named '{dirname}'")
        program, feeds, fetches = _core.io.load_inference_model(dirname, global_scope(),
                                                                _files(model_filename, params_filename))
    block = program.global_block()
    return [program, feeds, [block.var(n) for n in fetches]]


def load_program_state(model_path: str, var_list: Optional[Sequence[Variable]] = None):
    """``{name: ndarray}`` of a saved model; see :func:`flotilla.static.load_program_state`."""
    from .static.io import load_program_state as load_state
    return load_state(model_path, var_list)


def set_program_state(program: Program, state_dict: Any) -> None:
    """Sets a program's persistables; see :func:`flotilla.static.set_program_state`."""
    from .static.io import set_program_state as set_state
    set_state(program, state_dict)


__all__ = ["load_program_state", "set_program_state", "save_vars", "load_vars", "save_persistables", "load_persistables", "save_params", "load_params",
           "save_inference_model", "load_inference_model", "DataLoader", "PyReader"]
