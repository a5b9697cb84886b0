"""The pods Kubernetes would run for a manifest, as its controllers make
them: each pod's name, hostname, the DNS names that resolve to it, its
container's command and environment (the manifest's, then what the
controller adds). Follows the Job controller (Indexed Jobs) and Kubeflow's
training operator (PaddleJob, PyTorchJob)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class Pod:
    name: str
    dns: List[str]                      # names that resolve to the pod's IP
    command: List[str]
    env: List[Dict[str, Any]]           # as in the manifest, controller's appended
    field_refs: Dict[str, str] = field(default_factory=dict)
    secret_mounts: Dict[str, str] = field(default_factory=dict)  # mountPath -> Secret name
    probes: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # "liveness": httpGet

    def probe_urls(self, pod_ip: str) -> Dict[str, str]:
        """What the kubelet GETs for each probe of the container."""
        return {kind: f"http://{pod_ip}:{get['port']}{get['path']}"
                for kind, get in self.probes.items()}

    def environment(self, pod_ip: str, mounted: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        """The container's environment with fieldRefs and $(VAR) references
        resolved as the kubelet does (in order, earlier variables only).
        ``mounted`` maps a mountPath to the host directory holding what the
        kubelet would mount there; values under a mountPath point into it."""
        out: Dict[str, str] = {}
        for var in self.env:
            if "valueFrom" in var:
                path = var["valueFrom"]["fieldRef"]["fieldPath"]
                value = {"status.podIP": pod_ip, "metadata.name": self.name}[path]
            else:
                value = re.sub(r"\$\((\w+)\)", lambda m: out.get(m.group(1), m.group(0)),
                               var.get("value", ""))
            for path, host_dir in (mounted or {}).items():
                if value == path or value.startswith(path.rstrip("/") + "/"):
                    value = host_dir + value[len(path.rstrip("/")):]
            out[var["name"]] = value
        return out


def _container(template: Dict[str, Any]) -> Dict[str, Any]:
    return template["spec"]["containers"][0]


def secret_mounts_of(template: Dict[str, Any]) -> Dict[str, str]:
    """mountPath -> Secret name, for the container's Secret volumes."""
    secrets = {v["name"]: v["secret"]["secretName"]
               for v in template["spec"].get("volumes", []) if "secret" in v}
    return {m["mountPath"]: secrets[m["name"]]
            for m in _container(template).get("volumeMounts", []) if m["name"] in secrets}


def _probes(container: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {kind: container[f"{kind}Probe"]["httpGet"] for kind in ("liveness", "readiness")
            if f"{kind}Probe" in container}


def _port(container: Dict[str, Any], name: str, default: int) -> int:
    for p in container.get("ports", []):
        if p.get("name") == name:
            return p["containerPort"]
    return default


def indexed_job(job: Dict[str, Any]) -> List[Pod]:
    """Pod i: hostname <job>-<i>, JOB_COMPLETION_INDEX=i, DNS <job>-<i>.<subdomain>."""
    name = job["metadata"]["name"]
    template = job["spec"]["template"]
    c = _container(template)
    sub = template["spec"].get("subdomain")
    pods = []
    for i in range(job["spec"]["completions"]):
        host = f"{name}-{i}"
        dns = [f"{host}.{sub}", f"{host}.{sub}.default.svc.cluster.local"] if sub else []
        env = list(c.get("env", [])) + [{"name": "JOB_COMPLETION_INDEX", "value": str(i)}]
        pods.append(Pod(host, dns, c["command"] + c.get("args", []), env,
                        secret_mounts=secret_mounts_of(template), probes=_probes(c)))
    return pods


def _replica_pods(job: Dict[str, Any], specs_key: str, env_for) -> List[Pod]:
    name = job["metadata"]["name"]
    specs = job["spec"][specs_key]
    total = sum(s["replicas"] for s in specs.values())
    pods = []
    for rtype in ("Master", "Worker"):
        spec = specs.get(rtype)
        for i in range(spec["replicas"] if spec else 0):
            pod = f"{name}-{rtype.lower()}-{i}"
            c = _container(spec["template"])
            env = list(c.get("env", [])) + [{"name": "PYTHONUNBUFFERED", "value": "0"}]
            env += env_for(job, rtype, i, total)
            # The operator makes a headless Service per pod, named as the pod.
            pods.append(Pod(pod, [pod], c["command"] + c.get("args", []), env,
                            secret_mounts=secret_mounts_of(spec["template"]),
                            probes=_probes(c)))
    return pods


def _paddle_env(job: Dict[str, Any], rtype: str, i: int, total: int) -> List[Dict[str, Any]]:
    name = job["metadata"]["name"]
    specs = job["spec"]["paddleReplicaSpecs"]
    master_type = "Master" if "Master" in specs else "Worker"
    port = _port(_container(specs[master_type]["template"]), "master", 36543)
    env: List[Dict[str, Any]] = [{"name": "PADDLE_JOB_ID", "value": name},
                                 {"name": "PADDLE_NNODES", "value": str(total)}]
    if rtype == master_type and i == 0:
        env += [{"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "PADDLE_MASTER", "value": f"$(POD_IP_DUMMY):{port}"}]
    else:
        env += [{"name": "PADDLE_MASTER", "value": f"{name}-{master_type.lower()}-0:{port}"}]
    if master_type == "Master":
        env += [{"name": "PADDLE_SERVER_NUM" if rtype == "Master" else "PADDLE_TRAINER_NUM",
                 "value": "1"}]
    return env


def _pytorch_env(job: Dict[str, Any], rtype: str, i: int, total: int) -> List[Dict[str, Any]]:
    name = job["metadata"]["name"]
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]
    port = _port(_container(master["template"]), "pytorchjob-port", 23456)
    rank = i + 1 if rtype == "Worker" else i
    return [{"name": "MASTER_PORT", "value": str(port)},
            {"name": "MASTER_ADDR", "value": f"{name}-master-0"},
            {"name": "WORLD_SIZE", "value": str(total)},
            {"name": "RANK", "value": str(rank)}]


def pods_of(doc: Dict[str, Any]) -> Optional[List[Pod]]:
    """The pods a workload document makes, or None for other kinds."""
    kind = doc["kind"]
    if kind == "Job" and doc["spec"].get("completionMode") == "Indexed":
        return indexed_job(doc)
    if kind == "PaddleJob":
        return _replica_pods(doc, "paddleReplicaSpecs", _paddle_env)
    if kind == "PyTorchJob":
        return _replica_pods(doc, "pytorchReplicaSpecs", _pytorch_env)
    return None
