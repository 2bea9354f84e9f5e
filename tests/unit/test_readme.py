"""The README as the front door, checked against the repository.

- It has at most 200 lines, and its five journeys, each a copy-paste box, end within its
  first 60 lines, after the Quickstart's two commands.
- Every command of every box is one the repository provides: `make` targets are in the
  Makefile; each flag of `snakemake`, of the package's console scripts (`pqb-evaluate`) and of
  `python -m ...` / `python scripts/...` is in that command's own `--help` (a subcommand's
  flags in the subcommand's help).
- Every path a box names exists in the repository, belongs to the user (`my_...`, as the
  README says) or is an output the workflow records (dvc.yaml's outs, under a shipped
  configuration's results root); so does every path in the README's inline code, and every
  link of the README and of docs/ resolves, anchors included.
- The stage diagram's stages are rule modules, and each of its arrows is an edge of the
  generated rule graph (docs/workflow.md); the documentation table lists every docs/ page.
- The own-reviews journey's box plans PQB for real (snakemake -n) on tiny files.
- LICENSE and CITATION.cff agree with pyproject.toml.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shlex
import subprocess  # nosec B404  # runs the repository's own commands with argv lists
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from personalir.common.config import deep_merge, validate_config
from tests.fixtures.byo import write_catalogue
from tests.fixtures.real_reviews import write_reviews
from tests.integration.workflow import copy_workflow, snakemake

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MAX_LINES = 200
JOURNEY_LINES = 60
# The five journeys, in order: a word or phrase each journey's title must hold.
JOURNEYS = [
    "Reproduce the sample",
    "Regenerate the papers on SLURM",
    "Fetch the recorded artifacts",
    "Evaluate your retriever on PQB",
    "Build PQB from your own reviews",
]
BYO_MARKER = "<!-- byo-box -->"
# The README says so: paths that start with this are the user's own files.
USER_PREFIX = "my_"
# Subcommands the README documents before the CLI has them (skipped, with the reason, until
# the CLI's --help knows them; then their flags are checked like any other).
# Subcommands a box may name before they exist (none now: every one is checked).
PENDING_SUBCOMMANDS: dict[tuple[str, str], str] = {}
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
PATH_RE = re.compile(r"(?<![\w.{}<>*/:@-])((?:[\w.{}<>*-]+/)+[\w.{}<>*-]*)")
BARE_FILE_RE = re.compile(r"(?<![\w./-])([\w-]+\.(?:txt|lock|yaml|yml|toml|cff|md|py))\b")
PLACEHOLDER_RE = re.compile(r"\{[^}/]*\}|<[^>/]*>")


@dataclass(frozen=True)
class Box:
    start: int  # 1-based line of the opening fence
    end: int  # 1-based line of the closing fence
    title: str  # the nearest non-empty line above the box
    text: str


def readme_lines() -> list[str]:
    return README.read_text(encoding="utf-8").split("\n")


def bash_boxes(lines: list[str]) -> list[Box]:
    boxes, i = [], 0
    while i < len(lines):
        if lines[i].strip() != "```bash":
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"README.md:{i + 1}: a bash box is never closed"
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        boxes.append(Box(i + 1, end + 1, lines[k] if k >= 0 else "", "\n".join(lines[i + 1 : end])))
        i = end + 1
    return boxes


def commands(text: str) -> list[list[str]]:
    """Each command of a box as argv (continuation lines joined, comments dropped)."""
    joined = text.replace("\\\n", " ")
    return [argv for line in joined.splitlines() if (argv := shlex.split(line, comments=True))]


def journeys(boxes: list[Box]) -> list[Box]:
    return [b for b in boxes if re.match(r"\*\*[1-9]\. ", b.title)]


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z0-9][\w.-]*)\s*:(?!=)", text, flags=re.M))


@functools.cache
def help_of(cmd: tuple[str, ...]) -> tuple[int, str]:
    """(exit status, stdout + stderr) of ``cmd --help`` run in the repository."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")]
        ),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    proc = subprocess.run(  # nosec B603  # fixed argv of the repository's own commands
        [*cmd, "--help"], cwd=REPO, env=env, capture_output=True, text=True
    )
    return proc.returncode, proc.stdout + proc.stderr


