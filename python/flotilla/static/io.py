"""Paddle 2.x's static saving and loading (``paddle.static``):
``save_inference_model`` / ``load_inference_model`` (``<prefix>.pdmodel``
and ``<prefix>.pdiparams``), ``normalize_program``, ``serialize_*`` /
``deserialize_*``, ``save`` / ``load`` (``.pdparams``, ``.pdopt``,
``.pdmodel``), ``load_program_state`` / ``set_program_state``.

The files are Paddle's where Paddle documents them: ``.pdparams`` and
``.pdopt`` are pickles of ``{name: ndarray}``, and ``.pdiparams`` /
``serialize_persistables`` hold Paddle's tensor serialisation, variables
sorted by name — so parameters Paddle saved this way load here. Programs
(``.pdmodel``, ``serialize_program``) are Flotilla's ProgramDesc: Paddle's
own program files do not load (CorruptionError naming the file).
"""

import os
import pickle
import warnings
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import _core
from .. import io as _fluid_io
from ..executor import Executor
from ..framework import Program, Scope, Variable, global_scope

_SUFFIXES = (".pdparams", ".pdopt", ".pdmodel")


def _var_list(name: str, value: Any, error: type = ValueError) -> List[Variable]:
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values or not all(isinstance(v, Variable) for v in values):
        raise error(f"'{name}' should be a Variable or a list of Variable.")
    return list(values)


def _valid_program(program: Any) -> Program:
    return _fluid_io.program_of(program, "paddle.static")


_get_valid_program = _valid_program  # Paddle's name


def _persistable_names(program: Program, parameters: Optional[bool] = None) -> List[str]:
    """The saveable persistables of block 0 (dense tensors, no feed/fetch),
    sorted; ``parameters`` True: only parameters, False: only the others
    (optimizer state)."""
    block = program.global_block()
    return [n for n in _core.io.persistable_names(program)
            if parameters is None or block.var(n).is_parameter == parameters]


def normalize_program(program: Program, feed_vars: Any, fetch_vars: Any) -> Program:
    """The program save_inference_model saves: a for-test clone of
    ``program`` pruned to what computes ``fetch_vars`` from ``feed_vars``."""
    if not isinstance(program, Program):
        raise TypeError(f"program type must be `fluid.Program`, but received `{type(program).__name__}`")
    feeds = [v.name for v in _var_list("feed_vars", feed_vars, TypeError)]
    fetches = [v.name for v in _var_list("fetch_vars", fetch_vars, TypeError)]
    return _core.io.normalize_program(program, feeds, fetches)


def serialize_program(feed_vars: Any, fetch_vars: Any, **kwargs: Any) -> bytes:
    """The normalized program (``program=`` or the default main one) as bytes,
    naming its feed and fetch targets (what ``.pdmodel`` holds)."""
    feeds = [v.name for v in _var_list("feed_vars", feed_vars)]
    fetches = [v.name for v in _var_list("fetch_vars", fetch_vars)]
    return _core.io.serialize_inference_program(_valid_program(kwargs.get("program")), feeds, fetches)


def serialize_persistables(feed_vars: Any, fetch_vars: Any, executor: Executor, **kwargs: Any) -> bytes:
    """The persistables the normalized program reads, from the global scope,
    in Paddle's combined format (sorted by name)."""
    program = normalize_program(_valid_program(kwargs.get("program")), feed_vars, fetch_vars)
    return _core.io.serialize_vars(_persistable_names(program), global_scope())


def _serialize_persistables(program: Program, executor: Any) -> Optional[bytes]:
    """The persistables of ``program`` as bytes; None when it has none."""
    names = _persistable_names(program)
    return _core.io.serialize_vars(names, global_scope()) if names else None


def deserialize_program(data: bytes) -> Program:
    """A Program from :func:`serialize_program`'s bytes."""
    if not isinstance(data, bytes):
        raise TypeError(f"deserialize_program: data should be bytes, got {type(data).__name__}")
    return Program.parse_from_string(data)


def deserialize_persistables(program: Program, data: bytes, executor: Executor) -> None:
    """Puts :func:`serialize_persistables`'s bytes into the global scope as the
    persistables of ``program``."""
    if not isinstance(program, Program):
        raise TypeError(f"program type must be `fluid.Program`, but received `{type(program).__name__}`")
    _core.io.deserialize_vars(data, _persistable_names(program), global_scope(), "the persistables' bytes",
                              program)


def save_to_file(path: str, content: bytes) -> None:
    """Writes ``content`` to ``path``."""
    if not isinstance(content, bytes):
        raise ValueError("'content' type should be bytes.")
    with open(path, "wb") as f:
        f.write(content)


