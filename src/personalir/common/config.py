"""Load, default-fill and validate the workflow configuration.

The schema lives in ``config/schema/*.schema.yaml`` (one file per stage, merged in name
order). The package reads it, the default config (``config/config.yaml``) and the papers'
results (``config/paper_results/``) as package data with :mod:`importlib.resources`
(:data:`RESOURCES`: links to ``config/`` in a checkout, copies of those files in a built
wheel), so an installed package needs no checkout. Every key documents its type, default and
meaning; unknown keys and wrong types stop the run with a message naming the key and, when
the config came from a file, its line.

Refused beyond what JSON Schema says: a key given twice in one YAML mapping (YAML keeps the
last silently); a float where an integer belongs (``7.0``: JSON Schema would accept it);
a ``results_dir`` that is empty, absolute, ``.``, climbs out with ``..`` or names one of the
repository's own folders, a hidden (tool) folder such as ``.snakemake`` or ``.venv``, or runs
through an existing file; a path-like value (schema keyword ``x-path``) holding a character
outside ``personalir.common.config_paths.PATH_CHARACTERS`` (it lands in file names and shell
commands); and contradictions between keys that the schema declares with

- ``x-at-most: <dotted key>`` / ``x-less-than: <dotted key>`` on a property: its value (the
  largest item of a list) must be at most / below the other key's value;
- ``x-sum-less-than: {keys: [...], limit: L}`` on an object: those of its keys must sum to
  less than ``L``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from personalir.common.config_paths import path_value_problems, results_root_problems

#: The checkout's root (meaningful when the package runs from a clone, as the workflow does).
REPO_ROOT = Path(__file__).resolve().parents[3]
#: The package data: ``personalir/_resources/{schema,config.yaml,paper_results}``.
RESOURCES = resources.files("personalir") / "_resources"
SCHEMA_DIR = RESOURCES / "schema"
#: The embedded default configuration (``config/config.yaml`` of the checkout).
DEFAULT_CONFIG = RESOURCES / "config.yaml"
#: The papers' reported results, as data (``config/paper_results/`` of the checkout).
PAPER_RESULTS = RESOURCES / "paper_results"


class ConfigError(ValueError):
    """A configuration key is unknown, mistyped or out of range."""


def _is_integer(checker: Any, instance: Any) -> bool:
    # JSON Schema counts 7.0 as an integer; a config that says 7.0 probably meant something
    # else (a rate, a share), so only a real int (not a bool) is one here.
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)

#: Top-level folders of the repository that a ``results_dir`` must not write into.
_SOURCE_FOLDERS = frozenset(
    {
        ".git",
        ".dvc",
        ".ci",
        "benchmarks",
        "config",
        "docs",
        "dvc-store",
        "envs",
        "paper",
        "profiles",
        "rules",
        "scripts",
        "src",
        "tests",
        "workflow_scripts",
    }
)


def load_schema(schema_dir: str | Path | Traversable = SCHEMA_DIR) -> dict:
    """Merge the per-stage schema files into one object schema."""
    folder = Path(schema_dir) if isinstance(schema_dir, str) else schema_dir
    files = sorted(
        (p for p in folder.iterdir() if p.name.endswith(".schema.yaml")) if folder.is_dir() else (),
        key=lambda p: p.name,
    )
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


def _key_index(text: str) -> tuple[dict[tuple, int], list[tuple[tuple, int, int]]]:
    """Each key path of a YAML document with its 1-based line (the last, if given twice), and
    every key given twice in one mapping as ``(path, line, first line)``."""
    lines: dict[tuple, int] = {}
    twice: list[tuple[tuple, int, int]] = []

    def walk(node: yaml.Node, path: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, value_node in node.value:
                sub = path + (key_node.value,)
                line = key_node.start_mark.line + 1
                if isinstance(key_node, yaml.ScalarNode):  # a complex key: nothing a config uses
                    if key_node.value in first:
                        twice.append((sub, line, first[key_node.value]))
                    else:
                        first[key_node.value] = line
                lines[sub] = line
                walk(value_node, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[path + (i,)] = item.start_mark.line + 1
                walk(item, path + (i,))

    root = yaml.compose(text)
    if root is not None:
        walk(root, ())
    return lines, twice


def _key_lines(text: str) -> dict[tuple, int]:
    """Map each key path in a YAML document to its 1-based line number."""
    return _key_index(text)[0]


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
    duplicates = [msg for name, body in sources for msg in duplicate_keys(body, name)]
    if duplicates:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(duplicates))
    filled = fill_defaults(config, schema)
    validator = _Validator(schema)
    errors = sorted(validator.iter_errors(filled), key=lambda e: list(map(str, e.absolute_path)))
    found = [(*_describe(err), err) for err in errors]
    if not found:
        found = [(path, msg, None) for path, msg in semantic_errors(filled, schema)]
    if found:
        indexed = [(name, _key_lines(body)) for name, body in sources]
        if command_line:
            indexed.insert(0, ("--config", _dict_paths(command_line)))
        messages = []
        for path, msg, err in found:
            where = _where(path, indexed, source)
            if (
                where == "--config"
                and err is not None
                and isinstance(err.instance, str)
                and err.validator == "type"
            ):
                msg += (
                    " (snakemake reads values nested in --config as strings: set this key in "
                    "a --configfile instead)"
                )
            messages.append(f"{where}: {msg}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(messages))
    return filled


def duplicate_keys(text: str, name: str) -> list[str]:
    """``name:line: ...`` for every key given twice in one mapping of a YAML document."""
    try:
        _, twice = _key_index(text)
    except yaml.YAMLError:
        return []  # the loader reports the syntax error itself
    return [
        f"{name}:{line}: config key '{'.'.join(map(str, path))}' is given twice (first at line "
        f"{first}); YAML would keep only the last: delete one"
        for path, line, first in twice
    ]


def _get(config: Mapping, dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _largest(value: Any) -> Any:
    if isinstance(value, list):
        return max(value) if value else None
    return value


def semantic_errors(config: Mapping, schema: Mapping) -> list[tuple[tuple, str]]:
    """(key path, message) of each value the schema's types allow but the workflow cannot use:
    an unsafe ``results_dir``, a path-like value (``x-path``) with an unsafe character, and
    the cross-key constraints (``x-at-most``, ``x-less-than``, ``x-sum-less-than``) of a
    schema-valid config."""
    root = config.get("results_dir")
    out = [(("results_dir",), m) for m in results_dir_problems(root) or results_root_problems(root)]
    out += path_value_problems(config, schema)

    def walk(node: Any, sub: Mapping, path: tuple) -> None:
        if not isinstance(node, Mapping):
            return
        rule = sub.get("x-sum-less-than")
        if rule:
            values = [node.get(k) for k in rule["keys"]]
            if all(isinstance(v, (int, float)) for v in values) and sum(values) >= rule["limit"]:
                names = " + ".join(f"'{'.'.join(path + (k,))}'" for k in rule["keys"])
                shown = " + ".join(f"{v:g}" for v in values)
                out.append(
                    (
                        path + (rule["keys"][-1],),
                        f"{names} = {shown} must be less than {rule['limit']:g}",
                    )
                )
        for key, prop in sub.get("properties", {}).items():
            if key not in node:
                continue
            full = ".".join(path + (key,))
            for keyword, ok, words in (
                ("x-at-most", lambda a, b: a <= b, "at most"),
                ("x-less-than", lambda a, b: a < b, "less than"),
            ):
                other = prop.get(keyword)
                if other is None:
                    continue
                mine, theirs = _largest(node[key]), _get(config, other)
                if mine is None or theirs is None or ok(mine, theirs):
                    continue
                largest = " (its largest value)" if isinstance(node[key], list) else ""
                out.append(
                    (
                        path + (key,),
                        f"config key '{full}': {mine!r}{largest} must be {words} '{other}' "
                        f"({theirs!r})",
                    )
                )
            if prop.get("type") == "object":
                walk(node[key], prop, path + (key,))

    walk(config, schema, ())
    return out


def results_dir_problems(value: Any) -> list[str]:
    """Why ``value`` cannot be the results root: it must be a non-empty relative path that
    stays inside the repository and is not one of its source folders."""
    if not isinstance(value, str):
        return []  # the schema's type check reports it
    head = "config key 'results_dir':"
    if not value.strip():
        return [f"{head} {value!r} is empty: it would plan writes at the filesystem root"]
    if value.startswith(("/", "~", "\\")) or (len(value) > 1 and value[1] == ":"):
        return [f"{head} {value!r} is absolute: use a path relative to the repository"]
    parts = [p for p in value.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        return [f"{head} {value!r} has a '..' part: name a folder inside the repository directly"]
    if not parts:
        return [f"{head} {value!r} is the repository root itself: name a folder in it"]
    if parts[0] in _SOURCE_FOLDERS:
        return [
            f"{head} {value!r} lies in the repository's own '{parts[0]}/' folder: choose "
            "another name (results, results-<name>)"
        ]
    return []


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
