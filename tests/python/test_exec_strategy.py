"""What a strategy asks of the executor takes effect or is refused by name:
ExecutionStrategy's num_iteration_per_run, num_iteration_per_drop_scope and
num_threads (through CompiledProgram and through fleet), fetch_frequency and
the a_sync_configs fields Flotilla's communicator lacks (refused), the ones
it has (in the trainer program), and Paddle's FLAGS_* variables (honoured or
warned about once, by name)."""

import json
import textwrap

import numpy as np
import pytest

import flotilla
from conftest import run_python
from flotilla import errors, fluid
from flotilla.distributed import fleet


def _linear(programs):
    """loss = mean(x @ w) with w [3, 1] starting at 0: each SGD step (lr 0.1)
    takes 0.1 off every weight when x is all ones."""
    main, startup, scope = programs
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    hidden = fluid.layers.fc(input=x, size=1, bias_attr=False,
                             param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.0)))
    loss = fluid.layers.mean(hidden)
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = flotilla.Executor()
    exe.run(startup)
    return main, scope, exe, hidden


def _w(scope) -> np.ndarray:
    return np.array(scope.find_var("w").get_tensor()).ravel()


def test_num_iteration_per_run_runs_the_program_that_many_times(programs):
    main, scope, exe, _ = _linear(programs)
    strategy = fluid.ExecutionStrategy()
    strategy.num_iteration_per_run = 3
    compiled = fluid.CompiledProgram(main).with_data_parallel(exec_strategy=strategy)
    ones = {"x": np.ones((4, 3), np.float32)}
    exe.run(compiled, feed=ones)
    np.testing.assert_allclose(_w(scope), [-0.3] * 3, rtol=1e-6)
    exe.run(main, feed=ones)  # the program itself carries the setting
    np.testing.assert_allclose(_w(scope), [-0.6] * 3, rtol=1e-6)
    strategy.num_iteration_per_run = 1
    fluid.CompiledProgram(main).with_data_parallel(exec_strategy=strategy)
    exe.run(main, feed=ones)
    np.testing.assert_allclose(_w(scope), [-0.7] * 3, rtol=1e-6)


def test_the_program_carries_the_run_settings_the_cpp_executor_honours(programs):
    main, _, _, _ = _linear(programs)
    assert (main._run_settings.iterations, main._run_settings.drop_scope_every) == (1, 0)
    strategy = fluid.ExecutionStrategy()
    strategy.num_iteration_per_run = 4
    strategy.num_iteration_per_drop_scope = 3
    fluid.CompiledProgram(main).with_data_parallel(exec_strategy=strategy)
    assert (main._run_settings.iterations, main._run_settings.drop_scope_every) == (4, 3)
    assert main.clone()._run_settings.iterations == 1  # a clone is a program of its own


def test_each_iteration_takes_the_next_batch_of_a_started_loader(programs):
    main, scope, exe, hidden = _linear(programs)
    x = main.global_block().var("x")
    loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4, iterable=False)

    def batches():
        for b in range(1, 6):  # batch b: every x is b, so the step takes 0.1 * b off each weight
            yield [(np.full([3], b, np.float32),)]
    loader.set_sample_list_generator(batches)
    strategy = fluid.ExecutionStrategy()
    strategy.num_iteration_per_run = 2
    fluid.CompiledProgram(main).with_data_parallel(exec_strategy=strategy)
    loader.start()
    (out,) = exe.run(main, fetch_list=[hidden])  # batches 1 and 2
    np.testing.assert_allclose(_w(scope), [-0.3] * 3, rtol=1e-6)
    np.testing.assert_allclose(out, [[-0.1 * 3 * 2]], rtol=1e-5)  # the second run's: x = 2, w = -0.1
    exe.run(main)  # batches 3 and 4
    np.testing.assert_allclose(_w(scope), [-1.0] * 3, rtol=1e-6)
    with pytest.raises(fluid.core.EOFException):
        exe.run(main)  # batch 5, then the end of the pass
    loader.reset()
    np.testing.assert_allclose(_w(scope), [-1.5] * 3, rtol=1e-6)


