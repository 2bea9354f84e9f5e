"""Small helpers shared by the thin workflow entry points."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path


def parser(description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(description=description)


def json_arg(text: str) -> dict:
    """argparse type: a JSON object (a config section handed over by the rule)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def setup_logging(name: str) -> logging.Logger:
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return logging.getLogger(name)


class OutputLayoutError(ValueError):
    """The files a rule names are not the ones the library call writes."""


def output_folder(named: dict[str, str | Path], layout: dict[str, str]) -> Path:
    """The folder a library call writes (a model folder), from the files the rule names.

    ``named`` maps an option to the path the rule gave it; ``layout`` maps the same option to
    the file's place inside the folder, as the library writes it (``adapter/adapter_config.json``).
    The rule names every output it tracks; this checks they all lie where the library puts
    them, so a renamed output fails here, before any work, instead of going missing later.
    """
    folders = {
        option: Path(path).parents[len(Path(layout[option]).parts) - 1]
        for option, path in named.items()
    }
    folder = next(iter(folders.values()))
    for option, path in named.items():
        if Path(path) != folder / layout[option]:
            raise OutputLayoutError(
                f"--{option.replace('_', '-')} {path}: the library writes it as "
                f"{folder / layout[option]} (every named output lies in one folder: {folder})"
            )
    return folder


def require_written(named: dict[str, str | Path]) -> None:
    """Fail naming each output the rule expects that the library call did not write."""
    missing = [f"--{o.replace('_', '-')} {p}" for o, p in named.items() if not Path(p).is_file()]
    if missing:
        raise OutputLayoutError(f"not written: {', '.join(missing)}")
