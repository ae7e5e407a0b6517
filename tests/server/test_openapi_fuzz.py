"""Schema-driven fuzzing: schemathesis reads the renderer's own `/openapi.json` and sends what
it describes over real HTTP (uvicorn in a thread; a real Redis holding the example campaign,
precomputed by the offline composer), once without credentials and once with the admin and
CRM bearer tokens.

Every answer must not be a 5xx, must have a status the operation declares, a content type it
declares for that status, a body that matches the declared schema and the headers it declares
(`Location`, `Retry-After`, ...); a request the schema calls invalid must be refused (4xx);
with credentials, a 2xx must turn into a refusal once the bearer token is taken away.

Each operation gets up to four kinds of cases: generated from the schema (positive),
generated to break it (negative: a missing parameter, a wrong type, an unknown enum value),
generated with the ids that exist pinned in (the example campaign, an account, a theme file,
a signed QR token; a body's `campaign`), so the fuzzing reaches past "no such campaign", and a
visitor identified by a signed link. Bounded for CI: `MAX_EXAMPLES` per operation and kind,
derandomized (the same cases every run), no example database. Each run prints how many
requests it sent, by status (`pytest -s`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from tests.example_accounts import write_example_accounts
from tests.server.conftest import CAMPAIGN, TENANT, example_inputs, renderer_app, renderer_settings, signer
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat.arms import Arm
from welcomemat.security.tokens import TokenKind
from welcomemat.theme.rules import ASSET_TYPES

#: Cases per operation and kind of case (generated, negative, pinned, identified).
MAX_EXAMPLES = 20
ADMIN_TOKEN = "admin-token-for-the-fuzzer-0123456789abcdef"
CRM_TOKEN = "crm-token-for-the-fuzzer-0123456789abcdef"
ACCOUNT = "acct_dymaxa"
THEME_FILE = "acme.css"
# A browser's user agent: `/v1/events` answers obvious bots (python-requests among them) 204
# without reading their body, which would hide the beacon's validation from the fuzzer.
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
]
SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
    suppress_health_check=list(HealthCheck),
)


# A request the document says is invalid must be refused; 413 is a refusal too (a body past
# the route's limit, refused by its declared length before it is read: `server.bodies`).
CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "negative_data_rejection": {
                "expected-statuses": [
                    *("400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"),
                    "5xx",
                ]
            }
        }
    }
)


class CountingSession(requests.Session):
    """The fuzzer's HTTP client: counts every request it sends (probes included), by status;
    a browser's user agent unless a case sets its own."""

    def __init__(self) -> None:
        super().__init__()
        self.headers["User-Agent"] = BROWSER
        self.statuses: Counter[int] = Counter()
        self.hooks["response"].append(self._count)

    def _count(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self.statuses[response.status_code] += 1

    @property
    def sent(self) -> int:
        return sum(self.statuses.values())


@dataclass
class FuzzRun:
    base: str
    headers: Callable[[str], dict[str, str]]
    checks: list[Any]
    session: CountingSession = field(default_factory=CountingSession)
    failures: list[str] = field(default_factory=list)


@pytest.fixture
def renderer(tmp_path: Path, redis_client: redis.Redis) -> Iterator[str]:
    """The renderer over HTTP, the example campaign precomputed (Dymaxa, tier 1, waits for review)."""
    campaign, zones = example_inputs()
    accounts = write_example_accounts(tmp_path / "accounts.jsonl", 5)
    PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
    ).run(accounts)
    app = renderer_app(
        renderer_settings(admin_token=ADMIN_TOKEN, crm_token=CRM_TOKEN, allowed_hosts=("127.0.0.1",)),
        redis_client=redis_client,
    )
    with serve_in_thread(app) as base:
        yield base


def _known(operation: Any) -> dict[str, dict[str, Any]]:
    """The ids that exist, for the parameters this operation has."""
    token = signer().sign(TokenKind.QR, tenant=TENANT, campaign=CAMPAIGN, account=ACCOUNT, ttl_s=3600)
    if operation.path == "/r/{token}":  # a hosted CTA's click token, as a page links it
        token = (
            signer()
            .click_template(
                zone="cta",
                cta="book_ramp_review",
                tenant=TENANT,
                campaign=CAMPAIGN,
                arm=Arm.PERSONAL,
                rung="personal",
                account=ACCOUNT,
                zone_set_version=1,
            )
            .sign("fuzz-view-0001")
        )
    path = {"campaign": CAMPAIGN, "account": ACCOUNT, "file": THEME_FILE, "token": token}
    query = {
        "campaign": CAMPAIGN,
        "wm": signer().sign(TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=ACCOUNT, ttl_s=3600),
    }
    declared = {(p["in"], p["name"]) for p in operation.definition.raw.get("parameters", [])}
    return {
        "path_parameters": {k: v for k, v in path.items() if ("path", k) in declared},
        "query": {k: v for k, v in query.items() if ("query", k) in declared},
    }


