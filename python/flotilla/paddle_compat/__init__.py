"""The Paddle compatibility switch: ``python3 -m flotilla.paddle_compat
train.py args...`` runs a script written for PaddlePaddle — ``import
paddle``, ``import paddle.fluid as fluid``, ``from
paddle.fluid.incubate.fleet.collective import fleet`` — with those modules
served by Flotilla.

Nothing named ``paddle`` is installed: an import hook (a meta path finder)
maps ``paddle.*`` names onto Flotilla's modules, so a real Paddle
installation is untouched. The hook is active in that process and in the
Python processes it starts (``sys.executable child.py``, Dataset pipe
commands, launcher workers): the switch puts a ``paddle`` shim first on
their PYTHONPATH (``export_to_children``). Processes started otherwise are
not affected. Anything a script uses that
Flotilla lacks is a stub that raises NotImplementedError naming the Paddle
API and the nearest Flotilla one when called, subclassed or used as a
decorator — never a silent no-op.
``CUDAPlace(i)`` runs on the CPU, with one warning.
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Any, Dict, List, MutableMapping, NoReturn, Optional

from .. import place as _place

# paddle.<name> → the Flotilla module serving it (absent names fall back to
# flotilla.<name>, then to a stub module).
_MODULES: Dict[str, str] = {
    "paddle": "flotilla.paddle_compat.paddle_root",
    "paddle.fluid": "flotilla.fluid",
    "paddle.fluid.layers": "flotilla.layers",
    "paddle.fluid.core": "flotilla.fluid.core",
    "paddle.fluid.lod_tensor": "flotilla.lod_tensor",
    "paddle.fluid.framework": "flotilla.framework",
    "paddle.fluid.executor": "flotilla.executor",
    "paddle.fluid.reader": "flotilla.dataloader",
    "paddle.fluid.transpiler": "flotilla.distributed.transpiler",
    "paddle.fluid.transpiler.distribute_transpiler": "flotilla.distributed.transpiler",
    "paddle.fluid.incubate.fleet.base.role_maker": "flotilla.distributed.fleet.base.role_maker",
    "paddle.fluid.dygraph": None,
    "paddle.core": "flotilla.fluid.core",
    "paddle.common_ops_import": "flotilla.paddle_compat.common_ops_import",
    "paddle.static": "flotilla.static",
    "paddle.static.nn": "flotilla.static.nn",
    "paddle.static.nn.sequence_lod": "flotilla.sequence_lod",
    "paddle.optimizer": "flotilla.optimizer",
    "paddle.nn": "flotilla.nn",
    "paddle.nn.functional": "flotilla.nn.functional",
    "paddle.nn.initializer": "flotilla.initializer",
    "paddle.io": "flotilla.io",
    "paddle.metric": "flotilla.metric",
    "paddle.regularizer": "flotilla.regularizer",
    "paddle.reader": "flotilla.reader",
    "paddle.dataset": "flotilla.dataset",
    "paddle.dataset.uci_housing": "flotilla.dataset.uci_housing",
    "paddle.dataset.mnist": "flotilla.dataset.mnist",
    "paddle.dataset.cifar": "flotilla.dataset.cifar",
    "paddle.distributed": "flotilla.distributed",
    "paddle.distributed.fleet": "flotilla.distributed.fleet",
    "paddle.distributed.fleet.base": "flotilla.distributed.fleet.base",
    "paddle.distributed.fleet.base.role_maker": "flotilla.distributed.fleet.base.role_maker",
    "paddle.utils": "flotilla.paddle_compat.utils",
    "paddle.framework.random": "flotilla.paddle_compat.framework_random",
    "paddle.utils.unique_name": "flotilla.fluid.unique_name",
}

# The nearest Flotilla API of Paddle APIs scripts commonly reach for.
NEAREST: Dict[str, str] = {
    "paddle.disable_static": "static programs (paddle.enable_static()); Flotilla has no dygraph mode",
    "paddle.DataParallel": "fleet.distributed_optimizer under `flotilla launch --devices ...`",
    "paddle.Model": "an Executor loop (flotilla.Executor.run)",
    "paddle.jit": "a static program saved with save_inference_model",
    "paddle.fluid.dygraph": "static programs (fluid.layers, Executor)",
    "paddle.nn": "the layers of paddle.nn (Linear, Embedding, Conv2D, BatchNorm2D, ...) or paddle.static.nn",
    "paddle.nn.initializer": "paddle.nn.initializer.Normal, Uniform, Constant, XavierUniform or XavierNormal",
    "paddle.nn.functional": "the functions of paddle.nn.functional (relu, sigmoid, linear, embedding, "
                            "cross_entropy, binary_cross_entropy_with_logits, conv2d, ...)",
    "paddle.fluid.layers.sequence_pool": "dense [batch, n] inputs with reduce_sum/reduce_mean",
    "paddle.fluid.ParallelExecutor": "fluid.Executor (one process per device)",
    "paddle.distributed.fleet.utils.ps_util.DistributedInfer": "fleet's trainer program cloned with "
                                                               "clone(for_test=True)",
    "paddle.to_tensor": "numpy arrays fed to Executor.run",
    "paddle.increment": "paddle.scale(x, bias=1.0) (x + 1 as a new variable)",
    "paddle.tensor.array_write": "no LoDTensorArray in Flotilla: fetch the variables themselves (fetch_list)",
    "paddle.tensor.array_read": "no LoDTensorArray in Flotilla: fetch the variables themselves (fetch_list)",
    "paddle.tensor.create_array": "no LoDTensorArray in Flotilla: fetch the variables themselves (fetch_list)",
}


def nearest(api: str) -> str:
    """The Flotilla API closest to the Paddle API ``api`` (a sentence)."""
    for prefix in sorted(NEAREST, key=len, reverse=True):
        if api == prefix or api.startswith(prefix + "."):
            return NEAREST[prefix]
    return "none yet (see docs/python.md for what Flotilla offers)"


def _refusal(api: str, use: str = "") -> NotImplementedError:
    return NotImplementedError(f"{use}{api} is not in Flotilla; nearest Flotilla API: {nearest(api)}")


class _Missing:
    """A Paddle API Flotilla lacks: raises NotImplementedError naming it and
    the nearest Flotilla API when called (which covers ``@paddle.x`` and
    ``@paddle.x(...)`` as decorators) or subclassed. No object is an
    instance or a subclass of it."""

    def __init__(self, api: str):
        self._api = api

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise _refusal(self._api)

    def __mro_entries__(self, bases: tuple) -> tuple:
        raise _refusal(self._api, "subclassing ")

    def __instancecheck__(self, instance: Any) -> bool:
        return False

    def __subclasscheck__(self, subclass: Any) -> bool:
        return False

    def __enter__(self) -> Any:
        raise _refusal(self._api, "with ")

    def __exit__(self, *exc: Any) -> None:
        return None

    def __getattr__(self, name: str) -> "_Missing":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(f"{self._api}.{name}")

    def __repr__(self) -> str:
        return f"<Paddle API {self._api}, not in Flotilla>"


class _Proxy(types.ModuleType):
    """``paddle.<name>`` over a Flotilla module: attributes come from it
    (submodules as proxies themselves); absent ones are _Missing stubs."""

    def __init__(self, name: str, target: Optional[types.ModuleType]):
        super().__init__(name, getattr(target, "__doc__", None))
        self.__dict__["_target"] = target
        self.__dict__["__path__"] = []  # a package: paddle.x.y imports go through the finder

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        full = f"{self.__name__}.{attr}"
        target = self.__dict__["_target"]
        # An attribute that is not a module wins over a submodule of its name,
        # as in Paddle (paddle.distributed.fleet.fleet is the Fleet object).
        if target is not None and not isinstance(getattr(target, attr, None), (types.ModuleType, type(None))):
            return getattr(target, attr)
        if full in sys.modules:
            return sys.modules[full]
        if full in _MODULES or _exists(f"{self.__name__}.{attr}"):
            return importlib.import_module(full)
        if target is not None and hasattr(target, attr):
            value = getattr(target, attr)
            if isinstance(value, types.ModuleType) and value.__name__.startswith("flotilla"):
                return _proxy_for(full, value)
            return value
        return _Missing(full)

    def __dir__(self):
        target = self.__dict__["_target"]
        return sorted(set(dir(target) if target is not None else []))


def _flotilla_name(paddle_name: str) -> Optional[str]:
    if paddle_name in _MODULES:
        return _MODULES[paddle_name]
    return "flotilla" + paddle_name[len("paddle"):]


def _exists(paddle_name: str) -> bool:
    target = _flotilla_name(paddle_name)
    if target is None:
        return False
    try:
        return importlib.util.find_spec(target) is not None
    except (ImportError, ValueError):
        return False


def _proxy_for(paddle_name: str, target: Optional[types.ModuleType]) -> _Proxy:
    existing = sys.modules.get(paddle_name)
    if isinstance(existing, _Proxy):
        return existing
    proxy = _Proxy(paddle_name, target)
    sys.modules[paddle_name] = proxy
    return proxy


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        target_name = _flotilla_name(spec.name)
        target = None
        if target_name is not None:
            try:
                target = importlib.import_module(target_name)
            except ModuleNotFoundError as e:
                if e.name is None or not target_name.startswith(e.name):
                    raise
        return _proxy_for(spec.name, target)

    def exec_module(self, module: types.ModuleType) -> None:
        pass

    def get_code(self, fullname: str) -> types.CodeType:
        """What ``python -m paddle.distributed.launch ...`` runs: Paddle's
        launchers start ``flotilla launch --paddle_compat``; no other
        ``paddle`` module is a program."""
        if fullname not in LAUNCHERS:
            raise ImportError(f"python -m {fullname}: only Paddle's launchers ({', '.join(sorted(LAUNCHERS))}) "
                              "run as programs under Flotilla's paddle")
        return compile(f"import sys\nfrom flotilla.paddle_compat import launch\nlaunch({LAUNCHERS[fullname]!r}, "
                       "sys.argv[1:])\n", f"<{fullname}>", "exec")


class PaddleFinder(importlib.abc.MetaPathFinder):
    """Serves ``paddle`` and ``paddle.*`` from Flotilla (see the module docstring)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        if fullname != "paddle" and not fullname.startswith("paddle."):
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=fullname not in LAUNCHERS)


