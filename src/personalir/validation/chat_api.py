"""The OpenAI chat-completions wire format, as the local judge server speaks it.

:func:`parse_chat_request` turns a request body into a :class:`ChatRequest` (or refuses it
with a :class:`RequestError`, rendered as OpenAI's error object, naming the field);
:func:`check_schema` refuses a ``response_format`` schema that is invalid or that the token
enforcer cannot follow; :func:`completion_body` renders an answer as a ChatCompletion object
that the official ``openai`` client parses. The server itself is
:mod:`personalir.validation.server`.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
# Request fields of the OpenAI API this server does not implement; a request that sets one to
# anything but its default is refused rather than silently answered without it.
UNSUPPORTED = {
    "stream": (None, False),
    "tools": (None, []),
    "tool_choice": (None, "none"),
    "functions": (None, []),
    "function_call": (None, "none"),
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "logit_bias": (None, {}),
    "frequency_penalty": (None, 0, 0.0),
    "presence_penalty": (None, 0, 0.0),
    "audio": (None,),
    "modalities": (None, ["text"]),
    "prediction": (None,),
}
MAX_STOP_SEQUENCES = 4


class RequestError(Exception):
    """A request the server refuses; rendered as an OpenAI error body with ``status``."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        type: str = "invalid_request_error",  # noqa: A002 - the OpenAI field name
    ):
        super().__init__(message)
        self.message, self.status, self.param, self.code, self.type = (
            message,
            status,
            param,
            code,
            type,
        )

    def body(self) -> dict:
        return error_body(self.message, type=self.type, param=self.param, code=self.code)


