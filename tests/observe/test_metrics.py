"""/metrics of the launcher, the parameter servers and the trainers, parsed by
prometheus_client's text-format parser (issue 14's must-show), and /healthz."""
from __future__ import annotations

import pathlib
import socket
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from jobs import BUILD, Job, fetch


def scrape(url: str) -> dict:
    """The families of url/metrics by name; the parser rejects malformed text."""
    status, text = fetch(url + "/metrics")
    assert status == 200
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(family, suffix: str = "", **labels) -> list:
    return [s for s in family.samples if s.name == family.name + suffix
            and all(s.labels.get(k) == v for k, v in labels.items())]


def process_url(job: Job, stem: str) -> str:
    path = job.log / "metrics" / f"{stem}.url"
    return job.wait_for(f"{stem}'s metrics address",
                        lambda: path.exists() and path.read_text().strip())


def wait_for_steps(job: Job, url: str, steps: int) -> dict:
    def ready():
        families = scrape(url)
        total = families.get("flotilla_steps")  # parser strips _total from counters
        return families if total and samples(total, "_total")[0].value >= steps else None
    return job.wait_for(f"{steps} steps at {url}", ready)


@pytest.fixture
def ps_job(tmp_path: pathlib.Path):
    job = Job(tmp_path, ["--metrics_port", "0", "--server_num", "1", "--worker_num", "2"],
              [str(BUILD / "bin" / "wide_and_deep"), "--train_samples", "500000",
               "--hidden_size", "32", "--log_every", "100"])
    yield job
    job.stop()


def test_parameter_server_job_metrics(ps_job: Job) -> None:
    trainer = wait_for_steps(ps_job, process_url(ps_job, "rank0"), 20)
    assert samples(trainer["flotilla_step_seconds"], "_count")[0].value >= 20
    assert samples(trainer["flotilla_samples"], "_total")[0].value >= 20 * 64
    pulls = samples(trainer["flotilla_rpc_seconds"], "_count", method="PullSparse")
    assert pulls and all(s.labels["table"] for s in pulls) and sum(s.value for s in pulls) > 0
    assert samples(trainer["flotilla_rpc_bytes"], "_total", method="PushSparse")[0].value > 0
    assert samples(trainer["process_resident_memory_bytes"])[0].value > 1 << 20

    server = scrape(process_url(ps_job, "server0"))
    served = samples(server["flotilla_rpc_served_seconds"], "_count", method="PushSparse")
    assert served and sum(s.value for s in served) > 0
    rows = samples(server["flotilla_ps_table_rows"])
    assert rows and max(s.value for s in rows) > 0

    launcher = ps_job.url("metrics")
    families = scrape(launcher)
    assert samples(families["flotilla_job_processes"], state="running")[0].value == 3
    status, text = fetch(launcher + "/healthz")
    assert (status, text.strip()) == (200, "ok")
    status, text = fetch(launcher + "/readyz")
    assert (status, text.strip()) == (200, "ready: 3 processes running")
    status, text = fetch(process_url(ps_job, "server0") + "/healthz")
    assert status == 200


def test_collective_job_metrics(tmp_path: pathlib.Path) -> None:
    job = Job(tmp_path, ["--metrics_port", "0", "--devices", "0,1"],
              [str(BUILD / "bin" / "train_with_fleet"), "--steps", "100000", "--hidden", "64"])
    try:
        trainer = wait_for_steps(job, process_url(job, "rank1"), 10)
        allreduce = samples(trainer["flotilla_collective_seconds"], "_count", kind="allreduce")
        assert allreduce and allreduce[0].value >= 10
        assert samples(trainer["flotilla_collective_bytes"], "_total",
                       kind="allreduce")[0].value > 0
        assert samples(trainer["flotilla_loss"])[0].value > 0
        comm = samples(trainer["flotilla_step_comm_seconds"])[0].value
        compute = samples(trainer["flotilla_step_compute_seconds"])[0].value
        assert comm >= 0 and compute > 0
        status, text = fetch(job.url("metrics") + "/readyz")
        assert (status, text.strip()) == (200, "ready: 2 processes running")
    finally:
        job.stop()


def test_a_launcher_waiting_for_its_peers_is_live_but_not_ready(tmp_path: pathlib.Path) -> None:
    with socket.socket() as s:  # a free port for the job's store
        s.bind(("127.0.0.1", 0))
        master = f"127.0.0.1:{s.getsockname()[1]}"
    job = Job(tmp_path, ["--metrics_port", "0", "--nnodes", "2", "--rank", "0",
                         "--master", master, "--nproc_per_node", "1"],
              [str(BUILD / "bin" / "train_with_fleet"), "--steps", "10"])
    try:
        launcher = job.url("metrics")
        assert fetch(launcher + "/healthz") == (200, "ok\n")
        status, text = fetch(launcher + "/readyz")
        assert (status, text.strip()) == (503, "not ready: joining the job (rendezvous)")
    finally:
        job.stop()


def test_health_turns_503_naming_the_stall(tmp_path: pathlib.Path) -> None:
    """Rank 1 sleeps before an all-reduce: once the stall timeout passes,
    rank 0's own /healthz and the launcher's answer 503 naming the
    collective, before the launcher stops the job."""
    job = Job(tmp_path, ["--metrics_port", "0", "--devices", "0,1", "--stall_timeout", "2",
                         "--grace_period", "3"],
              [str(BUILD / "bin" / "hang_worker"), "--sleep_rank", "1", "--sleep_step", "3",
               "--sleep_seconds", "60"])
    try:
        rank0, launcher = process_url(job, "rank0"), job.url("metrics")
        assert fetch(rank0 + "/healthz") == (200, "ok\n")
        seen: dict[str, tuple[int, str]] = {}

        def stalled():
            for name, url in (("rank 0", rank0), ("launcher", launcher)):
                try:
                    status, text = fetch(url + "/healthz")
                except OSError:
                    continue  # already stopped
                if status == 503:
                    seen.setdefault(name, (status, text))
            return len(seen) == 2
        deadline = time.monotonic() + 60
        while not stalled() and job.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "rank 0" in seen, (seen, job.stderr()[-2000:])
        assert seen["rank 0"][1].startswith("stalled: allreduce #"), seen
        assert "pending for" in seen["rank 0"][1], seen
        if "launcher" in seen:  # its window closes as it stops the job
            assert seen["launcher"][1].startswith("stalled: rank "), seen
        assert job.proc.wait(60) == 124
    finally:
        job.stop()