def help_prefix(argv: list[str]) -> tuple[str, tuple[str, ...] | None, list[str]]:
    """(program name, the command whose --help documents it, the arguments after it)."""
    exe, name = argv[0], Path(argv[0]).name
    scripts = pyproject()["project"]["scripts"]
    if exe.startswith(".venv/bin/"):
        # Made by `make setup`: the interpreter, a locked tool or one of the package's scripts.
        assert name in {"python", "snakemake"} | set(scripts), f"{exe}: not made by make setup"
    if name == "make":
        return "make", None, argv[1:]
    if name == "snakemake":
        return "snakemake", (str(SNAKEMAKE),), argv[1:]
    if name in scripts:
        module, func = scripts[name].split(":")
        code = (
            f"import sys; sys.argv[0] = {name!r}; from {module} import {func}; sys.exit({func}())"
        )
        return name, (sys.executable, "-c", code), argv[1:]
    if name in {"python", "python3"} and len(argv) > 2 and argv[1] == "-m":
        return f"python -m {argv[2]}", (sys.executable, "-m", argv[2]), argv[3:]
    if name in {"python", "python3"} and len(argv) > 1 and argv[1].endswith(".py"):
        assert (REPO / argv[1]).is_file(), f"{argv[1]} does not exist"
        return f"python {argv[1]}", (sys.executable, str(REPO / argv[1])), argv[2:]
    raise AssertionError(f"the README test does not know how to check {argv[0]!r}")


def flags(args: list[str]) -> list[str]:
    out = []
    for token in args:
        if token.startswith("--"):
            out.append(token.split("=", 1)[0])
        elif re.fullmatch(r"-[A-Za-z]", token):
            out.append(token)
    return out


@functools.lru_cache(maxsize=1)
def results_roots() -> dict[str, list[str]]:
    """results_dir -> domains, for every shipped configuration that names a results root."""
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    roots = {}
    for path in sorted((REPO / "config").glob("*.yaml")):
        cfg = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if "results_dir" in cfg:
            roots[cfg["results_dir"]] = cfg.get("domains", base["domains"])
    return roots


