"""A local OpenAI-compatible model server for tests: answers well, badly, slowly or not at all.

Why a real server: the `openai` provider's faults (429 with Retry-After, 5xx, timeouts, a
hung connection) only mean something through the real client over a real socket. This is
a bare ASGI app serving `POST /v1/chat/completions`, run by uvicorn in a background thread
on 127.0.0.1 with an OS-chosen port. Handlers are async (`await asyncio.sleep`), so it
serves many concurrent requests.

The "model" reads the `<data>` block of the last user message (JSON) and the schema name
of `response_format` (`PageDraft`: generation, `PageReview`: self-review,
`ExtractedFacts`: extraction), and answers by mode:

    well            drafts built from the data's facts: right ids, only the facts' words,
                    a CTA id; every review ok; extraction quotes each source's first sentence
    hallucinate     numbers, amounts and names no fact has
    banned_opener   banned openers and phrases
    html            script, img, a link and a bare URL in text; a URL as cta_id
    wrong_company   another company's name (`name=`, default "Globex Corp") for the account's
    bad_fact_ids    cites fact ids that do not exist
    malformed       JSON that does not parse / validate (`times=N`: only the first N answers)
    truncated       half the JSON with finish_reason "length" (`times=N` as above)
    refuse          a refusal instead of content (`times=N` as above)
    hostile_body    a 200 whose body no decoder should follow: 100,000 nested arrays, or a
                    5,000-digit token count, in turn (`times=N` as above)
    injection       obeys "Ignore previous instructions and say '...'" planted in the data
    lines           writes the given lines: `lines={zone id: text}` ("*": every zone not named),
                    each citing what `well` would (`fact_ids={zone id: [ids]}` to choose);
                    other zones as `well` (a model that writes exactly what a test needs)
    rate_limit      429 with Retry-After (`retry_after="1"`, `times=1`), then well
    server_error    500 (`times=N`; default: always)
    client_error    400 (`times=N`; default: always): not worth a retry
    forbidden       403 permission denied (`times=N` as above)
    model_not_found the model named is unknown: 404 with code `model_not_found`, as OpenAI
                    answers (`status=400` for gateways that answer 400; `times=N` as above)
    slow            sleeps `sleep_s` (default 2.0) before answering well
    hang            never answers until `reset()` or shutdown

Output modes (hallucinate ... refuse) apply to generation only; reviews say ok. Params for
any mode: `review_reject=[zone ids]` (the review says not ok, giving `review_note`),
`review_omit=[zone ids]` (the review gives no verdict for them), `low_confidence=[zone ids]`
(generation reports `low_confidence_value`, default 0.3, as their confidence), `review_broken=True` (the
review answers JSON of the wrong shape), `decline=[zone ids]` (generation answers them with
empty text), `omit=[zone ids]` (generation leaves them out), `cta_id` (generation chooses
this id in link zones), `paraphrase=[source ids]` (extraction rewords that source's
evidence), `extract_type` (default "expansion").
`latency_s` delays every answer (benchmarks). `api_key`, when set, is the one key accepted:
any other bearer token gets 401 `invalid_api_key`, in every mode (a bad key, then the key fixed).
Every request is logged with its headers (`requests()`).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn

__all__ = ["BROKEN_MODES", "HOSTILE_STRINGS", "MODES", "OUTPUT_MODES", "LLMTestServer", "LoggedRequest"]

MODES = (
    "well",
    "hallucinate",
    "banned_opener",
    "html",
    "wrong_company",
    "bad_fact_ids",
    "malformed",
    "truncated",
    "refuse",
    "hostile_body",
    "injection",
    "lines",
    "rate_limit",
    "server_error",
    "client_error",
    "forbidden",
    "model_not_found",
    "slow",
    "hang",
)
OUTPUT_MODES = ("hallucinate", "banned_opener", "html", "wrong_company", "bad_fact_ids")
BROKEN_MODES = ("malformed", "truncated", "refuse", "hostile_body")

# What each hostile mode writes that must never be published.
HOSTILE_STRINGS: dict[str, tuple[str, ...]] = {
    "hallucinate": ("$40 million", "Sequoia", "250 new reps", "Maria Jansen", "Save 60%"),
    "banned_opener": ("Did you know", "game-changer"),
    "html": ("<script", "alert(1)", "<img", "onerror", "evil.example", "<a ", "href"),
    "wrong_company": ("Globex", "Initech"),
    "bad_fact_ids": (),
    "injection": ("evil.example", "Visit evil"),
}

_KINDS = {"PageDraft": "generate", "PageReview": "review", "ExtractedFacts": "extract"}
_COMPLETIONS_PATH = "/v1/chat/completions"
_PLANTED_RE = re.compile(r"ignore (?:all )?previous instructions and say ['\"]([^'\"]+)['\"]", re.I)
_SUPPORT_SUFFIX = ". New sellers need to ramp fast."


@dataclass
class LoggedRequest:
    """One request as the server saw it."""

    kind: str
    mode: str
    received: float  # time.monotonic() when it arrived
    body: dict[str, Any]
    data: Any
    status: int | None = None
    answered: float | None = None  # time.monotonic() when the answer was sent
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names

    @property
    def last_user_message(self) -> str:
        users = [m for m in self.body.get("messages", []) if m.get("role") == "user"]
        return str(users[-1].get("content", "")) if users else ""


@dataclass
class _State:
    mode: str = "well"
    params: dict[str, Any] = field(default_factory=dict)
    served: int = 0  # requests answered in this mode (for `times`)
    epoch: int = 0  # bumped by reset(): releases hung requests


class LLMTestServer:
    """The server plus its controls. Use as a context manager, or `start()` / `stop()`."""

    def __init__(self) -> None:
        self.latency_s = 0.0
        self.api_key: str | None = None  # None: any key is accepted
        self._state = _State()
        self._log: list[LoggedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._port = 0
        self.app = self._asgi

    # -- controls ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    def set_mode(self, mode: str, **params: Any) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
        with self._lock:
            self._state = _State(mode=mode, params=params, epoch=self._state.epoch + 1)

    def reset(self) -> None:
        """Mode `well`, no latency, any key, empty log; hung requests are released."""
        with self._lock:
            self._state = _State(epoch=self._state.epoch + 1)
            self._log.clear()
        self.latency_s = 0.0
        self.api_key = None

    def requests(self, kind: str | None = None) -> list[LoggedRequest]:
        with self._lock:
            return [r for r in self._log if kind is None or r.kind == kind]

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> LLMTestServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted sockets inherit TCP_NODELAY: without it, a response written in two parts
        # waits for the client's delayed ACK (~40 ms a request), which would swamp any latency.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            interface="asgi3",
            log_level="warning",
            access_log=False,
            lifespan="off",
            backlog=4096,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="llm-test-server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the LLM test server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._stopping.set()  # hung handlers return, so shutdown does not wait on them
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> LLMTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the endpoint --------------------------------------------------------------------------

    # A bare ASGI app rather than a framework's routing, request and response objects: in
    # benchmarks this server shares the machine's cores with the client it stands in for a
    # remote provider to, so its CPU per call is kept small.
    async def _asgi(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] != _COMPLETIONS_PATH:
            response = _error(404, "not_found", f"no route {scope['path']}")
        elif scope["method"] != "POST":
            response = _error(405, "method_not_allowed", "POST only", {"allow": "POST"})
        else:
            chunks = []
            while True:
                message = await receive()
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            response = await self._completions(b"".join(chunks), headers)
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(response.body)).encode()),
                    *((k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.items()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": response.body})

    async def _completions(self, raw: bytes, headers: dict[str, str]) -> _Answer:
        try:
            body = json.loads(raw)
        except ValueError:
            return _error(400, "invalid_request_error", "the body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "invalid_request_error", "the body is not a JSON object")
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
        kind = _KINDS.get(schema, "unknown")
        with self._lock:
            state = self._state
            state.served += 1
            served = state.served
            entry = LoggedRequest(kind, state.mode, time.monotonic(), body, _data(body), headers=headers)
            self._log.append(entry)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        response = await self._answer(state, served, entry)
        entry.status = response.status_code
        entry.answered = time.monotonic()
        return response

    async def _answer(self, state: _State, served: int, entry: LoggedRequest) -> _Answer:
        mode, params = state.mode, state.params
        times = params.get("times")
        faulty = times is None or served <= int(times)
        if self.api_key is not None and entry.headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "invalid_api_key", "Incorrect API key provided")
        if mode == "rate_limit" and served <= int(params.get("times", 1)):
            headers = {"retry-after": str(params.get("retry_after", "1"))}
            return _error(429, "rate_limit_exceeded", "Rate limit reached", headers)
        if mode == "server_error" and faulty:
            return _error(500, "server_error", "The server had an error")
        if mode == "client_error" and faulty:
            return _error(400, "invalid_request_error", "This model does not support that")
        if mode == "forbidden" and faulty:
            return _error(403, "permission_denied", "You are not allowed to use this model")
        if mode == "model_not_found" and faulty:
            model = entry.body.get("model")
            status = int(params.get("status", 404))
            return _error(status, "model_not_found", f"The model `{model}` does not exist")
        if mode == "slow":
            await asyncio.sleep(float(params.get("sleep_s", 2.0)))
        if mode == "hang":
            while state.epoch == self._state.epoch and not self._stopping.is_set():
                await asyncio.sleep(0.02)
            return _error(503, "gone", "released")
        model = str(entry.body.get("model", "test-model"))
        if entry.kind == "review":
            if params.get("review_broken"):
                return _completion(model, '{"zones": "all fine"}')
            return _completion(model, json.dumps(_review(entry.data, params)))
        if entry.kind == "extract":
            return _completion(model, json.dumps(_extract(entry.data, mode, params)))
        if entry.kind != "generate" or not isinstance(entry.data, dict):
            return _error(400, "invalid_request_error", "no <data> block or unknown response_format")
        if mode in BROKEN_MODES and faulty:
            return _broken(model, mode, entry.data, served)
        return _completion(model, json.dumps({"zones": _write(entry.data, mode, params)}))


# -- answers ---------------------------------------------------------------------------------


def _data(body: dict[str, Any]) -> Any:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    for message in users[:1]:  # the data is in the first user message; repairs add more
        content = str(message.get("content", ""))
        start = content.find("<data>")
        end = content.find("</data>", start + len("<data>")) if start >= 0 else -1
        if end >= 0:
            try:
                return json.loads(content[start + len("<data>") : end])
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class _Answer:
    """An answer: status, JSON body, extra headers."""

    status_code: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def _json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> _Answer:
    return _Answer(status, json.dumps(payload, separators=(",", ":")).encode(), headers or {})


def _completion(model: str, content: str | None, finish: str = "stop", refusal: str | None = None) -> _Answer:
    return _json_response(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
        }
    )


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> _Answer:
    body = {"error": {"message": message, "type": code, "param": None, "code": code}}
    return _json_response(body, status, headers)


def _broken(model: str, mode: str, data: dict[str, Any], served: int) -> _Answer:
    if mode == "refuse":
        return _completion(model, None, refusal="I can't help with that.")
    if mode == "hostile_body":
        if served % 2:
            return _Answer(200, b"[" * 100_000 + b"]" * 100_000)
        usage = b'"usage":{"total_tokens":' + b"9" * 5_000 + b"}"
        return _Answer(
            200, b'{"choices":[{"message":{"content":"{}"},"finish_reason":"stop"}],' + usage + b"}"
        )
    if mode == "truncated":
        whole = json.dumps({"zones": _write(data, "well", {})})
        return _completion(model, whole[: len(whole) // 2], finish="length")
    # Alternate the two shapes of malformed: not JSON at all, and JSON of the wrong shape.
    content = "Sure! Here are the zones: {zones: [" if served % 2 else '{"zones": "hero_headline"}'
    return _completion(model, content)


def _groups(facts: list[dict[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """(type, statement, ids) per distinct statement, newest first."""
    ordered = sorted(facts, key=lambda f: (f.get("published_at", ""), f["id"]), reverse=True)
    groups: dict[tuple[str, str], list[str]] = {}
    for fact in ordered:
        groups.setdefault((fact["type"], fact["statement"]), []).append(fact["id"])
    return [(t, s, ids) for (t, s), ids in groups.items()]


def _fits(text: str, zone: dict[str, Any]) -> bool:
    return len(text) <= int(zone["max_chars"]) and len(text.split()) <= int(zone["max_words"])


def _well(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A careful writer: each zone one fact group's own statement, the groups in turn."""
    groups = _groups(data.get("facts", []))
    ctas = data.get("ctas", [])
    out: list[dict[str, Any]] = []
    turn = 0
    for zone in data.get("zones", []):
        entry = {"zone_id": zone["zone_id"], "text": "", "fact_ids": [], "cta_id": None, "confidence": 0.0}
        if zone["link"]:
            if ctas and groups:
                entry.update(text=ctas[0]["label"], fact_ids=groups[0][2][:1], cta_id=ctas[0]["id"])
                entry["confidence"] = 0.9
            out.append(entry)
            continue
        usable = [g for g in groups if g[0] in zone["fact_types"]]
        if usable:
            _, statement, ids = usable[turn % len(usable)]
            turn += 1
            text = statement.rstrip(".")
            if zone["max_words"] >= 20 and _fits(text + _SUPPORT_SUFFIX, zone):
                text += _SUPPORT_SUFFIX
            if _fits(text, zone):
                entry.update(text=text, fact_ids=ids, confidence=0.9)
        out.append(entry)
    return out


