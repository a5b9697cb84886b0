"""The fleet facade (Paddle's ``fleet``): one process-wide distributed
context in the C++ core (``fleet::default_fleet()``), reached through the
2.x module functions (``paddle.distributed.fleet``) and the 1.x ``fleet``
objects of ``fluid.incubate.fleet.collective`` and
``...parameter_server.distribute_transpiler``.

Calls that meet other processes (``init``, ``barrier_worker``,
``init_worker``, ``run_server``, saves) release the GIL and raise
KeyboardInterrupt on Ctrl-C.
"""

from typing import Any, List, Mapping, Optional, Sequence, Union

from ... import _core
from ..._save_target import save_target
from ...executor import Executor
from ...framework import Program, Variable, global_scope
from ...optimizer import Optimizer, _names
from .base.role_maker import MPISymetricRoleMaker, PaddleCloudRoleMaker, RoleMakerBase
from .base.util_factory import current as current_util
from .paddle_flags import warn_unhonoured
from .strategy import DistributedStrategy

_F = _core.fleet


class DistributedOptimizer:
    """What ``fleet.distributed_optimizer`` returns: ``minimize`` appends
    backward and update ops, then the C++ core's collective pass (gradient
    all-reduce, fused and overlapped) or parameter-server transpiler."""

    def __init__(self, fleet: "Fleet", optimizer: Optimizer, strategy: DistributedStrategy):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"distributed_optimizer: optimizer must be a flotilla/fluid/paddle optimizer, "
                            f"got {type(optimizer).__name__}")
        self._fleet = fleet
        self._optimizer = optimizer
        self.user_defined_strategy = strategy
        self._core: Any = None

    def minimize(self, loss: Variable, startup_program: Optional[Program] = None,
                 parameter_list: Optional[Sequence[Any]] = None, no_grad_set: Optional[Sequence[Any]] = None):
        """Distributed ``minimize``; returns ``(optimize op types, [(param, grad)])``."""
        strategy = self.user_defined_strategy
        # The C++ core validates the strategy (refusing by name what Flotilla
        # lacks), honours FLAGS_fuse_parameter_memory_size, logs the hints not
        # yet warned about and (in minimize) applies exec_strategy: num_threads
        # and the program's run settings.
        self._core = _F.distributed_optimizer(self._optimizer._core, strategy._core)
        result = self._core.minimize(loss, startup_program, _names(parameter_list) or self._optimizer._parameters,
                                     set(_names(no_grad_set)))
        self._fleet._minimized = True
        self._fleet._applied = strategy
        return result

    @property
    def buckets(self) -> List[List[str]]:
        """The gradient all-reduce buckets of the last minimize (collective jobs)."""
        return [list(b) for b in self._core.buckets] if self._core is not None else []


