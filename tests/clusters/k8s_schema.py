"""A schema check of the manifests in deploy/k8s: the fields Flotilla's
manifests use, with their types, for every kind they contain (Service, Job,
Deployment, PersistentVolumeClaim, Kubeflow's PaddleJob and PyTorchJob).
Unknown fields are errors, so a misspelt key ("completion: 2") fails here
rather than being dropped by the API server."""
from __future__ import annotations

from typing import Any, Dict, List

STR, INT, BOOL = "string", "integer", "boolean"


def listof(schema: Any) -> Dict[str, Any]:
    return {"__list__": schema}


def mapof(schema: Any) -> Dict[str, Any]:
    return {"__map__": schema}


ENV_VAR = {"name": STR, "value": STR,
           "valueFrom": {"fieldRef": {"fieldPath": STR, "apiVersion": STR},
                         "secretKeyRef": {"name": STR, "key": STR}}}
PORT = {"name": STR, "containerPort": INT, "protocol": STR}
PROBE = {"httpGet": {"path": STR, "port": INT}, "initialDelaySeconds": INT, "periodSeconds": INT,
         "failureThreshold": INT}
CONTAINER = {"name": STR, "image": STR, "imagePullPolicy": STR, "command": listof(STR),
             "args": listof(STR), "env": listof(ENV_VAR), "ports": listof(PORT),
             "workingDir": STR,
             "resources": {"requests": mapof(STR), "limits": mapof(STR)},
             "volumeMounts": listof({"name": STR, "mountPath": STR, "readOnly": BOOL}),
             "livenessProbe": PROBE, "readinessProbe": PROBE}
VOLUME = {"name": STR, "persistentVolumeClaim": {"claimName": STR},
          "secret": {"secretName": STR, "defaultMode": INT}, "emptyDir": {}}
POD_TEMPLATE = {"metadata": {"labels": mapof(STR), "annotations": mapof(STR)},
                "spec": {"containers": listof(CONTAINER), "restartPolicy": STR,
                         "subdomain": STR, "hostname": STR, "volumes": listof(VOLUME)}}
METADATA = {"name": STR, "namespace": STR, "labels": mapof(STR)}
REPLICA = {"replicas": INT, "restartPolicy": STR, "template": POD_TEMPLATE}

KINDS = {
    ("v1", "Service"): {"spec": {"clusterIP": STR, "publishNotReadyAddresses": BOOL,
                                 "selector": mapof(STR),
                                 "ports": listof({"name": STR, "port": INT, "targetPort": INT})}},
    ("v1", "PersistentVolumeClaim"): {"spec": {"accessModes": listof(STR),
                                               "resources": {"requests": mapof(STR)}}},
    ("v1", "Secret"): {"type": STR, "stringData": mapof(STR)},
    ("batch/v1", "Job"): {"spec": {"completionMode": STR, "completions": INT,
                                   "parallelism": INT, "backoffLimit": INT,
                                   "template": POD_TEMPLATE}},
    ("apps/v1", "Deployment"): {"spec": {"replicas": INT,
                                         "selector": {"matchLabels": mapof(STR)},
                                         "template": POD_TEMPLATE}},
    ("kubeflow.org/v1", "PaddleJob"): {"spec": {"paddleReplicaSpecs": {"Master": REPLICA,
                                                                       "Worker": REPLICA}}},
    ("kubeflow.org/v1", "PyTorchJob"): {"spec": {"pytorchReplicaSpecs": {"Master": REPLICA,
                                                                         "Worker": REPLICA}}},
}
REQUIRED = {"Job": ["spec.template.spec.containers"], "Service": ["spec.ports"],
            "Deployment": ["spec.selector", "spec.template"],
            "PaddleJob": ["spec.paddleReplicaSpecs"], "PyTorchJob": ["spec.pytorchReplicaSpecs"]}


def _check(value: Any, schema: Any, where: str, errors: List[str]) -> None:
    if isinstance(schema, str):
        expected = {STR: str, INT: int, BOOL: bool}[schema]
        if not isinstance(value, expected) or (schema == INT and isinstance(value, bool)):
            errors.append(f"{where}: expected {schema}, got {type(value).__name__} {value!r}")
        return
    if "__list__" in schema:
        if not isinstance(value, list):
            errors.append(f"{where}: expected a list")
            return
        for i, item in enumerate(value):
            _check(item, schema["__list__"], f"{where}[{i}]", errors)
        return
    if not isinstance(value, dict):
        errors.append(f"{where}: expected a mapping")
        return
    for key, item in value.items():
        sub = schema["__map__"] if "__map__" in schema else schema.get(key)
        if sub is None:
            errors.append(f"{where}.{key}: unknown field")
        else:
            _check(item, sub, f"{where}.{key}", errors)


def check_document(doc: Dict[str, Any], source: str) -> List[str]:
    """Every problem of one manifest document, as "file: path: what"."""
    errors: List[str] = []
    kind = (doc.get("apiVersion"), doc.get("kind"))
    schema = KINDS.get(kind)
    if schema is None:
        return [f"{source}: unknown apiVersion/kind {kind}"]
    body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata")}
    _check(doc.get("metadata", {}), METADATA, "metadata", errors)
    if "name" not in doc.get("metadata", {}):
        errors.append("metadata.name: required")
    _check(body, schema, kind[1], errors)
    for path in REQUIRED.get(kind[1], []):
        node: Any = doc
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            errors.append(f"{path}: required")
    for c in _containers(doc):
        if not c.get("name") or not c.get("image"):
            errors.append(f"container {c.get('name')!r}: name and image are required")
    return [f"{source}: {e}" for e in errors]


def _containers(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    spec = doc.get("spec", {})
    templates = [spec.get("template", {})]
    for key in ("paddleReplicaSpecs", "pytorchReplicaSpecs"):
        templates += [r.get("template", {}) for r in spec.get(key, {}).values()]
    return [c for t in templates for c in t.get("spec", {}).get("containers", [])]
