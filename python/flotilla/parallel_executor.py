"""Paddle 1.x's ``fluid.ParallelExecutor``: a program compiled for data
parallelism (:meth:`CompiledProgram.with_data_parallel`) run by an
Executor. On the CPU it uses ``CPU_NUM`` places (default 1); see
``with_data_parallel`` for what several places of one process run."""

import os
from typing import Any, List, Optional, Sequence

from .executor import Executor
from .framework import Program, default_main_program, global_scope
from .place import CPUPlace, CUDAPlace, cpu_places
from .strategies import BuildStrategy, CompiledProgram, ExecutionStrategy


class ParallelExecutor:
    """See the module docstring. ``num_trainers`` > 1 (Paddle's multi-node
    NCCL executor) is refused naming fleet under ``flotilla launch``."""

    def __init__(self, use_cuda: bool, loss_name: Optional[str] = None, main_program: Optional[Program] = None,
                 share_vars_from: Optional["ParallelExecutor"] = None,
                 exec_strategy: Optional[ExecutionStrategy] = None, build_strategy: Optional[BuildStrategy] = None,
                 num_trainers: int = 1, trainer_id: int = 0, scope: Any = None):
        if num_trainers != 1:
            raise NotImplementedError("ParallelExecutor(num_trainers > 1) is not in Flotilla; nearest Flotilla "
                                      "API: fleet.distributed_optimizer under `flotilla launch`")
        place = CUDAPlace(0) if use_cuda else CPUPlace()  # CUDAPlace warns once and runs on the CPU
        places = [place] if use_cuda else cpu_places(int(os.environ.get("CPU_NUM", "1")))
        source = share_vars_from._compiled if share_vars_from is not None else None
        self._compiled = CompiledProgram(main_program or default_main_program(), build_strategy).with_data_parallel(
            loss_name=loss_name, exec_strategy=exec_strategy, share_vars_from=source, places=places)
        self._scope = scope if scope is not None else global_scope()
        self._exe = Executor(place)
        self.device_count = len(places)

    def run(self, fetch_list: Sequence[Any], feed: Any = None, feed_dict: Any = None,
            return_numpy: bool = True) -> List[Any]:
        """Runs the program once (a batch per place); the fetches of every
        place concatenated along dimension 0."""
        return self._exe.run(self._compiled, feed=feed if feed is not None else feed_dict, fetch_list=fetch_list,
                             scope=self._scope, return_numpy=return_numpy)

    def drop_local_exe_scopes(self) -> None:
        """Frees the temporaries the runs kept (they are rebuilt on the next run)."""
        self._exe._exe._drop_local_scope(self._compiled._program, self._scope)


__all__ = ["ParallelExecutor"]
