"""The provenance rules' side of the workflow: the static DAG and the check before a run.

Standard library only, like :mod:`personalir.common.provenance` (records, verification,
manifests), which this module builds on; kept apart because everything here works on
Snakemake's rule and job objects:

- **The static DAG.** Which files the workflow produces, per folder, worked out from the rule
  set by following the targets back through the rules' input functions (the same walk
  Snakemake does), so the provenance rule can depend on exactly the folder's artifacts.
- **Before a run.** The integrity of the artifacts a run is about to read, checked against
  their writers' records, their folders' provenance or the job records (the ``onstart`` hook).
- **Glue** for ``rules/provenance.smk`` (wildcard constraints, compact JSON params).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from personalir.common.io import written_record
from personalir.common.provenance import PROVENANCE_NAME, Problem, compare, read_provenance


# --------------------------------------------------------------------------- static DAG
def static_dag(
    targets: Iterable[str],
    rules: Iterable[Any],
    *,
    skip: Iterable[str] = ("all",),
    order: Callable[[Any, Any], int] | None = None,
) -> dict[str, str]:
    """Map every file the targets need that some rule produces to that rule's name.

    ``rules`` are Snakemake rule objects (``is_producer``, ``get_wildcards``, ``expand_input``,
    ``expand_output``); a file with several producers goes to the first one in ``order``
    (Snakemake's ruleorder) or rule definition order. Source files (no producer) are omitted,
    and so are temporary outputs (``temp()``): they are deleted once consumed, so no folder's
    provenance can record them.
    """
    candidates = [r for r in rules if r.name not in set(skip)]
    produced: dict[str, str] = {}
    seen: set[str] = set()
    todo = [str(t) for t in targets]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        producers = [r for r in candidates if r.is_producer(path)]
        if not producers:
            continue
        if order is not None and len(producers) > 1:
            producers.sort(key=functools.cmp_to_key(lambda a, b: -order(a, b)))
        rule = producers[0]
        wildcards = rule.get_wildcards(path)
        inputs = rule.expand_input(wildcards)[0]
        outputs = rule.expand_output(wildcards)[0]
        for out in outputs:
            seen.add(str(out))
            if not getattr(out, "flags", {}).get("temp"):
                produced[str(out)] = rule.name
        todo.extend(str(f) for f in inputs)
    return produced


def artifacts_by_folder(produced: Mapping[str, str], results_dir: str) -> dict[str, dict[str, str]]:
    """Group produced files under ``results_dir`` by folder (relative to ``results_dir``)."""
    base = Path(results_dir)
    folders: dict[str, dict[str, str]] = {}
    for path, rule in produced.items():
        p = Path(path)
        try:
            rel = p.parent.relative_to(base)
        except ValueError:
            continue
        if rel == Path("."):
            continue
        folders.setdefault(rel.as_posix(), {})[p.name] = rule
    return {k: dict(sorted(v.items())) for k, v in sorted(folders.items())}


# --------------------------------------------------------------------------- before a run
def check_consumed(
    files: Iterable[str],
    written_by_job: Callable[[str], bool],
) -> list[Problem]:
    """Integrity of existing artifacts a run is about to read, by their content.

    Each file's bytes are hashed and compared with the best record of them:

    1. the record its writer left (``.integrity/<name>.json``, valid while the file is the one
       its writer created, or keeps its writer's mtime: bit rot keeps both);
    2. else its folder's ``provenance.json``, unless the job that wrote the file is on record
       and finished after that provenance was written (then the entry is of an older file);
    3. else the job record alone (Snakemake's end time equals the file's mtime).

    Anything else was changed outside the workflow (corruption, truncation, a hand edit) and
    must not be consumed.
    """
    problems = []
    cache: dict[Path, tuple[dict | None, float | None]] = {}
    for name in sorted(set(files)):
        path = Path(name)
        if not path.exists():
            continue
        expected = written_record(path)
        if expected is None:
            folder = path.parent
            if folder not in cache:
                try:
                    stamp = (folder / PROVENANCE_NAME).stat().st_mtime
                    cache[folder] = (read_provenance(folder), stamp)
                except (OSError, ValueError):
                    cache[folder] = (None, None)
            record, stamp = cache[folder]
            expected = (record or {}).get("artifacts", {}).get(path.name)
            by_job = written_by_job(name)
            if by_job and (expected is None or path.stat().st_mtime > (stamp or 0)):
                continue
            if expected is None:
                problems.append(
                    Problem(name, "unverifiable", "no job record and no provenance entry for it")
                )
                continue
        problem = compare(path, expected, name)
        if problem:
            problems.append(problem)
    return problems


# --------------------------------------------------------------------------- Snakemake glue
def compact_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def alternation(names: Iterable[str]) -> str:
    """A wildcard constraint matching exactly these names (or nothing at all)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


def folder_artifacts(folders: Mapping[str, Mapping[str, str]], results_dir: str, folder: str):
    return [f"{results_dir}/{folder}/{name}" for name in folders[folder]]


def stop_if_inputs_changed(workflow: Any, produced: Mapping[str, str], results_dir: str) -> None:
    """Snakemake `onstart` hook: raise, naming them, if artifacts about to be read changed.

    The files checked are the workflow's own artifacts under ``results_dir`` that the jobs of
    this run read and no job of this run rewrites. Snakemake's metadata records when the job
    that wrote a file ended; a file whose mtime still equals that time is as the job left it.
    """
    from snakemake.exceptions import WorkflowError

    jobs = list(workflow.dag.needrun_jobs())
    rewritten = {str(f) for job in jobs for f in job.output}
    to_read = {
        str(f): f
        for job in jobs
        for f in job.input
        if str(f) not in rewritten and str(f) in produced and str(f).startswith(results_dir + "/")
    }

    def written_by_job(path: str) -> bool:
        record = workflow.persistence.metadata(to_read[path])
        if record is None or record.incomplete or record.endtime is None:
            return False
        return abs(os.stat(path).st_mtime - record.endtime) < 1e-3

    problems = check_consumed(to_read, written_by_job)
    if problems:
        raise WorkflowError(
            "artifacts changed outside the workflow; not using them:\n  "
            + "\n  ".join(map(str, problems))
            + "\nRestore them with `python scripts/fetch_artifacts.py` (DVC), or delete them and"
            " request them as targets (`snakemake --profile ... <path>`) to rebuild them."
        )
