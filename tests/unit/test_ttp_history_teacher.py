"""History selection, the teacher interface (rule-based, OpenAI-compatible, HF local) and
rewrite-gain target selection."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

from personalir.ttp.inputs.data import Example, HistoryEntry, Item, ItemCorpus
from personalir.ttp.inputs.history import select_histories, select_top_n
from personalir.ttp.inputs.relevance import RelevanceModel
from personalir.ttp.training.teacher import (
    HistoryAttributeTeacher,
    OpenAICompatibleTeacher,
    TeacherRequest,
    parse_rewrite,
    requests_for,
    select_targets,
)


class WordOverlap(RelevanceModel):
    """Number of the first text's words found in the second (a transparent relevance model)."""

    name = "overlap"

    def score(self, queries, texts):
        out = []
        for q, t in zip(queries, texts, strict=True):
            qw, tw = set(q.lower().split()), set(t.lower().replace(":", " ").split())
            out.append(float(len(qw & tw)))
        return np.asarray(out, dtype=float)


def test_select_top_n_golden():
    # best two of five are positions 3 (0.9) and 1 (0.5, tie with 4 -> the later, 4)
    assert select_top_n([0.1, 0.5, 0.2, 0.9, 0.5], 2) == [3, 4]
    assert select_top_n([0.3, 0.1], 5) == [0, 1]
    assert select_top_n([], 3) == []


def _corpus():
    return ItemCorpus(
        {
            "H1": Item(
                "H1", "Kestrel guitar capo", attributes=(("Brand", "Kestrel"), ("Color", "Black"))
            ),
            "H2": Item("H2", "Bolt drum sticks", attributes=(("Brand", "Bolt"), ("Color", "Red"))),
            "H3": Item(
                "H3", "Zed guitar strap", attributes=(("Brand", "Zed"), ("Style Name", "Vintage"))
            ),
            "T1": Item("T1", "Kestrel guitar capo deluxe", attributes=(("Brand", "Kestrel"),)),
            "T2": Item("T2", "Bolt drum sticks maple", attributes=(("Brand", "Bolt"),)),
        }
    )


def _example(eid, query, target, history):
    return Example(
        eid,
        "test",
        "d",
        "u",
        query,
        target,
        "Broad",
        "train",
        [HistoryEntry(h, i) for i, h in enumerate(history)],
    )


def test_history_selection_keeps_relevant_items_in_time_order():
    corpus = _corpus()
    ex = _example("e", "guitar capo", "T1", ["H3", "H2", "H1"])
    select_histories([ex], corpus, WordOverlap(), 2, ("title",))
    # H1 (2 shared words) and H3 (1) beat H2 (0); chronological order kept
    assert ex.selected_history == ["H3", "H1"]


def test_rule_teacher_appends_the_history_brand_that_matches_the_query():
    corpus = _corpus()
    req = TeacherRequest("guitar capo", (corpus["H2"], corpus["H2"], corpus["H1"]))
    cands = HistoryAttributeTeacher().candidates([req], 5)[0]
    # H1 shares the query's words, so Kestrel outranks Bolt despite Bolt's two purchases
    assert cands[0] == "Kestrel guitar capo"
    assert cands[1:] == ["Kestrel guitar capo Black", "guitar capo Black", "Bolt guitar capo"]
    assert len(cands) == len(set(cands)) <= 5
    assert HistoryAttributeTeacher().candidates([TeacherRequest("capo", ())], 5) == [[]]


def test_parse_rewrite_strips_thinking_and_prefixes():
    assert parse_rewrite("<think>user likes Kestrel</think>\nRewritten query: Kestrel capo") == (
        "Kestrel capo"
    )
    assert parse_rewrite('"black  strings"\nmore') == "black strings"
    assert parse_rewrite("reasoning...</think> Bolt sticks") == "Bolt sticks"


