"""The Docker commands the docs show, run for real without Docker.

docs/operations.md (Docker Compose, Loading a campaign) and the Dockerfile's header mark their
command blocks. Each line is taken as written: `docker compose build` cannot run here and is
the only line skipped; `export` lines run in a shell; `docker compose up -d` starts the renderer
and the worker with the commands and environment compose.yaml gives them; `docker compose run
--rm SERVICE ...` and `docker run ... IMAGE ...` lose that prefix and run the rest as the
container would. The container's view is mapped onto this machine: the Redis compose.yaml names
is the test Redis, the campaign mount is the folder the docs make from the bundled example (its
accounts dated from today) and must stay unchanged, WELCOMEMAT_HOME is a fresh folder per
container, the renderer's port a free one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.corpora import REPO_ROOT
from tests.deploy.compose_file import compose_document
from tests.deploy.dockerfile import DOCKERFILE, header_commands, parse_stages
from tests.ports import free_port

OPERATIONS = REPO_ROOT / "docs" / "operations.md"
WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
IMAGE_ENV = parse_stages(DOCKERFILE.read_text())[-1].env()
MOUNT = "/campaign"
#: The Redis compose.yaml gives every service: the one this test maps to its own.
COMPOSE_REDIS_URL = "redis://redis:6379/0"


def doc_block(marker: str) -> list[str]:
    """The shell lines of the ```sh block between `<!-- marker -->` and `<!-- /marker -->`."""
    text = OPERATIONS.read_text()
    block = text.split(f"<!-- {marker} -->\n", 1)[1].split(f"<!-- /{marker} -->", 1)[0]
    body = block.split("```sh\n", 1)[1].split("\n```", 1)[0]
    return [line for line in body.splitlines() if line.strip()]


class Machine:
    """This machine dressed as the compose stack's containers."""

    def __init__(self, root: Path, campaign: Path, redis_url: str) -> None:
        self.root, self.campaign, self.redis_url = root, campaign, redis_url
        self.port = free_port()
        self.exported: dict[str, str] = {}
        self.services: dict[str, subprocess.Popen[bytes]] = {}
        self._homes = 0

    def compose(self) -> dict[str, Any]:
        """compose.yaml as interpolated from what the operator exported (the port moved as the docs
        say: WELCOMEMAT_PORT with the public URL to match)."""
        variables = {
            **self.exported,
            "WELCOMEMAT_PORT": str(self.port),
            "WELCOMEMAT_PUBLIC_URL": f"http://localhost:{self.port}",
        }
        return compose_document(variables)

    def _home(self) -> str:
        self._homes += 1
        home = self.root / f"home-{self._homes}"
        home.mkdir()
        return str(home)

    def environment(self, given: dict[str, str]) -> dict[str, str]:
        """A container's environment: the image's ENV, then what compose or `-e` sets."""
        base = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
        env = {**base, **{k: v for k, v in IMAGE_ENV.items() if k != "PATH"}, **given}
        env["WELCOMEMAT_HOME"] = self._home()  # the image's VOLUME, fresh per container
        assert env.get("REDIS_URL") == COMPOSE_REDIS_URL, "the command reaches the compose stack's Redis"
        env["REDIS_URL"] = self.redis_url
        return env

    def argv(self, words: list[str]) -> list[str]:
        programs = {"welcomemat": WELCOMEMAT, "python": sys.executable}
        mapped = [programs.get(words[0], words[0])]
        for word in words[1:]:
            if word == MOUNT or word.startswith(MOUNT + "/"):
                word = str(self.campaign) + word[len(MOUNT) :]
            mapped.append(word)
        return mapped

    def service_env(self, service: str) -> dict[str, str]:
        return self.environment(
            {k: str(v) for k, v in self.compose()["services"][service]["environment"].items()}
        )

    def run(self, words: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(words),
            cwd=self.campaign,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def renderer_argv(self, command: list[str]) -> list[str]:
        """The renderer's command, on the loopback interface and the free port (its container's
        0.0.0.0:8000 behind the published 127.0.0.1 port)."""
        words = list(command)
        words[words.index("--host") + 1] = "127.0.0.1"
        words[words.index("--port") + 1] = str(self.port)
        return self.argv(words)

    def up(self) -> None:
        services = self.compose()["services"]
        commands = {
            "renderer": self.renderer_argv(services["renderer"]["command"]),
            "worker": self.argv(services["worker"]["command"]),
        }
        for name, argv in commands.items():
            with (self.root / f"{name}.log").open("wb") as log:  # a file: a full pipe would block it
                self.services[name] = subprocess.Popen(
                    argv, cwd=self.campaign, env=self.service_env(name), stdout=log, stderr=subprocess.STDOUT
                )
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            for name, process in self.services.items():
                assert process.poll() is None, f"{name} exited: {self.log(name)}"
            assert time.monotonic() < deadline, "the renderer did not become ready"
            time.sleep(0.1)

    def healthcheck(self, service: str) -> subprocess.CompletedProcess[str]:
        """The service's compose healthcheck, run as Docker runs it inside the container."""
        test = self.compose()["services"][service]["healthcheck"]["test"]
        assert test[0] == "CMD"
        words = [w.replace("127.0.0.1:8000", f"127.0.0.1:{self.port}") for w in test[1:]]
        return self.run(words, self.service_env(service))

    def log(self, service: str) -> str:
        return (self.root / f"{service}.log").read_text()

    def down(self) -> dict[str, tuple[int, str]]:
        stopped = {}
        for name, process in self.services.items():
            process.terminate()  # what `docker compose down` sends first
            stopped[name] = (process.wait(timeout=60), self.log(name))
        self.services.clear()
        return stopped


def export(line: str) -> tuple[str, str]:
    """Run an `export NAME=...` line in a shell; the value it sets."""
    name = line.split()[1].split("=", 1)[0]
    value = subprocess.run(
        ["sh", "-c", f'{line}\nprintf %s "${name}"'], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    return name, value


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder` with its size and modification time."""
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


@pytest.fixture
def machine(tmp_path: Path, redis_url: str, redis_client: redis.Redis) -> Iterator[Machine]:
    """The docs' campaign folder, made as they say in a copy of the repository's examples/ and
    zones/. Mounted `:ro`: nothing a command runs may change it (checked after, not enforced:
    the suite may run as root)."""
    shutil.copytree(REPO_ROOT / "examples", tmp_path / "examples")
    shutil.copytree(REPO_ROOT / "zones", tmp_path / "zones")
    for line in doc_block("campaign-folder"):
        # This interpreter for `python3`: under a shifted test clock (tests/clock) it dates the
        # accounts from the same day the worker runs on.
        line = (
            shlex.quote(sys.executable) + line.removeprefix("python3")
            if line.startswith("python3 ")
            else line
        )
        subprocess.run(["sh", "-c", line], cwd=tmp_path, check=True, timeout=60)
    campaign = tmp_path / "campaign"
    before = snapshot(campaign)
    here = Machine(tmp_path, campaign, redis_url)
    try:
        yield here
    finally:
        here.down()
    assert snapshot(campaign) == before, "a command wrote into the read-only campaign mount"


def wait_for_complete(
    machine: Machine, words: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`precompute-status` again until it says the run is complete, as the docs tell."""
    deadline = time.monotonic() + 120
    while True:
        status = machine.run(words, env)
        assert status.returncode == 0, status.stdout + status.stderr
        if ": complete," in status.stdout:
            return status
        assert time.monotonic() < deadline, f"the run did not complete: {status.stdout}"
        time.sleep(0.5)