@functools.lru_cache(maxsize=1)
def recorded_outputs() -> tuple[str, ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # dvc.yaml is large
    dvc = yaml.load((REPO / "dvc.yaml").read_text(encoding="utf-8"), Loader=loader)  # nosec B506
    outs = []
    for stage in dvc["stages"].values():
        for out in stage.get("outs", []):
            outs.append(out if isinstance(out, str) else next(iter(out)))
    return tuple(outs)


def path_problem(path: str) -> str | None:
    """Why ``path`` named in the README is not there, or None."""
    if path.startswith((USER_PREFIX, ".venv/")):
        return None
    head, _, rest = path.partition("/")
    roots = results_roots()
    if head in roots:
        if not rest:
            return None
        parts = [
            "*" if PLACEHOLDER_RE.search(p) or p in roots[head] else p for p in rest.split("/")
        ]
        pattern = "results/" + "/".join(parts)
        if any(
            fnmatch.fnmatch(out, pattern + "*" if pattern.endswith("/") else pattern)
            or fnmatch.fnmatch(out, pattern + "/*")
            for out in recorded_outputs()
        ):
            return None
        return f"{path}: no recorded output (dvc.yaml) matches {pattern}"
    pattern = PLACEHOLDER_RE.sub("*", path).rstrip("/")
    if any(REPO.glob(pattern)):
        return None
    return f"{path}: not in the repository"


# ---- collected from the README at import time, so each command is a test of its own ----

LINES = readme_lines()
BOXES = bash_boxes(LINES)
COMMANDS = [
    pytest.param(argv, id=f"line{box.start}-{Path(argv[0]).name}-{n}")
    for box in BOXES
    for n, argv in enumerate(commands(box.text), 1)
]


def test_the_readme_is_short_and_opens_with_the_quickstart_and_five_journeys():
    n_lines = len(LINES) - (LINES[-1] == "")
    assert n_lines <= MAX_LINES, f"README.md has {n_lines} lines"
    quickstart = BOXES[0]
    assert quickstart.title == "## Quickstart" and commands(quickstart.text) == [
        ["make", "run"],
        ["make", "test"],
    ]
    found = journeys(BOXES)
    assert len(found) == len(JOURNEYS), [b.title for b in found]
    for n, (box, name) in enumerate(zip(found, JOURNEYS, strict=True), 1):
        assert box.title.startswith(f"**{n}. ") and name in box.title, box.title
        assert box.end <= JOURNEY_LINES, f"journey {n} ends at line {box.end}"
        assert commands(box.text), f"journey {n}'s box has no command"
    # The integrator's handle on the bring-your-own box: the marker sits right above it.
    byo = found[JOURNEYS.index("Evaluate your retriever on PQB")]
    assert BYO_MARKER in LINES[byo.start - 3] + LINES[byo.start - 2], "byo box marker missing"
    assert any(argv[0].endswith("pqb-evaluate") for argv in commands(byo.text))


@pytest.mark.parametrize("argv", COMMANDS)
def test_every_box_command_exists_with_its_flags(argv):
    name, prefix, args = help_prefix(argv)
    if name == "make":
        missing = [t for t in args if not t.startswith("-") and "=" not in t]
        assert set(missing) <= make_targets(), (
            f"no such make target: {set(missing) - make_targets()}"
        )
        return
    rc, top = help_of(prefix)
    assert rc == 0, f"{name} --help failed ({rc}):\n{top[-2000:]}"
    text = top
    positional = [a for a in args if not a.startswith("-")]
    if name != "snakemake" and args and args[0] == (positional or [None])[0]:
        word = args[0]
        if re.fullmatch(r"[a-z][a-z0-9-]*", word):
            src, sub = help_of((*prefix, word))
            usage = sub.split("\n\n", 1)[0]
            # A subcommand's help names it in its usage, or at least is not the top help.
            named = re.search(rf"\s{re.escape(word)}(\s|$)", usage)
            if src == 0 and (named or sub != top):
                text, args = sub, args[1:]
            elif (name, word) in PENDING_SUBCOMMANDS:
                pytest.skip(PENDING_SUBCOMMANDS[(name, word)])
            else:
                # Not a subcommand: then the program must take positionals, and no choices.
                choices = re.findall(r"\{([\w,-]+)\}", top.split("\n\n", 1)[0])
                assert "positional arguments:" in top and not choices, (
                    f"{name}: {word!r} is no subcommand of it (its --help lists {choices})"
                )
    unknown = [f for f in flags(args) if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]
    assert not unknown, f"{name}: flags not in its --help: {unknown}"


def test_every_path_in_the_boxes_and_inline_code_exists_or_is_a_recorded_output():
    named = []
    for box in BOXES:
        named += [(box.start, p) for p in PATH_RE.findall(box.text)]
        named += [(box.start, "./" + f) for f in BARE_FILE_RE.findall(box.text)]
    prose = re.sub(r"```.*?```", "", "\n".join(LINES), flags=re.S)
    for span in re.findall(r"`([^`\n]+)`", prose):
        named += [("inline", p) for p in PATH_RE.findall(span)]
    assert len(named) > 20, named  # the boxes do name their files
    problems = [f"README.md ({where}): {why}" for where, p in named if (why := path_problem(p))]
    assert not problems, "\n".join(problems)


def test_path_check_catches_a_missing_file_and_an_unrecorded_output():
    assert path_problem("config/own_reviews.yaml") is None
    assert path_problem("results/queries/{domain}/benchmark.jsonl") is None
    assert path_problem("results-own/queries/My_Domain/benchmark.jsonl") is None
    assert path_problem("my_runs/{domain}.trec") is None
    assert "not in the repository" in path_problem("config/no_such.yaml")
    assert "no recorded output" in path_problem("results/queries/{domain}/no_such.jsonl")


def link_targets(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]


def anchors(path: Path) -> set[str]:
    heads = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize(
    "page", [README, *sorted((REPO / "docs").glob("*.md"))], ids=lambda p: p.name
)
def test_links_resolve(page):
    problems = []
    for target in link_targets(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file) if file else page
        if not dest.exists():
            problems.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{target}: no such heading")
    assert not problems, f"{page.relative_to(REPO)}: " + "; ".join(problems)


def test_the_documentation_table_lists_every_docs_page_once():
    text = "\n".join(LINES)
    section = text.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| \[[^]]+\]\((docs/[^)#]+\.md)\) \|", section, flags=re.M)
    pages = sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))
    assert sorted(listed) == pages and len(listed) == len(set(listed))


