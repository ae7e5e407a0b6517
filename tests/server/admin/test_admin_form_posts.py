"""The admin pages' form posts, as `/openapi.json` describes them.

Each button's post (approve, reject, roll back, sign off) is described with its
`application/x-www-form-urlencoded` body: the fields its handler reads, no more and no fewer
(the body model's, the CSRF token beside them), the reason required where the audit log
requires one, each limit as the handler enforces it; the pages' forms post exactly those
fields; and every status the document declares for the route is one it answers, provoked
here one by one (408 by a body that never arrives, 503 with Redis gone).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from html import unescape
from html.parser import HTMLParser
from typing import Any

import anyio
import httpx
import pytest
import redis
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server.admin.csrf import CSRF_FIELD
from server.admin.form_body import FORM_MEDIA_TYPE
from server.admin.sessions import SESSION_COOKIE
from server.openapi import FORM_POSTS
from server.redis_guard import renderer_redis_client
from tests.ports import free_port
from tests.server.admin.test_admin_guidelines import candidate, save_versions, stored
from tests.server.admin.test_admin_people import SAME_ORIGIN, TOKEN, Clock, invite, sign_in
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    TENANT,
    make_zone_set,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.records.audit import REASON_MAX_CHARS, REASON_REQUIRED, AuditAction, read_entries
from welcomemat.security.admin_sessions import session_hash
from welcomemat.security.people import Role
from welcomemat.zones.held import HeldDraft, HoldLayer
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent

ACCOUNT = PERSONAL_ACCOUNT
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
REVIEW = f"/admin/review/{CAMPAIGN}/{ACCOUNT}"
# Each form post the document describes: its form's schema, the route, and the decision it audit-logs.
ROUTES = {
    "ReviewApproveForm": ("post", "/admin/review/{campaign}/{account}/approve", AuditAction.APPROVE),
    "ReviewRejectForm": ("post", "/admin/review/{campaign}/{account}/reject", AuditAction.REJECT),
    "ReviewRollbackForm": ("post", "/admin/review/{campaign}/{account}/rollback", AuditAction.ROLLBACK),
    "GuidelineSignOffForm": (
        "post",
        "/admin/campaigns/{campaign}/guidelines/signoff",
        AuditAction.GUIDELINES_SIGNOFF,
    ),
}
# Fields of a route's body model its form does not send: a held draft is approved, never rejected.
NOT_IN_FORM = {"ReviewRejectForm": {"held"}}
FORMS = {form.name: form for form in FORM_POSTS}
BEARER = {"authorization": f"Bearer {TOKEN}"}
FORM = {"content-type": FORM_MEDIA_TYPE}
BODY_READ_TIMEOUT_S = 0.2


def path_of(name: str) -> str:
    return ROUTES[name][1].format(campaign=CAMPAIGN, account=ACCOUNT)


def hold_proof(client: redis.Redis) -> int:
    """The account's zone set published, its `proof` zone's draft held by the self-review; its version."""
    base = make_zone_set(ACCOUNT)
    proof = ZoneContent(
        zone_id="proof", text="Teams like yours ramp faster", rung=Rung.SEGMENT, reason="self_review_rejected"
    )
    current = ZoneSetStore(client).publish(base.model_copy(update={"zones": (*base.zones, proof)})).zone_set
    content = ZoneContent(
        zone_id="proof",
        text="Dymaxa's four new SDRs ramp faster with us",
        rung=Rung.PERSONAL,
        reason="personal:hiring",
        facts=(
            CitedFact(fact_id="f2", source_url="https://dymaxa.com/jobs", published_at=date(2026, 11, 20)),
        ),
    )
    held = HeldDraft(
        zone_id="proof",
        layer=HoldLayer.SELF_REVIEW,
        note="implies the SDRs are hired",
        draft=content.text,
        content=content,
        valid_until=datetime(2099, 1, 20, tzinfo=UTC),
    )
    record = {
        "account_id": ACCOUNT,
        "version": current.version,
        "input_hash": current.input_hash,
        "zones": [
            {
                "zone_id": "proof",
                "rung": "segment",
                "reason": "self_review_rejected",
                "held": held.model_dump(mode="json"),
            }
        ],
    }
    client.set(keys.explain_key(TENANT, CAMPAIGN, ACCOUNT), json.dumps(record))
    client.zadd(keys.review_held_key(TENANT, CAMPAIGN), {ACCOUNT: 1.0})
    return current.version


@dataclass
class World:
    """The renderer, Redis holding a held draft and a high-risk candidate, and two people's sessions."""

    client: TestClient
    redis: redis.Redis
    sessions: dict[Role, str]  # role -> session id

    def csrf(self, role: Role) -> str:
        raw = self.redis.get(keys.admin_session_key(session_hash(self.sessions[role])))
        assert raw is not None
        token: str = json.loads(raw)["csrf"]
        return token

    def as_person(self, role: Role) -> None:
        self.client.cookies.clear()
        self.client.cookies.set(SESSION_COOKIE, self.sessions[role], path="/admin")

    def complete(self, name: str) -> dict[str, str]:
        """Every field the form declares, each with a value the route accepts now."""
        version = str(current_version(self.redis))
        return {
            "ReviewApproveForm": {"version": version, "reason": "read it twice", "held": "proof"},
            "ReviewRejectForm": {"version": version, "reason": "too familiar"},
            "ReviewRollbackForm": {"reason": "the old one was better"},
            "GuidelineSignOffForm": {
                "version": "2026-12-01",
                "report_sha256": stored(self.redis).report_sha256 or "",
            },
        }[name] | {CSRF_FIELD: self.csrf(Role.ADMIN)}

    def post(
        self, name: str, fields: dict[str, str], *, role: Role = Role.ADMIN, path: str = "", **headers: str
    ) -> httpx.Response:
        """The form post as `role`'s browser sends it (from the renderer's origin, unless `headers` say)."""
        self.as_person(role)
        return self.client.post(
            path or path_of(name), data=fields, headers={**SAME_ORIGIN, **headers}, follow_redirects=False
        )

    def snapshot(self) -> dict[bytes, bytes]:
        return {key: self.redis.dump(key) for key in self.redis.scan_iter(count=1000)}  # type: ignore[misc]

    def restore(self, snapshot: dict[bytes, bytes]) -> None:
        self.redis.flushdb()
        for key, value in snapshot.items():
            self.redis.restore(key, 0, value)


