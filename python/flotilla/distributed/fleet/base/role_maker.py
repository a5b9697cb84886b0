"""Role makers: where a process learns its place in a job (Paddle's
``fleet.base.role_maker`` and ``fluid.incubate.fleet.base.role_maker``).

Each reads its source when constructed — the environment contract
(``docs/env.md``), arguments, or mpirun's variables — in the C++ core, and
raises an error naming the variable that is missing or malformed, so a
misconfigured job fails at its first line.
"""

import os
from typing import Any, List, Optional, Sequence, Union

from .... import _core as core
from . import util_factory

_F = core.fleet


class Role:
    """Paddle's ``Role``: ``Role.WORKER`` (trainer), ``Role.SERVER``,
    ``Role.HETER_WORKER``."""

    WORKER = _F.Role.WORKER
    SERVER = _F.Role.SERVER
    HETER_WORKER = _F.Role.HETER_WORKER


class RoleMakerBase:
    """The interface every role maker offers. What it answers is the C++
    role maker's ``RoleInfo`` (``_info``): nothing is re-derived here. The
    base class itself, as Paddle's, has no role: its questions raise
    NotImplementedError and it lists no endpoints."""

    _core: Any = None

    def _c(self) -> Any:
        if self._core is None:
            raise NotImplementedError("Please implement this method in child class")
        return self._core

    @property
    def _info(self) -> Any:
        return self._c().info()

    @property
    def _is_collective(self) -> bool:
        """True for a collective job, False for a parameter-server job."""
        return self._info.is_collective

    def _is_non_distributed(self) -> bool:
        """True for Paddle's non-distributed fleet: a script started without
        a launcher (one worker; the parameter-server calls do nothing)."""
        return self._info.non_distributed

    def is_worker(self) -> bool:
        """True for a trainer."""
        return self._c().is_worker()

    def is_server(self) -> bool:
        """True for a parameter server."""
        return self._c().is_server()

    def is_first_worker(self) -> bool:
        """True for trainer 0."""
        return self._c().is_first_worker()

    def worker_index(self) -> int:
        """This trainer's rank among the trainers."""
        return self._c().worker_index()

    def server_index(self) -> int:
        """This server's index in the server list (-1 on a trainer)."""
        return self._c().server_index()

    def worker_num(self) -> int:
        """How many trainers the job has."""
        return self._c().worker_num()

    def server_num(self) -> int:
        """How many parameter servers the job has."""
        return self._c().server_num()

    def get_trainer_endpoints(self) -> List[str]:
        """The trainers' "host:port" endpoints (may be empty)."""
        return [] if self._core is None else list(self._core.get_trainer_endpoints())

    def get_pserver_endpoints(self) -> List[str]:
        """The servers' "host:port" endpoints."""
        return [] if self._core is None else list(self._core.get_pserver_endpoints())

    def _get_trainer_endpoint(self) -> str:
        """This process's own endpoint ("" when none is known)."""
        return self._c().current_endpoint()

    def node_num(self) -> int:
        """How many hosts the trainers' endpoints name."""
        self._c()
        return len({ep.rsplit(":", 1)[0] for ep in self.get_trainer_endpoints()}) or 1

    def role_id(self) -> int:
        """The index of this process among those of its role."""
        return self.server_index() if self.is_server() else self.worker_index()

    def to_string(self) -> str:
        """Paddle's one-line summary of the role."""
        role, current = (None, -1) if self._core is None else (
            "SERVER" if self.is_server() else "WORKER", self.role_id())
        return (f"role: {role}, current_id: {current}, worker_endpoints: {self.get_trainer_endpoints()}, "
                f"server_endpoints: {self.get_pserver_endpoints()}")

    # fleet.util's collectives, which Paddle reaches through the role maker
    # (see base/util_factory.py; the base class has none, as Paddle's).
    def _all_reduce(self, input: Any, mode: str = "sum", comm_world: str = "worker") -> Any:
        return None if self._core is None else util_factory.all_reduce(input, mode, comm_world)

    def _all_gather(self, input: Any, comm_world: str = "worker") -> Any:
        return None if self._core is None else util_factory.all_gather(input, comm_world)

    def _barrier(self, comm_world: str = "worker") -> None:
        if self._core is not None:
            util_factory.barrier(comm_world)

    _is_first_worker = is_first_worker
    _worker_index = worker_index
    _server_index = server_index
    _worker_num = worker_num
    _server_num = server_num
    _is_worker = is_worker
    _is_server = is_server
    _get_trainer_endpoints = get_trainer_endpoints
    _get_pserver_endpoints = get_pserver_endpoints
    _node_num = _get_node_num = node_num
    _role_id = role_id

    def _generate_role(self) -> None:
        """Paddle reads the environment lazily here; Flotilla already did."""

    generate_role = _generate_role

    def __repr__(self) -> str:
        if self._core is None:
            return f"{type(self).__name__}(no role)"
        role = "server" if self.is_server() else "worker"
        index = self.server_index() if self.is_server() else self.worker_index()
        return f"{type(self).__name__}({role} {index}, {self.worker_num()} workers, {self.server_num()} servers)"


def _endpoints(value: Union[None, str, Sequence[str]]) -> List[str]:
    """An endpoint list given as a list or as Paddle's "ip:port,ip:port"."""
    if isinstance(value, str):
        return [ep for ep in value.split(",") if ep]
    return list(value or [])


def _store_address(store_address: str, path: Optional[str]) -> str:
    """Paddle's gloo rendezvous directory ``path`` as the workers' store."""
    if store_address or not path:
        return store_address
    return "file:" + os.path.abspath(path)


