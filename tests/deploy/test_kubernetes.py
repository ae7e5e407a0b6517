"""deploy/kubernetes/ checked offline: every manifest against the Kubernetes API schemas that
kubernetes-validate bundles (strict: an unknown field is an error), then ours: hardened pods that
run as the image's user, probes, resource requests, writable scratch space for a read-only root,
a disruption budget and an autoscaler per workload, and the same commands as compose.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.corpora import REPO_ROOT
from tests.deploy.compose_file import compose_document
from tests.deploy.dockerfile import DOCKERFILE, parse_stages

MANIFESTS = REPO_ROOT / "deploy" / "kubernetes"
#: The oldest Kubernetes the manifests are for, and the newest whose schemas are bundled.
KUBERNETES_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
_FINAL = parse_stages(DOCKERFILE.read_text())[-1]
IMAGE_UID, IMAGE_GID = (int(n) for n in _FINAL.of("USER")[-1].args.split(":"))
HOME = _FINAL.env()["WELCOMEMAT_HOME"]


def manifest_files() -> list[Path]:
    return sorted(p for p in MANIFESTS.glob("*.yaml") if p.name != "kustomization.yaml")


def resources_in(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def all_resources() -> list[dict[str, Any]]:
    return [doc for path in manifest_files() for doc in resources_in(path)]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [r for r in all_resources() if r["kind"] == kind]


def deployment(component: str) -> dict[str, Any]:
    [found] = [
        d
        for d in of_kind("Deployment")
        if d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component") == component
    ]
    return found


def containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = workload["spec"]["template"]["spec"]["containers"]
    return found


def security_problems(workload: dict[str, Any]) -> list[str]:
    pod = workload["spec"]["template"]["spec"]
    pod_context = pod.get("securityContext", {})
    problems = []
    for container in containers(workload):
        context = {**pod_context, **container.get("securityContext", {})}
        where = f"{workload['metadata']['name']}/{container['name']}"
        expected = {
            "runAsNonRoot": True,
            "runAsUser": IMAGE_UID,
            "runAsGroup": IMAGE_GID,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
        }
        for key, value in expected.items():
            if context.get(key) != value:
                problems.append(f"{where}: {key} is {context.get(key)!r}, not {value!r}")
        if context.get("capabilities", {}).get("drop") != ["ALL"]:
            problems.append(f"{where}: capabilities are not all dropped")
        if context.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            problems.append(f"{where}: no RuntimeDefault seccomp profile")
    return problems


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: p.name)
def test_every_manifest_is_valid_kubernetes(path: Path, version: str) -> None:
    for resource in resources_in(path):
        kubernetes_validate.validate(resource, version, strict=True)


def test_a_misspelt_field_is_refused() -> None:
    renderer = deployment("renderer")
    containers(renderer)[0]["readinessprobe"] = containers(renderer)[0].pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="readinessprobe"):
        kubernetes_validate.validate(renderer, KUBERNETES_VERSIONS[0], strict=True)


def test_the_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == [p.name for p in manifest_files()]


@pytest.mark.parametrize("component", ["renderer", "worker"])
def test_pods_run_as_the_images_user_read_only_without_privileges(component: str) -> None:
    assert security_problems(deployment(component)) == []


@pytest.mark.parametrize("component", ["renderer", "worker"])
def test_every_container_requests_what_it_was_measured_to_use(component: str) -> None:
    for container in containers(deployment(component)):
        resources = container["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"])
        limit, request = resources["limits"]["memory"], resources["requests"]["memory"]
        assert int(limit.removesuffix("Mi")) >= int(request.removesuffix("Mi"))


@pytest.mark.parametrize("component", ["renderer", "worker"])
def test_home_and_tmp_are_writable_scratch_volumes(component: str) -> None:
    workload = deployment(component)
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
    for container in containers(workload):
        mounted = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
        assert {HOME, "/tmp"} <= set(mounted)
        assert all("emptyDir" in mounted[path] for path in (HOME, "/tmp"))


def test_the_renderer_is_live_on_healthz_and_ready_on_readyz() -> None:
    [container] = containers(deployment("renderer"))
    port = container["ports"][0]["name"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port}
    [service] = of_kind("Service")
    assert service["spec"]["selector"] == deployment("renderer")["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["targetPort"] == port


def test_the_worker_is_live_by_its_heartbeat_as_in_compose_and_ready_by_its_redis() -> None:
    [container] = containers(deployment("worker"))
    compose_check = compose_document({})["services"]["worker"]["healthcheck"]["test"]
    assert container["livenessProbe"]["exec"]["command"] == compose_check[1:]  # without "CMD"
    heartbeat = compose_check[compose_check.index("--heartbeat-file") + 1]
    command = container["command"]
    assert command[command.index("--heartbeat-file") + 1] == heartbeat
    assert "connect_running" in container["readinessProbe"]["exec"]["command"][-1]


@pytest.mark.parametrize("component", ["renderer", "worker"])
def test_pods_run_the_commands_compose_runs(component: str) -> None:
    [container] = containers(deployment(component))
    assert container["command"] == compose_document({})["services"][component]["command"]


@pytest.mark.parametrize("component", ["renderer", "worker"])
def test_each_workload_has_a_disruption_budget_and_an_autoscaler(component: str) -> None:
    workload = deployment(component)
    labels = workload["spec"]["template"]["metadata"]["labels"]
    budgets = [
        b
        for b in of_kind("PodDisruptionBudget")
        if b["spec"]["selector"]["matchLabels"].items() <= labels.items()
    ]
    assert len(budgets) == 1 and budgets[0]["spec"].get("maxUnavailable") == 1
    [scaler] = [
        h
        for h in of_kind("HorizontalPodAutoscaler")
        if h["spec"]["scaleTargetRef"]["name"] == workload["metadata"]["name"]
    ]
    assert scaler["spec"]["scaleTargetRef"]["kind"] == "Deployment"
    assert 1 <= scaler["spec"]["minReplicas"] < scaler["spec"]["maxReplicas"]


def test_the_namespace_enforces_the_restricted_pod_security_standard() -> None:
    [namespace] = of_kind("Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
