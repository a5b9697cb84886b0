"""MPISymetricRoleMaker gives Paddle's parameter-server layout under mpirun:
even ranks servers, odd ranks workers, the servers' endpoints gathered
through the ranks' store; and a parameter-server distributed_optimizer
without a strategy is Paddle's default (async). First from the environment
variables mpirun sets, then as a real `mpirun -np 4` job on loopback."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import child_env, run_python_processes

ROLE_SCRIPT = textwrap.dedent("""
    import json
    from flotilla.fluid.incubate.fleet.base import role_maker
    role = role_maker.MPISymetricRoleMaker()
    print(json.dumps({"server": role.is_server(), "worker": role.is_worker(), "worker_index": role.worker_index(),
                      "server_index": role.server_index(), "workers": role.worker_num(),
                      "servers": role.get_pserver_endpoints()}))
""")


def mpi_env(rank: int, size: int, store: str) -> dict:
    return {"OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(size),
            "OMPI_COMM_WORLD_LOCAL_RANK": str(rank), "FLOTILLA_STORE": "file:" + store, "POD_IP": "127.0.0.1",
            "FLOTILLA_RENDEZVOUS_TIMEOUT": "30"}


def test_even_ranks_are_servers_and_odd_ranks_workers(tmp_path):
    script = tmp_path / "roles.py"
    script.write_text(ROLE_SCRIPT)
    procs = run_python_processes([[str(script)]] * 4, [mpi_env(rank, 4, str(tmp_path / "store")) for rank in range(4)])
    for p in procs:
        assert p.returncode == 0, p.stderr
    roles = [json.loads(p.stdout.strip().splitlines()[-1]) for p in procs]
    assert [r["server"] for r in roles] == [True, False, True, False]
    assert [r["worker"] for r in roles] == [False, True, False, True]
    assert [r["server_index"] for r in roles] == [0, -1, 1, -1]
    assert [r["worker_index"] for r in roles][1::2] == [0, 1]
    assert all(r["workers"] == 2 for r in roles)
    servers = roles[0]["servers"]
    assert len(servers) == 2 and all(s.startswith("127.0.0.1:") for s in servers) and servers[0] != servers[1]
    assert all(r["servers"] == servers for r in roles)


def test_an_odd_number_of_ranks_is_refused_by_name(tmp_path):
    script = tmp_path / "roles.py"
    script.write_text(ROLE_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], env=child_env(mpi_env(0, 3, str(tmp_path / "store"))),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "needs an even number of ranks; OMPI_COMM_WORLD_SIZE=3" in done.stderr


PS_JOB = textwrap.dedent("""
    import json, sys
    import numpy as np
    import paddle.fluid as fluid
    from paddle.fluid.incubate.fleet.base import role_maker
    from paddle.fluid.incubate.fleet.parameter_server.distribute_transpiler import fleet

    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    cost = fluid.layers.mean(fluid.layers.square_error_cost(input=fluid.layers.fc(input=x, size=1), label=y))
    fleet.init(role_maker.MPISymetricRoleMaker())
    fleet.distributed_optimizer(fluid.optimizer.SGD(learning_rate=0.01)).minimize(cost)
    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
    else:
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(fluid.default_startup_program())
        fleet.init_worker()
        rng = np.random.default_rng(fleet.worker_index())
        losses = []
        for step in range(60):  # asynchronous updates: room for a slow interleaving
            xs = rng.random((16, 3), np.float32)
            losses.append(float(exe.run(fluid.default_main_program(), feed={"x": xs, "y": xs.sum(1, keepdims=True)},
                                        fetch_list=[cost])[0]))
        block = fleet.main_program.global_block()
        init = [block._op_attrs(i) for i, op in enumerate(block.ops) if op == "ps_trainer_init"][0]
        fleet.stop_worker()
        with open(f"{sys.argv[1]}.worker{fleet.worker_index()}", "w") as f:
            json.dump({"losses": losses, "async": init["mode"] == "async", "servers": fleet.server_endpoints()}, f)
""")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun (OpenMPI) is not installed")
def test_parameter_server_job_under_mpirun_trains_with_paddles_default_strategy(tmp_path):
    script = tmp_path / "ps_job.py"
    script.write_text(PS_JOB)
    env = child_env({"TMPDIR": str(tmp_path), "POD_IP": "127.0.0.1", "FLOTILLA_RENDEZVOUS_TIMEOUT": "60"})
    forwarded = ["PYTHONPATH", "TMPDIR", "POD_IP", "FLOTILLA_RENDEZVOUS_TIMEOUT", "OPENBLAS_NUM_THREADS"]
    forwarded += [name for name in env if name.startswith("FLOTILLA_JOB_SECRET") or name == "FLOTILLA_INSECURE"]
    cmd = ["mpirun", "-np", "4", "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    for name in forwarded:
        cmd += ["-x", name]
    cmd += [sys.executable, "-m", "flotilla.paddle_compat", str(script), str(tmp_path / "out")]
    job = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        out, err = job.communicate(timeout=180)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, 9)
            job.wait()
    assert job.returncode == 0, out[-3000:] + err[-3000:]
    results = [json.loads((tmp_path / f"out.worker{w}").read_text()) for w in range(2)]
    # Asynchronous: a worker that starts late already sees trained parameters,
    # so each ends below half of the untrained loss the earlier one saw.
    untrained = max(np.mean(r["losses"][:5]) for r in results)
    for r in results:
        assert r["async"], "no strategy: Paddle's default is the async strategy"
        assert len(r["servers"]) == 2 and all(s.startswith("127.0.0.1:") for s in r["servers"])
        losses = np.array(r["losses"])
        assert np.isfinite(losses).all() and losses[-5:].mean() < 0.5 * untrained, (losses, untrained)
