"""A local OpenAI-compatible chat-completions server for the LLM judge.

The validation stage asks a judge model for ratings through the OpenAI chat-completions API,
so the same client code talks to a hosted model or to this server. The server runs a causal
LM from :mod:`personalir.common.models` (by default the packaged SmolLM2, offline) with
transformers on the CPU, behind a small Starlette app served by uvicorn::

    python -m personalir.validation.server --model packaged:SmolLM2-135M-Instruct \\
        --host 127.0.0.1 --port 8011 --threads 2 [--model-cache DIR] [--served-name NAME]

Why transformers and not llama-cpp-python (whose server speaks the same API and reads the
GGUF file directly): llama-cpp-python has no wheel for this platform and builds from source
in about 9.5 minutes, which every fresh setup would pay. transformers and torch are already
there for the other stages, the model loads through the same
:func:`personalir.common.causal_lm.load_causal_lm` (and the same dequantised-weights cache), so
the judge sees exactly the weights the rest of the workflow uses.

Endpoints
---------
``GET /health``
    ``{"status": "ok", "model": NAME}``. The model is loaded before uvicorn binds the port, so
    the server answers nothing at all until it is ready, and 200 once it is.
``GET /v1/models``, ``GET /v1/models/{name}``
    The served model in OpenAI's list / model format.
``POST /v1/chat/completions``
    The OpenAI request body: ``messages`` (system / developer / user / assistant, rendered with
    the tokenizer's chat template and the generation prompt), ``model`` (must equal the served
    name, else 404 ``model_not_found``), ``temperature`` (0: greedy; default 1), ``top_p``,
    ``max_tokens`` / ``max_completion_tokens``, ``seed``, ``n`` (1 only), ``stop`` and
    ``response_format``: ``{"type": "json_schema", "json_schema": {"name", "schema",
    "strict"}}`` or ``{"type": "json_object"}``. The answer is a ChatCompletion object.
    Request validation and the response and error shapes are in
    :mod:`personalir.validation.chat_api`.

Determinism: greedy decoding is deterministic; sampled decoding seeds torch's generator with
the request's ``seed`` (a fresh random seed when there is none) right before generating, and
only one generation runs at a time, so the same request with the same seed gives the same
answer.

JSON answers are constrained token by token with lm-format-enforcer: its character-level JSON
schema parser decides which tokens may come next, and transformers' ``generate`` masks the
rest (``prefix_allowed_tokens_fn``). The package's transformers integration module does not
import under transformers 5 (it imports a removed name), so the server builds the enforcer's
tokenizer table itself (:func:`token_enforcer_data`, once per server) from the package's core
classes. A schema the enforcer cannot follow is refused with 400 before generating.

Serving: generation runs in one worker thread under a lock, one request at a time, so the
event loop (and ``/health``) stays responsive while a long answer is generated. Every request
is logged as one line on stderr (method, path, status, tokens, seconds); request bodies and
headers (so also an ``Authorization`` header) are never logged. The server binds only to a
loopback address: it has no authentication.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import ipaddress
import json
import logging
import os
import secrets
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from personalir.common.causal_lm import load_causal_lm
from personalir.common.models import ModelNotAvailableError, resolve_model
from personalir.validation.chat_api import (
    ChatRequest,
    Completion,
    RequestError,
    completion_body,
    error_body,
    parse_chat_request,
)

LOG = logging.getLogger("personalir.validation.server")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only: ``localhost`` or a loopback IP address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# --- generation ----------------------------------------------------------------------------


def token_enforcer_data(tokenizer, eos: list[int]):
    """lm-format-enforcer's tokenizer table: each regular token with the text it adds.

    A token's text is read as the text it adds after the token ``0`` (decoding it alone drops
    a leading space), and it starts a word when that text is longer than the token decoded
    alone. Special tokens (the chat markers, end of text) are left out; the end-of-answer
    tokens ``eos`` are added back by the enforcer only where the JSON value may end.
    """
    from lmformatenforcer import TokenEnforcerTokenizerData

    special = set(tokenizer.all_special_ids)
    special |= {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    token_0 = tokenizer.encode("0", add_special_tokens=False)[-1]
    regular = []
    for i in range(len(tokenizer)):
        if i in special:
            continue
        after_0 = tokenizer.decode([token_0, i])[1:]
        regular.append((i, after_0, len(after_0) > len(tokenizer.decode([i]))))
    return TokenEnforcerTokenizerData(
        regular,
        lambda ids: tokenizer.decode(ids).rstrip("\ufffd"),
        eos,
        use_bitmask=False,
        vocab_size=len(tokenizer),
    )


def eos_ids(tokenizer, model=None) -> list[int]:
    """The token ids that end an answer: the tokenizer's and the model's end-of-text ids."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if configured is not None:
        ids |= set(configured if isinstance(configured, list) else [configured])
    return sorted(ids)


