"""DistributedStrategy as Paddle 2.x's: every field exists; a wrong-typed
value warns and keeps the old one; hints warn once; options Flotilla lacks
are accepted at assignment and refused when the strategy is applied, with
the C++ core's message (fleet::DistributedStrategy::Validate decides, Python
reflects it)."""

import json
import textwrap
import warnings

import pytest

from conftest import run_python
from flotilla import errors, fluid
from flotilla.distributed import fleet
from flotilla.distributed.fleet.compat_strategies import CollectiveStrategy, to_strategy
from flotilla.distributed.transpiler import DistributeTranspilerConfig

PADDLE_FIELDS = [
    "amp", "amp_configs", "recompute", "recompute_configs", "pipeline", "pipeline_configs", "localsgd",
    "localsgd_configs", "adaptive_localsgd", "adaptive_localsgd_configs", "dgc", "dgc_configs", "fp16_compress",
    "fp16_allreduce", "sync_nccl_allreduce", "nccl_comm_num", "use_hierarchical_allreduce",
    "hierarchical_allreduce_inter_nranks", "sync_batch_norm", "fuse_all_reduce_ops", "fuse_grad_size_in_MB",
    "_fuse_grad_size_in_TFLOPS", "gradient_merge", "gradient_merge_configs", "lars", "lars_configs", "lamb",
    "lamb_configs", "a_sync", "a_sync_configs", "elastic", "auto", "semi_auto", "cudnn_exhaustive_search",
    "cudnn_batchnorm_spatial_persistent", "conv_workspace_size_limit", "tensor_parallel",
    "tensor_parallel_configs", "sharding", "sharding_configs", "qat", "qat_configs", "asp",
    "find_unused_parameters", "without_graph_optimization", "heter_ccl_mode", "build_strategy",
    "execution_strategy", "fetch_frequency",
]


def test_every_paddle_field_exists_with_paddles_default():
    s = fleet.DistributedStrategy()
    for name in PADDLE_FIELDS:
        getattr(s, name)
    assert (s.cudnn_exhaustive_search, s.conv_workspace_size_limit, s.nccl_comm_num) == (True, 4000, 1)
    assert s._fuse_grad_size_in_TFLOPS == 50 and s.amp_configs["init_loss_scaling"] == 32768
    with pytest.raises(TypeError, match="no field 'unknown_key'"):
        s.unknown_key = "UNK"


@pytest.mark.parametrize("field, good, bad", [
    ("amp", True, "True"), ("localsgd", True, "True"), ("nccl_comm_num", 3, "2"),
    ("hierarchical_allreduce_inter_nranks", 8, "4"), ("fuse_grad_size_in_MB", 50, "40"),
    ("conv_workspace_size_limit", 1000, "400"), ("_fuse_grad_size_in_TFLOPS", 0.25, "0.3"),
])
def test_wrong_type_warns_and_keeps_the_old_value(field, good, bad):
    s = fleet.DistributedStrategy()
    setattr(s, field, good)
    with pytest.warns(UserWarning, match=f"DistributedStrategy.{field.lstrip('_')} expects .*got '{bad}'; keeping"):
        setattr(s, field, bad)
    assert getattr(s, field) == good


def test_a_sync_and_fp16_compress_raise_on_a_wrong_type_as_in_paddle():
    s = fleet.DistributedStrategy()
    with pytest.raises(ValueError, match="a_sync expects a bool"):
        s.a_sync = "True"
    with pytest.raises(TypeError, match="fp16_compress expects a bool"):
        s.fp16_compress = "True"
    assert s.a_sync is True and s.fp16_compress is False


def test_a_hint_warns_once_with_the_cores_message():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = fleet.DistributedStrategy()
        s.conv_workspace_size_limit = 1234
        s.conv_workspace_size_limit = 1234
        fleet.DistributedStrategy().conv_workspace_size_limit = 1234
        s.auto = False  # the default: no hint
    messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert messages == ["DistributedStrategy.conv_workspace_size_limit=1234 has no effect in Flotilla: "
                        "there is no cuDNN on the CPU backend"]
    assert fleet.DistributedStrategy()._core._hints() == []