def load_from_file(path: str) -> bytes:
    """The bytes of ``path``."""
    with open(path, "rb") as f:
        return f.read()


def _path_prefix(path_prefix: Any) -> str:
    if not isinstance(path_prefix, (str, os.PathLike)):
        raise ValueError(f"'path_prefix' should be a string, got {type(path_prefix).__name__} {path_prefix!r}.")
    path_prefix = os.fspath(path_prefix)
    if path_prefix.endswith("/"):
        raise ValueError("'path_prefix' should not be a directory")
    return os.path.abspath(os.path.normpath(path_prefix))


def save_inference_model(path_prefix: str, feed_vars: Any, fetch_vars: Any, executor: Executor,
                         **kwargs: Any) -> None:
    """Paddle 2.x: writes ``<path_prefix>.pdmodel`` (the normalized program,
    naming its feed and fetch targets) and ``<path_prefix>.pdiparams`` (its
    persistables, Paddle's combined format)."""
    path_prefix = _path_prefix(path_prefix)
    for path in (path_prefix, path_prefix + ".pdmodel", path_prefix + ".pdiparams"):
        if os.path.isdir(path):
            raise ValueError(f"'{path}' is an existing directory.")
    feeds = [v.name for v in _var_list("feed_vars", feed_vars)]
    fetches = [v.name for v in _var_list("fetch_vars", fetch_vars)]
    if not isinstance(executor, Executor):
        raise TypeError(f"save_inference_model: executor must be an Executor, got {type(executor).__name__}")
    base = os.path.basename(path_prefix)
    files = _core.io.InferenceModelFiles(base + ".pdmodel", base + ".pdiparams")
    _core.io.save_inference_model(os.path.dirname(path_prefix), feeds, fetches, executor._exe,
                                  _valid_program(kwargs.get("program")), global_scope(), files)


def load_inference_model(path_prefix: str, executor: Executor, **kwargs: Any):
    """Paddle 2.x: loads what :func:`save_inference_model` wrote (or a model
    directory of ``fluid.io.save_inference_model``); returns ``[program,
    feed_target_names, fetch_targets]``. ``model_filename`` /
    ``params_filename`` name the files inside the directory ``path_prefix``;
    with ``path_prefix=None`` they are the model's and parameters' bytes."""
    unknown = set(kwargs) - {"model_filename", "params_filename"}
    if unknown:
        raise ValueError(f"Only 'model_filename' and 'params_filename' are supported as keyword arguments "
                         f"of load_inference_model, got {sorted(unknown)}")
    model, params = kwargs.get("model_filename"), kwargs.get("params_filename")
    if path_prefix is None:
        if not isinstance(model, bytes) or not isinstance(params, bytes):
            raise ValueError("If path_prefix is None, 'model_filename' and 'params_filename' should be the bytes "
                             "of the model and of its parameters (serialize_program, serialize_persistables).")
        return _fluid_io.load_inference_model(None, executor, model, params)
    path_prefix = _path_prefix(path_prefix)
    if model is not None or params is not None or os.path.isdir(path_prefix):
        return _fluid_io.load_inference_model(path_prefix, executor, model, params)
    if not os.path.exists(path_prefix + ".pdmodel"):
        raise ValueError(f"There is no directory named '{path_prefix}' nor a model file '{path_prefix}.pdmodel'")
    base = os.path.basename(path_prefix)
    return _fluid_io.load_inference_model(os.path.dirname(path_prefix), executor, base + ".pdmodel",
                                          base + ".pdiparams")


# ---- save / load of a program's state ----

def _values(names: Sequence[str]) -> Dict[str, np.ndarray]:
    scope = global_scope()
    out = {}
    for n in names:
        found = scope.find_var(n)
        if found is None or not found.is_initialized():
            raise ValueError(f"variable '{n}' has no value in the global scope (run the startup program first)")
        out[n] = np.array(found.get_tensor())
    return out


def save(program: Program, model_path: str, protocol: int = 4, **configs: Any) -> None:
    """Writes ``<model_path>.pdparams`` (the parameters), ``.pdopt`` (the other
    persistables: optimizer state) — pickles of ``{name: ndarray}`` as
    Paddle's — and ``.pdmodel`` (the program)."""
    program = _valid_program(program)
    if os.path.basename(os.fspath(model_path)) == "":
        raise ValueError("The input model_path MUST be format of dirname/filename, but received model_path is "
                         "empty string.")
    protocol = configs.get("pickle_protocol", protocol)
    _check_protocol(protocol)
    model_path = os.fspath(model_path)
    if os.path.dirname(model_path):
        os.makedirs(os.path.dirname(model_path), exist_ok=True)
    for suffix, content in ((".pdparams", _values(_persistable_names(program, True))),
                            (".pdopt", _values(_persistable_names(program, False)))):
        with open(model_path + suffix, "wb") as f:
            pickle.dump(content, f, protocol=protocol)
    save_to_file(model_path + ".pdmodel", program.serialize())