class ChatModel:
    """A causal LM answering :class:`ChatRequest` s, one at a time (a lock serialises calls)."""

    def __init__(self, model, tokenizer, *, name: str, default_max_tokens: int = 512):
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.default_max_tokens = default_max_tokens
        self.context_length = getattr(model.config, "max_position_embeddings", None)
        self.eos = eos_ids(tokenizer, model)
        self.token_data = token_enforcer_data(tokenizer, self.eos)
        self._lock = threading.Lock()

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """The chat template applied to ``messages``, ending with the assistant's turn."""
        text = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False
        )
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _max_tokens(self, req: ChatRequest, n_prompt: int) -> int:
        room = None if self.context_length is None else self.context_length - n_prompt
        if req.max_tokens is None:
            wanted = self.default_max_tokens if room is None else min(self.default_max_tokens, room)
        else:
            wanted = req.max_tokens
        if room is not None and (room < 1 or wanted > room):
            raise RequestError(
                f"This model's maximum context length is {self.context_length} tokens; the "
                f"messages take {n_prompt} and max_tokens asks for {wanted} more",
                param="messages",
                code="context_length_exceeded",
            )
        return wanted

    def complete(self, req: ChatRequest) -> Completion:
        """Generate the assistant's answer to ``req`` (greedy when temperature is 0)."""
        import torch
        from lmformatenforcer import JsonSchemaParser, TokenEnforcer
        from transformers import GenerationConfig

        start = time.perf_counter()
        ids = self.prompt_ids(req.messages)
        max_tokens = self._max_tokens(req, len(ids))
        sample = req.temperature > 0
        config = GenerationConfig(
            max_new_tokens=max_tokens,
            do_sample=sample,
            temperature=req.temperature if sample else None,
            top_p=req.top_p if sample else None,
            top_k=0 if sample else None,
            eos_token_id=self.eos,
            pad_token_id=self.tokenizer.pad_token_id,
            stop_strings=req.stop or None,
        )
        kwargs = {"generation_config": config, "tokenizer": self.tokenizer}
        if req.schema is not None:
            enforcer = TokenEnforcer(self.token_data, JsonSchemaParser(req.schema))
            kwargs["prefix_allowed_tokens_fn"] = lambda _batch, seq: (
                enforcer.get_allowed_tokens(seq.tolist()).allowed_tokens
            )
        input_ids = torch.tensor([ids], dtype=torch.long)
        with self._lock, torch.inference_mode():
            if sample:
                torch.manual_seed(req.seed if req.seed is not None else secrets.randbits(63))
            out = self.model.generate(
                input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs
            )
        new = out[0, len(ids) :].tolist()
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        stopped = bool(new) and new[-1] in self.eos
        for s in req.stop:
            cut = text.find(s)
            if cut >= 0:
                text, stopped = text[:cut], True
        finish = "length" if not stopped and len(new) >= max_tokens else "stop"
        return Completion(text, finish, len(ids), len(new), time.perf_counter() - start)


def fingerprint(model_ref: str) -> str:
    """``system_fingerprint``: the model reference and the versions of the generating code."""
    from importlib.metadata import version

    ident = "|".join(
        [model_ref, *(version(p) for p in ("torch", "transformers", "lm-format-enforcer"))]
    )
    return "fp_" + hashlib.sha256(ident.encode()).hexdigest()[:12]


# --- the app ------------------------------------------------------------------------------


