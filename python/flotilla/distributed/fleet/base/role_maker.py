"""Role makers: where a process learns its place in a job (Paddle's
``fleet.base.role_maker`` and ``fluid.incubate.fleet.base.role_maker``).

Each reads its source when constructed — the environment contract
(``docs/env.md``), arguments, or mpirun's variables — in the C++ core, and
raises an error naming the variable that is missing or malformed, so a
misconfigured job fails at its first line.
"""

from typing import Any, List, Optional, Sequence

from .... import _core as core
from ....errors import NotFoundError

_F = core.fleet


class Role:
    """Paddle's ``Role``: ``Role.WORKER`` (trainer) or ``Role.SERVER``."""

    WORKER = _F.Role.WORKER
    SERVER = _F.Role.SERVER


class RoleMakerBase:
    """The interface every role maker offers (its values come from C++)."""

    _core: Any
    _is_collective: bool = False

    def is_worker(self) -> bool:
        """True for a trainer."""
        return self._core.is_worker()

    def is_server(self) -> bool:
        """True for a parameter server."""
        return self._core.is_server()

    def is_first_worker(self) -> bool:
        """True for trainer 0."""
        return self._core.is_first_worker()

    def worker_index(self) -> int:
        """This trainer's rank among the trainers."""
        return self._core.worker_index()

    def server_index(self) -> int:
        """This server's index in the server list (-1 on a trainer)."""
        return self._core.server_index()

    def worker_num(self) -> int:
        """How many trainers the job has."""
        return self._core.worker_num()

    def server_num(self) -> int:
        """How many parameter servers the job has."""
        return self._core.server_num()

    def get_trainer_endpoints(self) -> List[str]:
        """The trainers' "host:port" endpoints (may be empty)."""
        return list(self._core.get_trainer_endpoints())

    def get_pserver_endpoints(self) -> List[str]:
        """The servers' "host:port" endpoints."""
        return list(self._core.get_pserver_endpoints())

    def _is_first_worker(self) -> bool:
        return self.is_first_worker()

    def _worker_index(self) -> int:
        return self.worker_index()

    def _worker_num(self) -> int:
        return self.worker_num()

    def _server_num(self) -> int:
        return self.server_num()

    def _is_worker(self) -> bool:
        return self.is_worker()

    def _is_server(self) -> bool:
        return self.is_server()

    def _generate_role(self) -> None:
        """Paddle reads the environment lazily here; Flotilla already did."""

    def __repr__(self) -> str:
        role = "server" if self.is_server() else "worker"
        index = self.server_index() if self.is_server() else self.worker_index()
        return f"{type(self).__name__}({role} {index}, {self.worker_num()} workers, {self.server_num()} servers)"


class PaddleCloudRoleMaker(RoleMakerBase):
    """Reads the role from the environment ``flotilla launch`` (or Paddle's
    launcher, Slurm, Kubernetes, torchrun-style variables) sets."""

    def __init__(self, is_collective: bool = False, **kwargs: Any):
        unknown = set(kwargs) - {"init_gloo", "path", "http_ip_port"}
        if unknown:
            raise TypeError(f"PaddleCloudRoleMaker: unexpected arguments {sorted(unknown)}")
        self._is_collective = bool(is_collective)
        try:
            self._core = _F.PaddleCloudRoleMaker(self._is_collective)
        except NotFoundError:
            if not self._is_collective:
                raise
            # As Paddle: a collective script started without a launcher is
            # the one trainer of a one-process job.
            self._core = _F.UserDefinedRoleMaker(0, Role.WORKER, 1, [], [], "")


class UserDefinedRoleMaker(RoleMakerBase):
    """A role given in code (Paddle 1.x and 2.x spellings)::

        UserDefinedRoleMaker(current_id=0, role=Role.WORKER, worker_num=2,
                             server_endpoints=["127.0.0.1:6170"])
    """

    def __init__(self, current_id: int = 0, role: Any = Role.WORKER, worker_num: int = 0,
                 server_endpoints: Optional[Sequence[str]] = None, is_collective: bool = False,
                 worker_endpoints: Optional[Sequence[str]] = None, init_gloo: bool = False,
                 store_address: str = "", **kwargs: Any):
        if kwargs:
            raise TypeError(f"UserDefinedRoleMaker: unexpected arguments {sorted(kwargs)}")
        servers = [] if is_collective else list(server_endpoints or [])
        self._is_collective = is_collective or not servers
        self._core = _F.UserDefinedRoleMaker(int(current_id), role, int(worker_num), servers,
                                            list(worker_endpoints or []), store_address)


class UserDefinedCollectiveRoleMaker(UserDefinedRoleMaker):
    """Paddle 1.x's collective variant: ``worker_endpoints`` name the trainers."""

    def __init__(self, current_id: int = 0, worker_endpoints: Optional[Sequence[str]] = None):
        endpoints = list(worker_endpoints or [])
        super().__init__(current_id=current_id, role=Role.WORKER, worker_num=max(len(endpoints), 1),
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
        self._is_collective = False
        self._core = _F.MPISymetricRoleMaker(parameter_servers=True)


__all__ = ["Role", "RoleMakerBase", "PaddleCloudRoleMaker", "UserDefinedRoleMaker",
           "UserDefinedCollectiveRoleMaker", "MPISymetricRoleMaker"]