def test_the_stage_diagram_follows_the_rule_graph():
    text = "\n".join(LINES)
    diagram = text.split("## Stages", 1)[1].split("```mermaid", 1)[1].split("```", 1)[0]
    stages = re.findall(r"^\s+(\w+)\[", diagram, flags=re.M)
    arrows = set()
    for line in diagram.splitlines():
        chain = [s.strip() for s in line.split("-->")]
        arrows |= set(zip(chain, chain[1:], strict=False))
    assert len(stages) >= 6 and arrows and {s for a in arrows for s in a} <= set(stages)
    # Each stage is its rule modules (rules/<stage>.smk and rules/<stage>_*.smk).
    owner = {}
    for stage in stages:
        modules = [REPO / "rules" / f"{stage}.smk", *(REPO / "rules").glob(f"{stage}_*.smk")]
        assert modules[0].is_file(), f"stage {stage}: no rules/{stage}.smk"
        for module in modules:
            for rule in re.findall(r"^rule (\w+):", module.read_text(encoding="utf-8"), re.M):
                owner[rule] = stage
    graph = (REPO / "docs" / "workflow.md").read_text(encoding="utf-8")
    edges = set(re.findall(r"^\s+r_(\w+) --> r_(\w+)$", graph, flags=re.M))
    assert edges, "docs/workflow.md holds no rule graph"
    stage_edges = {(owner.get(a), owner.get(b)) for a, b in edges}
    missing = sorted(a for a in arrows if a not in stage_edges)
    assert not missing, f"diagram arrows with no rule-graph edge behind them: {missing}"


def test_licence_and_citation_agree_with_pyproject():
    project = pyproject()["project"]
    assert project["license"] == {"text": "MIT"} and project["readme"] == "README.md"
    licence = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n") and "The personalir authors" in licence
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == project["version"] and cff["license"] == "MIT"
    titles = [ref["title"] for ref in cff["references"]]
    assert [t.split(":")[0] for t in titles] == ["PersonalQuery-Benchmark", "Think-to-Personalize"]
    assert all(ref["authors"] and ref["year"] for ref in cff["references"])
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "keepachangelog.com" in changelog and "\n## [Unreleased]\n" in changelog


def own_reviews_box() -> list[str]:
    box = journeys(BOXES)[JOURNEYS.index("Build PQB from your own reviews")]
    (argv,) = commands(box.text)
    return argv


def test_own_reviews_config_is_valid_with_queries_on_and_ttp_validation_pdf_off(tmp_path):
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    own = yaml.safe_load((REPO / "config" / "own_reviews.yaml").read_text(encoding="utf-8"))
    local = {
        "reviews": str(tmp_path / "{domain}.jsonl"),
        "meta": str(tmp_path / "m_{domain}.jsonl"),
    }
    cfg = validate_config(deep_merge(base, deep_merge(own, {"data": {"local": local}})))
    assert cfg["data"]["source"] == "local" and cfg["data"]["local"] == local
    assert cfg["queries"]["enabled"] and cfg["retrieval"]["enabled"]
    assert not (cfg["ttp"]["enabled"] or cfg["validation"]["enabled"] or cfg["paper"]["build_pdf"])
    assert cfg["paper"]["expected"] is None
    assert cfg["results_dir"] == "results-own" and cfg["results_dir"] in results_roots()


@pytest.mark.slow
def test_own_reviews_box_plans_pqb_on_tiny_files(tmp_path):
    argv = own_reviews_box()
    assert Path(argv[0]).name == "snakemake"
    spec = " ".join(argv)
    (domain,) = re.findall(r"domains=\[(\w+)\]", spec)
    files = dict(re.findall(r'(reviews|meta): "([^"]+)"', spec))
    work = copy_workflow(tmp_path / "repo")
    reviews = work / files["reviews"].replace("{domain}", domain)
    meta = work / files["meta"].replace("{domain}", domain)
    reviews.parent.mkdir(parents=True, exist_ok=True)
    write_reviews(reviews)
    write_catalogue(meta)
    out = snakemake(work, *argv[1:], "-n").stdout
    for rule in ("ingest", "product_documents", "syntax_encoder", "errors_profiles"):
        assert f"rule {rule}:" in out, rule
    for rule in ("queries_select", "queries_tables", "retrieval_run", "retrieval_tables"):
        assert f"rule {rule}:" in out, rule
    assert f"results-own/queries/{domain}/benchmark.jsonl" in out
    assert (
        f"input: {reviews.relative_to(work)}" in out and f"input: {meta.relative_to(work)}" in out
    )
    for rule in ("ttp_examples", "validation_judge", "paper_pdf", "expected_results"):
        assert f"rule {rule}:" not in out, rule