def _prefix(model_path: str) -> str:
    model_path = os.fspath(model_path)
    for suffix in _SUFFIXES:
        if model_path.endswith(suffix):
            return model_path[:-len(suffix)]
    return model_path


def _unpickle(path: str) -> Dict[str, Any]:
    with open(path, "rb") as f:
        loaded = pickle.load(f, encoding="latin1")
    if not isinstance(loaded, dict):
        raise ValueError(f"'{path}' holds a {type(loaded).__name__}, not a dict of name → array")
    if "UnpackBigParamInfor@@" in loaded:
        raise NotImplementedError(f"'{path}' holds parameters split for being over 4 GB; Flotilla does not join "
                                  "them yet; nearest: save with a smaller model or fluid.io.save_persistables")
    return loaded


def _set(var: Variable, value: Any, source: str) -> None:
    array = np.asarray(value)
    expected = [d for d in var.shape]
    if len(expected) != array.ndim or any(e >= 0 and e != a for e, a in zip(expected, array.shape)):
        raise ValueError(f"variable '{var.name}' from {source} has shape {list(array.shape)}, but the program "
                         f"expects {expected}")
    global_scope().var(var.name).get_tensor().set(np.ascontiguousarray(array, dtype=var.dtype))


def load(program: Program, model_path: str, executor: Optional[Executor] = None,
         var_list: Optional[Sequence[Variable]] = None) -> None:
    """Reads what :func:`save` wrote (Flotilla's or Paddle's ``.pdparams`` /
    ``.pdopt``) into the global scope; without a ``.pdparams`` file,
    ``model_path`` is a directory (or, with ``var_list``, a combined file) of
    ``fluid.io.save_params`` / ``save_persistables``."""
    program = _valid_program(program)
    prefix = _prefix(model_path)
    params_file = prefix + ".pdparams"
    block = program.global_block()
    if not os.path.exists(params_file):
        return _load_saved_vars(program, os.fspath(model_path), executor, var_list)
    params = _unpickle(params_file)
    for name in _persistable_names(program, True):
        if name not in params:
            raise ValueError(f"Can not find [{name}] in model file [{params_file}]")
        _set(block.var(name), params[name], params_file)
    others = _persistable_names(program, False)
    if others:
        opt_file = prefix + ".pdopt"
        if not os.path.exists(opt_file):
            raise ValueError(f"Optimizer file [{opt_file}] not exits")
        opt = _unpickle(opt_file)
        for name in others:
            if name not in opt:
                raise ValueError(f"Can not find [{name}] in model file [{opt_file}]")
            _set(block.var(name), opt[name], opt_file)


def _load_saved_vars(program: Program, model_path: str, executor: Optional[Executor],
                     var_list: Optional[Sequence[Variable]]) -> None:
    if executor is None:
        raise ValueError("executor is required when loading model file saved with [ save_params, "
                         "save_persistables, save_vars ]")
    if os.path.isdir(model_path):
        available = set(_saved_names(model_path))
        wanted = None if var_list is None else {v.name for v in var_list}
        names = [n for n in _persistable_names(program) if n in available and (wanted is None or n in wanted)]
        if not names:
            raise ValueError(f"There is no variable of the program in '{model_path}'")
        return _fluid_io.load_vars(executor, model_path, program, vars=names)
    if os.path.isfile(model_path):
        if var_list is None:
            raise ValueError("var_list is required when loading model file saved with [ save_params, "
                             "save_persistables, save_vars ]")
        names = set(program.global_block().var_names())
        for v in var_list:
            if v.name not in names:
                raise LookupError(f"loaded var [{v.name}] is not in program variable list")
        dirname, filename = os.path.split(model_path)
        return _fluid_io.load_vars(executor, dirname, program, vars=var_list, filename=filename)
    raise ValueError(f"There is no model file '{_prefix(model_path)}.pdparams' nor a directory or file "
                     f"'{model_path}'")