def test_num_iteration_per_drop_scope_frees_temporaries_every_n_runs(programs):
    main, scope, exe, hidden = _linear(programs)
    strategy = fluid.ExecutionStrategy()
    strategy.num_iteration_per_drop_scope = 2
    fluid.CompiledProgram(main).with_data_parallel(exec_strategy=strategy)
    ones = {"x": np.ones((4, 3), np.float32)}
    kept = []
    for _ in range(5):
        exe.run(main, feed=ones, fetch_list=[hidden])
        kept.append(hidden.name in exe._exe._local_scope(main, scope).local_var_names())
    assert kept == [True, False, True, False, True]
    np.testing.assert_allclose(_w(scope), [-0.5] * 3, rtol=1e-6)  # parameters live on


def test_bad_execution_strategy_values_are_named(programs):
    main, _, _, _ = _linear(programs)
    strategy = fluid.ExecutionStrategy()
    strategy.num_iteration_per_run = 0
    with pytest.raises(ValueError, match="exec_strategy.num_iteration_per_run=0 must be at least 1"):
        fluid.CompiledProgram(main).with_data_parallel(exec_strategy=strategy)
    strategy = fluid.ExecutionStrategy()
    strategy.use_thread_barrier = True
    with pytest.raises(NotImplementedError, match="use_thread_barrier"):
        fluid.CompiledProgram(main).with_data_parallel(exec_strategy=strategy)


def test_fetch_frequency_is_refused_by_name_when_applied():
    s = fleet.DistributedStrategy()
    s.fetch_frequency = 2  # accepted here; the C++ core refuses it when applied
    with pytest.raises(errors.UnimplementedError, match="fetch_frequency=2.*fetch every N steps in the training loop"):
        s._core.validate()


FLEET_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import flotilla
    from flotilla import fluid
    from flotilla.distributed import fleet

    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    w = fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.0))
    loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1, bias_attr=False, param_attr=w))
    fleet.init(is_collective=True)
    before = flotilla._core.blas_kernels()["threads"]
    s = fleet.DistributedStrategy()
    es = fluid.ExecutionStrategy()
    es.num_threads = 2
    es.num_iteration_per_run = 3
    s.exec_strategy = es
    if sys.argv[1] == "prototxt":
        s.load_from_prototxt(sys.argv[2])
    opt = fleet.distributed_optimizer(fluid.optimizer.SGD(learning_rate=0.1), s)
    opt.minimize(loss)
    exe = flotilla.Executor()
    exe.run(fluid.default_startup_program())
    exe.run(fluid.default_main_program(), feed={"x": np.ones((4, 3), np.float32)})
    w = np.array(fluid.global_scope().find_var("w").get_tensor()).ravel().tolist()
    print(json.dumps({"threads_before": before, "threads": flotilla._core.blas_kernels()["threads"], "w": w,
                      "cpus": len(os.sched_getaffinity(0))}))
