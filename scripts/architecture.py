"""Write the rule -> entry point -> library modules -> outputs table into docs/architecture.md.

    python scripts/architecture.py          # update the table between the markers
    python scripts/architecture.py --check  # exit 1 if the table is stale

The table is read from the workflow itself (Snakemake's rules, their shell commands and
output patterns, the entry point's imports), so it cannot drift from the code.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from personalir.workflow_support import is_presentation_rule  # noqa: E402

DOC = ROOT / "docs" / "architecture.md"
START, END = "<!-- architecture:start -->", "<!-- architecture:end -->"
SCRIPT = re.compile(r"(workflow_scripts/[\w/.-]+\.py)")
CONSTRAINT = re.compile(r"\{(\w+),[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")


def workflow_rules(configfiles: list[str]):
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DeploymentSettings,
        OutputSettings,
        Quietness,
        ResourceSettings,
        StorageSettings,
        WorkflowSettings,
    )

    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        wf_api = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[Path(c) for c in configfiles]),
            storage_settings=StorageSettings(),
            workflow_settings=WorkflowSettings(),
            deployment_settings=DeploymentSettings(),
            snakefile=ROOT / "Snakefile",
            workdir=ROOT,
        )
        workflow = wf_api._workflow  # the API has no public accessor for the rules
        return [
            {
                "name": r.name,
                "file": Path(r.snakefile).name,
                "doc": " ".join((r.docstring or "").split()),
                "shell": r.shellcmd or "",
                "outputs": [CONSTRAINT.sub(r"{\1}", str(o)) for o in r.output],
            }
            for r in workflow.rules
            if r.name != "all"
        ]


def library_modules(script: Path) -> list[str]:
    """The ``personalir`` modules an entry point imports directly."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("personalir"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                path = ROOT / "src" / Path(*sub.split("."))
                found.append(sub if path.with_suffix(".py").is_file() else node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("personalir")]
    return sorted({m.removeprefix("personalir.") for m in found})


def table(rules: list[dict]) -> str:
    lines = [
        "| rules file | rule | kind | entry point | library modules it calls | outputs |",
        "|---|---|---|---|---|---|",
    ]
    for rule in rules:
        match = SCRIPT.search(rule["shell"])
        script = match.group(1) if match else ""
        modules = library_modules(ROOT / script) if script else []
        kind = "presentation" if is_presentation_rule(rule["name"], rule["file"]) else "compute"
        outputs = "<br>".join(f"`{o}`" for o in rule["outputs"]) or "(none)"
        lines.append(
            f"| `{rule['file']}` | `{rule['name']}` | {kind} | `{Path(script).name}` | "
            + ", ".join(f"`{m}`" for m in modules if m not in ("common.cli", "common.io"))
            + f" | {outputs} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--configfile", action="append", help="default: config/config.yaml")
    args = ap.parse_args()
    text = DOC.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        print(f"{DOC}: markers {START} / {END} not found", file=sys.stderr)
        return 1
    body = table(workflow_rules(args.configfile or ["config/config.yaml"]))
    new = pattern.sub(lambda _: f"{START}\n{body}\n{END}", text)
    if args.check:
        if new != text:
            print(
                "docs/architecture.md rule table is stale: run `python scripts/architecture.py`",
                file=sys.stderr,
            )
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
