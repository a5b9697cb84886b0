"""Paddle's ``FLAGS_*`` environment variables (collective training scripts tune with
``FLAGS_sync_nccl_allreduce``, ``FLAGS_fuse_parameter_memory_size``,
``FLAGS_fuse_parameter_groups_size``, ...). Flotilla honours
``FLAGS_selected_gpus`` (the device list its launcher sets) and
``FLAGS_fuse_parameter_memory_size`` (the all-reduce bucket size in MB,
unless the strategy sets ``fuse_grad_size_in_MB``); every other one set in
the environment is named in one warning, with what to do instead, when the
process makes its first Executor or starts fleet — never silently ignored."""

import math
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional

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


def honour_fuse_memory_size(strategy: Any, environ: Optional[Mapping[str, str]] = None) -> None:
    """Paddle's ``FLAGS_fuse_parameter_memory_size`` (MB of gradients per
    fused all-reduce) becomes ``strategy.fuse_grad_size_in_MB`` (rounded up)
    unless the strategy sets that itself. Raises ValueError naming the
    variable when it is not a positive number."""
    env = os.environ if environ is None else environ
    value = env.get("FLAGS_fuse_parameter_memory_size")
    if value is None or strategy._core._has("fuse_grad_size_in_MB"):
        return
    try:
        mb = float(value)
    except ValueError:
        mb = -1.0
    if not mb > 0 or math.isinf(mb):
        raise ValueError(f"FLAGS_fuse_parameter_memory_size={value!r} must be a positive number of MB")
    strategy.fuse_grad_size_in_MB = math.ceil(mb)


__all__ = ["warn_unhonoured", "honour_fuse_memory_size", "HONOURED", "INSTEAD"]