""")


def test_fleet_applies_the_execution_strategy(tmp_path):
    script = tmp_path / "fleet_exec.py"
    script.write_text(FLEET_SCRIPT)
    proc = run_python([str(script), "plain"])
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["threads_before"] == 1  # OPENBLAS_NUM_THREADS=1 in the tests' environment
    assert got["threads"] == min(2, got["cpus"])
    np.testing.assert_allclose(got["w"], [-0.3] * 3, rtol=1e-6)  # three steps in one exe.run


def test_fleet_refuses_fetch_frequency_from_a_prototxt(tmp_path):
    script = tmp_path / "fleet_exec.py"
    script.write_text(FLEET_SCRIPT)
    strategy = tmp_path / "strategy.prototxt"
    strategy.write_text("fetch_frequency: 2\n")
    proc = run_python([str(script), "prototxt", str(strategy)])
    assert proc.returncode != 0
    assert "UnimplementedError" in proc.stderr
    assert "DistributedStrategy.fetch_frequency=2 is not applied by Flotilla" in proc.stderr


PS_SCRIPT = textwrap.dedent("""
    import json, sys
    from flotilla import fluid
    from flotilla.distributed import fleet

    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
    fleet.init(fleet.UserDefinedRoleMaker(current_id=0, role=fleet.Role.WORKER, worker_num=1,
                                          server_endpoints=["127.0.0.1:1"]))
    s = fleet.DistributedStrategy()
    s.a_sync = True
    s.a_sync_configs = json.loads(sys.argv[1])
    fleet.distributed_optimizer(fluid.optimizer.SGD(learning_rate=0.1), s).minimize(loss)
    block = fluid.default_main_program().global_block()
    attrs = [block._op_attrs(i) for i, op in enumerate(block.ops) if op == "ps_trainer_init"][0]
    print(json.dumps({k: attrs[k] for k in ("mode", "max_merge_var_num", "send_queue_size",
                                            "independent_recv_thread")}))
""")


def test_a_sync_configs_fields_reach_the_communicator_or_are_refused(tmp_path):
    script = tmp_path / "ps_fields.py"
    script.write_text(PS_SCRIPT)
    proc = run_python([str(script), '{"max_merge_var_num": 4, "send_queue_size": 8, "independent_recv_thread": true}'])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "mode": "async", "max_merge_var_num": 4, "send_queue_size": 8, "independent_recv_thread": True}
    for field, value in (("min_send_grad_num_before_recv", "2"), ("thread_pool_size", "4"),
                         ("send_wait_times", "3"), ("runtime_split_send_recv", "true"),
                         ("launch_barrier", "false"), ("lr_decay_steps", "5")):
        proc = run_python([str(script), f'{{"{field}": {value}}}'])
        assert proc.returncode != 0, f"{field}={value} was accepted"
        assert "flotilla.errors.UnimplementedError" in proc.stderr, proc.stderr[-2000:]
        assert f"DistributedStrategy.a_sync_configs.{field}={value} is not applied" in proc.stderr, \
            proc.stderr[-2000:]


def test_flags_are_warned_about_once_when_the_first_executor_is_made():
    proc = run_python(["-c", "import flotilla\nflotilla.Executor()\nflotilla.Executor()\n"],
                      env={"FLAGS_sync_nccl_allreduce": "1", "FLAGS_fraction_of_gpu_memory_to_use": "0.95",
                           "FLAGS_selected_gpus": "0", "FLAGS_fuse_parameter_memory_size": "16"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("FLAGS_sync_nccl_allreduce=1 is a Paddle flag Flotilla does not honour") == 1
    assert proc.stderr.count("FLAGS_fraction_of_gpu_memory_to_use=0.95 is a Paddle flag") == 1
    assert "FLAGS_selected_gpus" not in proc.stderr and "FLAGS_fuse_parameter_memory_size" not in proc.stderr


def test_fuse_parameter_memory_size_sizes_the_buckets_unless_the_strategy_does(monkeypatch):
    # The C++ core honours the flag (fleet::DistributedStrategy::HonourPaddleFlags).
    monkeypatch.setenv("FLAGS_fuse_parameter_memory_size", "15.5")
    s = fleet.DistributedStrategy()
    s._core._honour_paddle_flags()
    assert s.fuse_grad_size_in_MB == 16
    mine = fleet.DistributedStrategy()
    mine.fuse_grad_size_in_MB = 4
    mine._core._honour_paddle_flags()
    assert mine.fuse_grad_size_in_MB == 4
    monkeypatch.setenv("FLAGS_fuse_parameter_memory_size", "lots")
    with pytest.raises(ValueError, match="FLAGS_fuse_parameter_memory_size='lots'"):
        fleet.DistributedStrategy()._core._honour_paddle_flags()
    assert issubclass(errors.UnimplementedError, NotImplementedError)
