"""``paddle.nn.Layer`` in static mode, and its containers (``LayerList``,
``Sequential``, ``ParameterList``).

A Layer makes its parameters when it is constructed: each is a parameter of
the default main program, initialised by the default startup program, named
as Paddle names it (``<layer>_<n>.w_<k>`` / ``.b_<k>``, the layer's name being
its class name in snake case made unique: ``linear_0``, ``wide_deep_layer_0``).
Calling a Layer runs ``forward``, which appends ops to the default main
program and returns Variables. ``state_dict()`` maps structured names
(``fc.weight``) to those Variables, as Paddle's static mode does;
``set_state_dict`` writes arrays into the global scope.
"""

import collections
import re
import warnings
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from .. import _core
from ..framework import Variable, global_scope, unique_name
from ..param_attr import ParamAttr, to_core

_FIRST_CAP = re.compile("(.)([A-Z][a-z]+)")
_ALL_CAP = re.compile("([a-z])([A-Z])")


def _snake(name: str) -> str:
    """Paddle's layer name of a class: ``WideDeepLayer`` → ``wide_deep_layer``,
    ``BatchNorm2D`` → ``batch_norm2d``."""
    return _ALL_CAP.sub(r"\1_\2", _FIRST_CAP.sub(r"\1_\2", name)).lower()


def _is_parameter(value: Any) -> bool:
    return isinstance(value, Variable) and value.is_parameter


def _attr_name(attr: Any) -> Optional[str]:
    if isinstance(attr, str):
        return attr or None
    if isinstance(attr, (ParamAttr, _core.ParamAttr)):
        return attr.name or None
    return None


class HookRemoveHelper:
    """Removes the hook it was returned for (``helper.remove()``)."""

    _next_id = 0

    def __init__(self, hooks: Dict[int, Callable]):
        self._hooks = hooks
        self._hook_id = HookRemoveHelper._next_id
        HookRemoveHelper._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self._hook_id, None)


