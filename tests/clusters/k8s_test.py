"""Flotilla's Kubernetes manifests (deploy/k8s): a schema check of every
manifest, and each workload simulated pod by pod — one network-namespace
host per pod with the pod's hostname, the DNS names Kubernetes would give it
in every pod's /etc/hosts, and exactly the environment its controller would
set (k8s_pods.py) — training to the result ``flotilla launch`` gives.
No Kubernetes cluster runs here; docs/deploy.md says what was and was not
run against a real one."""
from __future__ import annotations

import glob
import os
import secrets
import shutil
import sys
import tempfile
import time
import unittest
from typing import Dict

import yaml

sys.path.insert(0, os.path.dirname(__file__))
from cluster_test_util import (SOURCE, bin_path, last_json, launch_reference,  # noqa: E402
                               read_text, results, skip_unless)
from k8s_pods import Pod, secret_mounts_of, pods_of  # noqa: E402
from k8s_schema import check_document  # noqa: E402
from netns_hosts import Hosts, can_make_hosts  # noqa: E402

MANIFESTS = os.path.join(SOURCE, "deploy", "k8s")
PROBE = os.path.join(os.path.dirname(__file__), "k8s_probe.py")


def documents(name: str):
    with open(os.path.join(MANIFESTS, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def workload(name: str):
    return next(pods for pods in map(pods_of, documents(name)) if pods)


class ManifestSchema(unittest.TestCase):
    def test_every_manifest_passes_the_schema(self) -> None:
        files = sorted(glob.glob(os.path.join(MANIFESTS, "*.yaml")))
        self.assertGreaterEqual(len(files), 5)
        for path in files:
            for doc in documents(os.path.basename(path)):
                self.assertEqual(check_document(doc, path), [])

    def test_every_workload_reads_the_job_secret_from_a_mounted_secret(self) -> None:
        elastic = next(d for d in documents("elastic.yaml") if d["kind"] == "Job")
        template = elastic["spec"]["template"]
        container = template["spec"]["containers"][0]
        pods = [Pod("flotilla-elastic", [], container["command"], container["env"],
                    secret_mounts=secret_mounts_of(template))]
        for name in ("indexed-job.yaml", "paddlejob-collective.yaml", "paddlejob-ps.yaml",
                     "pytorchjob.yaml"):
            pods += workload(name)
        for pod in pods:
            path = pod.environment("10.0.0.1").get("FLOTILLA_JOB_SECRET_FILE", "")
            self.assertTrue(any(path.startswith(m + "/") for m in pod.secret_mounts),
                            f"pod {pod.name}: FLOTILLA_JOB_SECRET_FILE={path!r} is not in a "
                            f"mounted Secret {pod.secret_mounts}")

    def test_the_schema_catches_mistakes(self) -> None:
        doc = documents("indexed-job.yaml")[1]
        doc["spec"]["completion"] = 2
        doc["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = 2
        errors = check_document(doc, "x.yaml")
        self.assertTrue(any("spec.completion: unknown field" in e for e in errors), errors)
        self.assertTrue(any("expected string, got int" in e for e in errors), errors)


def make_secrets(work: str, pods) -> Dict[str, str]:
    """The Secrets the pods mount, made as ``kubectl create secret`` would
    (one random job secret each, key "job-secret", mode 0400): mountPath ->
    the host directory standing in for the mount."""
    mounted: Dict[str, str] = {}
    for pod in pods:
        for path, name in pod.secret_mounts.items():
            host_dir = os.path.join(work, "secrets", name)
            if not os.path.isdir(host_dir):
                os.makedirs(host_dir)
                key = os.path.join(host_dir, "job-secret")
                with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400), "w") as f:
                    f.write(secrets.token_hex(32))
            mounted[path] = host_dir
    return mounted


class PodSimulation(unittest.TestCase):
    """Runs every pod of a workload on its own namespace host."""

    def run_pods(self, pods, timeout: float = 120):
        aliases = {}
        for i, pod in enumerate(pods):
            for name in pod.dns:
                aliases[name] = i
        hosts = Hosts([p.name for p in pods], aliases)
        work = tempfile.mkdtemp(prefix="flotilla-k8s-")
        self.addCleanup(shutil.rmtree, work, True)
        procs, probers = [], []
        mounted = make_secrets(work, pods)
        try:
            for i, pod in enumerate(pods):
                if pod.probes:  # the kubelet, probing the pod's address from its node
                    probers.append(hosts.start(
                        i, [sys.executable, PROBE] + [f"{k}={u}" for k, u in
                                                      pod.probe_urls(hosts.ips[i]).items()],
                        os.path.join(work, f"{pod.name}.probes")))
                env = {"PATH": os.path.dirname(bin_path("flotilla")) + ":/usr/bin:/bin",
                       "HOME": "/root", "HOSTNAME": pod.name}
                env.update(pod.environment(hosts.ips[i], mounted))
                cwd = os.path.join(work, pod.name)
                os.makedirs(cwd)
                procs.append(hosts.start(i, ["sh", "-c", 'cd "$0" && exec "$@"', cwd] +
                                         pod.command, os.path.join(cwd, "pod.log"),
                                         hostname=pod.name, env=env))
            deadline = time.time() + timeout
            while any(p.poll() is None for p in procs) and time.time() < deadline:
                time.sleep(0.1)
            for prober in probers:
                hosts.stop(prober)
            logs = {pod.name: read_text(os.path.join(work, pod.name, "pod.log")) for pod in pods}
            for pod, proc in zip(pods, procs):
                self.assertEqual(proc.poll(), 0, f"pod {pod.name}:\n{logs[pod.name][-3000:]}")
            return work, logs
        finally:
            hosts.close()

    def assert_probed(self, work: str, pods, ready: str) -> None:
        """Every probe of every pod answered 200 while its pod ran: "ok" for
        liveness, `ready` for readiness; a 503 only before that (joining)."""
        for pod in pods:
            self.assertTrue(pod.probes, f"{pod.name} has no probes")
            seen = read_text(os.path.join(work, f"{pod.name}.probes")).splitlines()
            self.assertIn("liveness 200 ok", seen, f"{pod.name}: {seen}")
            if "readiness" in pod.probes:
                self.assertIn(f"readiness 200 {ready}", seen, f"{pod.name}: {seen}")
                first_ready = seen.index(f"readiness 200 {ready}")
                for line in seen[:first_ready]:
                    if line.startswith("readiness 503"):
                        self.assertIn("joining the job", line, f"{pod.name}: {seen}")

    def reference_loss(self, nproc: int, command) -> float:
        args = command[command.index("train_with_fleet") + 1:]
        with tempfile.TemporaryDirectory() as d:
            launch_reference(d, ["--nproc_per_node", str(nproc)], "train_with_fleet", args)
            return last_json(read_text(os.path.join(d, "workerlog.0")))["loss"]

    def test_indexed_job(self) -> None:
        pods = workload("indexed-job.yaml")
        self.assertEqual([p.name for p in pods], ["flotilla-train-0", "flotilla-train-1"])
        work, logs = self.run_pods(pods)
        self.assert_probed(work, pods, "")
        got = last_json(logs["flotilla-train-0"])
        self.assertEqual(got["ranks"], 2)
        self.assertEqual(got["loss"], self.reference_loss(2, pods[0].command))

    def test_paddlejob_collective(self) -> None:
        pods = workload("paddlejob-collective.yaml")
        env = pods[1].environment("10.0.0.2")
        self.assertEqual(env["PADDLE_MASTER"], "flotilla-paddle-worker-0:36543")
        self.assertEqual(env["PADDLE_NNODES"], "2")
        work, logs = self.run_pods(pods)
        self.assert_probed(work, pods, "ready: 2 processes running")
        got = last_json(read_text(os.path.join(work, pods[0].name, "log", "workerlog.0")))
        self.assertEqual(got["ranks"], 4)
        self.assertEqual(got["loss"], self.reference_loss(4, pods[0].command))

    def test_paddlejob_parameter_server(self) -> None:
        pods = workload("paddlejob-ps.yaml")
        self.assertEqual(len(pods), 4)
        self.assertEqual(pods[0].environment("10.0.0.1")["PADDLE_SERVER_NUM"], "1")
        work, _ = self.run_pods(pods)
        self.assert_probed(work, pods, "ready: 1 process running")
        args = pods[2].command[pods[2].command.index("dist_fit_a_line") + 1:]
        with tempfile.TemporaryDirectory() as d:
            ref = results(launch_reference(d, ["--server_num", "2", "--worker_num", "2"],
                                           "dist_fit_a_line", args), "workerlog")
        got = [r for pod in pods[2:] for r in results(os.path.join(work, pod.name, "log"),
                                                         "workerlog")]
        self.assertEqual(len(got), 2)
        for worker, expected in zip(got, ref):
            self.assertEqual(worker["test_mse"], expected["test_mse"])

    def test_pytorchjob(self) -> None:
        pods = workload("pytorchjob.yaml")
        self.assertEqual(pods[1].environment("10.0.0.2")["RANK"], "1")
        work, logs = self.run_pods(pods)
        self.assert_probed(work, pods, "ready: 2 processes running")
        got = last_json(read_text(os.path.join(work, pods[0].name, "log", "workerlog.0")))
        self.assertEqual(got["ranks"], 4)
        self.assertEqual(got["loss"], self.reference_loss(4, pods[0].command))


if __name__ == "__main__":
    skip_unless(None)
    why = can_make_hosts()
    if why:
        print(f"SKIPPED pod simulation: {why}", flush=True)
        unittest.main(verbosity=2, defaultTest="ManifestSchema")
    else:
        unittest.main(verbosity=2)
