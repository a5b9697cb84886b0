"""The Paddle compatibility switch: ``python3 -m flotilla.paddle_compat
train.py args...`` runs a script written for PaddlePaddle — ``import
paddle``, ``import paddle.fluid as fluid``, ``from
paddle.fluid.incubate.fleet.collective import fleet`` — with those modules
served by Flotilla.

Nothing named ``paddle`` is installed: an import hook (a meta path finder)
active only in that process maps ``paddle.*`` names onto Flotilla's modules,
so a real Paddle installation is untouched. Anything a script uses that
Flotilla lacks is a stub that raises NotImplementedError naming the Paddle
API and the nearest Flotilla one when called — never a silent no-op.
``CUDAPlace(i)`` runs on the CPU, with one warning.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, Dict, Optional

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
    "paddle.distributed": "flotilla.distributed",
    "paddle.distributed.fleet": "flotilla.distributed.fleet",
    "paddle.distributed.fleet.base": "flotilla.distributed.fleet.base",
    "paddle.distributed.fleet.base.role_maker": "flotilla.distributed.fleet.base.role_maker",
    "paddle.utils": "flotilla.paddle_compat.utils",
    "paddle.utils.unique_name": "flotilla.fluid.unique_name",
}

# The nearest Flotilla API of Paddle APIs scripts commonly reach for.
NEAREST: Dict[str, str] = {
    "paddle.disable_static": "static programs (paddle.enable_static()); Flotilla has no dygraph mode",
    "paddle.DataParallel": "fleet.distributed_optimizer under `flotilla launch --devices ...`",
    "paddle.Model": "an Executor loop (flotilla.Executor.run)",
    "paddle.jit": "a static program saved with save_inference_model",
    "paddle.fluid.dygraph": "static programs (fluid.layers, Executor)",
    "paddle.nn.Layer": "functions of paddle.static.nn (fc, embedding) on static Variables",
    "paddle.nn.Linear": "paddle.static.nn.fc",
    "paddle.nn.Embedding": "paddle.static.nn.embedding",
    "paddle.fluid.layers.sequence_pool": "dense [batch, n] inputs with reduce_sum/reduce_mean",
    "paddle.fluid.ParallelExecutor": "fluid.Executor (one process per device)",
    "paddle.distributed.fleet.utils.ps_util.DistributedInfer": "fleet's trainer program cloned with "
                                                               "clone(for_test=True)",
    "paddle.to_tensor": "numpy arrays fed to Executor.run",
}


def nearest(api: str) -> str:
    """The Flotilla API closest to the Paddle API ``api`` (a sentence)."""
    for prefix in sorted(NEAREST, key=len, reverse=True):
        if api == prefix or api.startswith(prefix + "."):
            return NEAREST[prefix]
    return "none yet (see docs/python.md for what Flotilla offers)"


class _Missing:
    """A Paddle API Flotilla lacks: raises at the call, naming it."""

    def __init__(self, api: str):
        self._api = api

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{self._api} is not in Flotilla; nearest Flotilla API: {nearest(self._api)}")

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
        if full in sys.modules:
            return sys.modules[full]
        if full in _MODULES or _exists(f"{self.__name__}.{attr}"):
            return importlib.import_module(full)
        target = self.__dict__["_target"]
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


class PaddleFinder(importlib.abc.MetaPathFinder):
    """Serves ``paddle`` and ``paddle.*`` from Flotilla (see the module docstring)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        if fullname != "paddle" and not fullname.startswith("paddle."):
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)


def install() -> None:
    """Makes ``import paddle`` serve Flotilla in this process (idempotent).
    ``CUDAPlace`` then runs on the CPU with one warning."""
    if not any(isinstance(f, PaddleFinder) for f in sys.meta_path):
        for name in [n for n in sys.modules if n == "paddle" or n.startswith("paddle.")]:
            del sys.modules[name]  # a real Paddle imported earlier must not mix with Flotilla
        sys.meta_path.insert(0, PaddleFinder())
    _place.set_compat_mode(True)


__all__ = ["install", "PaddleFinder", "nearest", "NEAREST"]