def test_gain_filter_drops_non_positive_and_keeps_a_neutral_share():
    corpus = _corpus()
    exs = [
        _example("a", "guitar capo", "T1", ["H1"]),
        _example("b", "drum sticks", "T2", ["H2"]),
        _example("c", "drum sticks", "T2", ["H2"]),
    ]
    cands = [
        ["guitar capo deluxe", "Zed guitar capo", "guitar capo Kestrel"],  # 2 positive
        ["Zed drum sticks"],  # no gain
        ["Zed drum sticks", "drum"],  # no gain
    ]
    records, report = select_targets(
        exs, cands, corpus, WordOverlap(), item_fields=("title",), neutral_share=0.5, seed=1
    )
    by_id = {r["example_id"]: r for r in records}
    assert by_id["a"]["rewrite_kind"] == "rewrite"
    assert by_id["a"]["rewrite"] in {"guitar capo deluxe", "guitar capo Kestrel"}
    assert by_id["a"]["gain"] > 0
    # one rewrite -> at most one neutral sample at a 0.5 share
    neutral = [r for r in records if r["rewrite_kind"] == "neutral"]
    assert len(neutral) == 1 and neutral[0]["rewrite"] == "drum sticks"
    assert report["with_positive_candidate"] == 1 and report["dropped"] == 1
    records0, _ = select_targets(
        exs, cands, corpus, WordOverlap(), item_fields=("title",), neutral_share=0.0, seed=1
    )
    assert [r["example_id"] for r in records0] == ["a"]


class _FakeChat(BaseHTTPRequestHandler):
    seen: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _FakeChat.seen.append((self.path, self.headers.get("Authorization"), body))
        answers = ["<think>likes Kestrel</think>Kestrel guitar capo", "Rewrite: black capo"]
        reply = {"choices": [{"message": {"content": answers[i % 2]}} for i in range(body["n"])]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_openai_compatible_teacher_against_a_local_endpoint(monkeypatch):
    server = HTTPServer(("127.0.0.1", 0), _FakeChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("TTP_TEST_KEY", "secret")
        teacher = OpenAICompatibleTeacher(
            base_url=f"http://127.0.0.1:{server.server_port}/v1",
            model="qwen3-32b",
            api_key_env="TTP_TEST_KEY",
            timeout_s=600,  # generous: a busy machine answers slowly, not wrongly
            retries=0,
        )
        corpus = _corpus()
        out = teacher.candidates([TeacherRequest("capo", (corpus["H1"],))], 4)
    finally:
        server.shutdown()
    assert out == [["Kestrel guitar capo", "black capo"]]
    path, auth, body = _FakeChat.seen[-1]
    assert path == "/v1/chat/completions" and auth == "Bearer secret"
    assert body["model"] == "qwen3-32b" and body["n"] == 4
    assert "capo" in body["messages"][-1]["content"]
    assert "Kestrel guitar capo" in body["messages"][-1]["content"]  # the history is shown


def test_openai_teacher_unreachable_endpoint_raises():
    teacher = OpenAICompatibleTeacher(
        base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2, retries=0
    )
    with pytest.raises(RuntimeError, match="teacher endpoint"):
        teacher.candidates([TeacherRequest("q", ())], 2)


def test_openai_teacher_refuses_non_http_base_url():
    with pytest.raises(ValueError, match="http"):
        OpenAICompatibleTeacher(base_url="file:///etc", model="m")


def test_hf_local_teacher_samples_k_candidates(tmp_path):
    from personalir.ttp.training.teacher import HFLocalTeacher
    from tests.fixtures.models import build_tiny_causal_lm

    folder = build_tiny_causal_lm(tmp_path / "tiny", architecture="llama")
    teacher = HFLocalTeacher(model=str(folder), max_new_tokens=6, batch_size=2, seed=5)
    corpus = _corpus()
    reqs = [TeacherRequest("capo", (corpus["H1"],)), TeacherRequest("sticks", ())]
    out = teacher.candidates(reqs, 3)
    again = HFLocalTeacher(model=str(folder), max_new_tokens=6, batch_size=2, seed=5)
    assert len(out) == 2 and all(len(c) <= 3 for c in out)
    assert again.candidates(reqs, 3) == out  # seeded sampling


def test_requests_need_history_selection():
    ex = _example("e", "q", "T1", ["H1"])
    with pytest.raises(ValueError, match="history selection"):
        requests_for([ex], _corpus())
