"""Path-like configuration values and the order of a run's config files.

Helpers of :mod:`personalir.common.config`: which characters a path-like value (schema keyword
``x-path``) may hold, what a results root in a workflow folder must not be (a hidden tool
folder, an existing file), and in which order the config files Snakemake read win (so that an
error names the file and line that set the value).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: Schema keyword of a path-like string: ``true``, or ``with-domain`` where ``{domain}`` stands
#: for the domain.
PATH_KEYWORD = "x-path"
#: What a path-like config value may hold: it becomes part of file names and of the rules'
#: shell commands, so no blank, quote, ``$``, backquote, ``;``, glob or brace character.
PATH_CHARACTERS = "letters, digits and . _ - + , @ /"
_PATH_OK = re.compile(r"[A-Za-z0-9._+,@/-]*")
_PATH_BAD = re.compile(r"[^A-Za-z0-9._+,@/-]")


def path_value_problems(config: Mapping, schema: Mapping) -> list[tuple[tuple, str]]:
    """(key path, message) of each path-like value (schema ``x-path``) holding a character
    outside :data:`PATH_CHARACTERS` or starting with ``-`` (it would read as an option)."""
    out: list[tuple[tuple, str]] = []

    def walk(node: Any, sub: Mapping, path: tuple) -> None:
        kind = sub.get(PATH_KEYWORD)
        if kind and isinstance(node, str):
            problem = path_value_problem(node, placeholder=kind == "with-domain")
            if problem:
                out.append((path, f"config key '{'.'.join(map(str, path))}': {problem}"))
        if isinstance(node, Mapping):
            extra = sub.get("additionalProperties")
            for key, value in node.items():
                child = sub.get("properties", {}).get(key)
                if child is None and isinstance(extra, Mapping):
                    child = extra
                if child is not None:
                    walk(value, child, path + (key,))
        elif isinstance(node, list) and isinstance(sub.get("items"), Mapping):
            for i, value in enumerate(node):
                walk(value, sub["items"], path + (i,))

    walk(config, schema, ())
    return out


def path_value_problem(value: str, *, placeholder: bool = False) -> str | None:
    """Why ``value`` cannot be a path-like config value (None if it can). ``placeholder``:
    ``{domain}`` may appear in it (it is replaced by each domain's name)."""
    allowed = PATH_CHARACTERS + (" (and the placeholder {domain})" if placeholder else "")
    plain = value.replace("{domain}", "") if placeholder else value
    if not _PATH_OK.fullmatch(plain):
        bad = "".join(dict.fromkeys(_PATH_BAD.findall(plain)))
        return (
            f"{value!r} holds {bad!r}, which a path here may not hold (it becomes part of file "
            f"names and shell commands): use {allowed} only"
        )
    if value.startswith("-"):
        return f"{value!r} starts with '-', which a command would read as an option"
    return None


def results_root_problems(value: Any, workdir: str | Path | None = None) -> list[str]:
    """Why ``value`` cannot be the results root in ``workdir`` (default: the current folder,
    the workflow's): a hidden part (a tool folder such as ``.snakemake``, ``.venv``, ``.git``,
    ``.dvc``, whose files are never taken as artifacts) or a part that is an existing file."""
    if not isinstance(value, str) or not value.strip():
        return []  # the type check and results_dir_problems report these
    head = "config key 'results_dir':"
    parts = [p for p in value.replace("\\", "/").split("/") if p not in ("", ".")]
    hidden = [p for p in parts if p.startswith(".") and p != ".."]
    if hidden:
        return [
            f"{head} {value!r} names a hidden folder ({hidden[0]!r}): that is where tools keep "
            "their state (.snakemake, .venv, .git, .dvc), and hidden files are never taken as "
            "artifacts; choose a plain name (results, results-<name>)"
        ]
    base = Path.cwd() if workdir is None else Path(workdir)
    for i in range(1, len(parts) + 1):
        here = base.joinpath(*parts[:i])
        if here.exists() and not here.is_dir():
            shown = "/".join(parts[:i])
            where = "" if i == len(parts) else f": {shown!r}"
            return [
                f"{head} {value!r}{where} is an existing file, not a folder; choose another "
                "name (results, results-<name>)"
            ]
    return []


def config_files_by_precedence(loaded: list, from_command_line: list) -> list[str]:
    """The config files Snakemake read, the one that wins first (``validate_config``'s
    ``sources`` order).

    ``loaded`` is ``workflow.configfiles``: the ``--configfile`` files in command-line order,
    then each ``configfile:`` directive's file. A later command-line file wins over an
    earlier one and over every directive (Snakemake lays them over the directive's config),
    and a later directive over an earlier one.
    """
    loaded = [str(f) for f in loaded]
    n = len(from_command_line)
    return loaded[:n][::-1] + loaded[n:][::-1]
