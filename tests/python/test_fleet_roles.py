"""Role makers and fleet as Paddle's behave: UserDefinedRoleMaker's keywords
with worker_num inferred, PaddleCloudRoleMaker without a launcher (Paddle's
non-distributed fleet and its unit tests' environment), fleet.init called
again, fleet.util (get_file_shard, print_on_rank, set_util; all_reduce and
barrier between two real processes), worker_endpoints(to_string=True) and
the collective-mode answers of init_worker / stop_worker."""

import pytest

from conftest import run_python_processes
from flotilla import errors, fluid
from flotilla.distributed import fleet
from flotilla.distributed.fleet.base import role_maker, util_factory

Role = role_maker.Role
WORKERS = ["127.0.0.1:6003", "127.0.0.1:6004"]
SERVERS = ["127.0.0.1:6001", "127.0.0.1:6002"]
# What Paddle's test_fleet_base.py sets: one trainer endpoint, no trainer id.
PADDLE_UNIT_TEST_ENV = {"POD_IP": "127.0.0.1", "PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:36000",
                        "PADDLE_TRAINERS_NUM": "2", "PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.1:36001,127.0.0.2:36002"}
ROLE_VARIABLES = ["PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_CURRENT_ENDPOINT",
                  "PADDLE_MASTER", "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_PORT", "POD_IP", "RANK",
                  "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                  "JOB_COMPLETION_INDEX", "MASTER_ADDR", "MASTER_PORT"]


@pytest.fixture
def env(monkeypatch):
    """A clean role environment; returns a setter for the variables of one test."""
    for name in ROLE_VARIABLES:
        monkeypatch.delenv(name, raising=False)

    def set_vars(values):
        for k, v in values.items():
            monkeypatch.setenv(k, v)
    return set_vars


def test_user_defined_role_maker_takes_paddles_keywords_and_infers_worker_num(tmp_path):
    role = role_maker.UserDefinedRoleMaker(is_collective=False, init_gloo=False, path=str(tmp_path), current_id=1,
                                           role=Role.WORKER, worker_endpoints=WORKERS, server_endpoints=SERVERS)
    assert role._worker_num() == 2 and role._server_num() == 2 and role._worker_index() == 1
    assert role._is_collective is False and not role._is_first_worker()
    assert role._get_trainer_endpoint() == "127.0.0.1:6004"
    assert role._info.store_address == "file:" + str(tmp_path)
    server = role_maker.UserDefinedRoleMaker(current_id=1, role=Role.SERVER, worker_num=3, server_endpoints=SERVERS)
    assert server._is_server() and server._server_index() == 1 and server._worker_num() == 3
    collective = role_maker.UserDefinedRoleMaker(is_collective=True, current_id=2, worker_endpoints=WORKERS + [
        "127.0.0.2:6005"], server_endpoints=SERVERS)
    assert collective._is_collective and collective._worker_num() == 3 and collective._server_num() == 0
    assert collective._node_num() == 2
    assert "role: WORKER, current_id: 2" in collective.to_string()
    with pytest.raises(ValueError, match="worker_num=3 but worker_endpoints lists 2"):
        role_maker.UserDefinedRoleMaker(worker_num=3, worker_endpoints=WORKERS, server_endpoints=SERVERS)
    with pytest.raises(ValueError, match="give worker_num or worker_endpoints"):
        role_maker.UserDefinedRoleMaker(server_endpoints=SERVERS)
    with pytest.raises(TypeError, match="unexpected arguments"):
        role_maker.UserDefinedRoleMaker(worker_endpoints=WORKERS, wroker_num=2)


def test_role_maker_base_has_no_role_and_endpoints_may_be_one_string(env):
    base = role_maker.RoleMakerBase()
    for question in (base.is_worker, base.worker_num, base.role_id, base.node_num):
        with pytest.raises(NotImplementedError, match="child class"):
            question()
    assert base.get_trainer_endpoints() == [] and base.get_pserver_endpoints() == []
    assert base.to_string() == "role: None, current_id: -1, worker_endpoints: [], server_endpoints: []"
    assert base._all_reduce(1, "sum", "worker") is None and base._all_gather(1, "worker") is None
    base._barrier("worker")
    server = role_maker.UserDefinedRoleMaker(is_collective=False, init_gloo=False, role=Role.SERVER, current_id=1,
                                             server_endpoints="127.0.0.1:36001,127.0.0.1:36002", worker_num=2)
    server.generate_role()
    assert server.server_num() == 2 and server.role_id() == 1 and server.is_server()
    assert role_maker.UserDefinedRoleMaker(role=2, server_endpoints=SERVERS, worker_num=1).is_server()
    one = role_maker.UserDefinedRoleMaker(is_collective=True, worker_endpoints=WORKERS[:1])
    fleet.init(one)
    assert one._all_reduce([3, 4], "sum", "worker").tolist() == [3, 4] and one._all_gather(7) == [7]


def test_paddle_cloud_role_maker_in_paddles_unit_test_environment(env):
    env(PADDLE_UNIT_TEST_ENV)
    role = role_maker.PaddleCloudRoleMaker(is_collective=True)
    fleet.init(role)
    assert fleet.worker_endpoints(to_string=True) == "127.0.0.1:36000"
    assert fleet.worker_endpoints() == ["127.0.0.1:36000"]
    assert fleet.is_first_worker() and fleet.worker_num() == 1 and fleet.server_num() == 0
    env({"TRAINING_ROLE": "PSERVER", "PADDLE_PORT": "36001"})
    fleet.init(role_maker.PaddleCloudRoleMaker())  # again, in the same process
    assert fleet.is_server() and fleet.server_index() == 0 and fleet.server_num() == 2
    assert fleet.server_endpoints(to_string=True) == "127.0.0.1:36001,127.0.0.2:36002"


def test_without_a_launcher_paddle_cloud_role_maker_is_the_non_distributed_fleet(env, capfd):
    role = role_maker.PaddleCloudRoleMaker(is_collective=False)
    assert role._is_non_distributed() and not role._is_collective and role._worker_num() == 1
    fleet.init(role)
    fleet.init_worker()  # warn and go on, as Paddle's
    fleet.stop_worker()
    assert "init_worker() does nothing in a non-distributed fleet" in "".join(capfd.readouterr())
    collective = role_maker.PaddleCloudRoleMaker(is_collective=True)
    assert collective._is_non_distributed() and collective.get_trainer_endpoints() == ["127.0.0.1:6170"]
    with pytest.raises(TypeError, match="unexpected arguments"):
        role_maker.PaddleCloudRoleMaker(is_collective=True, bogus=1)


def test_collective_init_worker_and_stop_worker_answer_as_paddle(env, capfd):
    fleet.init(role_maker.UserDefinedRoleMaker(is_collective=True, current_id=0, worker_endpoints=WORKERS[:1]))
    with pytest.raises(ValueError, match="Fleet can not find suitable runtime handler"):
        fleet.init_worker()
    with pytest.raises(ValueError, match="stop_worker.*Fleet can not find suitable runtime handler"):
        fleet.stop_worker()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1)).minimize(loss)
    capfd.readouterr()
    fleet.init_worker()
    fleet.stop_worker()
    err = "".join(capfd.readouterr())  # the C++ log
    assert "You should not call 'init_worker' method for collective mode." in err
    assert "You should not call 'stop_worker' method for collective mode." in err
    fleet.init(role_maker.UserDefinedRoleMaker(is_collective=True, current_id=0, worker_endpoints=WORKERS[:1]))
    with pytest.raises(ValueError, match="runtime handler"):
        fleet.init_worker()  # a re-init drops the last minimize
    with pytest.raises(ValueError, match="is_collective"):
        fleet.init(is_collective="yes")


