"""The LLM judge: any OpenAI-compatible chat-completions endpoint, through the ``openai`` client.

:func:`judge_items` asks the judge every (item, dimension) question of a set of items and
returns one judgement per question with its status. Behaviour that a user of a paid endpoint
relies on:

- **Settings from config** (:class:`JudgeSettings`): base URL, model, sampling, timeouts,
  concurrency, retries. The API key is read from the environment variable that the config
  names (``api_key_env``); it is handed to the ``openai`` client and to nothing else, and every
  message this module produces passes through :func:`redact`, so the key never reaches a log,
  a report, provenance or an exception text.
- **Transport retries** with exponential backoff on 429, 5xx, timeouts and dropped
  connections are the ``openai`` client's own (``max_retries``). When they are exhausted the
  run stops with :class:`JudgeUnavailableError` naming the endpoint: every answer received so
  far is already in the cache, so a rerun resumes where the run stopped.
- **A response cache** (:class:`ResponseCache`, SQLite) keyed by the model, the dimension's
  prompt version, the messages and the sampling settings: a rerun costs no call. Each entry
  stores the sha256 of its payload and is verified on read; a mismatching or unreadable entry
  is dropped and asked again (counted as ``cache_corrupt``), and a damaged file is rebuilt from
  its intact entries (:mod:`personalir.validation.response_cache`).
- **Bad answers** (not JSON, wrong key, a label off the scale, a refusal) are retried
  ``parse_retries`` times with a fresh seed (and ``retry_temperature``, since a greedy judge
  repeats itself), then recorded with the reason of the last failure: counted and reported,
  never dropped.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field

from personalir.common.urls import check_key_transport
from personalir.validation.dimensions import DIMENSIONS, AnswerError, Dimension, parse_answer
from personalir.validation.response_cache import ResponseCache


class JudgeUnavailableError(RuntimeError):
    """The endpoint could not be reached (or kept failing) after the client's retries."""


class JudgeRequestError(RuntimeError):
    """The endpoint rejected a request (a 4xx other than 429): a settings problem."""


class NeedsCall(RuntimeError):
    """Raised by an offline judge (``offline=True``) at the first question the cache lacks."""


