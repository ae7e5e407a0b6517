"""`welcomemat link` and `welcomemat serve` as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
import zxingcpp
from PIL import Image

from cli.link import write_qr_image
from tests.corpora import REPO_ROOT
from tests.ports import free_port
from tests.serve_process import serve_env, wait_until_answering
from tests.server.conftest import CAMPAIGN, SECRET, TENANT, example_inputs, publish_config
from welcomemat.security.tokens import TokenKind, TokenSigner

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def run(*args: str, env: dict[str, str] | None = None, home: Path) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    full_env.update({"WELCOMEMAT_HOME": str(home), **(env or {})})
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=60
    )


def test_link_prints_a_signed_personal_link(tmp_path: Path) -> None:
    result = run(
        "link",
        f"{TENANT}/{CAMPAIGN}",
        "acct_dymaxa",
        "--contact",
        "c_joram",
        env={"WELCOMEMAT_SECRET": SECRET},
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    url = urlsplit(result.stdout.strip())
    assert (url.scheme, url.netloc, url.path) == ("http", "127.0.0.1:8000", f"/c/{CAMPAIGN}")
    claims = TokenSigner([SECRET]).verify(
        TokenKind.LINK, parse_qs(url.query)["wm"][0], tenant=TENANT, campaign=CAMPAIGN
    )
    assert (claims.account, claims.contact) == ("acct_dymaxa", "c_joram")
    assert claims.expires_at - claims.issued_at == 30 * 86400


def test_link_qr_uses_the_public_url_and_ttl(tmp_path: Path) -> None:
    env = {"WELCOMEMAT_SECRET": SECRET, "WELCOMEMAT_PUBLIC_URL": "https://go.acme.example"}
    result = run(
        "link", "examples/campaign.yaml", "acct_dymaxa", "--qr", "--ttl", "10", env=env, home=tmp_path
    )
    assert result.returncode == 0, result.stderr
    url = urlsplit(result.stdout.strip())
    assert url.netloc == "go.acme.example" and url.path.startswith("/q/")
    claims = TokenSigner([SECRET]).verify(TokenKind.QR, url.path[3:], tenant=TENANT, campaign=CAMPAIGN)
    assert claims.expires_at - claims.issued_at == 10 * 86400


def test_link_by_campaign_id_reads_the_published_index(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    env = {"WELCOMEMAT_SECRET": SECRET, "REDIS_URL": redis_url}
    result = run("link", CAMPAIGN, "acct_dymaxa", env=env, home=tmp_path)
    assert result.returncode == 0, result.stderr
    result = run("link", "no-such-campaign", "acct_dymaxa", env=env, home=tmp_path)
    assert result.returncode == 2 and "no published campaign" in result.stderr


def decode_qr(image: Image.Image) -> str:
    """The text of the one QR code in `image`, read by a real decoder (ZXing)."""
    [found] = zxingcpp.read_barcodes(image.convert("L"), formats=zxingcpp.BarcodeFormat.QRCode)
    return str(found.text)


def png_modules(path: Path) -> list[list[bool]]:
    """The dark/light module matrix of a PNG QR code (quiet zone 4, square modules)."""
    image = Image.open(path).convert("L")
    width, height = image.size
    assert width == height
    # A version-N code is 17 + 4N modules plus a 4-module quiet zone on each side.
    size = next(17 + 4 * n for n in range(1, 41) if width % (17 + 4 * n + 8) == 0)
    scale = width // (size + 8)
    return [
        [
            image.getpixel(((x + 4) * scale + scale // 2, (y + 4) * scale + scale // 2)) < 128
            for x in range(size)
        ]
        for y in range(size)
    ]


def svg_modules(path: Path) -> list[list[bool]]:
    """The module matrix an SVG QR code draws: segno's one path of horizontal runs
    (`M x y`, relative `m dx dy`, `h n` draws n dark modules), inside a 4-module quiet zone."""
    import re
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()  # well-formed XML, or this raises
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    [element] = root.iter("{http://www.w3.org/2000/svg}path")
    scale = float(re.fullmatch(r"scale\((\d+)\)", element.get("transform", "")).group(1))  # type: ignore[union-attr]
    size = int(float(root.get("width", "0")) / scale) - 8
    dark = [[False] * size for _ in range(size)]
    x = y = 0.0
    for op, args in re.findall(r"([MmHh])([-\d. ]+)", element.get("d", "")):
        numbers = [float(n) for n in args.split()]
        if op == "M":
            x, y = numbers
        elif op == "m":
            x, y = x + numbers[0], y + numbers[1]
        else:
            run = int(numbers[0]) if op == "h" else int(numbers[0] - x)
            for i in range(run):
                dark[int(y - 4)][int(x - 4) + i] = True
            x += run
    return dark


def raster(modules: list[list[bool]], scale: int = 8) -> Image.Image:
    size = len(modules) + 8
    image = Image.new("L", (size * scale, size * scale), 255)
    for y, row in enumerate(modules):
        for x, is_dark in enumerate(row):
            if is_dark:
                image.paste(0, ((x + 4) * scale, (y + 4) * scale, (x + 5) * scale, (y + 5) * scale))
    return image


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_link_qr_image_writes_a_code_that_scans_to_the_printed_url(tmp_path: Path, suffix: str) -> None:
    image = tmp_path / f"mailer{suffix}"
    result = run(
        "link",
        f"{TENANT}/{CAMPAIGN}",
        "acct_dymaxa",
        "--contact",
        "c_joram",
        "--qr",
        "--qr-image",
        str(image),
        env={"WELCOMEMAT_SECRET": SECRET, "WELCOMEMAT_PUBLIC_URL": "https://go.acme.example"},
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    url = result.stdout.strip()
    assert url.startswith("https://go.acme.example/q/") and str(image) in result.stderr
    modules = png_modules(image) if suffix == ".png" else svg_modules(image)
    if suffix == ".png":
        assert decode_qr(Image.open(image)) == url
    assert decode_qr(raster(modules)) == url
    claims = TokenSigner([SECRET]).verify(
        TokenKind.QR, url.rsplit("/", 1)[1], tenant=TENANT, campaign=CAMPAIGN
    )
    assert (claims.account, claims.contact) == ("acct_dymaxa", "c_joram")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".mailer")] == []  # no temporary left


def test_svg_and_png_draw_the_same_modules(tmp_path: Path) -> None:
    url = "https://go.acme.example/q/.eJyrVipRslJKTM5NVdJRSgYyC010CzILUnMy80AiiWDJ5JL4lMrcxIpEoEgBUCQ"
    write_qr_image(url, tmp_path / "code.svg")
    write_qr_image(url, tmp_path / "code.png")
    assert svg_modules(tmp_path / "code.svg") == png_modules(tmp_path / "code.png")


def test_qr_image_implies_a_qr_url(tmp_path: Path) -> None:
    image = tmp_path / "code.png"
    result = run(
        "link",
        f"{TENANT}/{CAMPAIGN}",
        "a1",
        "--qr-image",
        str(image),
        env={"WELCOMEMAT_SECRET": SECRET},
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert urlsplit(result.stdout.strip()).path.startswith("/q/")
    assert decode_qr(Image.open(image)) == result.stdout.strip()


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("code.jpg", "must be .svg or .png, not '.jpg'"),
        ("code", "must be .svg or .png, not 'a file without a suffix'"),
        ("missing/code.png", "does not exist"),
    ],
)
def test_qr_image_refuses_other_files_with_exit_2(tmp_path: Path, name: str, needle: str) -> None:
    image = tmp_path / name
    result = run(
        "link",
        f"{TENANT}/{CAMPAIGN}",
        "a1",
        "--qr",
        "--qr-image",
        str(image),
        env={"WELCOMEMAT_SECRET": SECRET},
        home=tmp_path,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert needle in result.stderr and str(image) in result.stderr and "--qr-image" in result.stderr
    assert not image.exists()


def test_link_without_a_secret_is_exit_2_with_a_clear_message(tmp_path: Path) -> None:
    result = run("link", f"{TENANT}/{CAMPAIGN}", "acct_dymaxa", home=tmp_path)
    assert result.returncode == 2
    assert "WELCOMEMAT_SECRET is not set" in result.stderr and result.stdout == ""


def test_link_refuses_bad_ids_and_ttls(tmp_path: Path) -> None:
    env = {"WELCOMEMAT_SECRET": SECRET}
    assert run("link", f"{TENANT}/{CAMPAIGN}", "not an id", env=env, home=tmp_path).returncode == 2
    assert run("link", f"{TENANT}/{CAMPAIGN}", "a", "--ttl", "400", env=env, home=tmp_path).returncode == 2
    assert run("link", f"{TENANT}/{CAMPAIGN}", "a", "--ttl", "0", env=env, home=tmp_path).returncode == 2


@pytest.mark.parametrize(
    ("flags", "stack", "native"),
    [
        ((), "httptools + uvloop", True),
        (("--http", "h11"), "h11 + asyncio", False),
        (("--no-access-log",), "httptools + uvloop", True),
    ],
    ids=["fast-by-default", "h11", "no-access-log"],
)
def test_serve_runs_the_renderer(
    tmp_path: Path,
    redis_url: str,
    redis_client: redis.Redis,
    flags: tuple[str, ...],
    stack: str,
    native: bool,
) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    port = free_port()
    env = serve_env(tmp_path, REDIS_URL=redis_url, WELCOMEMAT_SECRET=SECRET)
    process = subprocess.Popen(
        [WELCOMEMAT, "serve", "--port", str(port), *flags],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        response = wait_until_answering(process, f"http://127.0.0.1:{port}/c/{CAMPAIGN}")
        assert response.status_code == 200 and 'data-wm-zone="hero_headline"' in response.text
        assert "server" not in response.headers  # no version banner
        # The process that answered runs the compiled parser and loop, or not (one worker: itself).
        libraries = Path(f"/proc/{process.pid}/maps").read_text()
        assert ("uvloop" in libraries and "httptools" in libraries) is native
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=10)
    assert f"1 worker(s), {stack})" in out.decode()
    # uvicorn's access line for the page (at the default INFO level), unless turned off
    assert (f'"GET /c/{CAMPAIGN} HTTP/1.1" 200' in out.decode()) is ("--no-access-log" not in flags)


def test_serve_refuses_bad_settings_with_exit_2(tmp_path: Path) -> None:
    result = run("serve", env={"WELCOMEMAT_PUBLIC_URL": "not a url"}, home=tmp_path)
    assert result.returncode == 2 and "WELCOMEMAT_PUBLIC_URL" in result.stderr


@pytest.mark.parametrize("flags", [[], ["--workers", "2", "--reuse-port"]])
@pytest.mark.parametrize(
    ("value", "needle"), [("70000", "0 to 65535"), ("0", "not a fixed port"), ("80x", "80x")]
)
def test_serve_refuses_a_port_that_is_not_one_with_exit_2(
    tmp_path: Path, value: str, needle: str, flags: list[str]
) -> None:
    result = run("serve", "--port", value, *flags, env={"WELCOMEMAT_SECRET": SECRET}, home=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "--port" in result.stderr and needle in result.stderr and "Traceback" not in result.stderr
    assert "renderer on" not in result.stdout


@pytest.mark.parametrize("name", ["WELCOMEMAT_ADMIN_TOKEN", "WELCOMEMAT_CRM_TOKEN", "WELCOMEMAT_SECRET"])
def test_serve_refuses_a_short_token_or_key_with_exit_2_naming_it_not_its_value(
    tmp_path: Path, name: str
) -> None:
    short = "short-but-not-printed-" + "q" * 5
    result = run("serve", env={"WELCOMEMAT_SECRET": SECRET, name: short}, home=tmp_path)
    assert result.returncode == 2
    assert name in result.stderr and "at least 32" in result.stderr
    assert short not in result.stderr + result.stdout and "renderer on" not in result.stdout
