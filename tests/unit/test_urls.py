"""An API key is sent only over https, or over plain http to this machine."""

from __future__ import annotations

import pytest

from personalir.common.urls import check_key_transport, is_loopback


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://api.example.org/v1", True),
        ("HTTPS://api.example.org/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.8.0.3/v1", True),
        ("http://localhost:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://api.example.org/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        ("http://localhost.example.org/v1", False),
        ("ftp://127.0.0.1/v1", False),
        ("file:///etc/passwd", False),
    ],
)
def test_key_transport(url, ok):
    if ok:
        check_key_transport(url, "x.base_url")
    else:
        with pytest.raises(ValueError, match=r"^x\.base_url .*only over https"):
            check_key_transport(url, "x.base_url")


def test_loopback_names():
    assert is_loopback("localhost") and is_loopback("a.localhost") and is_loopback("::1")
    assert not is_loopback(None) and not is_loopback("") and not is_loopback("192.168.1.1")


def test_teacher_refuses_a_key_over_plain_http(monkeypatch):
    from personalir.ttp.training.teacher import OpenAICompatibleTeacher

    monkeypatch.setenv("TTP_TEST_KEY", "secret")
    with pytest.raises(ValueError, match="ttp.teacher.base_url"):
        OpenAICompatibleTeacher(
            base_url="http://teacher.example.org/v1", model="m", api_key_env="TTP_TEST_KEY"
        )
    # Without a key, plain http to another host is allowed (nothing secret is sent).
    OpenAICompatibleTeacher(base_url="http://teacher.example.org/v1", model="m")


def test_judge_refuses_a_key_over_plain_http(monkeypatch):
    pytest.importorskip("openai")
    from personalir.validation.judge import Judge, JudgeSettings

    monkeypatch.setenv("JUDGE_TEST_KEY", "secret")
    settings = JudgeSettings(
        base_url="http://judge.example.org/v1",
        model="m",
        label="m",
        api_key_env="JUDGE_TEST_KEY",
    )
    with pytest.raises(ValueError, match="validation.judge.base_url"):
        Judge(settings, None)
    Judge(settings, None, offline=True)  # an offline judge sends nothing
