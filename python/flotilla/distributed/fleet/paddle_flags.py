"""Paddle's ``FLAGS_*`` environment variables (collective training scripts tune with
``FLAGS_sync_nccl_allreduce``, ``FLAGS_fuse_parameter_memory_size``,
``FLAGS_fuse_parameter_groups_size``, ...). Flotilla honours
``FLAGS_selected_gpus`` (the device list its launcher sets) and
``FLAGS_fuse_parameter_memory_size`` (the all-reduce bucket size in MB,
unless the strategy sets ``fuse_grad_size_in_MB``; the C++ core reads it,
``fleet::DistributedStrategy::HonourPaddleFlags``); every other one set in
the environment is named in one warning, with what to do instead, when the
process makes its first Executor or starts fleet — never silently ignored."""

import os
import warnings
from typing import Dict, List, Mapping, Optional

HONOURED = {"FLAGS_selected_gpus", "FLAGS_fuse_parameter_memory_size"}

# What a user reaches for instead, for the flags the seeds name.
INSTEAD: Dict[str, str] = {
    "FLAGS_sync_nccl_allreduce": "nothing: Flotilla's update ops always wait for their gradients' all-reduce",
    "FLAGS_fuse_parameter_groups_size": "DistributedStrategy.fuse_grad_size_in_MB (buckets are sized in MB)",
    "FLAGS_fraction_of_gpu_memory_to_use": "nothing: Flotilla runs on the CPU",
    "FLAGS_eager_delete_tensor_gb": "nothing: the executor frees intermediates by itself",
    "FLAGS_communicator_send_queue_size": "DistributedStrategy.a_sync_configs",
    "FLAGS_communicator_max_merge_var_num": "DistributedStrategy.a_sync_configs",
}

_warned: set = set()


def warn_unhonoured(environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """Warns (RuntimeWarning) once per process for each FLAGS_* variable in
    ``environ`` (default: this process's) that Flotilla does not honour;
    returns the names warned about now."""
    env = os.environ if environ is None else environ
    named = []
    for name in sorted(env):
        if not name.startswith("FLAGS_") or name in HONOURED or name in _warned:
            continue
        _warned.add(name)
        named.append(name)
        instead = INSTEAD.get(name, "none (see docs/python.md)")
        warnings.warn(f"{name}={env[name]} is a Paddle flag Flotilla does not honour; instead: {instead}",
                      RuntimeWarning, stacklevel=3)
    return named


# Paddle's public flags (what fluid.set_flags / get_flags accept) and their
# defaults; the others are Paddle's private ones.
PUBLIC: Dict[str, object] = {
    "FLAGS_selected_gpus": "", "FLAGS_fuse_parameter_memory_size": -1.0, "FLAGS_fuse_parameter_groups_size": 1,
    "FLAGS_sync_nccl_allreduce": True, "FLAGS_fraction_of_gpu_memory_to_use": 0.92,
    "FLAGS_eager_delete_tensor_gb": 0.0, "FLAGS_check_nan_inf": False, "FLAGS_benchmark": False,
    "FLAGS_cpu_deterministic": False, "FLAGS_use_mkldnn": False, "FLAGS_paddle_num_threads": 1,
    "FLAGS_communicator_send_queue_size": 20, "FLAGS_communicator_max_merge_var_num": 20,
    "FLAGS_rpc_deadline": 180000, "FLAGS_cudnn_deterministic": False, "FLAGS_conv_workspace_size_limit": 512,
    "FLAGS_call_stack_level": 1, "FLAGS_allocator_strategy": "auto_growth",
}
_set_values: Dict[str, object] = {}


def _check_public(name: object, what: str) -> str:
    if not isinstance(name, str) or name not in PUBLIC:
        raise ValueError(f"Flag {name} cannot {what} through this function (it is not a public Paddle flag)")
    return name


def set_flags(flags: Mapping[str, object]) -> None:
    """Paddle's ``fluid.set_flags({name: value})``: sets public Paddle flags
    for this process and the processes it starts (as FLAGS_* environment
    variables). Those Flotilla does not honour are named in one warning,
    as when they come from the environment. Raises TypeError for a non-dict
    and ValueError for a private or unknown flag."""
    if not isinstance(flags, dict):
        raise TypeError(f"flags in set_flags should be a dict, got {type(flags).__name__}")
    for name, value in flags.items():
        _check_public(name, "set its value")
    for name, value in flags.items():
        _set_values[name] = value
        os.environ[name] = str(value).lower() if isinstance(value, bool) else str(value)
    warn_unhonoured({n: os.environ[n] for n in flags})


def get_flags(flags: object) -> Dict[str, object]:
    """Paddle's ``fluid.get_flags(name or [names])``: {name: value} of
    public Paddle flags (the value set, else the environment's, else
    Paddle's default). Raises TypeError for another argument type and
    ValueError for a private or unknown flag."""
    if isinstance(flags, str):
        names = [flags]
    elif isinstance(flags, (list, tuple)):
        names = list(flags)
    else:
        raise TypeError(f"flags in get_flags should be a str, list or tuple, got {type(flags).__name__}")
    out: Dict[str, object] = {}
    for name in names:
        _check_public(name, "get its value")
        if name in _set_values:
            out[name] = _set_values[name]
        elif name in os.environ:
            out[name] = os.environ[name]
        else:
            out[name] = PUBLIC[name]
    return out


__all__ = ["warn_unhonoured", "HONOURED", "INSTEAD", "PUBLIC", "set_flags", "get_flags"]