class PaddleCloudRoleMaker(RoleMakerBase):
    """Reads the role from the environment ``flotilla launch`` (or Paddle's
    launcher, Slurm, Kubernetes, torchrun-style variables) sets. As Paddle's,
    a script started without a launcher is a non-distributed one-worker job
    (see ``PaddleCloudRoleMaker`` in include/flotilla/fleet/role_maker.h)."""

    def __init__(self, is_collective: bool = False, **kwargs: Any):
        unknown = set(kwargs) - {"init_gloo", "path", "http_ip_port"}
        if unknown:
            raise TypeError(f"PaddleCloudRoleMaker: unexpected arguments {sorted(unknown)}")
        self._is_collective_arg = bool(is_collective)
        self._resolved: Any = None

    @property
    def _core(self) -> Any:  # type: ignore[override]
        # The environment is read at first use (generate_role, fleet.init or
        # any question), as Paddle's does: a bad TRAINING_ROLE raises there.
        if self._resolved is None:
            self._resolved = _F.PaddleCloudRoleMaker(self._is_collective_arg, non_distributed_fallback=True)
        return self._resolved

    def _generate_role(self) -> None:
        """Reads the role from the environment (once); raises ValueError
        (InvalidArgumentError) naming a variable that does not parse."""
        self._c()

    generate_role = _generate_role


_ROLE_NUMBERS = {1: Role.WORKER, 2: Role.SERVER, 3: Role.HETER_WORKER}  # Paddle's Role values


def _role(role: Any) -> Any:
    if isinstance(role, int) and not isinstance(role, bool) and role in _ROLE_NUMBERS:
        return _ROLE_NUMBERS[role]
    return role


class UserDefinedRoleMaker(RoleMakerBase):
    """A role given in code, in Paddle 2.x's keywords or 1.x's positions::

        UserDefinedRoleMaker(is_collective=False, current_id=0, role=Role.WORKER,
                             worker_endpoints=["127.0.0.1:6003", "127.0.0.1:6004"],
                             server_endpoints=["127.0.0.1:6001"])

    ``worker_num`` defaults to the number of ``worker_endpoints``; ``path``
    (Paddle's gloo rendezvous directory) is where the workers meet, as
    ``store_address="file:<path>"`` does, so that a collective job started
    without a launcher can all-reduce (``fleet.util``) and train.
    """

    def __init__(self, current_id: int = 0, role: Any = Role.WORKER, worker_num: int = 0,
                 server_endpoints: Union[None, str, Sequence[str]] = None, is_collective: Optional[bool] = None,
                 worker_endpoints: Union[None, str, Sequence[str]] = None, init_gloo: bool = False,
                 store_address: str = "", path: Optional[str] = None, **kwargs: Any):
        unknown = set(kwargs) - {"http_ip_port"}
        if unknown:
            raise TypeError(f"UserDefinedRoleMaker: unexpected arguments {sorted(unknown)}")
        self._core = _F.UserDefinedRoleMaker(int(current_id), _role(role), int(worker_num or 0),
                                            _endpoints(server_endpoints), _endpoints(worker_endpoints),
                                            _store_address(store_address, path), is_collective=is_collective)


class UserDefinedCollectiveRoleMaker(UserDefinedRoleMaker):
    """Paddle 1.x's collective variant: ``worker_endpoints`` name the trainers."""

    def __init__(self, current_id: int = 0, worker_endpoints: Optional[Sequence[str]] = None):
        endpoints = list(worker_endpoints or [])
        super().__init__(current_id=current_id, role=Role.WORKER, worker_num=0 if endpoints else 1,
                         is_collective=True, worker_endpoints=endpoints)


class MPISymetricRoleMaker(RoleMakerBase):
    """Under ``mpirun -np 2N``: Paddle's symmetric layout — each node runs one
    parameter server and one worker: even ranks are servers, odd ranks
    workers (index rank // 2 in each), read from OMPI_COMM_WORLD_RANK and
    OMPI_COMM_WORLD_SIZE. Each server holds a free port on ``POD_IP``
    (default 127.0.0.1) and publishes it through the ranks' store
    (FLOTILLA_STORE, PADDLE_MASTER, else a file store in $TMPDIR named after
    the MPI job); the constructor waits until every server has."""

    def __init__(self) -> None:
        self._core = _F.MPISymetricRoleMaker(parameter_servers=True)


class GeneralRoleMaker(PaddleCloudRoleMaker):
    """Paddle 1.x's parameter-server role maker: the role from the same
    environment as :class:`PaddleCloudRoleMaker` (``TRAINING_ROLE``,
    ``PADDLE_PSERVERS_IP_PORT_LIST``, ``PADDLE_TRAINER_ENDPOINTS``,
    ``PADDLE_TRAINER_ID``, ``POD_IP``/``PADDLE_PORT``), read at first use.
    Its gloo settings (``path``, ``init_timeout_seconds``, ...) are accepted;
    the workers meet through the launcher's store instead."""

    _GLOO_SETTINGS = {"path", "init_timeout_seconds", "run_timeout_seconds", "http_ip_port", "http_timeout",
                      "hdfs_name", "hdfs_ugi", "iface", "prefix", "barrier_table"}

    def __init__(self, **kwargs: Any):
        unknown = set(kwargs) - self._GLOO_SETTINGS
        if unknown:
            raise TypeError(f"GeneralRoleMaker: unexpected arguments {sorted(unknown)}")
        super().__init__(is_collective=False)


__all__ = ["Role", "RoleMakerBase", "PaddleCloudRoleMaker", "UserDefinedRoleMaker",
           "UserDefinedCollectiveRoleMaker", "MPISymetricRoleMaker", "GeneralRoleMaker"]