class Fleet:
    """Distributed training in a few added lines. ``mode`` is "collective"
    or "ps" for the 1.x objects (which take the role they are given), None
    for the 2.x module functions (``init(is_collective=...)``)."""

    def __init__(self, mode: Optional[str] = None):
        self._mode = mode
        self._role: Optional[RoleMakerBase] = None
        self._strategy: Optional[DistributedStrategy] = None
        self._minimized = False
        self._applied: Optional[DistributedStrategy] = None  # the strategy of the last minimize

    # ---- setting up ----

    def init(self, role_maker: Optional[RoleMakerBase] = None, is_collective: bool = False,
             strategy: Optional[DistributedStrategy] = None, log_level: Any = None) -> None:
        """Takes this process's role (default: from the environment) and, for
        a collective worker of a multi-worker job, meets the other workers.
        Called again, it re-initialises with the new role, as Paddle's does
        (see ``Fleet::init`` in include/flotilla/fleet/fleet.h)."""
        if not isinstance(is_collective, bool):
            raise ValueError(f"`is_collective` should be instance of `bool`, but got {type(is_collective)}")
        if role_maker is None:
            if self._mode == "ps":
                role_maker = MPISymetricRoleMaker()  # Paddle 1.x's default for parameter servers
            else:
                role_maker = PaddleCloudRoleMaker(is_collective=is_collective or self._mode == "collective")
        if not isinstance(role_maker, RoleMakerBase):
            raise ValueError(f"`role_maker` should be subclass of `RoleMakerBase`, but got {type(role_maker)}")
        if self._mode == "collective" and not role_maker._is_collective:
            raise ValueError("the collective fleet (fluid.incubate.fleet.collective) needs a collective role: "
                             "PaddleCloudRoleMaker(is_collective=True)")
        if self._mode == "ps" and role_maker._is_collective:
            raise ValueError("the parameter-server fleet needs a parameter-server role: "
                             "PaddleCloudRoleMaker() under `flotilla launch --server_num N --worker_num M`")
        if strategy is not None and not isinstance(strategy, DistributedStrategy):
            raise TypeError("fleet.init: strategy must be a fleet.DistributedStrategy")
        _F.init(role_maker._core)
        warn_unhonoured()
        self._role = role_maker
        self._strategy = strategy
        self._minimized = False
        self._applied = None
        util = current_util()
        util._set_role_maker(role_maker)
        util._set_strategy(strategy)

    def _check_init(self, what: str) -> RoleMakerBase:
        if self._role is None and not _F.initialized():
            raise ValueError(f"fleet.{what}: call fleet.init(...) first")
        return self._role

    # ---- the role ----

    # Paddle's meta optimizers, by the strategy field whose behaviour they are.
    _META_OPTIMIZERS = (("localsgd", "LocalSGDOptimizer"), ("gradient_merge", "GradientMergeOptimizer"))

    def _get_applied_meta_list(self) -> List[str]:
        """Paddle's names of the meta optimizers whose behaviour the last
        ``minimize`` applied: ``ParameterServerOptimizer`` for a
        parameter-server job, ``LocalSGDOptimizer`` and
        ``GradientMergeOptimizer`` for those strategy fields; [] before any
        minimize."""
        strategy = self._applied
        if strategy is None:
            return []
        role = self._role
        if role is not None and not role._is_collective and not role._is_non_distributed():
            return ["ParameterServerOptimizer"]
        return [name for field, name in self._META_OPTIMIZERS if getattr(strategy, field)]

    def _get_applied_graph_list(self) -> List[str]:
        """[]: Flotilla runs the program's ops as built, with no graph passes."""
        return []

    def is_worker(self) -> bool:
        """True on a trainer."""
        self._check_init("is_worker")
        return _F.is_worker()

    def is_server(self) -> bool:
        """True on a parameter server."""
        self._check_init("is_server")
        return _F.is_server()

    def is_first_worker(self) -> bool:
        """True on trainer 0."""
        self._check_init("is_first_worker")
        return _F.is_first_worker()

    def worker_index(self) -> int:
        """This trainer's rank among the trainers."""
        self._check_init("worker_index")
        return _F.worker_index()

    def worker_num(self) -> int:
        """How many trainers the job has."""
        self._check_init("worker_num")
        return _F.worker_num()

    def server_num(self) -> int:
        """How many parameter servers the job has."""
        return len(self.server_endpoints())

    def server_index(self) -> int:
        """This server's index (-1 on a trainer)."""
        self._check_init("server_index")
        return _F.role().server_index

    def worker_endpoints(self, to_string: bool = False) -> Union[List[str], str]:
        """The trainers' endpoints (a list, or one comma-separated string)."""
        self._check_init("worker_endpoints")
        eps = list(_F.worker_endpoints())
        return ",".join(eps) if to_string else eps

    def server_endpoints(self, to_string: bool = False) -> Union[List[str], str]:
        """The servers' endpoints (a list, or one comma-separated string)."""
        self._check_init("server_endpoints")
        eps = list(_F.server_endpoints())
        return ",".join(eps) if to_string else eps

    def barrier_worker(self) -> None:
        """Blocks until every trainer calls it."""
        self._check_init("barrier_worker")
        _F.barrier_worker()

    # ---- training ----

    def distributed_optimizer(self, optimizer: Optimizer, strategy: Any = None) -> DistributedOptimizer:
        """Wraps ``optimizer`` so that ``minimize`` also distributes the
        program. Without a strategy: the one given to init, else Paddle's
        default (``DistributedStrategy()``: async for parameter servers)."""
        self._check_init("distributed_optimizer")
        from .compat_strategies import to_strategy
        return DistributedOptimizer(self, optimizer, to_strategy(strategy or self._strategy))

    @property
    def main_program(self) -> Program:
        """The program the last minimize transpiled (Paddle 1.x attribute)."""
        return _F.main_program()

    @property
    def startup_program(self) -> Program:
        """The startup program the last minimize transpiled."""
        return _F.startup_program()

    # ---- fault tolerance (strategy.fault_tolerance = "step") ----

    StepState = _F.StepState

    def run_step(self, executor: Executor, feed: Mapping[str, Any], fetch_list: Sequence[Any],
                 state: Any, samples_per_rank: int = 0, program: Optional[Program] = None) -> Any:
        """One training step of ``program`` (default: main_program) as a
        transaction; returns the fetched arrays and advances ``state`` (a
        ``fleet.StepState``: step, and position by samples_per_rank ×
        worker_num). With ``fault_tolerance`` "step", a step whose collective
        failed because a peer was lost is dropped, the survivors re-form
        in-process, and None is returned: redo the step from ``state`` with
        the new worker_index() / worker_num() (docs/elastic.md)."""
        self._check_init("run_step")
        return _F.run_step(executor._exe, program or _F.main_program(), dict(feed), _names(fetch_list),
                           state, samples_per_rank)

    def fault_stats(self) -> dict:
        """What fault tolerance survived here: generation, faults, steps_lost,
        last_reform_ms, last_recovery_ms."""
        return dict(_F.fault_stats())

    # ---- parameter servers ----

    # init_server, run_server, init_worker and stop_worker act as Paddle's in
    # the other kinds of job: in a collective job they log that they should
    # not be called there (ValueError before minimize: "Fleet can not find
    # suitable runtime handler"); in a non-distributed fleet (no launcher)
    # they log that they do nothing there.

    def init_server(self, model_dir: Optional[str] = None, *args: Any, **kwargs: Any) -> None:
        """Prepares this server's tables (loaded from ``model_dir`` when given)."""
        self._check_init("init_server")
        _F.init_server(model_dir or kwargs.get("dirname") or "")

    def run_server(self) -> None:
        """Serves until every trainer has called stop_worker."""
        self._check_init("run_server")
        _F.run_server()

    def init_worker(self, scopes: Any = None) -> None:
        """Connects this trainer to the servers (after the startup program ran)."""
        self._check_init("init_worker")
        if not _F.is_server():
            _F.init_worker(False)

    def stop_worker(self) -> None:
        """Flushes what is queued and tells the servers this trainer is done."""
        self._check_init("stop_worker")
        if not _F.is_server():
            _F.stop_worker()

    def prefetch_sparse(self, feed: Mapping[str, Any]) -> None:
        """GEO trainers: starts pulling the sparse rows a step fed ``feed`` looks up.

        Call it with the next batch before running the current one; the rows
        arrive while the current step computes::

            fleet.prefetch_sparse(next_feed)
            exe.run(fleet.main_program, feed=feed, fetch_list=[loss])

        Does nothing on servers, in collective jobs and in other modes.
        """
        self._check_init("prefetch_sparse")
        if _F.is_worker() and not self._is_collective():
            _F.prefetch_sparse(dict(feed))

    def _is_collective(self) -> bool:
        return self._role is not None and self._role._is_collective

    # ---- saving ----

    def save_persistables(self, executor: Executor, dirname: str, main_program: Optional[Program] = None,
                          mode: int = 0, filename: Optional[str] = None) -> None:
        """Trainer 0 saves every persistable variable (for parameter servers:
        the servers' tables); the others wait until it is done."""
        self._check_init("save_persistables")
        if filename is not None:
            raise NotImplementedError("fleet.save_persistables(filename=...): Flotilla writes one directory; "
                                      "nearest: omit filename")
        with save_target(dirname) as target:
            _F.save_persistables(executor._exe, target, main_program, global_scope())

    def save_inference_model(self, executor: Executor, dirname: str, feeded_var_names: Sequence[Any],
                             target_vars: Sequence[Any], main_program: Optional[Program] = None,
                             export_for_deployment: bool = True, mode: int = 0) -> None:
        """Trainer 0 saves an inference model; the others wait."""
        self._check_init("save_inference_model")
        _F.save_inference_model(executor._exe, dirname, _names(feeded_var_names), _names(target_vars),
                                main_program, global_scope())

    def save(self, dirname: str, feed: Sequence[Any] = (), fetch: Sequence[Any] = (), **configs: Any) -> None:
        """Paddle 2.x ``fleet.save``: with ``feed`` and ``fetch`` (Variables or
        names) an inference model (:meth:`save_inference_model`), without
        them every persistable (:meth:`save_persistables`), into ``dirname``."""
        mode = configs.pop("mode", 0)
        if configs:
            raise TypeError(f"fleet.save: unexpected arguments {sorted(configs)}")
        from ...framework import default_main_program
        from ...place import CPUPlace
        exe = Executor(CPUPlace())
        if bool(feed) != bool(fetch):
            raise ValueError("fleet.save: give both feed and fetch (an inference model), or neither (persistables)")
        program = None if self._minimized else default_main_program()
        if feed:
            self.save_inference_model(exe, dirname, feed, fetch, main_program=program, mode=mode)
        else:
            self.save_persistables(exe, dirname, main_program=program, mode=mode)

    def load_model(self, path: str, mode: int) -> None:
        """Paddle 2.x ``fleet.load_model``: reads the persistables
        :meth:`save` / :meth:`save_persistables` wrote under ``path`` into
        this process's scope (modes 0 and 1 of a job without servers: the
        whole model). In a parameter-server job the servers hold the tables:
        there it raises NotImplementedError naming ``init_server(dirname)``,
        the nearest Flotilla API."""
        self._check_init("load_model")
        if mode not in (0, 1):
            raise ValueError(f"fleet.load_model: mode must be 0 or 1, got {mode!r}")
        role = self._role
        if role is not None and not role._is_collective and not role._is_non_distributed():
            raise NotImplementedError("fleet.load_model in a parameter-server job is not in Flotilla; nearest "
                                      "Flotilla API: fleet.init_server(dirname) on the servers")
        from ...io import load_persistables
        from ...place import CPUPlace
        load_persistables(Executor(CPUPlace()), path)

    # ---- Paddle 1.x no-ops kept for scripts that call them ----

    def stop(self, executor: Any = None) -> None:
        """Paddle 1.x: the end of a job; waits for every trainer."""
        if _F.is_worker() and self.worker_num() > 1 and self._is_collective():
            _F.barrier_worker()


__all__ = ["Fleet", "DistributedOptimizer"]
