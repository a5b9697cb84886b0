"""The classic parameter-server transpiler (Paddle's
``fluid.DistributeTranspiler``): splits a single-process program
into the trainer program and one program per parameter server. The C++
core's ``fleet::DistributeTranspiler`` does the work."""

from typing import Any, Optional, Tuple, Union

from .. import _core
from ..framework import Program, default_main_program, default_startup_program

_INT64_MAX = 2**63 - 1


class DistributeTranspilerConfig:
    """Paddle's transpiler settings. Fields Flotilla applies: ``sync_mode``,
    ``geo_sgd_mode``, ``geo_sgd_need_push_nums``, ``min_block_size``,
    ``slice_var_up``; ``print_log`` and ``wait_port`` are accepted (trainers
    always wait for their servers). Setting any other field to a value other
    than its default raises NotImplementedError when transpiling."""

    _unsupported = {"enable_dc_asgd": False, "runtime_split_send_recv": False, "half_async": False,
                    "completely_not_async": False, "split_method": None, "collective_mode": None,
                    "nccl_comm_num": 1, "use_hierarchical_allreduce": False,
                    "hierarchical_allreduce_inter_nranks": 0}

    def __init__(self) -> None:
        self.slice_var_up = True
        self.min_block_size = 8192
        self.mode = "pserver"
        self.print_log = False
        self.wait_port = True
        self.sync_mode = True
        self.geo_sgd_mode = False
        self.geo_sgd_need_push_nums = 100
        for name, value in self._unsupported.items():
            setattr(self, name, value)

    def _to_core(self, sync_mode: bool) -> Any:
        for name, default in self._unsupported.items():
            if getattr(self, name) != default:
                raise NotImplementedError(
                    f"DistributeTranspilerConfig.{name}={getattr(self, name)!r} is not in Flotilla; "
                    "nearest: fleet's DistributedStrategy (a_sync, a_sync_configs)")
        if self.mode != "pserver":
            raise NotImplementedError(
                f"DistributeTranspilerConfig.mode={self.mode!r}: collective (nccl2) transpiling is done by "
                "fleet in Flotilla; nearest: fleet.distributed_optimizer under `flotilla launch --devices`")
        config = _core.fleet.DistributeTranspilerConfig()
        if self.geo_sgd_mode:
            config.mode = "geo"
            config.geo_k_steps = int(self.geo_sgd_need_push_nums)
        else:
            config.mode = "sync" if (sync_mode and self.sync_mode) else "async"
        config.min_block_size = int(self.min_block_size) if self.slice_var_up else _INT64_MAX
        return config


class DistributeTranspiler:
    """Splits the default programs into trainer and parameter-server programs.

    Example::

        t = fluid.DistributeTranspiler()
        t.transpile(trainer_id, pservers="10.0.0.1:6174,10.0.0.2:6174", trainers=2)
        if role == "PSERVER":
            prog = t.get_pserver_program(current_endpoint)
            exe.run(t.get_startup_program(current_endpoint, prog))
            exe.run(prog)                      # serves until every trainer closed
        else:
            exe.run(fluid.default_startup_program())
            ... exe.run(t.get_trainer_program(), feed=..., fetch_list=[loss])
            exe.close()
    """

    def __init__(self, config: Optional[DistributeTranspilerConfig] = None):
        self.config = config if config is not None else DistributeTranspilerConfig()
        self._core: Any = None

    def transpile(self, trainer_id: int, program: Optional[Program] = None,
                  pservers: str = "127.0.0.1:6174", trainers: Union[int, str] = 1, sync_mode: bool = True,
                  startup_program: Optional[Program] = None, current_endpoint: str = "127.0.0.1:6174") -> None:
        """Rewrites ``program`` (default: the default main program) in place
        into the trainer program and plans the servers' tables.
        ``pservers``: "ip:port,ip:port"; ``trainers``: how many trainers."""
        if isinstance(trainers, str):
            raise NotImplementedError(
                "DistributeTranspiler.transpile(trainers=\"endpoints\") (nccl2 mode) is not in Flotilla; "
                "nearest: fleet.distributed_optimizer under `flotilla launch --devices`")
        self._core = _core.fleet.DistributeTranspiler(self.config._to_core(sync_mode))
        self._core.transpile(int(trainer_id), pservers, int(trainers), bool(sync_mode),
                             program or default_main_program(), startup_program or default_startup_program())

    def _transpiled(self) -> Any:
        if self._core is None:
            raise RuntimeError("DistributeTranspiler: call transpile() first")
        return self._core

    def get_trainer_program(self, wait_port: bool = True) -> Program:
        """The trainer program (the original main program, rewritten)."""
        return self._transpiled().get_trainer_program()

    def get_pserver_program(self, endpoint: str) -> Program:
        """The program of the server at ``endpoint`` (one of ``pservers``)."""
        return self._transpiled().get_pserver_program(endpoint)

    def get_pserver_programs(self, endpoint: str) -> Tuple[Program, Program]:
        """``(pserver program, its startup program)`` for ``endpoint``."""
        main = self.get_pserver_program(endpoint)
        return main, self.get_startup_program(endpoint, main)

    def get_startup_program(self, endpoint: str, pserver_program: Optional[Program] = None,
                            startup_program: Optional[Program] = None) -> Program:
        """The startup program of the server at ``endpoint``."""
        if pserver_program is None:
            pserver_program = self.get_pserver_program(endpoint)
        return self._transpiled().get_startup_program(endpoint, pserver_program)


__all__ = ["DistributeTranspiler", "DistributeTranspilerConfig"]
