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


def test_code_deps_adds_the_package_data_of_every_package_it_reaches(tmp_path):
    _tree(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.setuptools.package-data]\n"
        '"personalir.stage" = ["tables/*.yaml"]\n'
        '"personalir.unrelated_pkg" = ["*.yaml"]\n'
    )
    for rel in (
        "src/personalir/stage/tables/a.yaml",
        "src/personalir/stage/tables/b.yaml",
        "src/personalir/stage/tables/notes.txt",  # no glob matches it
        "src/personalir/unrelated_pkg/c.yaml",  # a package the job never imports
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x: 1\n")
    files = code_deps("workflow_scripts/job.py", tmp_path)
    assert [f for f in files if not f.endswith(".py")] == [
        "src/personalir/stage/tables/a.yaml",
        "src/personalir/stage/tables/b.yaml",
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


def _no_walk(*_args, **_kwargs):
    raise AssertionError("walked although the cache holds the answer")


def test_rules_code_by_rule_caches_walks_until_a_module_changes(tmp_path, monkeypatch):
    from personalir.common import codedeps

    _tree(tmp_path)
    cmds = {"job": "python workflow_scripts/job.py", "copy": "cp a b", "other": None}
    cache = tmp_path / ".snakemake" / "codedeps.json"
    plain = codedeps.rules_code_by_rule(cmds, tmp_path)
    assert plain == {
        "job": rules_code([cmds["job"]], tmp_path),
        "copy": [],
        "other": [],
    }
    assert codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache) == plain
    assert cache.is_file()
    # Unchanged tree: served from the file without walking.
    with monkeypatch.context() as m:
        m.setattr(codedeps, "code_deps", _no_walk)
        assert codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache) == plain
    # An edited module (a new import) and a new registry plug-in are both seen.
    (tmp_path / "src/personalir/stage/run.py").write_text(
        "from . import helper\nimport personalir.unrelated\n"
    )
    (tmp_path / "src/personalir/plugins/b.py").write_text("@THINGS.register('b')\ndef b(): ...\n")
    edited = codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache)["job"]
    assert set(edited) == set(plain["job"]) | {
        "src/personalir/unrelated.py",
        "src/personalir/plugins/b.py",
    }
    assert edited == rules_code([cmds["job"]], tmp_path)
    # So is a new data file of a package the job imports.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools.package-data]\n"personalir.stage" = ["*.yaml"]\n'
    )
    assert (
        "src/personalir/stage/t.yaml"
        not in codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache)["job"]
    )
    (tmp_path / "src/personalir/stage/t.yaml").write_text("x: 1\n")
    assert (
        "src/personalir/stage/t.yaml"
        in codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache)["job"]
    )
    # A removed module is seen too.
    (tmp_path / "src/personalir/plugins/b.py").unlink()
    assert (
        "src/personalir/plugins/b.py"
        not in codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache)["job"]
    )


def test_a_damaged_or_foreign_cache_is_recomputed(tmp_path, monkeypatch):
    from personalir.common import codedeps

    _tree(tmp_path)
    cmds = {"job": "python workflow_scripts/job.py"}
    cache = tmp_path / "codedeps.json"
    expected = codedeps.rules_code_by_rule(cmds, tmp_path)
    stamp = codedeps.code_tree_stamp(tmp_path, ["workflow_scripts"])
    for text in (
        "{not json",
        '{"version": 1, "stamp": "' + stamp + '", "deps": {"workflow_scripts/job.py": "x"}}',
        '{"version": 0, "stamp": "' + stamp + '", "deps": {"workflow_scripts/job.py": []}}',
        '{"version": 1, "stamp": "other", "deps": {"workflow_scripts/job.py": []}}',
        "[]",
    ):
        cache.write_text(text)
        assert codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache) == expected, text
    # The rewritten file now serves the answer.
    monkeypatch.setattr(codedeps, "code_deps", _no_walk)
    assert codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache) == expected


def test_a_flipped_bit_in_the_cache_is_never_served(tmp_path, monkeypatch, caplog):
    """The reproduction: a changed file name in the cache still parsed, and was served."""
    import logging
    import random

    from personalir.common import codedeps

    _tree(tmp_path)
    cmds = {"job": "python workflow_scripts/job.py"}
    cache = tmp_path / "codedeps.json"
    expected = codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache)
    original = cache.read_bytes()
    # The damage the reproduction made: one file name changed, valid JSON still.
    cache.write_bytes(original.replace(b"helper.py", b"helper.pz"))
    with caplog.at_level(logging.WARNING, logger="personalir.common.codedeps"):
        assert codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache) == expected
    assert f"code-dependency cache {cache}: its content does not match its sha256" in caplog.text
    # 200 single-bit flips: every answer is right, and none is raised.
    rnd = random.Random(7)
    for _ in range(200):
        data = bytearray(original)
        data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
        cache.write_bytes(bytes(data))
        assert codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache) == expected
    # The rewritten file serves the answer again without a walk.
    monkeypatch.setattr(codedeps, "code_deps", _no_walk)
    assert codedeps.rules_code_by_rule(cmds, tmp_path, cache=cache) == expected
