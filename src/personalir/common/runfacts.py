"""Reading back the run facts a job logged instead of keeping them in its artifacts.

:func:`personalir.common.io.write_json` and :func:`~personalir.common.io.drop_volatile_columns`
leave timings and cache-use counts out of artifacts and log them, one line per artifact::

    ... INFO ... run facts of results/queries/X/candidates.report.json (not kept in it): {...}

:func:`run_facts` collects those lines from a results root's logs, so benchmarks and cost
tables can still report where a run's time went.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

_LINE = re.compile(r"run facts of (\S+) \(not kept in it\): (\{.*\})\s*$")


def run_facts(logs: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """``{artifact path as logged: {dotted key: value}}`` from every ``*.log`` under ``logs``
    (the last line wins when a rule ran more than once)."""
    found: dict[str, dict[str, Any]] = {}
    for log in sorted(Path(logs).rglob("*.log")):
        with open(log, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if "run facts of " not in line:
                    continue
                match = _LINE.search(line)
                if match:
                    try:
                        found[match.group(1)] = json.loads(match.group(2))
                    except ValueError:
                        continue
    return found


def facts_of(facts: dict[str, dict[str, Any]], artifact: str | os.PathLike) -> dict[str, Any]:
    """The run facts logged for ``artifact`` (matched on the path's trailing parts)."""
    want = Path(artifact).as_posix()
    for logged, values in facts.items():
        if logged == want or logged.endswith("/" + want) or want.endswith("/" + logged):
            return values
    return {}