# Paddle's launch modules (and the fleetrun command) → the flotilla
# subcommand that serves them, with --paddle_compat.
LAUNCHERS: Dict[str, str] = {"paddle.distributed.launch": "launch", "paddle.distributed.fleet.launch": "launch",
                             "paddle.distributed.launch_ps": "launch_ps", "fleetrun": "launch"}


def launch(subcommand: str, args: List[str]) -> NoReturn:
    """Replaces this process with ``flotilla <subcommand> --paddle_compat
    args...``: every worker runs its script under the switch."""
    from ..distributed.launch import exec_launcher
    exec_launcher(subcommand, ["--paddle_compat"] + list(args))


def install() -> None:
    """Makes ``import paddle`` serve Flotilla in this process (idempotent).
    ``CUDAPlace`` then runs on the CPU with one warning. Processes this one
    starts are not affected; ``export_to_children`` makes them so."""
    if not any(isinstance(f, PaddleFinder) for f in sys.meta_path):
        for name in [n for n in sys.modules if n == "paddle" or n.startswith("paddle.")]:
            del sys.modules[name]  # a real Paddle imported earlier must not mix with Flotilla
        sys.meta_path.insert(0, PaddleFinder())
    _place.set_compat_mode(True)


# The directory whose ``paddle`` package (child_path/paddle/__init__.py)
# installs the switch in the Python process that imports it, and the
# variable that marks a process tree under the switch.
CHILD_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_path")
CHILD_MARKER = "FLOTILLA_PADDLE_COMPAT"


def export_to_children(env: Optional[MutableMapping[str, str]] = None) -> None:
    """Makes the switch reach the Python processes started from here with
    this environment (default: this process's, which ``subprocess``, shell
    pipe commands and C++ children inherit): CHILD_PATH first on
    PYTHONPATH — so ``import paddle`` in ``sys.executable child.py`` or
    ``python reader.py`` serves Flotilla's, even where a real Paddle is
    installed — and FLOTILLA_PADDLE_COMPAT=1. A child whose environment
    says FLOTILLA_PADDLE_COMPAT=0 imports what it would without the switch.
    Idempotent."""
    env = os.environ if env is None else env
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != CHILD_PATH]
    env["PYTHONPATH"] = os.pathsep.join([CHILD_PATH] + paths)
    env[CHILD_MARKER] = "1"


__all__ = ["install", "export_to_children", "launch", "PaddleFinder", "nearest", "NEAREST", "LAUNCHERS",
           "CHILD_PATH", "CHILD_MARKER"]
