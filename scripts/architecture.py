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

from dvc_from_snakemake import open_workflow  # noqa: E402
from rulegraph import update_section  # noqa: E402

from personalir.workflow.support import is_presentation_rule  # noqa: E402

DOC = ROOT / "docs" / "architecture.md"
START, END = "<!-- architecture:start -->", "<!-- architecture:end -->"
SCRIPT = re.compile(r"(workflow_scripts/[\w/.-]+\.py)")
CONSTRAINT = re.compile(r"\{(\w+),[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")


def workflow_rules(configfiles: list[str]):
    with open_workflow(ROOT, configfiles) as wf_api:
        workflow = wf_api._workflow  # the API has no public accessor for the rules
        return [
            {
                "name": r.name,
                "file": Path(r.snakefile).name,
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
    body = table(workflow_rules(args.configfile or ["config/config.yaml"]))
    return update_section(
        DOC, START, END, body, check=args.check, hint="python scripts/architecture.py"
    )


if __name__ == "__main__":
    sys.exit(main())