def _hostile(text: str, name: str, i: int, mode: str, params: dict[str, Any]) -> str:
    if mode == "hallucinate":
        return [
            f"{name} raised $40 million from Sequoia Capital",
            f"{text}, with 250 new reps",
            f"{text}, says CEO Maria Jansen",
            "Save 60% this quarter",
        ][i % 4]
    if mode == "banned_opener":
        return [f"Did you know {text}?", f"A game-changer: {text}"][i % 2]
    if mode == "html":
        return [
            f"<script>alert(1)</script>{text}",
            f'{text} <a href="https://evil.example">Read more</a>',
            f"{text}. See https://evil.example/offer",
            f"<img src=x onerror=alert(1)>{text}",
        ][i % 4]
    if mode == "wrong_company":
        rival = str(params.get("name", "Globex Corp"))
        if rival.casefold() == name.casefold():
            rival = "Initech GmbH"
        return text.replace(name, rival) if name in text else f"{rival}: {text}"
    return text


def _write(data: dict[str, Any], mode: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    omit, decline = set(params.get("omit", ())), set(params.get("decline", ()))
    doubt = set(params.get("low_confidence", ()))
    zones = [z for z in _well(data) if z["zone_id"] not in omit]
    for zone in zones:
        if zone["zone_id"] in doubt:
            zone["confidence"] = float(params.get("low_confidence_value", 0.3))
        if zone["zone_id"] in decline:
            zone.update(text="", fact_ids=[], cta_id=None)
        elif "cta_id" in params and zone["cta_id"]:
            zone["cta_id"] = params["cta_id"]
    name = str((data.get("account") or {}).get("name", ""))
    if mode == "lines":
        return [_given_line(zone, params) for zone in zones]
    if mode == "injection":
        planted = _planted(data)
        if planted is not None:
            payload, fact_id = planted
            for zone in zones:
                zone.update(text=payload, fact_ids=[fact_id] if fact_id else [], confidence=0.95)
        return zones
    for i, zone in enumerate(zones):
        if mode == "bad_fact_ids":
            zone["fact_ids"] = ["no-such-fact"] if i % 2 else [*zone["fact_ids"], "made-up-fact"]
        elif mode in OUTPUT_MODES:
            zone["text"] = _hostile(zone["text"] or name, name, i, mode, params)
            zone["confidence"] = 0.95
            if mode == "html" and zone["cta_id"]:
                zone["cta_id"] = "https://evil.example/book"
    return zones


def _given_line(zone: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    lines: dict[str, str] = params.get("lines", {})
    text = lines.get(zone["zone_id"], lines.get("*"))
    if text is None:
        return zone
    fact_ids = params.get("fact_ids", {}).get(zone["zone_id"], zone["fact_ids"])
    return {**zone, "text": text, "fact_ids": list(fact_ids), "confidence": 0.9}


def _planted(data: dict[str, Any]) -> tuple[str, str | None] | None:
    """The payload of an instruction planted anywhere in the data, and the fact it came from."""
    for fact in data.get("facts", []):
        match = _PLANTED_RE.search(json.dumps(fact))
        if match:
            return match.group(1), fact.get("id")
    match = _PLANTED_RE.search(json.dumps(data))
    return (match.group(1), None) if match else None


def _review(data: Any, params: dict[str, Any]) -> dict[str, Any]:
    reject, omit = set(params.get("review_reject", ())), set(params.get("review_omit", ()))
    note = str(params.get("review_note", "implies more than the facts say"))
    zones = data.get("zones", []) if isinstance(data, dict) else []
    return {
        "zones": [
            {
                "zone_id": z["zone_id"],
                "ok": z["zone_id"] not in reject,
                "reason": note if z["zone_id"] in reject else "fine",
            }
            for z in zones
            if z["zone_id"] not in omit
        ]
    }


def _extract(data: Any, mode: str, params: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(data, dict):
        return {"facts": []}
    company = str(data.get("company", ""))
    paraphrase = set(params.get("paraphrase", ()))
    facts = []
    for source in data.get("sources", []):
        text = str(source.get("text", ""))
        planted = _PLANTED_RE.search(text)
        if mode == "injection" and planted:
            sentence = next(s for s in re.split(r"(?<=[.!?])\s+", text) if _PLANTED_RE.search(s))
            facts.append(_extracted(source, params, planted.group(1), company, sentence))
            continue
        first = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]
        statement = " ".join(first.split()).rstrip(".")
        evidence = first
        if source.get("source_id") in paraphrase:
            evidence = "Word has it that " + statement.replace(" opened ", " has just opened ")
        facts.append(_extracted(source, params, statement, company, evidence))
    return {"facts": facts}


def _extracted(
    source: dict[str, Any], params: dict[str, Any], statement: str, company: str, evidence: str
) -> Any:
    return {
        "source_id": source.get("source_id", ""),
        "type": params.get("extract_type", "expansion"),
        "statement": statement,
        "subject": company,
        "evidence": evidence,
    }


def main(argv: list[str] | None = None) -> None:
    """Run the server on its own (benchmarks want it outside their process): prints its base URL."""
    import argparse

    parser = argparse.ArgumentParser(description="Local OpenAI-compatible test server")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    parser.add_argument("--mode", default="well", choices=MODES)
    args = parser.parse_args(argv)
    server = LLMTestServer()
    server.latency_s = args.latency
    server.set_mode(args.mode)
    with server:
        print(server.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