def redact(text: str, secrets) -> str:
    """``text`` with every non-empty secret replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


@dataclass(frozen=True)
class JudgeSettings:
    base_url: str
    model: str
    label: str  # the name captions print for the judge
    api_key_env: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: int = 0
    structured_output: str = "json_schema"  # json_schema | json_object | none
    timeout_s: float = 60.0
    max_concurrency: int = 2
    max_retries: int = 4
    parse_retries: int = 2
    retry_temperature: float = 0.7
    extra: dict = field(default_factory=dict)  # provider-specific body fields (extra_body)

    def api_key(self) -> str:
        """The key from ``api_key_env``; a placeholder for endpoints that need none."""
        if not self.api_key_env:
            return "no-key"
        key = os.environ.get(self.api_key_env)
        if not key:
            raise JudgeRequestError(
                f"the judge's API key is read from the environment variable "
                f"{self.api_key_env!r} (validation.judge.api_key_env), which is not set"
            )
        return key

    def public(self) -> dict:
        """The settings as recorded in reports (the key's variable name, never its value)."""
        return asdict(self)


def request_body(dim: Dimension, item: dict, settings: JudgeSettings, attempt: int) -> dict:
    """The chat-completions request for one question (attempt > 0: a retry of a bad answer)."""
    body = {
        "model": settings.model,
        "messages": dim.messages(item),
        "temperature": settings.temperature if attempt == 0 else settings.retry_temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_tokens,
        "seed": settings.seed + attempt,
    }
    if settings.structured_output == "json_schema":
        body["response_format"] = dim.response_format()
    elif settings.structured_output == "json_object":
        body["response_format"] = {"type": "json_object"}
    return body


def cache_key(dim: Dimension, body: dict) -> str:
    """(model, prompt version, input, sampling) -> the cache key."""
    ident = {"prompt_version": dim.prompt_version, **body}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


class Judge:
    """One endpoint, one cache; thread-safe counters of what happened."""

    def __init__(
        self, settings: JudgeSettings, cache: ResponseCache | None, *, offline: bool = False
    ):
        import openai

        self.settings = settings
        self.offline = offline
        self.cache = cache
        self._key = settings.api_key()
        self._secrets = (self._key,)
        if settings.api_key_env and not offline:
            check_key_transport(settings.base_url, "validation.judge.base_url")
        # An offline judge never calls: any well-formed URL will do.
        self._client = openai.OpenAI(
            base_url="http://127.0.0.1:9/v1" if offline else settings.base_url,
            api_key=self._key,
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )
        self._lock = threading.Lock()
        self.counts = Counter()
        self.seconds = 0.0

    def _count(self, **kv) -> None:
        with self._lock:
            for k, v in kv.items():
                self.counts[k] += v

    def _call(self, body: dict) -> dict:
        import openai

        extra = dict(self.settings.extra) or None
        start = time.perf_counter()
        try:
            resp = self._client.chat.completions.create(**body, extra_body=extra)
        except openai.APIStatusError as exc:
            message = redact(f"{exc.status_code}: {exc.message}", self._secrets)
            if exc.status_code == 429 or exc.status_code >= 500:
                raise JudgeUnavailableError(
                    f"the judge at {self.settings.base_url} kept failing after "
                    f"{self.settings.max_retries} retries ({message}); answers so far are "
                    "cached, a rerun resumes"
                ) from None
            raise JudgeRequestError(
                f"the judge at {self.settings.base_url} rejected a request ({message})"
            ) from None
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise JudgeUnavailableError(
                f"the judge at {self.settings.base_url} is unreachable after "
                f"{self.settings.max_retries} retries ({type(exc).__name__}: "
                f"{redact(str(exc), self._secrets)}); answers so far are cached, a rerun "
                "resumes"
            ) from None
        elapsed = time.perf_counter() - start
        choice = resp.choices[0]
        usage = resp.usage
        record = {
            "content": choice.message.content,
            "refusal": getattr(choice.message, "refusal", None),
            "finish_reason": choice.finish_reason,
            "prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
            "completion_tokens": getattr(usage, "completion_tokens", 0) or 0,
            "seconds": elapsed,
        }
        with self._lock:
            self.seconds += elapsed
        self._count(
            calls=1,
            prompt_tokens=record["prompt_tokens"],
            completion_tokens=record["completion_tokens"],
        )
        return record

    def ask(self, dim: Dimension, item: dict) -> dict:
        """One question: the label, or the reason of the last failure after the retries."""
        reason, message = None, None
        for attempt in range(self.settings.parse_retries + 1):
            body = request_body(dim, item, self.settings, attempt)
            key = cache_key(dim, body)
            record = self.cache.get(key) if self.cache is not None else None
            if record is None:
                if self.offline:
                    raise NeedsCall(dim.name)
                record = self._call(body)
                if self.cache is not None:
                    self.cache.put(key, record)
            else:
                self._count(cache_hits=1)
            try:
                if record.get("refusal"):
                    raise AnswerError("refusal", f"{dim.name}: the judge declined")
                label = parse_answer(dim, record.get("content"))
            except AnswerError as exc:
                reason, message = exc.reason, redact(str(exc), self._secrets)
                self._count(**{f"bad_answer_{exc.reason}": 1})
                continue
            return {
                "item_id": item["item_id"],
                "dimension": dim.name,
                "label": label,
                "status": "ok",
                "attempts": attempt + 1,
                "detail": "",
            }
        return {
            "item_id": item["item_id"],
            "dimension": dim.name,
            "label": None,
            "status": reason,
            "attempts": self.settings.parse_retries + 1,
            "detail": message,
        }


def judge_items(
    items,
    settings: JudgeSettings,
    cache: ResponseCache | None,
    *,
    dimensions=None,
    progress: bool = True,
    offline: bool = False,
):
    """Judgements (list of dicts, in item then dimension order) and a report dict.

    ``offline``: answer from the cache only and raise :class:`NeedsCall` at the first
    question it lacks (so a caller can skip starting a server when everything is cached).
    """
    from tqdm import tqdm

    judge = Judge(settings, cache, offline=offline)
    questions = [
        (item, DIMENSIONS.get(name))
        for item in items
        for name in item["dimensions"]
        if dimensions is None or name in dimensions
    ]
    results: dict[int, dict] = {}
    start = time.perf_counter()
    bar = tqdm(total=len(questions), desc="judge", unit="q", disable=not progress, mininterval=5.0)
    with ThreadPoolExecutor(max_workers=settings.max_concurrency) as pool:
        futures = {pool.submit(judge.ask, dim, item): i for i, (item, dim) in enumerate(questions)}
        try:
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                bar.update(1)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
        finally:
            bar.close()
    wall = time.perf_counter() - start
    judgements = [results[i] for i in range(len(questions))]
    status = Counter(j["status"] for j in judgements)
    counts = dict(judge.counts)
    report = {
        "judge": settings.label,
        "model": settings.model,
        "base_url": settings.base_url,
        "questions": len(questions),
        "answered": status.get("ok", 0),
        "failed": {k: v for k, v in sorted(status.items()) if k != "ok"},
        # Calls, cache hits and tokens depend on what the judge cache held before this run
        # (a rerun asks nothing): the rule's log keeps them (``*_this_run``).
        "calls_this_run": counts.get("calls", 0),
        "cache_hits_this_run": counts.get("cache_hits", 0),
        "cache_corrupt": cache.corrupt if cache is not None else 0,
        "bad_answers": {
            k.removeprefix("bad_answer_"): v
            for k, v in sorted(counts.items())
            if k.startswith("bad_answer_")
        },
        "prompt_tokens_this_run": counts.get("prompt_tokens", 0),
        "completion_tokens_this_run": counts.get("completion_tokens", 0),
        "call_seconds": round(judge.seconds, 3),
        "wall_seconds": round(wall, 3),
        "prompt_versions": {
            name: DIMENSIONS.get(name).prompt_version
            for name in sorted({d.name for _, d in questions})
        },
        "settings": settings.public(),
    }
    return judgements, report