def test_fleet_util_file_shard_print_on_rank_and_set_util(env, capsys):
    with pytest.raises(TypeError, match="files should be a list"):
        fleet.util.get_file_shard("files")
    shards = []
    for rank in range(2):
        fleet.init(role_maker.UserDefinedRoleMaker(is_collective=False, init_gloo=False, current_id=rank,
                                                   role=Role.WORKER, worker_endpoints=WORKERS,
                                                   server_endpoints=SERVERS))
        shards.append(fleet.util.get_file_shard(["1", "2", "3"]))
        fleet.util.print_on_rank(f"printed by rank {rank}", 1)
    assert shards == [["1", "2"], ["3"]]
    assert capsys.readouterr().out == "printed by rank 1\n"

    class UserDefinedUtil(fleet.UtilBase):
        def get_user_id(self):
            return 10

    fleet.set_util(UserDefinedUtil())
    assert fleet.util.get_user_id() == 10
    assert fleet.util.get_file_shard(["a", "b", "c", "d", "e"]) == ["d", "e"]  # the role of the last init
    factory = util_factory.UtilFactory()
    util = factory._create_util({"role_maker": None, "valid_strategy": fleet.DistributedStrategy()})
    assert util.role_maker is None and isinstance(util, fleet.UtilBase)
    fleet.set_util(fleet.UtilBase())


