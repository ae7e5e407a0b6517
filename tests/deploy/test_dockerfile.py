"""The image as the Dockerfile builds it, checked without Docker: hadolint's rules, then ours (a
pinned base, a numeric user, a health check, dependencies from the lock before the sources, no
installer or sample data in what runs, ready for a read-only root and an arbitrary UID)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.corpora import REPO_ROOT
from tests.deploy.dockerfile import DOCKERFILE, Stage, parse_stages
from tests.deploy.installed_tools import installed

#: The project's own folders (the sources COPY brings in); `templates` is its package data.
SOURCES = ("welcomemat", "precompute", "server", "outbound", "cli", "templates")
LOCK = "requirements/runtime.txt"
DIGEST = re.compile(r"^[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}$")


def final_stage(text: str) -> Stage:
    return parse_stages(text)[-1]


def runs(stage: Stage) -> str:
    return "\n".join(i.args for i in stage.of("RUN"))


def base_digest_problems(text: str) -> list[str]:
    stages = parse_stages(text)
    names = {s.name for s in stages if s.name}
    return [
        f"FROM {s.base}: not pinned by digest (image:tag@sha256:...)"
        for s in stages
        if s.base not in names and not DIGEST.fullmatch(s.base)
    ]


def numeric_user_problems(text: str) -> list[str]:
    final = final_stage(text)
    users = final.of("USER")
    if not users:
        return ["the final stage sets no USER: it runs as root"]
    user = users[-1].args
    match = re.fullmatch(r"(\d+):(\d+)", user)
    if match is None:
        return [f"USER {user}: not uid:gid numbers (Kubernetes' runAsNonRoot cannot check a name)"]
    uid, gid = match.groups()
    problems = [f"USER {user}: root"] if uid == "0" else []
    made = runs(final)
    if f"--gid {gid}" not in made or f"--uid {uid}" not in made:
        problems.append(f"USER {user}: the user and group are not created with these pinned ids")
    return problems


def healthcheck_problems(text: str) -> list[str]:
    checks = final_stage(text).of("HEALTHCHECK")
    if not checks or checks[-1].args.upper().startswith("NONE"):
        return ["the image has no HEALTHCHECK"]
    check = checks[-1].args
    problems = [] if "/healthz" in check else [f"HEALTHCHECK {check}: does not ask /healthz"]
    if re.search(r"\b(curl|wget)\b", check):
        problems.append("HEALTHCHECK uses curl or wget, which the slim base does not have")
    return problems


def build_stage(text: str) -> Stage:
    """The stage that installs the project (the one the final stage copies its virtualenv from)."""
    return next(s for s in parse_stages(text)[:-1] if "pip" in runs(s) and s.of("COPY"))


def dependency_order_problems(text: str) -> list[str]:
    stages = parse_stages(text)
    if len(stages) < 2:
        return ["one stage: the build tools stay in the image"]
    order = build_stage(text).instructions
    lock_install = next(
        (
            n
            for n, i in enumerate(order)
            if i.keyword == "RUN" and LOCK in i.args and "--require-hashes" in i.args
        ),
        None,
    )
    if lock_install is None:
        return [f"no RUN installs the dependencies from {LOCK} with --require-hashes"]
    problems = []
    for instruction in order[:lock_install]:
        if instruction.keyword in ("COPY", "ADD"):
            sources = [w for w in instruction.words() if not w.startswith("--")][:-1]
            if any(not s.startswith("requirements/") for s in sources):
                problems.append(
                    f"COPY {instruction.args} before the dependencies: any change reinstalls them"
                )
    if not any(
        i.keyword == "COPY" and any(w in SOURCES for w in i.words()) for i in order[lock_install + 1 :]
    ):
        problems.append("the sources are not copied after the dependencies")
    return problems


def project_install_problems(text: str) -> list[str]:
    installs = runs(build_stage(text)) if len(parse_stages(text)) > 1 else runs(final_stage(text))
    problems = []
    if re.search(r"(^|\s)(-e|--editable)(\s|$)", installs):
        problems.append("the project is installed editable: the image runs from a source tree")
    if not re.search(r"install[^\n]*--no-deps[^\n]*(\.whl|\s\.(\s|$))", installs):
        problems.append("the project is not installed with --no-deps (its dependencies come from the lock)")
    return problems


def final_stage_content_problems(text: str) -> list[str]:
    final = final_stage(text)
    problems = []
    for copy in final.of("COPY"):
        words = copy.words()
        if not any(w.startswith("--from=") for w in words):
            problems.append(f"COPY {copy.args}: copies from the build context into the image")
            continue
        sources = [w for w in words if not w.startswith("--")][:-1]
        if sources != ["/opt/venv"]:
            problems.append(f"COPY {copy.args}: copies more than the virtualenv")
    made = runs(final)
    if re.search(r"apt-get install|\bgcc\b|\bmake\b", made):
        problems.append("the final stage installs build tools")
    if not re.search(r"pip uninstall[^\n]*\bpip\b[^\n]*\bsetuptools\b", made):
        problems.append("the base image's pip and setuptools stay in the final stage")
    if re.search(r"\b(examples|README)\b", " ".join(i.args for i in final.instructions)):
        problems.append("the final stage refers to examples/ or the README")
    return problems


def read_only_problems(text: str) -> list[str]:
    final = final_stage(text)
    env = final.env()
    problems = []
    if env.get("PYTHONDONTWRITEBYTECODE") != "1":
        problems.append("PYTHONDONTWRITEBYTECODE is not 1: Python tries to write into a read-only root")
    home = env.get("WELCOMEMAT_HOME", "")
    volumes = " ".join(i.args for i in final.of("VOLUME"))
    if not home or home not in volumes:
        problems.append(
            f"WELCOMEMAT_HOME ({home or 'unset'}) is not a VOLUME: the embedded Redis has nowhere to write"
        )
    made = runs(final)
    if not (
        re.search(rf"chown \d+:0 {re.escape(home)}", made)
        and re.search(rf"chmod [0-7]?[0-7]7[0-7] {re.escape(home)}", made)
    ):
        problems.append(
            f"{home or 'WELCOMEMAT_HOME'} is not group-0 writable: an arbitrary UID (OpenShift) cannot use it"
        )
    return problems


def dockerignore_problems(text: str, ignore: Path) -> list[str]:
    if not ignore.is_file():
        return [
            ".dockerignore is missing: the whole tree (.git, .venv, campaign data) is sent to the builder"
        ]
    lines = [
        line.strip() for line in ignore.read_text().splitlines() if line.strip() and not line.startswith("#")
    ]
    if not lines or lines[0] != "*":
        return [".dockerignore does not start by leaving everything out"]
    kept = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    copied = {
        source.rstrip("/")
        for stage in parse_stages(text)
        for copy in stage.of("COPY")
        if not any(w.startswith("--from=") for w in copy.words())
        for source in [w for w in copy.words() if not w.startswith("--")][:-1]
    }
    return [f".dockerignore: {path} is sent but not copied" for path in sorted(kept - copied)] + [
        f".dockerignore: {path} is copied but left out" for path in sorted(copied - kept)
    ]


TEXT = DOCKERFILE.read_text()


def test_hadolint_finds_nothing() -> None:
    hadolint = installed("hadolint")
    result = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_the_base_image_is_pinned_by_digest() -> None:
    assert base_digest_problems(TEXT) == []


def test_it_runs_as_a_numeric_non_root_user_with_a_pinned_group() -> None:
    assert numeric_user_problems(TEXT) == []


def test_it_checks_its_own_health_with_python() -> None:
    assert healthcheck_problems(TEXT) == []


def test_dependencies_come_from_the_lock_before_the_sources() -> None:
    assert dependency_order_problems(TEXT) == []


def test_the_project_is_installed_as_a_package_without_dependencies() -> None:
    assert project_install_problems(TEXT) == []


def test_what_runs_carries_no_installer_build_tools_or_sample_data() -> None:
    assert final_stage_content_problems(TEXT) == []


def test_it_runs_with_a_read_only_root_and_any_uid_in_group_0() -> None:
    assert read_only_problems(TEXT) == []


def test_the_build_context_is_only_what_the_image_copies() -> None:
    assert dockerignore_problems(TEXT, REPO_ROOT / ".dockerignore") == []