class Layer:
    """The base of models and layers (Paddle's ``paddle.nn.Layer``), in static
    mode: subclasses make parameters in ``__init__`` (``create_parameter``,
    or sublayers such as ``nn.Linear``) and append ops in ``forward``.

    Args:
        name_scope: the prefix of the layer's parameter names (default: the
            class name in snake case); a counter makes it unique.
        dtype: the default dtype of its parameters.
    """

    def __init__(self, name_scope: Optional[str] = None, dtype: str = "float32"):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_full_name", unique_name(name_scope or _snake(type(self).__name__)))
        object.__setattr__(self, "_dtype", dtype)
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_sub_layers", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", collections.OrderedDict())
        object.__setattr__(self, "_forward_post_hooks", collections.OrderedDict())

    # ---- attributes: parameters, sublayers and buffers by name ----

    def _check_init(self) -> None:
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"super({type(self).__name__}, self).__init__() should be called first")

    def __setattr__(self, name: str, value: Any) -> None:
        if _is_parameter(value) or isinstance(value, Layer):
            self._check_init()
            for d in (self.__dict__, self._parameters, self._sub_layers, self._buffers):
                d.pop(name, None)
            (self._parameters if _is_parameter(value) else self._sub_layers)[name] = value
            return
        for kind, store in (("parameter", "_parameters"), ("sublayer", "_sub_layers"), ("buffer", "_buffers")):
            d = self.__dict__.get(store)
            if d is not None and name in d:
                if value is not None and not (kind == "buffer" and isinstance(value, Variable)):
                    raise TypeError(f"assignment to {kind} '{name}' should be of type "
                                    f"{'Parameter' if kind == 'parameter' else 'Layer'} or None, "
                                    f"but got '{type(value).__name__}'")
                d[name] = value
                return
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        for store in ("_parameters", "_sub_layers", "_buffers"):
            d = self.__dict__.get(store)
            if d is not None and name in d:
                return d[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_sub_layers", "_buffers"):
            d = self.__dict__.get(store)
            if d is not None and name in d:
                del d[name]
                return
        object.__delattr__(self, name)

    def __dir__(self) -> List[str]:
        return sorted(set(dir(type(self))) | set(self.__dict__) | set(self._parameters) |
                      set(self._sub_layers) | set(self._buffers))

    # ---- building ----

    def full_name(self) -> str:
        """The layer's unique name (``linear_0``), the prefix of its parameters'."""
        return self._full_name

    def create_parameter(self, shape, attr: Any = None, dtype: Optional[str] = None, is_bias: bool = False,
                         default_initializer: Any = None) -> Optional[Variable]:
        """A parameter of ``shape`` in the default main program, initialised by
        the default startup program: by ``attr``'s initializer, else
        ``default_initializer``, else Xavier (Constant(0) for a bias).
        Named by ``attr`` or ``<layer>.w_<k>`` / ``.b_<k>``. ``attr=False``:
        no parameter (returns None)."""
        self._check_init()
        if attr is False:
            return None
        name = _attr_name(attr) or unique_name(f"{self._full_name}.{'b' if is_bias else 'w'}")
        return _core.layers.create_parameter([int(d) for d in shape], dtype or self._dtype, to_core(attr, name),
                                             bool(is_bias), default_initializer)

    def add_sublayer(self, name: str, sublayer: "Layer") -> "Layer":
        """Adds ``sublayer`` as ``self.<name>``; returns it."""
        self._check_init()
        if not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer({name!r}): expected a Layer, got {type(sublayer).__name__}")
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def add_parameter(self, name: str, parameter: Optional[Variable]) -> Optional[Variable]:
        """Adds ``parameter`` (made by ``create_parameter``) as ``self.<name>``;
        returns it."""
        self._check_init()
        if not isinstance(name, str):
            raise TypeError(f"The name of parameter should be a string, but received {type(name).__name__}.")
        if "." in name:
            raise KeyError("The name of parameter can not contain `.`")
        if name == "":
            raise KeyError("The name of parameter can not be empty.")
        if name not in self._parameters and (name in self.__dict__ or name in self._sub_layers or
                                             name in self._buffers):
            raise KeyError(f"The parameter '{name}' already exists.")
        if parameter is not None and not _is_parameter(parameter):
            raise TypeError(f"The parameter to be added should be a Parameter, but received "
                            f"{type(parameter).__name__}.")
        self._parameters[name] = parameter
        return parameter

    def register_buffer(self, name: str, tensor: Optional[Variable], persistable: bool = True) -> None:
        """Keeps a non-parameter Variable as ``self.<name>``; a persistable one
        is in ``state_dict()``."""
        self._check_init()
        if tensor is not None and not isinstance(tensor, Variable):
            raise TypeError(f"register_buffer({name!r}): expected a Variable, got {type(tensor).__name__}")
        if tensor is not None:
            tensor.persistable = bool(persistable)
        self._buffers[name] = tensor

    # ---- running ----

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Appends the layer's ops; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__}.forward is not defined")

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, inputs)
            if result is not None:
                inputs = result if isinstance(result, tuple) else (result,)
        outputs = self.forward(*inputs, **kwargs)
        for hook in list(self._forward_post_hooks.values()):
            result = hook(self, inputs, outputs)
            if result is not None:
                outputs = result
        return outputs

    def register_forward_pre_hook(self, hook: Callable) -> HookRemoveHelper:
        """``hook(layer, inputs)`` runs before ``forward``; a value it returns
        replaces the inputs."""
        helper = HookRemoveHelper(self._forward_pre_hooks)
        self._forward_pre_hooks[helper._hook_id] = hook
        return helper

    def register_forward_post_hook(self, hook: Callable) -> HookRemoveHelper:
        """``hook(layer, inputs, outputs)`` runs after ``forward``; a value it
        returns replaces the outputs."""
        helper = HookRemoveHelper(self._forward_post_hooks)
        self._forward_post_hooks[helper._hook_id] = hook
        return helper

    def train(self) -> None:
        """Training mode for this layer and its sublayers: Dropout drops,
        BatchNorm normalises by the batch. Affects ops appended afterwards."""
        for layer in self.sublayers(include_self=True):
            object.__setattr__(layer, "training", True)

    def eval(self) -> None:
        """Evaluation mode (is_test): Dropout passes through, BatchNorm uses its
        running statistics. Affects ops appended afterwards."""
        for layer in self.sublayers(include_self=True):
            object.__setattr__(layer, "training", False)

    def apply(self, fn: Callable[["Layer"], Any]) -> "Layer":
        """Calls ``fn`` on every sublayer, then on this one; returns self."""
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    # ---- walking ----

    def named_sublayers(self, prefix: str = "", include_self: bool = False,
                        layers_set: Optional[set] = None) -> Iterator[Tuple[str, "Layer"]]:
        """(structured name, layer) of every sublayer, depth first, each once."""
        layers_set = set() if layers_set is None else layers_set
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        for key, layer in self._sub_layers.items():
            if layer is None:
                continue
            yield from layer.named_sublayers(f"{prefix}.{key}" if prefix else key, True, layers_set)

    def sublayers(self, include_self: bool = False) -> List["Layer"]:
        """Every sublayer, depth first."""
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self) -> Iterator[Tuple[str, "Layer"]]:
        """(name, layer) of the direct sublayers."""
        seen = set()
        for name, layer in self._sub_layers.items():
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                yield name, layer

    def children(self) -> Iterator["Layer"]:
        """The direct sublayers."""
        for _, layer in self.named_children():
            yield layer

    def named_parameters(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[Tuple[str, Variable]]:
        """(structured name, parameter): ``weight``, ``fc.bias``, ... each once."""
        seen = set()
        layers = self.named_sublayers(prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in layers:
            for key, param in layer._parameters.items():
                if param is None or param.name in seen:
                    continue
                seen.add(param.name)
                yield (f"{layer_prefix}.{key}" if layer_prefix else key), param

    def parameters(self, include_sublayers: bool = True) -> List[Variable]:
        """The parameters of this layer (and of its sublayers)."""
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[Tuple[str, Variable]]:
        """(structured name, buffer) of the registered buffers."""
        layers = self.named_sublayers(prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in layers:
            for key, buf in layer._buffers.items():
                if buf is not None:
                    yield (f"{layer_prefix}.{key}" if layer_prefix else key), buf

    def buffers(self, include_sublayers: bool = True) -> List[Variable]:
        """The registered buffers."""
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    # ---- state ----

    def state_dict(self, destination: Optional[Dict[str, Variable]] = None, include_sublayers: bool = True,
                   structured_name_prefix: str = "") -> Dict[str, Variable]:
        """Structured name → Variable of every parameter and persistable buffer
        (Paddle's static-mode ``state_dict``); their values are in the global
        scope once the startup program ran (``paddle.save`` writes them)."""
        out = collections.OrderedDict() if destination is None else destination
        for name, param in self._parameters.items():
            if param is not None:
                out[structured_name_prefix + name] = param
        for name, buf in self._buffers.items():
            if buf is not None and buf.persistable:
                out[structured_name_prefix + name] = buf
        if include_sublayers:
            for name, layer in self._sub_layers.items():
                if layer is not None:
                    layer.state_dict(out, True, f"{structured_name_prefix}{name}.")
        return out

    def set_state_dict(self, state_dict: Dict[str, Any], include_sublayers: bool = True,
                       use_structured_name: bool = True) -> None:
        """Writes each array of ``state_dict`` (keyed by structured name, or by
        parameter name with ``use_structured_name=False``) into the global
        scope as the value of the matching parameter or buffer. A missing
        key or a wrong shape skips that variable with a warning, as Paddle does."""
        scope = global_scope()
        for key, var in self.state_dict(include_sublayers=include_sublayers).items():
            key_name = key if use_structured_name else var.name
            value = state_dict.get(key_name)
            if value is None:
                warnings.warn(f"Skip loading for {key}. {key_name} is not found in the provided dict.")
                continue
            array = _array_of(value, scope)
            if list(array.shape) != list(var.shape):
                warnings.warn(f"Skip loading for {key}. {key_name} receives a shape {list(array.shape)}, "
                              f"but the expected shape is {list(var.shape)}.")
                continue
            scope.var(var.name).get_tensor().set(np.ascontiguousarray(array, dtype=var.dtype))

    set_dict = set_state_dict
    load_dict = set_state_dict

    def __repr__(self) -> str:
        lines = [f"({name}): {layer!r}".replace("\n", "\n  ") for name, layer in self._sub_layers.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}({extra}\n  " + "\n  ".join(lines) + "\n)"

    def extra_repr(self) -> str:
        """What ``repr`` shows inside the parentheses."""
        return ""


def _array_of(value: Any, scope: Any) -> np.ndarray:
    """A state-dict value as an array: arrays and tensors as they are, a
    Variable by its value in ``scope``."""
    if isinstance(value, Variable):
        found = scope.find_var(value.name)
        if found is None or not found.is_initialized():
            raise ValueError(f"set_state_dict: variable '{value.name}' has no value in the scope "
                             "(run the startup program first)")
        return np.array(found.get_tensor())
    return np.asarray(value)


class LayerList(Layer):
    """A list of sublayers, named "0", "1", ... (``paddle.nn.LayerList``)."""

    def __init__(self, sublayers: Optional[Iterable[Layer]] = None):
        super().__init__()
        for i, layer in enumerate(sublayers or []):
            self.add_sublayer(str(i), layer)

    def _index(self, idx: int) -> int:
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx + n if idx < 0 else idx

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._sub_layers.values())[idx])
        return self._sub_layers[str(self._index(idx))]

    def __setitem__(self, idx: int, sublayer: Layer) -> None:
        self.add_sublayer(str(self._index(idx)), sublayer)

    def __delitem__(self, idx) -> None:
        keep = list(self._sub_layers.values())
        del keep[idx]
        self._sub_layers.clear()
        for i, layer in enumerate(keep):
            self._sub_layers[str(i)] = layer

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self._sub_layers.values())

    def append(self, sublayer: Layer) -> "LayerList":
        """Adds ``sublayer`` at the end."""
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def insert(self, index: int, sublayer: Layer) -> None:
        """Inserts ``sublayer`` before ``index``."""
        layers = list(self._sub_layers.values())
        layers.insert(index, sublayer)
        self._sub_layers.clear()
        for i, layer in enumerate(layers):
            self.add_sublayer(str(i), layer)

    def extend(self, sublayers: Iterable[Layer]) -> "LayerList":
        """Adds ``sublayers`` at the end."""
        for layer in sublayers:
            self.append(layer)
        return self