def test_fleet_util_refuses_to_pretend_for_parameter_server_workers(env):
    fleet.init(role_maker.UserDefinedRoleMaker(current_id=0, role=Role.WORKER, worker_endpoints=WORKERS,
                                               server_endpoints=SERVERS))
    with pytest.raises(NotImplementedError, match="all_reduce between the 2 workers of a parameter-server job"):
        fleet.util.all_reduce([1.0])
    with pytest.raises(NotImplementedError, match="comm_world='server'.*nearest: comm_world='worker'"):
        fleet.util.barrier("server")
    with pytest.raises(ValueError, match="comm_world must in"):
        fleet.util.barrier("everyone")


TWO_WORKERS = """
import sys
import numpy as np
from flotilla.distributed import fleet
from flotilla.distributed.fleet.base import role_maker

rank, store = int(sys.argv[1]), sys.argv[2]
eps = ["127.0.0.1:6170", "127.0.0.1:6171"]
for generation in range(2):  # fleet.init again meets the other worker anew
    fleet.init(role_maker.UserDefinedRoleMaker(is_collective=True, current_id=rank, worker_endpoints=eps, path=store))
    total = fleet.util.all_reduce(np.array([1.0, rank + generation]), mode="sum")
    fleet.util.barrier()
    top = fleet.util.all_reduce([rank * 5], mode="max")
    print("rank", rank, "generation", generation, total.tolist(), top.tolist(), fleet.worker_num(),
          fleet.worker_endpoints(to_string=True), flush=True)
fleet.barrier_worker()
"""


def test_fleet_util_all_reduce_and_barrier_between_two_processes(tmp_path):
    script = tmp_path / "two_workers.py"
    script.write_text(TWO_WORKERS)
    procs = run_python_processes([[str(script), str(rank), str(tmp_path / "store")] for rank in range(2)])
    assert [p.returncode for p in procs] == [0, 0], "\n".join(p.stderr[-2000:] for p in procs)
    for rank, p in enumerate(procs):
        assert f"rank {rank} generation 0 [2.0, 1.0] [5] 2 127.0.0.1:6170,127.0.0.1:6171" in p.stdout
        assert f"rank {rank} generation 1 [2.0, 3.0] [5] 2 127.0.0.1:6170,127.0.0.1:6171" in p.stdout


def test_role_errors_are_flotilla_errors():
    with pytest.raises(errors.InvalidArgumentError, match="current_id=2 must be in"):
        role_maker.UserDefinedRoleMaker(current_id=2, worker_endpoints=WORKERS, is_collective=True)
