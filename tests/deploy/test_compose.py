"""compose.yaml as people run it, checked without Docker: the Compose Specification's schema (the
copy check-jsonschema vendors), then ours: every command works without the secret exported, one
image built once, restart policies and health checks everywhere, the port on loopback unless
asked, hardened welcomemat containers, and a renderer that refuses to start without its key."""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from typing import Any

import jsonschema
import pytest

from tests.deploy.compose_file import COMPOSE_FILE, compose_document, references
from tests.deploy.dockerfile import DOCKERFILE, parse_stages
from tests.deploy.installed_tools import installed
from welcomemat.errors import ConfigError
from welcomemat.settings import Settings

#: What a shell without any of the file's variables gives Compose (`docker compose down` on a
#: machine where nobody exported anything).
NOTHING_EXPORTED: dict[str, str] = {}
IMAGE_USER = parse_stages(DOCKERFILE.read_text())[-1].of("USER")[-1].args


def compose_schema() -> dict[str, Any]:
    vendored = resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    schema = json.loads(vendored.read_text())
    assert isinstance(schema, dict)
    return schema


def welcomemat_services(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services that run this project's image (the one a service builds from `.`)."""
    services: dict[str, dict[str, Any]] = document["services"]
    images = {s.get("image") for s in services.values() if "build" in s}
    return {name: s for name, s in services.items() if "build" in s or s.get("image") in images}


def required_variable_problems(text: str) -> list[str]:
    return [
        f"${{{name}{op or ''}...}}: without a default, every compose command fails or warns when it is unset"
        for name, op in references(text)
        if op not in (":-", "-")
    ]


def one_image_problems(document: dict[str, Any]) -> list[str]:
    services: dict[str, dict[str, Any]] = document["services"]
    builders = [name for name, s in services.items() if "build" in s]
    if len(builders) != 1:
        return [f"{len(builders)} services build an image ({', '.join(builders)}): build it once"]
    image = services[builders[0]].get("image")
    if not image:
        return [f"{builders[0]} builds an image without naming it: no other service can run it"]
    problems = []
    for name, service in welcomemat_services(document).items():
        if name != builders[0] and service.get("pull_policy") != "never":
            problems.append(f"{name} runs {image} built here but may pull it from a registry")
    return problems


def restart_and_health_problems(document: dict[str, Any]) -> list[str]:
    problems = []
    for name, service in document["services"].items():
        if service.get("restart") != "unless-stopped":
            problems.append(f"{name}: restart is {service.get('restart')!r}, not 'unless-stopped'")
        test = (service.get("healthcheck") or {}).get("test")
        if not test or test[0] == "NONE" or service["healthcheck"].get("disable"):
            problems.append(f"{name}: no healthcheck")
        if "stop_grace_period" not in service:
            problems.append(f"{name}: no stop_grace_period")
    return problems


def port_problems(document: dict[str, Any]) -> list[str]:
    problems = []
    for name, service in document["services"].items():
        for port in service.get("ports", []):
            host_ip = port.get("host_ip") if isinstance(port, dict) else None
            if isinstance(port, str | int):
                parts = str(port).split(":")
                host_ip = parts[0] if len(parts) == 3 else None
            if host_ip != "127.0.0.1":
                problems.append(f"{name}: port {port} is published on every interface by default")
    return problems


def hardening_problems(document: dict[str, Any]) -> list[str]:
    problems = []
    for name, service in welcomemat_services(document).items():
        if service.get("read_only") is not True:
            problems.append(f"{name}: the root filesystem is writable")
        if str(service.get("user")) != IMAGE_USER:
            problems.append(f"{name}: user {service.get('user')!r}, not the image's {IMAGE_USER}")
        if "/tmp" not in service.get("tmpfs", []):
            problems.append(f"{name}: no tmpfs on /tmp")
        if service.get("init") is not True:
            problems.append(f"{name}: no init process to forward signals and reap children")
    return problems


def test_the_file_follows_the_compose_specification() -> None:
    tool = installed("check-jsonschema")
    result = subprocess.run(
        [tool, "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # And once interpolated, as Compose reads it with nothing exported.
    jsonschema.validate(compose_document(NOTHING_EXPORTED), compose_schema())


def test_the_schema_check_refuses_a_misspelt_key() -> None:
    document = compose_document(NOTHING_EXPORTED)
    document["services"]["renderer"]["restart_policy"] = "always"
    with pytest.raises(jsonschema.ValidationError, match="restart_policy"):
        jsonschema.validate(document, compose_schema())


def test_every_command_works_without_the_secret_exported() -> None:
    assert required_variable_problems(COMPOSE_FILE.read_text()) == []
    compose_document(NOTHING_EXPORTED)  # `down`, `ps`, `logs` interpolate the whole file first


def test_one_image_is_built_once_and_run_by_every_welcomemat_service() -> None:
    document = compose_document(NOTHING_EXPORTED)
    assert one_image_problems(document) == []
    assert set(welcomemat_services(document)) == {"renderer", "worker"}


def test_every_service_restarts_checks_its_health_and_stops_gracefully() -> None:
    assert restart_and_health_problems(compose_document(NOTHING_EXPORTED)) == []


def test_the_renderer_is_published_on_loopback_unless_asked() -> None:
    assert port_problems(compose_document(NOTHING_EXPORTED)) == []
    asked = compose_document({"WELCOMEMAT_BIND": "0.0.0.0", "WELCOMEMAT_PORT": "8080"})
    assert asked["services"]["renderer"]["ports"] == ["0.0.0.0:8080:8000"]


def test_welcomemat_containers_are_read_only_numeric_and_reap_their_children() -> None:
    assert hardening_problems(compose_document(NOTHING_EXPORTED)) == []


def test_without_the_secret_the_renderer_refuses_to_start_naming_it() -> None:
    document = compose_document(NOTHING_EXPORTED)
    with pytest.raises(ConfigError, match="WELCOMEMAT_SECRET") as refused:
        Settings.from_env(document["services"]["renderer"]["environment"])
    assert "at least 32 characters" in str(refused.value)
    # The worker precomputes without a key, so it starts.
    Settings.from_env(document["services"]["worker"]["environment"])


def test_the_worker_reads_a_campaign_folder_mounted_read_only() -> None:
    volumes = compose_document(NOTHING_EXPORTED)["services"]["worker"]["volumes"]
    assert "./campaign:/campaign:ro" in volumes
