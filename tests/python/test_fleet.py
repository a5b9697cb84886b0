"""flotilla.distributed.fleet in one process: strategies by their Paddle
names (2.x and 1.x), refusals that name the option, Paddle's FLAGS_*
warnings, the one-process collective job and the compatibility switch's
errors. Multi-process jobs: test_launch.py and test_seeds.py."""

import warnings

import pytest

from conftest import run_python
from flotilla import fluid
from flotilla.distributed import fleet
from flotilla.distributed.fleet import paddle_flags
from flotilla.distributed.fleet.compat_strategies import CollectiveStrategy, StrategyFactory, to_strategy


def test_strategy_fields_by_paddle_name_and_exec_strategy_object():
    s = fleet.DistributedStrategy()
    s.nccl_comm_num = 2
    s.a_sync_configs = {"k_steps": 7}
    exec_strategy = fluid.ExecutionStrategy()
    exec_strategy.num_threads = 3
    exec_strategy.num_iteration_per_drop_scope = 30
    s.exec_strategy = exec_strategy
    assert s.nccl_comm_num == 2 and s.a_sync_configs["k_steps"] == 7
    assert s.exec_strategy.num_threads == 3 and s.exec_strategy.num_iteration_per_drop_scope == 30
    assert "nccl_comm_num: 2" in repr(s)


def test_options_flotilla_lacks_are_refused_by_name_when_applied():
    s = fleet.DistributedStrategy()
    assert s.amp is False
    s.amp = True  # refused when applied (test_strategy_fields.py), not here
    with pytest.raises(NotImplementedError, match="DistributedStrategy.amp"):
        s._core.validate()
    with pytest.raises(AttributeError, match="no field 'nccl_comm_nm'"):
        s.nccl_comm_nm = 2


def test_paddle_1x_collective_strategy_maps_local_sgd_names():
    old = CollectiveStrategy()
    old.use_local_sgd = True
    old.local_sgd_steps = 4
    old.local_sgd_is_warm_steps = 10
    old.nccl_comm_num = 2
    s = to_strategy(old)
    assert s.localsgd is True
    assert s.localsgd_configs["k_steps"] == 4 and s.localsgd_configs["begin_step"] == 11
    assert s.nccl_comm_num == 2
    old.use_dist_fc = True
    with pytest.raises(NotImplementedError, match="use_dist_fc"):
        to_strategy(old)


def test_paddle_1x_parameter_server_strategies():
    assert to_strategy(StrategyFactory.create_sync_strategy()).a_sync is False
    assert to_strategy(StrategyFactory.create_async_strategy()).a_sync is True
    geo = to_strategy(StrategyFactory.create_geo_strategy(400))
    assert geo.a_sync is True and geo.a_sync_configs["k_steps"] == 400


def test_flags_flotilla_does_not_honour_are_warned_once_by_name():
    env = {"FLAGS_sync_nccl_allreduce": "1", "FLAGS_selected_gpus": "0", "FLAGS_test_only_flag": "x", "PATH": "/"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert paddle_flags.warn_unhonoured(env) == ["FLAGS_sync_nccl_allreduce", "FLAGS_test_only_flag"]
        assert paddle_flags.warn_unhonoured(env) == []
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert "FLAGS_sync_nccl_allreduce=1 is a Paddle flag Flotilla does not honour" in messages[0]


def test_collective_script_without_a_launcher_is_a_one_process_job():
    proc = run_python(["-c",
                       "from flotilla.distributed import fleet\n"
                       "fleet.init(is_collective=True)\n"
                       "print(fleet.worker_index(), fleet.worker_num(), fleet.is_first_worker())\n"],
                      env={"FLAGS_fuse_parameter_groups_size": "50"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0 1 True"
    assert proc.stderr.count("FLAGS_fuse_parameter_groups_size=50 is a Paddle flag") == 1


def test_paddle_switch_names_what_flotilla_lacks_at_the_call(tmp_path):
    script = tmp_path / "uses_dygraph.py"
    script.write_text("import paddle\nimport paddle.fluid as fluid\nprint('imported', fluid.layers.fc.__name__)\n"
                      "paddle.disable_static()\n")
    proc = run_python(["-m", "flotilla.paddle_compat", str(script)])
    assert "imported fc" in proc.stdout
    assert proc.returncode != 0 and "NotImplementedError: paddle.disable_static" in proc.stderr
    script.write_text("import paddle\npaddle.nn.functional.grid_sample(None, None)\n")
    proc = run_python(["-m", "flotilla.paddle_compat", str(script)])
    assert "paddle.nn.functional.grid_sample is not in Flotilla" in proc.stderr
