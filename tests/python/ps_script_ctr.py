"""A small CTR model driven the way Paddle's fleet PS test scripts are: the
command line of ``TestFleetBase`` (``--role pserver|trainer --endpoints ...
--trainer_endpoints ... --current_id N --trainers N --mode sync|async|geo
--geo_sgd_need_push_nums K --reader pyreader|dataset --gloo_path DIR``), a
``UserDefinedRoleMaker``, two id slots of variable length (lod_level 1) looked
up in parameter-server sparse tables and pooled, a softsign/cos_sim tower and
an fc on top. ``--reader pyreader`` feeds a ``PyReader``; ``--reader dataset``
trains with ``train_from_dataset`` on a QueueDataset whose pipe command is
``python ps_script_ctr_reader.py`` over files in the CTR text format
(scripts/make_ctr_data.py). The trainer prints ``TRAIN loss: <x>`` lines.

Run by scripts/paddle_ps_scripts.py (tests/python/test_paddle_ps_scripts.py)."""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import paddle
import paddle.distributed.fleet as fleet
import paddle.distributed.fleet.base.role_maker as role_maker
import paddle.fluid as fluid

paddle.enable_static()
fluid.default_startup_program().random_seed = 1
fluid.default_main_program().random_seed = 1

VOCAB = 1000


def parse_args() -> argparse.Namespace:
    """TestFleetBase's command line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", required=True, choices=["pserver", "trainer"])
    parser.add_argument("--endpoints", default="")
    parser.add_argument("--trainer_endpoints", default="")
    parser.add_argument("--gloo_path", default="")
    parser.add_argument("--current_id", type=int, default=0)
    parser.add_argument("--trainers", type=int, default=1)
    parser.add_argument("--mode", default="async")
    parser.add_argument("--geo_sgd_need_push_nums", type=int, default=5)
    parser.add_argument("--reader", default="pyreader")
    parser.add_argument("--test", type=int, default=0)
    parser.add_argument("--model_dir", default="")
    return parser.parse_args()


def build_role(args: argparse.Namespace):
    """The role maker TestFleetBase's runner builds."""
    role = role_maker.Role.SERVER if args.role == "pserver" else role_maker.Role.WORKER
    return role_maker.UserDefinedRoleMaker(is_collective=False, init_gloo=False, path=args.gloo_path,
                                           current_id=args.current_id, role=role,
                                           worker_endpoints=args.trainer_endpoints.split(","),
                                           server_endpoints=args.endpoints.split(","))


def build_strategy(args: argparse.Namespace):
    """sync: a_sync off; async: on; geo: on with k_steps."""
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = args.mode != "sync"
    if args.mode == "geo":
        strategy.a_sync_configs = {"k_steps": args.geo_sgd_need_push_nums}
    return strategy


def net():
    """Two pooled id slots; label 1 when slot a's ids are small."""
    a = fluid.layers.data(name="a", shape=[-1, 1], dtype="int64", lod_level=1, append_batch_size=False)
    b = fluid.layers.data(name="b", shape=[-1, 1], dtype="int64", lod_level=1, append_batch_size=False)
    label = fluid.layers.data(name="click", shape=[-1, 1], dtype="int64", append_batch_size=False)
    pooled = []
    for name, slot in (("emb_a", a), ("emb_b", b)):
        emb = fluid.layers.embedding(slot, size=[VOCAB, 8], is_sparse=True,
                                     param_attr=fluid.ParamAttr(name=name, learning_rate=2.0))
        pooled.append(paddle.nn.functional.softsign(fluid.layers.sequence_pool(emb, "sum")))
    similarity = fluid.layers.cos_sim(pooled[0], pooled[1])
    merged = fluid.layers.concat(pooled + [similarity], axis=1)
    predict = fluid.layers.fc(merged, size=2, act="softmax")
    cost = fluid.layers.mean(fluid.layers.cross_entropy(predict, label))
    return [a, b, label], cost


def samples():
    """Ragged id lists; label 1 when slot a holds an id below 100."""
    rng = np.random.RandomState(7)
    for _ in range(800):
        a = rng.randint(0, VOCAB, rng.randint(1, 5)).tolist()
        b = rng.randint(0, VOCAB, rng.randint(1, 4)).tolist()
        yield a, b, [int(any(i < 100 for i in a))]


def train_pyreader(exe, feeds, cost) -> None:
    """PyReader over ``samples()``, batches of 16, one pass."""
    reader = fluid.io.PyReader(feed_list=feeds, capacity=16, iterable=False)
    reader.decorate_sample_list_generator(paddle.batch(samples, batch_size=16))
    reader.start()
    try:
        while True:
            (loss,) = exe.run(fluid.default_main_program(), fetch_list=[cost.name])
            print(f"TRAIN loss: {float(np.mean(loss))}", flush=True)
    except fluid.core.EOFException:
        reader.reset()


def train_dataset(exe, feeds, cost) -> None:
    """QueueDataset over two CTR-format files through the pipe command."""
    data_dir = tempfile.mkdtemp()
    here = os.path.dirname(os.path.abspath(__file__))
    maker = os.path.join(os.path.dirname(os.path.dirname(here)), "scripts", "make_ctr_data.py")
    files = []
    for part in range(2):
        path = os.path.join(data_dir, f"part-{part}")
        subprocess.run([sys.executable, maker, "--lines", "400", "--seed", str(part), "--vocab", str(VOCAB),
                        "--out", path], check=True)
        files.append(path)
    dataset = paddle.distributed.QueueDataset()
    dataset.init(batch_size=16, use_var=feeds, pipe_command=f"python {os.path.join(here, 'ps_script_ctr_reader.py')}",
                 thread_num=2)
    dataset.set_filelist(files)
    exe.train_from_dataset(program=fluid.default_main_program(), dataset=dataset, fetch_list=[cost],
                           fetch_info=["TRAIN loss"], print_period=5)


def main() -> None:
    """TestFleetBase's runtime_main for this model."""
    args = parse_args()
    fleet.init(build_role(args))
    feeds, cost = net()
    optimizer = fleet.distributed_optimizer(fluid.optimizer.SGD(0.05), strategy=build_strategy(args))
    optimizer.minimize(cost)
    if args.role == "pserver":
        fleet.init_server()
        fleet.run_server()
        return
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    fleet.init_worker()
    if args.reader == "dataset":
        train_dataset(exe, feeds, cost)
    else:
        train_pyreader(exe, feeds, cost)
    fleet.stop_worker()


if __name__ == "__main__":
    main()