def _saved_names(dirname: str) -> List[str]:
    """The variables a directory of saved variables holds: Flotilla's MANIFEST,
    else Paddle's one file per variable (every file, by relative path)."""
    if os.path.exists(os.path.join(dirname, "MANIFEST")):
        return list(_core.io.manifest_names(dirname))
    out = []
    for root, _, files in os.walk(dirname):
        out += [os.path.relpath(os.path.join(root, f), dirname).replace(os.sep, "/") for f in files]
    return out


def load_program_state(model_path: str, var_list: Optional[Sequence[Variable]] = None) -> Dict[str, np.ndarray]:
    """``{name: ndarray}`` of what :func:`save` wrote (``.pdparams`` and
    ``.pdopt``), or of a directory (or, with ``var_list``, a combined file)
    of saved variables."""
    prefix = _prefix(model_path)
    if os.path.exists(prefix + ".pdparams"):
        state = _unpickle(prefix + ".pdparams")
        if os.path.exists(prefix + ".pdopt"):
            state.update(_unpickle(prefix + ".pdopt"))
        return state
    model_path = os.fspath(model_path)
    scope = Scope()
    if os.path.isdir(model_path):
        names = [v.name for v in var_list] if var_list is not None else _saved_names(model_path)
        _core.io.load_vars_from_dir(model_path, names, scope)
    elif os.path.isfile(model_path):
        if var_list is None:
            raise ValueError("var_list can not be None when model_path is a file type")
        names = sorted(v.name for v in var_list)
        _core.io.load_combined(model_path, names, scope)
    else:
        raise ValueError(f"There is no model file '{prefix}.pdparams' nor a directory or file '{model_path}'")
    return {n: np.array(scope.find_var(n).get_tensor()) for n in names}


def set_program_state(program: Program, state_dict: Dict[str, Any]) -> None:
    """Sets the persistables of ``program`` found in ``state_dict`` in the
    global scope (shapes checked); warns about keys the program lacks."""
    program = _valid_program(program)
    block = program.global_block()
    used = set()
    for name in _persistable_names(program):
        found = global_scope().find_var(name)
        if found is None:
            raise ValueError(f"Variable [ {name} ] Not found, Please make sure run startup program")
        if name in state_dict:
            _set(block.var(name), state_dict[name], "the state dict")
            used.add(name)
    unused = [k for k in state_dict if k not in used]
    if unused:
        warnings.warn(f"This list is not set, Because of Paramerter not found in program. There are: "
                      f"{' '.join(unused)}")


# ---- paddle.save / paddle.load ----

def _to_arrays(obj: Any) -> Any:
    if isinstance(obj, Variable):
        return _values([obj.name])[obj.name]
    if isinstance(obj, dict):
        return type(obj)((k, _to_arrays(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_arrays(v) for v in obj)
    return obj


def _check_protocol(protocol: Any) -> None:
    if not isinstance(protocol, int) or isinstance(protocol, bool):
        raise ValueError(f"The 'protocol' MUST be `int`, but received {type(protocol)}")
    if not 2 <= protocol <= 4:
        raise ValueError(f"Expected 1<'protocol'<5, but received protocol={protocol}")


def save_object(obj: Any, path: str, protocol: int = 4, **configs: Any) -> None:
    """Paddle 2.x's ``paddle.save`` in static mode: a Program as its bytes;
    anything else pickled, with Variables (a ``Layer.state_dict()``'s values)
    replaced by their arrays in the global scope."""
    path = os.fspath(path)
    if os.path.basename(path) == "" or os.path.isdir(path):
        raise ValueError(f"The input path MUST be format of dirname/filename, but received {path!r}")
    _check_protocol(configs.get("pickle_protocol", protocol))
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(obj, Program):
        return save_to_file(path, obj.serialize())
    with open(path, "wb") as f:
        pickle.dump(_to_arrays(obj), f, protocol=configs.get("pickle_protocol", protocol))


def load_object(path: str, **configs: Any) -> Any:
    """Paddle 2.x's ``paddle.load`` in static mode: what :func:`save_object`
    (or Paddle's ``paddle.save``) wrote — arrays for tensors, a Program for a
    saved program."""
    data = load_from_file(os.fspath(path))
    try:
        return pickle.loads(data, encoding="latin1")
    except (pickle.UnpicklingError, EOFError, ValueError, IndexError):
        return Program.parse_from_string(data)


__all__ = ["save_object", "load_object", "save_inference_model", "load_inference_model", "normalize_program", "serialize_program",
           "serialize_persistables", "deserialize_program", "deserialize_persistables", "save_to_file",
           "load_from_file", "save", "load", "load_program_state", "set_program_state"]