def account_count(machine: Machine) -> int:
    return len((machine.campaign / "accounts.jsonl").read_text().splitlines())


def test_the_compose_commands_load_a_campaign_the_worker_runs_and_the_renderer_serves(
    machine: Machine,
) -> None:
    accounts = account_count(machine)
    for line in doc_block("compose-up"):
        if line == "docker compose build":
            continue  # no image to build here: the commands run on this machine's install
        if line.startswith("export "):
            name, value = export(line)
            machine.exported[name] = value
            continue
        assert line == "docker compose up -d", f"unexpected line in the docs: {line}"
        machine.up()
    assert len(machine.exported.get("WELCOMEMAT_SECRET", "")) >= 32

    link = linked = ""
    for line in doc_block("compose-commands"):
        words = shlex.split(line)
        assert words[:4] == ["docker", "compose", "run", "--rm"], line
        service, command = words[4], words[5:]
        env = machine.service_env(service)
        if command[1] == "precompute-status":
            done = wait_for_complete(machine, command, env)
            assert f"{accounts}/{accounts} accounts processed" in done.stdout
            continue
        done = machine.run(command, env)
        assert done.returncode == 0, done.stdout + done.stderr
        if "--enqueue" in command:
            assert "enqueued run" in done.stdout
        if command[1] == "link":
            link, linked = done.stdout.strip(), command[-1]

    assert link.startswith(f"http://localhost:{machine.port}/c/")
    page = httpx.get(link.replace("localhost", "127.0.0.1", 1), headers={"host": f"localhost:{machine.port}"})
    assert page.status_code == 200
    records = (json.loads(line) for line in (machine.campaign / "accounts.jsonl").read_text().splitlines())
    name = next(r["name"] for r in records if r["account_id"] == linked)
    assert 'data-wm-zone="hero_headline" data-wm-rung="personal"' in page.text
    assert name.split()[0] in page.text  # the account's own page, not its segment's

    for service in ("renderer", "worker"):
        check = machine.healthcheck(service)
        assert check.returncode == 0, f"{service} healthcheck: {check.stdout}{check.stderr}"

    stopped = machine.down()
    assert stopped["worker"][0] == 0 and f"{accounts} accounts" in stopped["worker"][1]
    # uvicorn shuts down gracefully, then re-raises the SIGTERM it caught.
    assert (
        stopped["renderer"][0] in (0, -signal.SIGTERM)
        and "Application shutdown complete" in stopped["renderer"][1]
    )


