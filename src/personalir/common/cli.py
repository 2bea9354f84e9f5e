"""Small helpers shared by the thin workflow entry points."""

from __future__ import annotations

import argparse
import json
import logging
import sys


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
