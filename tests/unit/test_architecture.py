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
    # The paper configuration's dress rehearsal: stand-in models and the GPU check run the
    # stages' own code paths.
    "rehearsal": 8,
}
# The TTP stage's rooms, in the order of its data flow: a room imports only itself and earlier
# rooms (the stage's inputs, then the model, training, the registered methods, their
# evaluation and the paper's tables and figures).
TTP_ROOMS = {"inputs": 0, "model": 1, "training": 2, "methods": 3, "evaluation": 4, "paper": 5}
# The Snakemake glue (the package used by the rule modules); it may import any stage, and no
# stage imports it.
GLUE_PACKAGE = "personalir.workflow"
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
    relative imports are resolved against ``module`` (:func:`_all_imports` reads them).
    """
    for line, imported, name, _ in _all_imports(module, path, guarded=True):
        if imported.split(".")[0] != "personalir":
            continue
        yield line, imported, (f"from ... import {name}" if name else f"import {imported}")


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGE_RANK else None


def _is_glue(module: str) -> bool:
    return module == GLUE_PACKAGE or module.startswith(GLUE_PACKAGE + ".")


def _ttp_room(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "ttp" and parts[2] in TTP_ROOMS else None


def _import_allowed(importer: str, imported: str) -> bool:
    if _is_glue(importer):
        return True
    if _is_glue(imported):
        return _is_glue(importer)
    own, other = _stage(importer), _stage(imported)
    if other is None:
        return True
    if own is None:  # personalir/__init__.py
        return False
    if other != own:
        return STAGE_RANK[other] < STAGE_RANK[own]
    if own == "ttp":
        mine, theirs = _ttp_room(importer), _ttp_room(imported)
        if mine is None or theirs is None:  # ttp/__init__.py and the rooms' packages
            return True
        return TTP_ROOMS[theirs] <= TTP_ROOMS[mine]
    return True


def _is_presentation(module: str) -> bool:
    import re

    parts = module.split(".")
    return (
        parts[-1].endswith(("tables", "figures"))
        or re.fullmatch(r"(table|figure)\d+", parts[-1]) is not None
        or module == "personalir.common.latex"
        or _stage(module) == "report"
        or _ttp_room(module) == "paper"
    )


def _violations(rule, exempt=frozenset()) -> list[str]:
    found = []
    for module, path in MODULES.items():
        if _is_glue(module) or module in exempt:
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
        "    import personalir.ttp.model.backbone\n"
    )
    found = list(_imports("personalir.queries.probe", path))
    assert [(line, target) for line, target, _ in found] == [
        (2, "personalir.queries.lm"),
        (4, "personalir.retrieval.base"),
        (5, "personalir.ttp.model.backbone"),
    ]
    allowed = [_import_allowed("personalir.queries.probe", t) for _, t, _ in found]
    assert allowed == [True, False, False]
    assert not _import_allowed("personalir.common.io", "personalir.data.text")
    assert not _import_allowed("personalir.errors.x", "personalir.syntax.y")
    assert _import_allowed("personalir.ttp.x", "personalir.common.models")
    # the TTP rooms follow the data flow, and nothing but the glue imports the glue
    assert _import_allowed("personalir.ttp.methods.x", "personalir.ttp.training.y")
    assert not _import_allowed("personalir.ttp.training.y", "personalir.ttp.methods.x")
    assert not _import_allowed("personalir.ttp.evaluation.x", "personalir.ttp.paper.y")
    assert not _import_allowed("personalir.ttp.paper.y", "personalir.workflow.ttp")
    assert _import_allowed("personalir.workflow.ttp", "personalir.ttp.paper.y")


def test_presentation_modules_are_tables_figures_latex_and_the_report():
    assert _is_presentation("personalir.retrieval.tables")
    assert _is_presentation("personalir.syntax.figures")
    assert _is_presentation("personalir.ttp.paper.ablation_tables")
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


MAX_MODULE_LINES = 500


def test_no_library_module_over_500_lines():
    long = sorted(
        f"{path.relative_to(PACKAGE_DIR.parent)}: {n} lines"
        for module, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    )
    assert not long, "split these modules (one module per rule step or topic):\n" + "\n".join(long)


# Third-party libraries that take a noticeable time to import: a module may import them (and
# the project's modules that import them at their top) inside the function that needs them.
HEAVY_LIBRARIES = {
    "torch",
    "transformers",
    "peft",
    "trl",
    "sentence_transformers",
    "FlagEmbedding",
    "faiss",
    "spacy",
    "errant",
    "matplotlib",
    "seaborn",
    "onnxruntime",
    "pyserini",
    "openai",
    "ir_measures",
    "uvicorn",
    "starlette",
    "quire_grammar",
    "symspellpy",
    "gector",
    "lmformatenforcer",
    "jnius",
    "llama_cpp",
    "krippendorff",
    "sklearn",
}


def _all_imports(module: str, path: Path, guarded: bool = False):
    """``(line, imported module or package, name, at module level)`` for every import of
    ``module`` (third-party ones too); TYPE_CHECKING blocks are left out unless ``guarded``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skipped = (
        set()
        if guarded
        else {
            id(x)
            for n in tree.body
            if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
            for x in ast.walk(n)
        }
    )
    functions = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    nested = {id(x) for f in functions for x in ast.walk(f)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        top = id(node) not in nested
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None, top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if _is_package(module) else module.rsplit(".", 1)[0]
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield node.lineno, sub if sub in MODULES else base, alias.name, top


IMPORTS = {module: list(_all_imports(module, path)) for module, path in MODULES.items()}


def _heavy(module: str, seen: frozenset = frozenset()) -> bool:
    """Whether importing ``module`` imports a heavy library (at the top, transitively)."""
    for _, imported, _, top in IMPORTS.get(module, ()):
        if not top:
            continue
        if imported.split(".")[0] in HEAVY_LIBRARIES:
            return True
        if (
            imported in MODULES
            and imported != module
            and imported not in seen
            and _heavy(imported, seen | {module})
        ):
            return True
    return False


def _project_graph() -> dict[str, set[str]]:
    return {
        m: {i for _, i, _, _ in imports if i in MODULES and i != m}
        for m, imports in IMPORTS.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_circle_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    """Any import counts, inside a function or under TYPE_CHECKING-free code alike."""
    circles = _cycles(_project_graph())
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_no_private_name_is_imported_across_modules():
    found = [
        f"{MODULES[m].relative_to(PACKAGE_DIR.parents[1])}:{line}: {name} from {imported}"
        for m, imports in IMPORTS.items()
        for line, imported, name, _ in imports
        if name
        and name.startswith("_")
        and not name.startswith("__")
        and imported.split(".")[0] == "personalir"
        and imported != m
    ]
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_project_imports_sit_at_the_top_unless_they_bring_a_heavy_library():
    """An import of a project module inside a function hides a dependency; it is only
    allowed when that module imports a heavy library at its top (the import is deferred for
    its cost). ``import personalir`` (for the package's own path) is allowed anywhere."""
    found = [
        f"{MODULES[m].relative_to(PACKAGE_DIR.parents[1])}:{line}: {imported}"
        for m, imports in IMPORTS.items()
        for line, imported, _, top in imports
        if not top and imported in MODULES and imported != "personalir" and not _heavy(imported)
    ]
    assert not found, "move these imports to the module's top:\n" + "\n".join(found)


def test_heavy_is_decided_by_what_a_module_imports():
    assert _heavy("personalir.ttp.training.sft")  # torch at its top
    assert not _heavy("personalir.common.io")


def test_architecture_doc_rule_table_is_current():
    import subprocess
    import sys

    script = PACKAGE_DIR.parents[1] / "scripts" / "architecture.py"
    proc = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
