"""Load, default-fill and validate the workflow configuration.

The schema lives in ``config/schema/*.schema.yaml`` (one file per stage, merged in name
order). Every key documents its type, default and meaning; unknown keys and wrong types stop
the run with a message naming the key and, when the config came from a file, its line.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
SCHEMA_DIR = REPO_ROOT / "config" / "schema"


class ConfigError(ValueError):
    """A configuration key is unknown, mistyped or out of range."""


def load_schema(schema_dir: str | Path = SCHEMA_DIR) -> dict:
    """Merge the per-stage schema files into one object schema."""
    files = sorted(Path(schema_dir).glob("*.schema.yaml"))
    if not files:
        raise ConfigError(f"no schema files in {schema_dir}")
    merged: dict[str, Any] = {}
    for path in files:
        part = yaml.safe_load(path.read_text(encoding="utf-8"))
        props = part.pop("properties", {})
        for key, value in part.items():
            merged.setdefault(key, value)
        for key, value in props.items():
            if key in merged.setdefault("properties", {}):
                raise ConfigError(f"schema key {key!r} is defined twice ({path.name})")
            merged["properties"][key] = value
    merged["additionalProperties"] = False
    resolve_registry_enums(merged)
    return merged


#: Schema keyword naming the registry (``module:ATTRIBUTE``) whose names a string may take.
REGISTRY_KEYWORD = "x-registry"


def resolve_registry_enums(schema: Any) -> Any:
    """Set ``enum`` of every ``x-registry`` node to that registry's names, in place.

    A plug-in's name is then valid in the config as soon as its module exists: adding one
    touches no schema file. The registries import no model library, so this stays cheap.
    """
    if isinstance(schema, dict):
        if REGISTRY_KEYWORD in schema:
            schema["enum"] = registry_names(schema[REGISTRY_KEYWORD])
        for value in schema.values():
            resolve_registry_enums(value)
    elif isinstance(schema, list):
        for value in schema:
            resolve_registry_enums(value)
    return schema


def registry_names(path: str) -> list[str]:
    """Names registered in the registry at ``module:ATTRIBUTE``."""
    import importlib

    module, _, attribute = path.partition(":")
    try:
        registry = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"schema {REGISTRY_KEYWORD} {path!r}: {exc}") from exc
    return registry.names()


def fill_defaults(config: dict, schema: dict) -> dict:
    """Return a copy of ``config`` with every missing key set to its schema default."""
    out = copy.deepcopy(config)
    _fill(out, schema)
    return out


def _fill(node: Any, schema: Mapping) -> None:
    if not isinstance(node, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        if key not in node and "default" in sub:
            node[key] = copy.deepcopy(sub["default"])
        if key in node and sub.get("type") == "object":
            _fill(node[key], sub)


def _key_lines(text: str) -> dict[tuple, int]:
    """Map each key path in a YAML document to its 1-based line number."""
    lines: dict[tuple, int] = {}

    def walk(node: yaml.Node, path: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                sub = path + (key_node.value,)
                lines[sub] = key_node.start_mark.line + 1
                walk(value_node, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[path + (i,)] = item.start_mark.line + 1
                walk(item, path + (i,))

    root = yaml.compose(text)
    if root is not None:
        walk(root, ())
    return lines


def _describe(error: jsonschema.ValidationError) -> tuple[tuple, str]:
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        key = unknown[0] if unknown else "?"
        full = ".".join(str(p) for p in path + (key,))
        return path + (key,), (f"unknown config key '{full}' (allowed here: {', '.join(allowed)})")
    full = ".".join(str(p) for p in path) or "(top level)"
    if error.validator == "pattern" and error.schema.get("description"):
        # A pattern alone does not say what it allows: the schema's words do.
        return path, f"config key '{full}': {error.instance!r} is not allowed: " + " ".join(
            error.schema["description"].split()
        )
    return path, f"config key '{full}': {error.message}"


def validate_config(
    config: dict,
    schema: dict | None = None,
    *,
    source: str | None = None,
    text: str | None = None,
    sources: list[tuple[str, str]] | None = None,
    command_line: Mapping | None = None,
) -> dict:
    """Fill defaults and validate; raise :class:`ConfigError` naming the offending key.

    ``sources`` lists ``(file name, YAML text)`` of the files the config was merged from, in
    precedence order (the one that wins first); an error names the first file that sets the
    offending key, with its line. ``source``/``text`` is the one-file shorthand.
    ``command_line`` is what ``--config`` set (it wins over every file): an error in a key it
    sets names ``--config``.
    """
    schema = schema or load_schema()
    if sources is None:
        sources = [(source or "config", text)] if text else []
    if not isinstance(config, dict):
        raise ConfigError(f"{source or 'config'}: the top level must be a mapping")
    filled = fill_defaults(config, schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(filled), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        indexed = [(name, _key_lines(body)) for name, body in sources]
        if command_line:
            indexed.insert(0, ("--config", _dict_paths(command_line)))
        messages = []
        for err in errors:
            path, msg = _describe(err)
            where = _where(path, indexed, source)
            if where == "--config" and isinstance(err.instance, str) and err.validator == "type":
                msg += (
                    " (snakemake reads values nested in --config as strings: set this key in "
                    "a --configfile instead)"
                )
            messages.append(f"{where}: {msg}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(messages))
    return filled


def _dict_paths(values: Mapping, prefix: tuple = ()) -> dict[tuple, None]:
    """Every key path of a nested mapping (no line numbers: it was not read from a file)."""
    out: dict[tuple, None] = {}
    for key, value in values.items():
        out[prefix + (key,)] = None
        if isinstance(value, Mapping):
            out.update(_dict_paths(value, prefix + (key,)))
    return out


def _where(path: tuple, indexed: list[tuple[str, dict]], fallback: str | None) -> str:
    """``file:line`` of the deepest prefix of ``path`` set in a config file, if any."""
    for cut in range(len(path), 0, -1):
        for name, lines in indexed:
            if path[:cut] in lines:
                line = lines[path[:cut]]
                return name if line is None else f"{name}:{line}"
    return fallback or (indexed[0][0] if indexed else "config")


def load_config(path: str | Path, overrides: dict | None = None) -> dict:
    """Read a YAML config file, apply ``overrides`` (nested dict) and validate."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if overrides:
        config = deep_merge(config, overrides)
    return validate_config(config, source=str(path), text=text)


def deep_merge(base: dict, update: Mapping) -> dict:
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def config_hash(config: Mapping) -> str:
    """sha256 of the canonical JSON of a (validated) config: provenance of every result."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def section_hash(config: Mapping, *keys: str) -> str:
    """Hash of selected top-level sections, used as a rule param so only touched rules rerun."""
    return config_hash({k: config.get(k) for k in keys})[:16]