class _RequestLog:
    """ASGI middleware: one stderr line per HTTP request (never its headers or body)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        status = [500]
        scope.setdefault("state", {})

        async def send_status(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            usage = scope["state"].get("usage", "")
            LOG.info(
                "%s %s %d %s%.2fs",
                scope["method"],
                scope["path"],
                status[0],
                f"{usage} " if usage else "",
                time.perf_counter() - start,
            )


def build_app(engine: ChatModel, *, model_ref: str | None = None, threads: int | None = None):
    """The Starlette app serving ``engine`` (see the module doc for the endpoints)."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    name = engine.name
    fp = fingerprint(model_ref or name)
    created = int(time.time())
    executor = ThreadPoolExecutor(
        max_workers=1,
        thread_name_prefix="generate",
        initializer=_set_threads if threads else None,
        initargs=(threads,) if threads else (),
    )

    def model_card() -> dict:
        return {"id": name, "object": "model", "created": created, "owned_by": "personalir"}

    async def health(request: Request):
        return JSONResponse({"status": "ok", "model": name})

    async def models(request: Request):
        return JSONResponse({"object": "list", "data": [model_card()]})

    async def model(request: Request):
        if request.path_params["name"] != name:
            raise RequestError(
                f"The model {request.path_params['name']!r} does not exist; this server "
                f"serves {name!r}",
                status=404,
                param="model",
                code="model_not_found",
            )
        return JSONResponse(model_card())

    async def chat_completions(request: Request):
        raw = await request.body()
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RequestError(f"the request body is not valid JSON: {exc}") from None
        req = parse_chat_request(body, name)
        loop = asyncio.get_running_loop()
        c = await loop.run_in_executor(executor, engine.complete, req)
        request.scope["state"]["usage"] = (
            f"prompt={c.prompt_tokens} completion={c.completion_tokens} "
            f"finish={c.finish_reason} format={req.response_format}"
        )
        return JSONResponse(completion_body(c, name, fp))

    async def request_error(request: Request, exc: RequestError):
        return JSONResponse(exc.body(), status_code=exc.status)

    async def http_error(request: Request, exc: HTTPException):
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return JSONResponse(
            error_body(f"{request.method} {request.url.path}: {exc.detail}", type=kind),
            status_code=exc.status_code,
        )

    async def server_error(request: Request, exc: Exception):
        LOG.exception("error answering %s %s", request.method, request.url.path)
        return JSONResponse(
            error_body(f"internal error: {type(exc).__name__}: {exc}", type="server_error"),
            status_code=500,
        )

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{name:path}", model, methods=["GET"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        ],
        middleware=[Middleware(_RequestLog)],
        exception_handlers={
            RequestError: request_error,
            HTTPException: http_error,
            Exception: server_error,
        },
    )


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _exit_with_parent() -> None:
    """Exit when the process that started this server is gone (its parent pid changes)."""
    parent = os.getppid()

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                LOG.warning("parent process %d is gone; exiting", parent)
                os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    """Load the model, then serve it until interrupted (SIGINT / SIGTERM)."""
    p = argparse.ArgumentParser(
        prog="python -m personalir.validation.server",
        description="Local OpenAI-compatible chat-completions server (the LLM judge).",
    )
    p.add_argument("--model", required=True, help="packaged:<name>, a model folder or a hub id")
    p.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8011)
    p.add_argument("--threads", type=int, required=True, help="torch CPU threads")
    p.add_argument("--model-cache", default=None, help="cache folder of dequantised GGUF weights")
    p.add_argument("--served-name", default=None, help="the model name clients send (--model)")
    p.add_argument(
        "--default-max-tokens",
        type=int,
        default=512,
        help="answer length when a request sets no max_tokens (default 512)",
    )
    p.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="exit when the starting process is gone (set by the launcher)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr
    )
    if not is_loopback(args.host):
        p.error(f"--host {args.host!r} is not a loopback address; the server has no authentication")
    if args.threads < 1:
        p.error(f"--threads must be at least 1, got {args.threads}")
    if args.exit_with_parent:
        _exit_with_parent()

    try:
        ref = resolve_model(args.model)
    except ModelNotAvailableError as exc:
        print(f"error: --model {args.model!r}: {exc}", file=sys.stderr)
        return 2

    import torch
    import uvicorn

    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    model, tokenizer = load_causal_lm(ref, cache_dir=args.model_cache)
    engine = ChatModel(
        model,
        tokenizer,
        name=args.served_name or args.model,
        default_max_tokens=args.default_max_tokens,
    )
    LOG.info(
        "loaded %s in %.1fs (%d threads); serving %r on http://%s:%d/v1",
        args.model,
        time.perf_counter() - start,
        args.threads,
        engine.name,
        args.host,
        args.port,
    )
    app = build_app(engine, model_ref=args.model, threads=args.threads)
    config = uvicorn.Config(
        app, host=args.host.strip("[]"), port=args.port, access_log=False, log_level="info"
    )
    server = uvicorn.Server(config)
    server.run()
    return 0 if server.started else 1


if __name__ == "__main__":
    sys.exit(main())
