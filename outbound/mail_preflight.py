"""The mail preflight: every QR code decodes to its URL and lands on the right page.

Blocking: every QR image is decoded back with ZXing and must give its URL; every URL is
requested from the running renderer and must answer 303 to a continuation page that answers
200 and shows the very zone text that account sees there. The requests carry
`PREFLIGHT_USER_AGENT`, so the renderer logs no scan or view for them.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from outbound.mail_plan import Recipient
from welcomemat.security.links import PREFLIGHT_USER_AGENT

__all__ = ["PreflightFailure", "PreflightReport", "preflight"]

_PREFLIGHT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PreflightFailure:
    recipient: str
    reason: str

    def __str__(self) -> str:
        return f"{self.recipient}: {self.reason}"


@dataclass
class PreflightReport:
    checked: int = 0
    decoded: int = 0
    resolved: int = 0
    seconds: float = 0.0
    failures: list[PreflightFailure] = field(default_factory=list)

    @property
    def decode_rate(self) -> float:
        return self.decoded / self.checked if self.checked else 1.0

    def as_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "decoded": self.decoded,
            "resolved": self.resolved,
            "decode_rate": round(self.decode_rate, 4),
            "seconds": round(self.seconds, 3),
            "seconds_per_1000": round(self.seconds * 1000 / self.checked, 3) if self.checked else 0.0,
            "failures": [{"recipient": f.recipient, "reason": f.reason} for f in self.failures],
        }


def preflight(
    recipients: list[Recipient], folder: Path, renderer_url: str, public_url: str
) -> PreflightReport:
    """Decode every QR image and follow every URL through the renderer at `renderer_url`.

    Requests go to `renderer_url` with the public URL's host in `Host`, so a renderer on a
    private address is checked exactly as the printed URL will reach it.
    """
    import zxingcpp
    from PIL import Image

    report = PreflightReport()
    started = time.perf_counter()
    public = urlsplit(public_url)
    headers = {"host": public.netloc, "user-agent": PREFLIGHT_USER_AGENT}
    with httpx.Client(base_url=renderer_url, timeout=_PREFLIGHT_TIMEOUT_S, follow_redirects=False) as http:
        for recipient in recipients:
            report.checked += 1
            with Image.open(folder / recipient.cells["qr_image"]) as image:
                found = zxingcpp.read_barcodes(
                    image, formats=zxingcpp.BarcodeFormats(zxingcpp.BarcodeFormat.QRCode)
                )
            texts = [b.text for b in found]
            if texts != [recipient.qr_url]:
                what = "no code" if not texts else f"{texts!r}"
                report.failures.append(PreflightFailure(recipient.key, f"the QR image decodes to {what}"))
                continue
            report.decoded += 1
            why = _follow(http, headers, recipient, public_url)
            if why is None:
                report.resolved += 1
            else:
                report.failures.append(PreflightFailure(recipient.key, why))
    report.seconds = time.perf_counter() - started
    return report


def _follow(http: httpx.Client, headers: dict[str, str], recipient: Recipient, public_url: str) -> str | None:
    """Why the recipient's URL does not land on its continuation page, or None when it does."""
    target = urlsplit(recipient.qr_url)
    try:
        scan = http.get(target.path, headers=headers)
        if scan.status_code != 303:
            return f"the renderer answered {scan.status_code} to the QR URL, not 303 to a continuation page"
        location = scan.headers.get("location", "")
        if not location.startswith(f"{public_url}/c/") or not location.endswith("/continue"):
            return f"the QR URL redirects to {location!r}, not to a continuation page"
        cookie = scan.headers.get("set-cookie", "").split(";", 1)[0]
        page = http.get(
            urlsplit(location).path, headers={**headers, **({"cookie": cookie} if cookie else {})}
        )
    except httpx.HTTPError as exc:
        return f"the renderer did not answer ({type(exc).__name__}: {exc})"
    if page.status_code != 200:
        return f"the continuation page answered {page.status_code}, not 200"
    if recipient.page_html is None:
        return "the campaign has no continuation page"
    if recipient.page_html not in page.text:
        return (
            f"the continuation page does not show this account's copy {html.unescape(recipient.page_html)!r}"
        )
    return None