def current_version(client: redis.Redis) -> int:
    zone_set = ZoneSetStore(client).get(TENANT, CAMPAIGN, ACCOUNT)
    assert zone_set is not None
    return zone_set.version


def _app(client: redis.Redis, clock: Clock) -> Starlette:
    return renderer_app(
        renderer_settings(admin_token=TOKEN),
        redis_client=client,
        clock=clock,
        tuning=tuning_for_tests(watcher_poll_s=0.05, body_read_timeout_s=BODY_READ_TIMEOUT_S),
    )


@pytest.fixture
def world(redis_client: redis.Redis, published: Campaign) -> Iterator[World]:
    clock = Clock(NOW.timestamp())
    # A first version (something to roll back to), then the current one with a held draft.
    ZoneSetStore(redis_client).publish(make_zone_set(ACCOUNT, input_hash="input-hash-0000"))
    hold_proof(redis_client)
    save_versions(redis_client, candidate())
    with TestClient(_app(redis_client, clock), base_url=BASE_URL) as client:
        sessions = {}
        for role in Role:
            client.cookies.clear()
            sign_in(client, invite(redis_client, clock, f"{role}@acme.example", role=role))
            sessions[role] = client.cookies[SESSION_COOKIE]
        yield World(client, redis_client, sessions)


@pytest.fixture
def document(world: World) -> dict[str, Any]:
    answer: dict[str, Any] = world.client.get("/openapi.json").json()
    return answer