def docker_run(line: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """A `docker run` line: its `-e` variables, its `-v` mounts (target: source and mode) and the
    command after the image."""
    words = shlex.split(line)
    assert words[:2] == ["docker", "run"], line
    image = compose_document({})["services"]["renderer"]["image"]
    env: dict[str, str] = {}
    mounts: dict[str, str] = {}
    network = ""
    rest = iter(words[2:])
    for word in rest:
        if word == image:
            break
        if word in ("-e", "--env"):
            name, _, value = next(rest).partition("=")
            env[name] = value
        elif word in ("-v", "--volume"):
            source, target, *mode = next(rest).split(":")
            mounts[target] = ":".join([source, *mode])
        elif word == "--network":
            network = next(rest)
        elif word in ("-p", "--tmpfs", "--name", "--user"):
            next(rest)
        else:
            assert word in ("--rm", "--read-only", "-d", "-it", "-i", "-t"), f"unexpected option {word}"
    assert network == f"{compose_document({})['name']}_default", "the compose stack's network"
    return env, mounts, list(rest)


def test_the_dockerfile_header_commands_run_precompute_and_a_worker_on_the_stacks_redis(
    machine: Machine,
) -> None:
    accounts = account_count(machine)
    lines = header_commands("docker-run-commands")
    assert [docker_run(line)[2][1] for line in lines] == ["precompute", "worker", "precompute-status"]
    for line in lines:
        env, mounts, command = docker_run(line)
        assert mounts == {MOUNT: "$PWD/campaign:ro"}
        done = machine.run(command, machine.environment(env))
        assert done.returncode == 0, done.stdout + done.stderr
        if command[1] == "worker":
            assert f"{accounts} accounts" in done.stderr  # `--once` drained the run and stopped
        if command[1] == "precompute-status":
            assert f": complete, {accounts}/{accounts} accounts processed" in done.stdout