def _refusal(s) -> str:
    with pytest.raises(errors.UnimplementedError) as info:
        s._core.validate()
    return str(info.value)


def test_unimplemented_options_are_accepted_at_assignment_and_refused_with_the_cores_message():
    s = fleet.DistributedStrategy()
    s.amp = True  # no error here
    s.amp_configs = {"init_loss_scaling": 1024}
    assert s.amp is True and s.amp_configs["init_loss_scaling"] == 1024
    message = _refusal(s)
    assert "DistributedStrategy.amp=true is not applied by Flotilla; nearest: float32 training" in message
    assert "src/fleet/distributed_strategy.cc" in message  # the C++ core's verdict
    s.amp = False
    s._core.validate()  # configs of an option that is off are kept, not refused

    exec_strategy = fluid.ExecutionStrategy()
    exec_strategy.use_thread_barrier = True
    build = fluid.BuildStrategy()
    build.gradient_scale_strategy = fluid.BuildStrategy.GradientScaleStrategy.One
    for field, value, named in (("dgc", True, "dgc=true"), ("lars", True, "lars=true is not applied by Flotilla; nearest: the Momentum"),
                                ("fetch_frequency", 2, "fetch_frequency=2"),
                                ("execution_strategy", exec_strategy, "exec_strategy.use_thread_barrier=true"),
                                ("build_strategy", build, "build_strategy.gradient_scale_strategy=1")):
        s = fleet.DistributedStrategy()
        setattr(s, field, value)
        assert f"DistributedStrategy.{named}" in _refusal(s)


def test_paddle_1x_strategies_are_refused_by_the_core():
    old = CollectiveStrategy()
    old.use_amp = True
    assert "DistributedStrategy.amp=true is not applied" in _refusal(to_strategy(old))
    config = DistributeTranspilerConfig()
    config.runtime_split_send_recv = True
    with pytest.raises(errors.UnimplementedError, match="a_sync_configs.runtime_split_send_recv=true is not applied"):
        config._to_core(True)


def test_a_prototxt_with_refused_options_loads_and_round_trips(tmp_path):
    s = fleet.DistributedStrategy()
    s.dgc = True
    s.recompute_configs = {"checkpoints": ["x", "y"]}
    s.save_to_prototxt(str(tmp_path / "s.prototxt"))
    t = fleet.DistributedStrategy()
    t.load_from_prototxt(str(tmp_path / "s.prototxt"))
    assert t.dgc is True and t.recompute_configs["checkpoints"] == ["x", "y"]


MINIMIZE = textwrap.dedent("""
    import json, sys
    from flotilla import fluid
    from flotilla.distributed import fleet

    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
    fleet.init(is_collective=True)
    s = fleet.DistributedStrategy()
    setattr(s, sys.argv[1], json.loads(sys.argv[2]))
    print("assigned", flush=True)
    opt = fleet.distributed_optimizer(fluid.optimizer.SGD(learning_rate=0.1), s)
    print("wrapped", flush=True)
    try:
        opt.minimize(loss)
        print(json.dumps({"ok": True}))
    except NotImplementedError as e:
        expected = None
        try:
            s._core.validate()
        except NotImplementedError as direct:
            expected = str(direct)
        print(json.dumps({"ok": False, "type": type(e).__name__, "message": str(e), "core": expected}))
""")


def test_minimize_refuses_what_assignment_accepted(tmp_path):
    script = tmp_path / "minimize.py"
    script.write_text(MINIMIZE)
    proc = run_python([str(script), "pipeline", "true"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[:2] == ["assigned", "wrapped"]
    got = json.loads(lines[-1])
    assert got["ok"] is False and got["type"] == "UnimplementedError"
    assert "DistributedStrategy.pipeline=true is not applied by Flotilla; nearest: data parallelism" in got["message"]
    assert got["message"] == got["core"]
    proc = run_python([str(script), "cudnn_exhaustive_search", "false"])  # a hint trains
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"ok": True}
    assert proc.stderr.count("cudnn_exhaustive_search=false has no effect in Flotilla") == 1
