"""Import direction of the library: a stage imports only itself and earlier stages, and compute
code never imports presentation code (tables, figures, LaTeX, the report).

Every module of ``src/personalir/`` is parsed (not imported), so an import inside a function
counts as much as one at the top of the file.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "src" / "personalir"

# The data flow of the pipeline, earliest first. A stage may import a stage of a lower rank or
# itself; stages of equal rank (errors and syntax) are independent of each other. `common` has
# the lowest rank and so imports no stage.
STAGE_RANK = {
    "common": 0,
    "data": 1,
    "errors": 2,
    "syntax": 2,
    "queries": 3,
    "validation": 4,
    "retrieval": 5,
    "ttp": 6,
    "report": 7,
}
# The Snakemake glue (used by the rule modules); it may import any stage.
GLUE_MODULES = {"personalir.workflow_support"}
# Command-line entry points that run a stage end to end and then render its tables and
# figures, as a workflow script does: they may import presentation modules of their stage.
ENTRY_POINTS = {"personalir.retrieval.evaluate"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _is_package(module: str) -> bool:
    return MODULES.get(module, Path()).name == "__init__.py"


def _imports(module: str, path: Path):
    """``(line, imported module, statement)`` for each import of a ``personalir`` module.

    ``from package import name`` imports the submodule ``package.name`` when there is one;
    relative imports are resolved against ``module``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "personalir":
                    yield node.lineno, alias.name, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if _is_package(module) else module.rsplit(".", 1)[0]
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != "personalir":
                continue
            shown = f"from {'.' * node.level}{node.module or ''} import "
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield node.lineno, sub if sub in MODULES else base, shown + alias.name


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGE_RANK else None


def _import_allowed(importer: str, imported: str) -> bool:
    own, other = _stage(importer), _stage(imported)
    if other is None or other == own:
        return True
    if own is None:  # personalir/__init__.py
        return False
    return STAGE_RANK[other] < STAGE_RANK[own]


def _is_presentation(module: str) -> bool:
    import re

    parts = module.split(".")
    return (
        parts[-1].endswith(("tables", "figures"))
        or re.fullmatch(r"(table|figure)\d+", parts[-1]) is not None
        or module == "personalir.common.latex"
        or _stage(module) == "report"
    )


def _violations(rule, exempt=frozenset()) -> list[str]:
    found = []
    for module, path in MODULES.items():
        if module in GLUE_MODULES or module in exempt:
            continue
        for line, imported, statement in _imports(module, path):
            if not rule(module, imported):
                rel = path.relative_to(PACKAGE_DIR.parents[1]).as_posix()
                found.append(f"{rel}:{line}: {statement}")
    return found


def test_the_parser_sees_imports_inside_functions_and_relative_ones(tmp_path):
    """The checker itself, on a module that imports a later stage in three ways."""
    path = tmp_path / "probe.py"
    path.write_text(
        "import os\n"
        "from . import lm\n"
        "def f():\n"
        "    from personalir.retrieval import base\n"
        "    import personalir.ttp.model\n"
    )
    found = list(_imports("personalir.queries.probe", path))
    assert [(line, target) for line, target, _ in found] == [
        (2, "personalir.queries.lm"),
        (4, "personalir.retrieval.base"),
        (5, "personalir.ttp.model"),
    ]
    allowed = [_import_allowed("personalir.queries.probe", t) for _, t, _ in found]
    assert allowed == [True, False, False]
    assert not _import_allowed("personalir.common.io", "personalir.data.text")
    assert not _import_allowed("personalir.errors.x", "personalir.syntax.y")
    assert _import_allowed("personalir.ttp.x", "personalir.common.models")


def test_presentation_modules_are_tables_figures_latex_and_the_report():
    assert _is_presentation("personalir.retrieval.tables")
    assert _is_presentation("personalir.syntax.figures")
    assert _is_presentation("personalir.ttp.ablation_tables")
    assert _is_presentation("personalir.common.latex")
    assert _is_presentation("personalir.report.paper")
    assert not _is_presentation("personalir.retrieval.metrics")
    assert not _is_presentation("personalir.common.io")


def test_every_stage_imports_only_earlier_stages():
    bad = _violations(_import_allowed)
    assert not bad, "a stage imports a later (or independent) stage:\n" + "\n".join(bad)


def test_compute_modules_never_import_presentation_modules():
    """Tables, figures, LaTeX and the report read results; nothing computes through them."""
    bad = _violations(
        lambda m, i: not _is_presentation(i) or _is_presentation(m), exempt=ENTRY_POINTS
    )
    assert not bad, "a compute module imports a presentation module:\n" + "\n".join(bad)


# Data tables of the synthetic sample world (lexicon, sentence constructions): long by nature.
DATA_TABLE_MODULES = {
    "personalir.data.sample_world_lexicon",
    "personalir.data.sample_world_constructions",
}
MAX_MODULE_LINES = 600


def test_no_library_module_over_600_lines():
    long = sorted(
        f"{path.relative_to(PACKAGE_DIR.parent)}: {n} lines"
        for module, path in MODULES.items()
        if module not in DATA_TABLE_MODULES
        and (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    )
    assert not long, "split these modules (one module per rule step or topic):\n" + "\n".join(long)


def test_architecture_doc_rule_table_is_current():
    import subprocess
    import sys

    script = PACKAGE_DIR.parents[1] / "scripts" / "architecture.py"
    proc = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
