"""The static walk from a workflow script to the code it runs."""

from __future__ import annotations

from personalir.common.codedeps import code_deps, rules_code, script_of


def _tree(root):
    files = {
        "workflow_scripts/job.py": "import _bootstrap\nfrom personalir.stage import run\n",
        "workflow_scripts/_bootstrap.py": "",
        "workflow_scripts/other.py": "import personalir.unrelated\n",
        "src/personalir/__init__.py": "",
        "src/personalir/stage/__init__.py": "",
        "src/personalir/stage/run.py": "from . import helper\n",
        "src/personalir/stage/helper.py": "from personalir.common.registry import Registry\n"
        'THINGS = Registry("things", package="personalir.plugins", symbol="THINGS")\n',
        "src/personalir/common/__init__.py": "",
        "src/personalir/common/registry.py": "",
        "src/personalir/plugins/__init__.py": "",
        "src/personalir/plugins/a.py": "@THINGS.register('a')\ndef a(): ...\n",
        "src/personalir/plugins/not_one.py": "x = 1\n",
        "src/personalir/unrelated.py": "",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_code_deps_follows_imports_inits_relative_imports_and_registry_plugins(tmp_path):
    _tree(tmp_path)
    assert code_deps("workflow_scripts/job.py", tmp_path) == [
        "src/personalir/__init__.py",
        "src/personalir/common/__init__.py",
        "src/personalir/common/registry.py",
        "src/personalir/plugins/a.py",
        "src/personalir/stage/__init__.py",
        "src/personalir/stage/helper.py",
        "src/personalir/stage/run.py",
        "workflow_scripts/_bootstrap.py",
        "workflow_scripts/job.py",
    ]


def test_rules_code_unions_the_scripts_named_by_shell_commands(tmp_path):
    _tree(tmp_path)
    assert script_of("python -u workflow_scripts/job.py --x 1 > log") == "workflow_scripts/job.py"
    assert script_of("cp a b") is None
    files = rules_code(["python workflow_scripts/job.py", "cp a b", None], tmp_path)
    assert "src/personalir/unrelated.py" not in files
    both = rules_code(
        ["python workflow_scripts/job.py", "python workflow_scripts/other.py"], tmp_path
    )
    assert set(both) == set(files) | {"workflow_scripts/other.py", "src/personalir/unrelated.py"}
