"""Every port, count and size from a flag or an environment variable is
range-checked (issue 32, finding 8): `flotilla` exits with rc 2 and a
message naming the flag or variable, the value and the range, before it
starts anything. No wrap (70000 is not port 4464), no silent default
(--server_num -3 is not 2), no bad_alloc."""
import os
import subprocess
import tempfile

import pytest

FLOTILLA = os.path.abspath(
    os.path.join(os.environ.get("FLOTILLA_BUILD_DIR", "build"), "bin", "flotilla"))

# (name, flotilla arguments, extra environment, expected message)
CASES = [
    ("started_port_70000", ["launch", "--started_port", "70000", "true"], {},
     "--started_port (PADDLE_START_PORT)=70000 is outside 0..65535"),
    ("started_port_negative", ["launch", "--started_port", "-5", "true"], {},
     "--started_port (PADDLE_START_PORT)=-5 is outside 0..65535"),
    ("last_trainer_port", ["launch", "--started_port", "65535", "--nproc_per_node", "2", "true"],
     {}, "the last trainer port (--started_port + --nproc_per_node - 1)=65536 is outside 1..65535"),
    ("server_num_negative", ["launch", "--server_num", "-3", "--worker_num", "1", "true"], {},
     "--server_num (PADDLE_SERVER_NUM)=-3 is outside 0..4096"),
    ("nproc_per_node_huge", ["launch", "--nproc_per_node", "2000000000", "true"], {},
     "--nproc_per_node (PADDLE_NPROC_PER_NODE)=2000000000 is outside 0..4096"),
    ("master_port_70000", ["launch", "--master_port", "70000", "true"], {},
     "--master_port (PADDLE_MASTER_PORT)=70000 is outside 0..65535"),
    ("metrics_port_70000", ["launch", "--metrics_port", "70000", "true"], {},
     "--metrics_port=70000 is outside -1..65535"),
    ("dashboard_address", ["launch", "--dashboard", ":99999", "true"], {},
     "port=99999 is outside 0..65535"),
    ("dashboard_port", ["dashboard", "--port", "99999", "LOG_DIR"], {},
     "--port=99999 is outside 0..65535"),
    ("env_start_port", ["launch", "true"], {"PADDLE_START_PORT": "70000"},
     "--started_port (PADDLE_START_PORT)=70000 is outside 0..65535"),
    ("env_nproc_per_node", ["launch", "true"], {"PADDLE_NPROC_PER_NODE": "-1"},
     "--nproc_per_node (PADDLE_NPROC_PER_NODE)=-1 is outside 0..4096"),
    ("env_master_port", ["launch", "true"],
     {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "-1", "WORLD_SIZE": "2", "RANK": "0"},
     "environment variable MASTER_PORT=-1 is outside 1..65535"),
    ("env_world_size", ["launch", "true"],
     {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "-2", "RANK": "0"},
     "environment variable WORLD_SIZE=-2 is outside 0..2147483647"),
    ("env_paddle_port", ["launch", "--use_paddlecloud", "true"],
     {"PADDLE_TRAINERS": "127.0.0.1", "POD_IP": "127.0.0.1", "PADDLE_PORT": "70000"},
     "environment variable PADDLE_PORT=70000 is outside 1..65535"),
]


@pytest.mark.parametrize("name,args,env,message", CASES, ids=[c[0] for c in CASES])
def test_a_bad_value_is_refused_with_its_range(name, args, env, message):
    with tempfile.TemporaryDirectory() as d:
        log_dir = os.path.join(d, "log")
        os.mkdir(log_dir)
        args = [log_dir if a == "LOG_DIR" else a for a in args]
        if args[0] == "launch":
            args = ["launch", "--log_dir", log_dir] + args[1:]
        full_env = dict(os.environ, FLOTILLA_JOB_SECRET="bad-flags-secret-0123456789abcdef")
        full_env.update(env)
        try:
            run = subprocess.run([FLOTILLA] + args, env=full_env, capture_output=True, text=True,
                                 timeout=20, cwd=d)
        except subprocess.TimeoutExpired:
            pytest.fail(f"flotilla {' '.join(args)} still running after 20 s")
        print(f"{name}: rc={run.returncode} {run.stderr.strip()[-300:]}")
        assert run.returncode == 2, run.stderr
        assert message in run.stderr, run.stderr