def _with_known_campaign(case: Any) -> Any:
    """A generated JSON body about the example campaign (its other fields as generated)."""
    if isinstance(case.body, dict) and "campaign" in case.body:
        case.body = {**case.body, "campaign": CAMPAIGN}
    return case


def _strategies(operation: Any, *, refused: bool) -> Iterator[tuple[str, Any]]:
    """The kinds of cases for `operation`; only generated ones when it will refuse them all
    (a bearer route without its token: whatever else is sent, the answer is the same 401)."""
    yield "generated", operation.as_strategy()
    if refused:
        return
    yield "negative", operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)
    known = _known(operation)
    path, query = known["path_parameters"], known["query"]
    anonymous = {k: v for k, v in query.items() if k != "wm"}
    if path or anonymous or operation.method.upper() == "POST":
        pinned = operation.as_strategy(path_parameters=path or None, query=anonymous or None)
        yield "pinned", pinned.map(_with_known_campaign)
    if "wm" in query:  # a visitor identified by a link: the personal page
        yield "identified", operation.as_strategy(path_parameters=path or None, query=query)


def _fuzz(run: FuzzRun, operation: Any) -> None:
    refused = bool(operation.definition.raw.get("security")) and not run.headers(operation.path)
    for kind, strategy in _strategies(operation, refused=refused):

        @SETTINGS
        @given(case=strategy)
        def check(case: Any) -> None:
            case.call_and_validate(
                base_url=run.base,
                session=run.session,
                headers=run.headers(operation.path),
                checks=run.checks,
            )

        try:
            check()
        except Unsatisfiable:
            continue  # nothing to negate (no parameters, no body): no such cases exist
        except (Exception, BaseExceptionGroup) as exc:  # every finding is reported, all at once
            run.failures.append(f"{operation.label} ({kind}):\n{exc}")


def _run(base: str, headers: Callable[[str], dict[str, str]], checks: list[Any]) -> FuzzRun:
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json", config=CONFIG)
    schema.validate()  # a valid OpenAPI 3.1 document first
    run = FuzzRun(base, headers, checks)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 17, [op.label for op in operations]
    for operation in operations:
        _fuzz(run, operation)
    return run


def _bearer(path: str) -> dict[str, str]:
    token = CRM_TOKEN if path == "/v1/conversions" else ADMIN_TOKEN
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("credentials", ["none", "bearer"])
def test_every_answer_is_what_the_openapi_document_says(renderer: str, credentials: str) -> None:
    started = time.monotonic()
    if credentials == "none":
        run = _run(renderer, lambda path: {}, CHECKS)
    else:
        run = _run(renderer, _bearer, [*CHECKS, ignored_auth])
    summary = {
        "credentials": credentials,
        "requests": run.session.sent,
        "statuses": dict(sorted(run.session.statuses.items())),
        "seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(summary))  # the number of requests fuzzed, shown with `pytest -s`
    assert not run.failures, "\n\n".join(run.failures)
    # A route that fails safe (the plain page, no zones, a beacon dropped) answers no 5xx for
    # an error nobody foresaw, but counts it: the fuzzer must have caused none.
    faults = [
        line
        for line in requests.get(f"{renderer}/metrics", timeout=5).text.splitlines()
        if line.startswith(("welcomemat_page_faults_total{", "welcomemat_stored_value_errors_total"))
        and not line.endswith(" 0.0")
    ]
    assert faults == []
    # The fuzzer reached the routes, not only their refusals.
    assert run.session.sent >= 17 * MAX_EXAMPLES
    assert run.session.statuses[200] >= 20


_METHODS = ("get", "post", "put", "patch", "delete")


def test_a_method_the_document_does_not_declare_is_405_with_allow(renderer: str) -> None:
    """With the ids that exist and the admin token: routing, not a missing resource, answers."""
    document = httpx.get(f"{renderer}/openapi.json").json()
    qr = signer().sign(TokenKind.QR, tenant=TENANT, campaign=CAMPAIGN, account=ACCOUNT, ttl_s=3600)
    values = {"campaign": CAMPAIGN, "account": ACCOUNT, "file": THEME_FILE, "token": qr}
    refused = []
    with httpx.Client(base_url=renderer, timeout=5, headers=_bearer("/admin/")) as http:
        for template, operations in document["paths"].items():
            path = template.format(**{k: v for k, v in values.items() if "{" + k + "}" in template})
            declared = {m for m in operations if m in _METHODS}
            for method in sorted(set(_METHODS) - declared):
                response = http.request(method.upper(), path)
                allow = {m.strip().lower() for m in response.headers.get("allow", "").split(",")}
                if response.status_code != 405 or not declared <= allow:
                    refused.append(f"{method.upper()} {path}: {response.status_code}, Allow {allow}")
    assert refused == []


def test_the_theme_route_declares_every_file_type_a_theme_may_have(renderer: str) -> None:
    document = httpx.get(f"{renderer}/openapi.json").json()
    declared = document["paths"]["/c/{campaign}/theme/{file}"]["get"]["responses"]["200"]["content"]
    assert set(declared) == {media.split(";")[0] for media in ASSET_TYPES.values()}
