"""The validation stage's judge: answer parser, prompts, items, measures, the response cache and
the client's behaviour against a real HTTP endpoint that misbehaves on purpose.

The endpoint here is a small Starlette app on uvicorn (a real server on loopback speaking the
chat-completions protocol) whose answers each test scripts: a 429 or 500 first, a malformed
answer, a refusal. The packaged-model server itself is tested in test_validation_server.py.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import numpy as np
import pandas as pd
import pytest

from personalir.validation.dimensions import DIMENSIONS, AnswerError, dimensions_for, parse_answer
from personalir.validation.items import allocate, build_items, item_id, pairs_of, stratified_sample
from personalir.validation.judge import (
    JudgeRequestError,
    JudgeSettings,
    JudgeUnavailableError,
    ResponseCache,
    judge_items,
    redact,
)
from personalir.validation.measures import measures

NAT = DIMENSIONS.get("naturalness")
ATTR = DIMENSIONS.get("attribution")
ERR = DIMENSIONS.get("error_consistency")


# --- parser --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("four", "not_json"),
        ('{"rating": 4', "not_json"),
        ("[4]", "not_object"),
        ('{"score": 4}', "missing_key"),
        ('{"rating": 4, "why": "ok"}', "extra_keys"),
        ('{"rating": 6}', "bad_label"),
        ('{"rating": 0}', "bad_label"),
        ('{"rating": "4"}', "bad_label"),
        ('{"rating": true}', "bad_label"),
        ('{"rating": 4.5}', "bad_label"),
        ("I'm sorry, I cannot rate this query.", "refusal"),
    ],
)
def test_parser_names_what_is_wrong(text, reason):
    with pytest.raises(AnswerError) as info:
        parse_answer(NAT, text)
    assert info.value.reason == reason
    assert "naturalness" in str(info.value)


def test_parser_accepts_valid_answers():
    assert parse_answer(NAT, '{"rating": 4}') == "4"
    assert parse_answer(NAT, ' \n```json\n{"rating": 2}\n```\n') == "2"
    assert parse_answer(NAT, '{"rating": 5.0}') == "5"
    assert parse_answer(ATTR, '{"answer": "no_preference"}') == "no_preference"
    assert parse_answer(ERR, '{"verdict": "strict_pass"}') == "strict_pass"
    with pytest.raises(AnswerError, match="not one of A, B, no_preference"):
        parse_answer(ATTR, '{"answer": "C"}')


def test_dimensions_schemas_and_prompts():
    assert NAT.schema()["properties"]["rating"]["enum"] == [1, 2, 3, 4, 5]
    assert ATTR.schema()["properties"]["answer"]["enum"] == ["A", "B", "no_preference"]
    assert ERR.labels == ("fail", "acceptable", "strict_pass")  # ordinal, low to high
    assert [d.name for d in dimensions_for("syntactic")] == [
        "naturalness",
        "syntactic_quality",
        "attribution",
    ]
    assert [d.name for d in dimensions_for("writing_error")] == [
        "naturalness",
        "syntactic_quality",
        "error_consistency",
    ]
    msgs = ATTR.messages(
        {
            "user_a_sentences": ["I love it."],
            "user_b_sentences": ["Works fine"],
            "query_1": "q one",
            "query_2": "q two",
        }
    )
    assert msgs[0]["role"] == "system" and "I love it." in msgs[1]["content"]
    assert 'Query 1: "q one"' in msgs[1]["content"]
    with pytest.raises(Exception, match="query_2"):  # a missing field is an error, not ""
        ATTR.messages({"user_a_sentences": [], "user_b_sentences": [], "query_1": "x"})
    assert NAT.prompt_version.startswith("naturalness.v1+")


# --- items ---------------------------------------------------------------------------------
def _rows(domain, n_syn, n_err_per):
    rows = []
    for p in range(n_syn):
        pid = f"{domain}:P{p}:syn0"
        for role, user in (("a", f"u{p}a"), ("b", f"u{p}b")):
            rows.append(
                {
                    "query_id": f"{pid}:{role}",
                    "domain": domain,
                    "pair_id": pid,
                    "kind": "syntactic",
                    "role": role,
                    "user_id": user,
                    "text": f"query {p} by {user}",
                    "provenance": {"backend": "lm"},
                }
            )
        for e in range(n_err_per):
            eid = f"{domain}:P{p}:err{e}"
            for role, text in (("clean", f"query {p}"), ("error", f"qeury {p}")):
                rows.append(
                    {
                        "query_id": f"{eid}:{role}",
                        "domain": domain,
                        "pair_id": eid,
                        "kind": "writing_error",
                        "role": role,
                        "user_id": f"u{p}a",
                        "text": text,
                        "provenance": {"edits": [{}]},
                    }
                )
    return rows


def test_allocation_is_proportional_and_exact():
    assert allocate({"a": 50, "b": 100, "c": 150}, 60) == {"a": 10, "b": 20, "c": 30}
    alloc = allocate({"a": 1, "b": 1, "c": 1}, 2)
    assert sum(alloc.values()) == 2 and max(alloc.values()) == 1
    assert allocate({"a": 3, "b": 0}, 10) == {"a": 3, "b": 0}  # never more than a stratum has


def test_items_are_blinded_stable_and_balanced():
    pairs = pairs_of(_rows("D1", 40, 2) + _rows("D2", 20, 2))
    chosen, table = stratified_sample(pairs, 30, seed=3, domains=["D1", "D2"])
    assert len(chosen) == 30
    assert {(r["domain"], r["kind"]): r["sampled"] for r in table} == {
        ("D1", "syntactic"): 7,
        ("D1", "writing_error"): 13,
        ("D2", "syntactic"): 3,
        ("D2", "writing_error"): 7,
    }
    again, _ = stratified_sample(pairs, 30, seed=3, domains=["D1", "D2"])
    assert again == chosen
    users = {
        f"u{p}{s}": [f"sentence {i} of u{p}{s}" for i in range(9)] for p in range(40) for s in "ab"
    }
    own = {f"u{p}a": [f"teh -> the (swap) {i}" for i in range(12)] for p in range(40)}
    sentences, errors = {"D1": users, "D2": users}, {"D1": own, "D2": own}
    items, key = build_items(
        pairs,
        sentences,
        errors,
        human_sample=chosen,
        include_all=True,
        history_sentences=5,
        max_user_errors=10,
        seed=3,
    )
    assert len(items) == len(pairs) and sum(k["human_sample"] for k in key) == 30
    assert sorted(it["order"] for it in items) == list(range(len(items)))
    forbidden = {"user_id", "backend", "attribution_truth", "pair_id", "user_a", "human_sample"}
    for it, k in zip(items, key, strict=True):
        assert not forbidden & set(it), "an item reveals its condition"
        assert it["item_id"] == k["item_id"] == item_id(k["pair_id"])
        if it["kind"] == "syntactic":
            assert len(it["user_a_sentences"]) == 5 and it["query"] == it["query_1"]
            author_1 = "a" if it["query_1"].endswith("a") else "b"
            user_a = it["user_a_sentences"][0].split(" of ")[1]
            assert (k["attribution_truth"] == "A") == user_a.endswith(author_1)
        else:
            assert len(it["user_errors"]) == 10 and it["query"] == it["error_query"]
    truths = [k["attribution_truth"] for k in key if k["kind"] == "syntactic"]
    assert 0.3 < truths.count("A") / len(truths) < 0.7  # a fair coin per item
    with pytest.raises(ValueError, match="roles"):
        pairs_of(_rows("D1", 1, 0)[:1])


# --- measures ------------------------------------------------------------------------------
def test_measures_on_a_worked_example():
    labels = pd.DataFrame(
        [
            ("i1", "naturalness", "5"),
            ("i2", "naturalness", "3"),
            ("i3", "naturalness", None),
            ("i1", "attribution", "A"),
            ("i2", "attribution", "B"),
            ("i4", "attribution", "A"),
            ("i5", "attribution", "no_preference"),
            ("e1", "error_consistency", "strict_pass"),
            ("e2", "error_consistency", "acceptable"),
            ("e3", "error_consistency", "fail"),
            ("e4", "error_consistency", "strict_pass"),
        ],
        columns=["item_id", "dimension", "label"],
    )
    key = pd.DataFrame(
        {"item_id": ["i1", "i2", "i4", "i5"], "attribution_truth": ["A", "A", "A", "B"]}
    )
    out = measures(labels, key, bootstrap=200, confidence=0.95, seed=1).set_index("measure")
    assert out.loc["Naturalness (1-5)", "value"] == 4.0 and out.loc["Naturalness (1-5)", "n"] == 2
    # decisive: i1 (right), i2 (wrong), i4 (right) -> 2/3; no preference 1 of 4
    assert out.loc["Syntactic attribution", "value"] == pytest.approx(200 / 3)
    assert out.loc["Syntactic attribution", "n"] == 3
    assert out.loc["No-preference rate", "value"] == 25.0
    assert out.loc["Error strict pass", "value"] == 50.0
    assert out.loc["Error acceptable", "value"] == 75.0
    assert np.isnan(out.loc["Syntactic quality (1-5)", "value"])
    row = out.loc["Error acceptable"]
    assert row["ci_low"] <= row["value"] <= row["ci_high"]


# --- cache ---------------------------------------------------------------------------------
def test_cache_verifies_entries(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k1", {"content": '{"rating": 4}'})
    cache.put("k2", {"content": '{"rating": 2}'})
    assert cache.get("k1") == {"content": '{"rating": 4}'} and len(cache) == 2
    # Flip a byte inside a stored payload: the entry is dropped and counted, never served.
    cache._db.execute("UPDATE answers SET payload = replace(payload, '4', '5') WHERE key='k1'")
    cache._db.commit()
    assert cache.get("k1") is None and cache.corrupt == 1 and len(cache) == 1
    # Swap two entries' payloads (digests stay): both fail verification.
    cache.put("k1", {"content": '{"rating": 4}'})
    rows = dict(cache._db.execute("SELECT key, payload FROM answers").fetchall())
    cache._db.execute("UPDATE answers SET payload=? WHERE key='k1'", (rows["k2"],))
    cache._db.execute("UPDATE answers SET payload=? WHERE key='k2'", (rows["k1"],))
    cache._db.commit()
    assert cache.get("k1") is None and cache.get("k2") is None and cache.corrupt == 3
    cache.close()


def test_a_file_that_is_not_a_database_becomes_an_empty_cache(tmp_path, caplog):
    import logging

    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not SQLite at all" * 100)
    with caplog.at_level(logging.WARNING):
        cache = ResponseCache(path)
    assert f"judge cache {path} is damaged" in caplog.text and cache.rebuilt == 1
    assert len(cache) == 0 and cache.get("k") is None
    cache.put("k", {"content": "x"})
    assert ResponseCache(path).get("k") == {"content": "x"}


def test_entries_written_before_keys_were_checked_are_still_served(tmp_path):
    import hashlib
    import json
    import sqlite3

    path = tmp_path / "c.sqlite"
    payload = json.dumps({"content": '{"rating": 3}'}, sort_keys=True)
    with sqlite3.connect(path) as db:  # as the earlier cache wrote it: sha256 of the payload
        db.execute(
            "CREATE TABLE answers (key TEXT PRIMARY KEY, payload TEXT NOT NULL,"
            " sha256 TEXT NOT NULL, created REAL NOT NULL)"
        )
        db.execute(
            "INSERT INTO answers VALUES (?, ?, ?, 0)",
            ("k", payload, hashlib.sha256(payload.encode()).hexdigest()),
        )
    db.close()
    cache = ResponseCache(path)
    assert cache.get("k") == {"content": '{"rating": 3}'} and cache.corrupt == 0


def test_an_answer_moved_to_another_key_is_not_served(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("key-049", {"content": '{"rating": 5}'})
    cache._db.execute("UPDATE answers SET key = 'key-009' WHERE key = 'key-049'")
    cache._db.commit()
    assert cache.get("key-009") is None and cache.corrupt == 1


# --- a scripted endpoint -------------------------------------------------------------------
class Script:
    """What the endpoint answers: a list of (status, content) consumed in order, then
    ``default``; every request body is recorded."""

    def __init__(self, default='{"rating": 4}'):
        self.queue = []
        self.default = default
        self.requests = []
        self.headers = []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint():
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    script = Script()

    async def chat(request):
        body = await request.json()
        script.requests.append(body)
        script.headers.append(dict(request.headers))
        status, content = script.queue.pop(0) if script.queue else (200, script.default)
        if status != 200:
            # A careless provider that echoes the caller's credentials in its error text.
            echo = request.headers.get("authorization", "")
            return JSONResponse(
                {"error": {"message": f"scripted {status} for {echo}"}}, status_code=status
            )
        message = {"role": "assistant", "content": content}
        if content == "<refusal>":
            message = {"role": "assistant", "content": None, "refusal": "no"}
        return JSONResponse(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
            }
        )

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:  # an event, however long a busy machine takes to reach it
        assert thread.is_alive(), "the scripted endpoint did not start"
        time.sleep(0.05)
    script.url = f"http://127.0.0.1:{port}/v1"
    yield script
    server.should_exit = True
    thread.join(5)


def _settings(url, **kw):
    base = dict(
        base_url=url,
        model="scripted",
        label="scripted judge",
        max_retries=2,
        parse_retries=1,
        timeout_s=600,  # generous: a busy machine answers slowly, not wrongly
        max_concurrency=2,
    )
    base.update(kw)
    return JudgeSettings(**base)


def _items(n=3):
    return [
        {
            "item_id": f"it-{i}",
            "kind": "writing_error",
            "query": f"query {i}",
            "dimensions": ["naturalness"],
        }
        for i in range(n)
    ]


def test_judge_retries_transport_errors_and_caches(endpoint, tmp_path):
    endpoint.queue[:] = [(429, None), (500, None)]
    endpoint.requests.clear()
    cache = ResponseCache(tmp_path / "judge.sqlite")
    judgements, report = judge_items(
        _items(), _settings(endpoint.url, max_concurrency=1), cache, progress=False
    )
    assert [j["label"] for j in judgements] == ["4", "4", "4"]
    assert report["calls_this_run"] == 3 and report["answered"] == 3
    assert len(endpoint.requests) == 5  # two scripted failures retried by the client
    body = endpoint.requests[-1]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == NAT.schema()
    # A rerun makes no call.
    endpoint.requests.clear()
    again, report2 = judge_items(_items(), _settings(endpoint.url), cache, progress=False)
    assert (
        again == judgements
        and report2["calls_this_run"] == 0
        and report2["cache_hits_this_run"] == 3
    )
    assert endpoint.requests == []
    # A different prompt version or model is a different key.
    judge_items(_items(1), _settings(endpoint.url, model="other"), cache, progress=False)
    assert len(endpoint.requests) == 1
    cache.close()


def test_bad_answers_are_retried_then_counted(endpoint):
    endpoint.queue[:] = [
        (200, "not json"),
        (200, "still not json"),
        (200, '{"rating": 9}'),
        (200, '{"rating": 2}'),
        (200, "<refusal>"),
        (200, "<refusal>"),
    ]
    judgements, report = judge_items(
        _items(3), _settings(endpoint.url, max_concurrency=1), None, progress=False
    )
    statuses = [(j["status"], j["label"]) for j in judgements]
    assert statuses == [("not_json", None), ("ok", "2"), ("refusal", None)]
    assert judgements[1]["attempts"] == 2
    assert report["failed"] == {"not_json": 1, "refusal": 1}
    assert report["bad_answers"] == {"not_json": 2, "bad_label": 1, "refusal": 2}
    # The retry of a bad answer is sampled (a greedy judge would repeat itself).
    assert endpoint.requests[-1]["temperature"] == 0.7


def test_an_unreachable_endpoint_stops_the_run_naming_it(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(JudgeUnavailableError, match="127.0.0.1.*unreachable.*rerun resumes"):
        judge_items(_items(1), _settings(url, max_retries=0), None, progress=False)


def test_a_rejected_request_is_a_settings_error(endpoint):
    endpoint.queue[:] = [(400, None)]
    with pytest.raises(JudgeRequestError, match="rejected a request"):
        judge_items(_items(1), _settings(endpoint.url, max_concurrency=1), None, progress=False)


def test_the_api_key_never_leaves_the_client(endpoint, tmp_path, monkeypatch, caplog):
    planted = "sk-planted-0123456789abcdef"
    monkeypatch.setenv("PQB_TEST_JUDGE_KEY", planted)
    endpoint.headers.clear()
    settings = _settings(endpoint.url, api_key_env="PQB_TEST_JUDGE_KEY", max_concurrency=1)
    cache = ResponseCache(tmp_path / "judge.sqlite")
    judgements, report = judge_items(_items(2), settings, cache, progress=False)
    cache.close()
    # It reached the endpoint (as the bearer token) ...
    assert endpoint.headers[-1]["authorization"] == f"Bearer {planted}"
    # ... and nothing else: not the report, the judgements, the cache, the logs.
    assert planted not in json.dumps(report) and planted not in json.dumps(judgements)
    assert planted.encode() not in (tmp_path / "judge.sqlite").read_bytes()
    assert planted not in caplog.text
    assert report["settings"]["api_key_env"] == "PQB_TEST_JUDGE_KEY"
    # Error messages are redacted too (the endpoint echoes the key back in its error).
    endpoint.queue[:] = [(400, None)]
    with pytest.raises(JudgeRequestError) as info:
        judge_items(_items(1), settings, None, progress=False)
    assert "Bearer ***" in str(info.value) and planted not in str(info.value)
    assert redact(f"key {planted} here", [planted]) == "key *** here"
    monkeypatch.delenv("PQB_TEST_JUDGE_KEY")
    with pytest.raises(JudgeRequestError, match="PQB_TEST_JUDGE_KEY.*not set"):
        judge_items(_items(1), settings, None, progress=False)
