"""Module-level functions bound to one object (Paddle's ``fleet.init = fleet_instance.init``)."""

from typing import Any, Dict, Iterable


def bind_module_functions(namespace: Dict[str, Any], obj: Any, names: Iterable[str]) -> None:
    """Puts ``obj.name`` into ``namespace`` for each name, keeping its docstring."""
    for name in names:
        namespace[name] = getattr(obj, name)