def error_body(message: str, *, type: str, param=None, code=None) -> dict:  # noqa: A002
    """OpenAI's error object: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


# --- request parsing ---------------------------------------------------------------------


@dataclass(frozen=True)
class ChatRequest:
    """A validated chat-completions request (the fields the server acts on)."""

    messages: list[dict[str, str]]  # {"role": system|user|assistant, "content": str}
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    response_format: str = "text"  # text | json_object | json_schema
    schema: dict | None = None  # the JSON schema the answer must follow (json_* formats)


def _number(body: dict, key: str, default: float, low: float, high: float, *, open_low=False):
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestError(f"{key} must be a number, got {value!r}", param=key)
    if value < low or value > high or (open_low and value == low):
        bounds = f"{'(' if open_low else '['}{low}, {high}]"
        raise RequestError(f"{key} must be in {bounds}, got {value!r}", param=key)
    return float(value)


def _integer(body: dict, key: str, *, minimum: int | None = None) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{key} must be an integer, got {value!r}", param=key)
    if minimum is not None and value < minimum:
        raise RequestError(f"{key} must be at least {minimum}, got {value}", param=key)
    return value


def _content(message: dict, i: int) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: only text parts are understood
        texts = []
        for j, part in enumerate(content):
            if not (isinstance(part, dict) and part.get("type") == "text"):
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise RequestError(
                    f"messages[{i}].content[{j}]: only text parts are supported, got {kind!r}",
                    param=f"messages[{i}].content",
                )
            if not isinstance(part.get("text"), str):
                raise RequestError(
                    f"messages[{i}].content[{j}].text must be a string",
                    param=f"messages[{i}].content",
                )
            texts.append(part["text"])
        return "".join(texts)
    raise RequestError(
        f"messages[{i}].content must be a string or a list of text parts, got {content!r}",
        param=f"messages[{i}].content",
    )


def _messages(body: dict) -> list[dict[str, str]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list", param="messages")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RequestError(f"messages[{i}] must be an object", param="messages")
        role = message.get("role")
        if role not in ROLES:
            raise RequestError(
                f"messages[{i}].role must be one of {sorted(ROLES)}, got {role!r}",
                param=f"messages[{i}].role",
            )
        out.append({"role": ROLES[role], "content": _content(message, i)})
    return out


def _stop(body: dict) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    stops = [stop] if isinstance(stop, str) else stop
    if (
        not isinstance(stops, list)
        or len(stops) > MAX_STOP_SEQUENCES
        or not all(isinstance(s, str) and s for s in stops)
    ):
        raise RequestError(
            f"stop must be a non-empty string or a list of at most {MAX_STOP_SEQUENCES} "
            f"non-empty strings, got {stop!r}",
            param="stop",
        )
    return stops


def _response_format(body: dict) -> tuple[str, dict | None]:
    fmt = body.get("response_format")
    if fmt is None:
        return "text", None
    if not isinstance(fmt, dict):
        raise RequestError(
            f"response_format must be an object, got {fmt!r}", param="response_format"
        )
    kind = fmt.get("type")
    if kind == "text":
        return "text", None
    if kind == "json_object":
        return "json_object", {"type": "object"}
    if kind != "json_schema":
        raise RequestError(
            f"response_format.type must be 'text', 'json_object' or 'json_schema', got {kind!r}",
            param="response_format.type",
        )
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict):
        raise RequestError(
            "response_format.json_schema must be an object with 'name' and 'schema'",
            param="response_format.json_schema",
        )
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        raise RequestError(
            "response_format.json_schema.name must be a non-empty string",
            param="response_format.json_schema.name",
        )
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise RequestError(
            f"response_format.json_schema.schema must be a JSON schema object, got {schema!r}",
            param="response_format.json_schema.schema",
        )
    check_schema(schema)
    return "json_schema", schema


def parse_chat_request(body: Any, served_name: str) -> ChatRequest:
    """Validate an OpenAI chat-completions request body against what the server implements.

    Raises :class:`RequestError` (400, or 404 for another model) naming the offending field.
    """
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str):
        raise RequestError("model must be a string", param="model")
    if model != served_name:
        raise RequestError(
            f"The model {model!r} does not exist; this server serves {served_name!r}",
            status=404,
            param="model",
            code="model_not_found",
        )
    for key, defaults in UNSUPPORTED.items():
        if key in body and body[key] not in defaults:
            raise RequestError(f"{key} is not supported by this server", param=key)
    n = _integer(body, "n", minimum=1)
    if n not in (None, 1):
        raise RequestError(f"n must be 1 (one choice per request), got {n}", param="n")
    max_tokens = _integer(body, "max_completion_tokens", minimum=1)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", minimum=1)
    kind, schema = _response_format(body)
    return ChatRequest(
        messages=_messages(body),
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 0.0, 1.0, open_low=True),
        max_tokens=max_tokens,
        seed=_integer(body, "seed"),
        stop=_stop(body),
        response_format=kind,
        schema=schema,
    )


def check_schema(schema: dict) -> None:
    """Refuse (400) a JSON schema that is invalid, or that the token enforcer cannot follow.

    The schema is checked against its JSON Schema meta-schema, then every subschema (object
    properties, array items, ``anyOf`` / ``allOf`` / ``oneOf`` branches, ``$ref`` targets) is
    turned into the enforcer's parser, as generation would do when it reaches that value: an
    unsupported construct (an empty schema ``{}``, a pattern with a length bound, a boolean
    subschema) fails here, naming its place in the schema, instead of mid-answer.
    """
    import jsonschema
    from lmformatenforcer import JsonSchemaParser
    from lmformatenforcer.external.jsonschemaobject import JsonSchemaObject
    from lmformatenforcer.jsonschemaparser import get_parser

    param = "response_format.json_schema.schema"
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(["(root)", *(str(p) for p in exc.path)])
        raise RequestError(f"invalid JSON schema at {where}: {exc.message}", param=param) from None
    try:
        root = JsonSchemaParser(schema)
    except Exception as exc:  # noqa: BLE001 - pydantic validation or an unsupported type
        raise RequestError(f"unsupported JSON schema: {exc}", param=param) from None
    definitions = {
        **(root.context.model_class.extras.get("definitions") or {}),
        **(root.context.model_class.extras.get("$defs") or {}),
    }
    seen_refs: set[str] = set()

    def walk(node, where: str) -> None:
        if isinstance(node, bool) or node is None:
            raise RequestError(
                f"unsupported JSON schema at {where}: a boolean or missing subschema",
                param=param,
            )
        try:
            get_parser(root, node)
        except Exception as exc:  # noqa: BLE001 - the enforcer raises plain exceptions
            raise RequestError(f"unsupported JSON schema at {where}: {exc}", param=param) from None
        for key, sub in (node.properties or {}).items():
            walk(sub, f"{where}/properties/{key}")
        if isinstance(node.items, JsonSchemaObject):
            walk(node.items, f"{where}/items")
        elif isinstance(node.items, list):
            for i, sub in enumerate(node.items):
                walk(sub, f"{where}/items/{i}")
        if isinstance(node.additionalProperties, JsonSchemaObject):
            walk(node.additionalProperties, f"{where}/additionalProperties")
        for key in ("anyOf", "allOf", "oneOf"):
            for i, sub in enumerate(getattr(node, key) or []):
                walk(sub, f"{where}/{key}/{i}")
        if node.ref and node.ref not in seen_refs:
            seen_refs.add(node.ref)
            name = node.ref.split("/")[-1]
            if name not in definitions:
                raise RequestError(
                    f"JSON schema at {where}: $ref {node.ref!r} names no definition", param=param
                )
            walk(JsonSchemaObject(**definitions[name]), f"{where}/$ref({node.ref})")

    walk(root.context.model_class, "(root)")


@dataclass(frozen=True)
class Completion:
    """One generated answer and its token counts."""

    text: str
    finish_reason: str  # stop | length
    prompt_tokens: int
    completion_tokens: int
    seconds: float


def completion_body(c: Completion, name: str, fingerprint: str) -> dict:
    """The OpenAI ChatCompletion object for one answer."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "system_fingerprint": fingerprint,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": c.text, "refusal": None},
                "logprobs": None,
                "finish_reason": c.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "total_tokens": c.prompt_tokens + c.completion_tokens,
        },
    }