def resolved(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A response object with its `$ref` followed (its own description kept beside it)."""
    if "$ref" not in node:
        return node
    target: dict[str, Any] = document
    for part in node["$ref"].removeprefix("#/").split("/"):
        target = target[part]
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def model_limits(schema: dict[str, Any]) -> dict[str, Any]:
    """A model field's limits, from its JSON Schema (an optional field's non-null branch)."""
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") != "null":
            return {k: v for k, v in branch.items() if k in ("maxLength", "pattern", "minimum")}
    return {}


# -- the document and the declarations --------------------------------------------------------


def test_each_form_post_is_described_with_exactly_the_fields_its_handler_reads(
    document: dict[str, Any],
) -> None:
    described: dict[str, tuple[str, str]] = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if FORM_MEDIA_TYPE in content:
                described[content[FORM_MEDIA_TYPE]["schema"]["$ref"].rsplit("/", 1)[1]] = (method, path)
    assert described == {name: (method, path) for name, (method, path, _) in ROUTES.items()}
    for name, (method, path, action) in ROUTES.items():
        schema = document["components"]["schemas"][name]
        form = FORMS[name]
        # What the handler reads: its body model's fields and the session's CSRF token, nothing else.
        read = {CSRF_FIELD, *form.model.model_fields} - NOT_IN_FORM.get(name, set())
        assert set(schema["properties"]) == read, name
        assert schema["additionalProperties"] is False
        assert CSRF_FIELD not in schema["required"]  # a bearer token's post has none
        model = form.model.model_json_schema()["properties"]
        for field, declared in schema["properties"].items():
            if field != CSRF_FIELD:
                stated = model_limits(model[field])
                assert {k: declared[k] for k in stated} == stated, (name, field)
        if "reason" in schema["properties"]:
            # Required where the audit log requires one (as the CLI), and at most its length.
            assert ("reason" in schema["required"]) == (action in REASON_REQUIRED), name
            assert schema["properties"]["reason"]["maxLength"] == REASON_MAX_CHARS
        operation = document["paths"][path][method]
        assert operation["security"] == [{"adminBearer": []}, {"adminSession": []}]
        done = resolved(document, operation["responses"]["303"])
        assert done["headers"]["Location"]["required"] is True
        assert "CSRF" in resolved(document, operation["responses"]["403"])["description"]
    session = document["components"]["securitySchemes"]["adminSession"]
    assert (session["type"], session["in"], session["name"]) == ("apiKey", "cookie", SESSION_COOKIE)


class _Forms(HTMLParser):
    """Every `<form method="post">` of a page: its action, and its inputs (name -> attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, dict[str, dict[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form" and found.get("method") == "post":
            self.forms.append((found.get("action") or "", {}))
        elif tag == "input" and self.forms and found.get("name"):
            self.forms[-1][1][str(found["name"])] = found


def test_the_pages_forms_post_exactly_the_declared_fields(world: World, document: dict[str, Any]) -> None:
    world.as_person(Role.ADMIN)
    pages = [
        world.client.get(f"/admin/review/{CAMPAIGN}", headers={"accept": "text/html"}).text,
        world.client.get(f"/admin/campaigns/{CAMPAIGN}/guidelines", headers={"accept": "text/html"}).text,
    ]
    routes = {path_of(name): name for name in ROUTES}
    posted = []
    for page in pages:
        parser = _Forms()
        parser.feed(page)
        for action, inputs in parser.forms:
            if action == "/admin/sign-out":  # a browser page's, left out of the document
                continue
            name = routes[action]
            schema = document["components"]["schemas"][name]
            assert set(inputs) <= set(schema["properties"]), (action, set(inputs))
            assert set(schema["required"]) <= set(inputs), (action, set(inputs))
            for field, attributes in inputs.items():
                limit = schema["properties"][field].get("maxLength")
                if attributes.get("type") == "text":  # what a person types: the same limit, required alike
                    assert attributes.get("maxlength") == str(limit), (action, field)
                    assert ("required" in attributes) == (field in schema["required"]), (action, field)
            posted.append((name, frozenset(inputs)))
    # Every form post is on a page; the approve button comes twice (the version, the held draft).
    assert {name for name, _ in posted} == set(ROUTES)
    assert {"held"} < {f for name, fields in posted if name == "ReviewApproveForm" for f in fields}


# -- the handlers read what is declared ----------------------------------------------------------


@pytest.mark.parametrize("name", list(ROUTES))
def test_every_declared_field_is_read_and_any_other_is_refused(world: World, name: str) -> None:
    before = world.redis.xlen(keys.audit_stream_key(TENANT))
    extra = world.post(name, {**world.complete(name), "note": "not a field"})
    assert extra.status_code == 400 and "'note' is not a field of this form" in unescape(extra.text)
    for field in FORMS[name].schema()["required"]:
        dropped = world.post(name, {k: v for k, v in world.complete(name).items() if k != field})
        assert dropped.status_code == 400, (field, dropped.text)
        assert f"needs a {field}" in dropped.text
    assert world.redis.xlen(keys.audit_stream_key(TENANT)) == before  # nothing was done
    answer = world.post(name, world.complete(name))
    assert answer.status_code == 303, answer.text
    [entry] = [e for e in read_entries(world.redis, TENANT) if e.action is ROUTES[name][2]][-1:]
    assert entry.actor == "admin@acme.example"
    sent = world.complete(name) if name != "ReviewApproveForm" else {"reason": "read it twice"}
    if "reason" in sent:
        assert entry.reason == sent["reason"]  # the reason field, read and recorded
    if name == "ReviewApproveForm":  # the held field, read: the draft is what is served now
        served = ZoneSetStore(world.redis).get(TENANT, CAMPAIGN, ACCOUNT)
        assert served is not None and served.zone("proof").rung is Rung.PERSONAL  # type: ignore[union-attr]
    if name == "GuidelineSignOffForm":
        assert stored(world.redis).signed_off_by == "admin@acme.example"


def test_a_reason_past_the_declared_length_is_refused_as_sent(world: World) -> None:
    fields = world.complete("ReviewRejectForm")
    long = world.post("ReviewRejectForm", {**fields, "reason": "a" + " " * REASON_MAX_CHARS + "b"})
    assert long.status_code == 400 and f"at most {REASON_MAX_CHARS} characters" in long.text
    assert world.post("ReviewRejectForm", {**fields, "reason": "a" * REASON_MAX_CHARS}).status_code == 303


# -- every declared status is one the route answers ----------------------------------------------


def stalled_status(client: TestClient, path: str, headers: dict[str, str]) -> int:
    """The status of a form post whose body is announced and never arrives (as an ASGI server
    waits for it), through the app in the test client's event loop."""
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        await anyio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in {"host": "testserver", **headers}.items()],
        "client": ("198.51.100.7", 50000),
        "server": ("testserver", 443),
        "state": {},
    }
    assert client.portal is not None
    client.portal.call(client.app, scope, receive, send)
    return statuses[0]


def redis_gone_status(name: str) -> httpx.Response:
    """A form post to a renderer whose Redis does not answer."""
    gone = renderer_redis_client(f"redis://127.0.0.1:{free_port()}/0")
    app = _app(gone, Clock(NOW.timestamp()))
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        return client.post(path_of(name), data={"reason": "why"}, headers={**BEARER, **SAME_ORIGIN})


def provocations(world: World, name: str) -> dict[int, Callable[[], httpx.Response | int]]:
    """A request per status the route can answer, each from the state the fixture set up."""
    complete = world.complete(name)
    json_body: dict[str, object] = {k: v for k, v in complete.items() if k != CSRF_FIELD}
    if "version" in json_body and name != "GuidelineSignOffForm":
        json_body["version"] = int(str(json_body["version"]))
    json_body.pop("held", None)
    stale = {"version": "1"} if name != "GuidelineSignOffForm" else {"report_sha256": "0" * 64}
    unknown = path_of(name).replace(CAMPAIGN, "no-such-campaign")

    def with_junk_session() -> httpx.Response:
        world.client.cookies.clear()
        world.client.cookies.set(SESSION_COOKIE, "s" * 43, path="/admin")
        return world.client.post(path_of(name), data=complete, headers=SAME_ORIGIN, follow_redirects=False)

    found: dict[int, Callable[[], httpx.Response | int]] = {
        200: lambda: world.client.post(path_of(name), json=json_body, headers=BEARER),
        303: lambda: world.post(name, complete),
        400: lambda: world.post(name, {**complete, "note": "x"}),
        401: with_junk_session,
        403: lambda: world.post(name, {k: v for k, v in complete.items() if k != CSRF_FIELD}),
        404: lambda: world.post(name, complete, path=unknown),
        408: lambda: stalled_status(world.client, path_of(name), {**BEARER, **FORM, "content-length": "200"}),
        413: lambda: world.post(name, {**complete, "reason": "x" * 2000}),
        503: lambda: redis_gone_status(name),
    }
    if name != "ReviewRollbackForm":  # a rollback has no version to be stale
        found[409] = lambda: world.post(name, {**complete, **stale})
    return found


@pytest.mark.parametrize("name", list(ROUTES))
def test_every_status_the_document_declares_is_one_the_route_answers(
    world: World, document: dict[str, Any], name: str
) -> None:
    method, path, _ = ROUTES[name]
    declared = {
        int(status): resolved(document, r)
        for status, r in document["paths"][path][method]["responses"].items()
    }
    shown = {}
    start = world.snapshot()
    for status, send in provocations(world, name).items():
        world.restore(start)  # each from the same state: one's decision is not another's stale version
        world.client.cookies.clear()
        answer = send()
        got = answer if isinstance(answer, int) else answer.status_code
        assert got == status, (name, status, answer if isinstance(answer, int) else answer.text)
        if not isinstance(answer, int):
            media = answer.headers.get("content-type", "").split(";")[0]
            content = declared[status].get("content")
            assert (media in content) if content else not answer.content, (name, status, media)
        shown[status] = got
    assert set(shown) == set(declared), (name, set(declared) - set(shown), set(shown) - set(declared))


def test_the_403s_are_the_csrf_token_the_origin_and_the_role(world: World) -> None:
    name = "ReviewRejectForm"
    complete = world.complete(name)
    without = world.post(name, {k: v for k, v in complete.items() if k != CSRF_FIELD})
    wrong = world.post(name, {**complete, CSRF_FIELD: "x" * 43})
    elsewhere = world.post(name, complete, origin="https://evil.example")
    viewer = world.post(name, {**complete, CSRF_FIELD: world.csrf(Role.VIEWER)}, role=Role.VIEWER)
    for answer, says in (
        (without, "CSRF token is missing"),
        (wrong, "CSRF token is wrong"),
        (elsewhere, "from another site"),
        (viewer, f"this needs {Role.REVIEWER}"),
    ):
        assert answer.status_code == 403 and says in answer.text, answer.text
    assert ZoneSetStore(world.redis).get(TENANT, CAMPAIGN, ACCOUNT).status.value == "published"  # type: ignore[union-attr]