class Sequential(Layer):
    """Sublayers called one after the other (``paddle.nn.Sequential``):
    ``Sequential(l1, l2)`` names them "0", "1"; ``Sequential(("a", l1), ...)``
    by the given names."""

    def __init__(self, *layers: Any):
        super().__init__()
        if layers and isinstance(layers[0], (list, tuple)):
            for name, layer in layers:
                self.add_sublayer(name, layer)
        else:
            for i, layer in enumerate(layers):
                self.add_sublayer(str(i), layer)

    def __getitem__(self, name):
        if isinstance(name, slice):
            return self.__class__(*list(self._sub_layers.values())[name])
        if isinstance(name, str):
            return self._sub_layers[name]
        layers = list(self._sub_layers.values())
        return layers[name]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def forward(self, input: Any) -> Any:
        for layer in self._sub_layers.values():
            input = layer(input)
        return input


class ParameterList(Layer):
    """A list of parameters, named "0", "1", ... (``paddle.nn.ParameterList``)."""

    def __init__(self, parameters: Optional[Iterable[Variable]] = None):
        super().__init__()
        for i, p in enumerate(parameters or []):
            self.add_parameter(str(i), p)

    def __getitem__(self, idx: int) -> Variable:
        return list(self._parameters.values())[idx]

    def __setitem__(self, idx: int, param: Variable) -> None:
        self.add_parameter(str(idx), param)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Variable]:
        return iter(self._parameters.values())

    def append(self, parameter: Variable) -> "ParameterList":
        """Adds ``parameter`` at the end."""
        self.add_parameter(str(len(self)), parameter)
        return self


__all__ = ["Layer", "LayerList", "Sequential", "ParameterList", "HookRemoveHelper"]
