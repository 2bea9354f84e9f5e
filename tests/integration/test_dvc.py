"""DVC tracks every artifact of the workflow, derived from the Snakemake DAG.

- dvc.yaml is exactly what scripts/dvc_from_snakemake.py derives from the DAG (stale fails).
- A fresh clone fetches the sample-scale artifacts offline from the in-repo remote with
  `dvc pull`, and after the one extra command (`python scripts/fetch_artifacts.py`: verify,
  then restore file times in pipeline order) `snakemake -n` has nothing to do.
- A corrupted object in the DVC cache is named and never lands in the workspace.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from personalir.common.config import REPO_ROOT

from .small_run import BIN, env, must, run

pytestmark = [pytest.mark.integration]
GENERATOR = [sys.executable, str(REPO_ROOT / "scripts" / "dvc_from_snakemake.py")]


def dvc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run([str(BIN / "dvc"), *args], cwd)


def test_dvc_yaml_is_derived_from_the_dag():
    proc = run([*GENERATOR, "--check"], REPO_ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_stale_dvc_yaml_is_detected(tmp_path):
    text = (REPO_ROOT / "dvc.yaml").read_text()
    spec = yaml.safe_load(text)
    first = next(iter(spec["stages"]))
    stale = tmp_path / "dvc.yaml"
    # A stage whose command no longer matches its rule, as after an unregenerated rule edit.
    stale.write_text(text.replace(spec["stages"][first]["cmd"], "python -u old_script.py", 1))
    proc = run([*GENERATOR, "--check", "--output", str(stale)], REPO_ROOT)
    assert proc.returncode == 1
    assert "is stale" in proc.stderr and "old_script.py" in proc.stdout


def test_every_job_output_is_a_dvc_out_in_pipeline_order():
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    lock = yaml.safe_load((REPO_ROOT / "dvc.lock").read_text())["stages"]
    # DVC writes dvc.lock in the order it committed stages; only the set must match.
    assert sorted(stages) == sorted(lock), "dvc.lock does not cover exactly the stages of dvc.yaml"
    produced_before: set[str] = set()
    all_outs = {o for s in stages.values() for o in s["outs"]}
    for name, stage in stages.items():
        upstream = [d for d in stage.get("deps", []) if d in all_outs]
        assert set(upstream) <= produced_before, f"{name} listed before its inputs"
        produced_before.update(stage["outs"])
        script = re.search(r"workflow_scripts/\S+\.py", stage["cmd"])
        if script:  # the code a job runs is one of its dependencies
            assert script.group(0) in stage["deps"], f"{name}: {script.group(0)} not a dep"
    rules = {name.split("-")[0] for name in stages}
    assert {"sample_world", "ingest", "product_documents", "user_sentences"} <= rules


def test_temporary_model_weights_are_not_recorded():
    # Temporary outputs (model weights: backbone, fine-tuned bi-encoders, the TTP adapter) are
    # neither outs nor deps; the in-repo remote holds no file over 5 MB.
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    files = {f for s in stages.values() for f in s["outs"] + s.get("deps", [])}
    assert not {f for f in files if f.endswith("model.safetensors") and "/ttp/" in f}
    assert "results/ttp/sft/adapter/adapter_config.json" in stages["ttp_sft"]["outs"]
    big = [p for p in (REPO_ROOT / "dvc-store").rglob("*") if p.is_file()]
    assert not [p for p in big if p.stat().st_size > 5_000_000]


def test_default_remote_is_offline_and_in_the_repository():
    remotes = dict(
        line.split()[:2] for line in dvc("remote", "list", cwd=REPO_ROOT).stdout.splitlines()
    )
    assert Path(remotes["sample"]).resolve() == (REPO_ROOT / "dvc-store").resolve()
    assert "paper" in remotes, "the paper-scale remote is documented in .dvc/config"
    assert dvc("config", "core.remote", cwd=REPO_ROOT).stdout.strip() == "sample"
    assert any((REPO_ROOT / "dvc-store").rglob("*")), "dvc-store/ is empty: run `make dvc-update`"


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    """What a clone of the current working tree holds: tracked and unignored files only."""
    dest = tmp_path_factory.mktemp("clone")
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout
    archive = subprocess.run(
        ["tar", "-C", str(REPO_ROOT), "--null", "-T", "-", "-cf", "-"],
        input=listed,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-C", str(dest), "-xf", "-"], input=archive, check=True)
    for cmd in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clone"],
    ):
        subprocess.run(cmd, cwd=dest, check=True, env=env())
    return dest


def test_fresh_clone_pull_then_nothing_to_do(fresh_clone):
    assert not (fresh_clone / "results" / "data").exists()
    t0 = time.monotonic()
    must(dvc("pull", cwd=fresh_clone))
    pull_s = time.monotonic() - t0
    # The one extra command: verifies every file against dvc.lock, checks that dvc.lock still
    # matches code and commands (`dvc status`), and orders file times as the pipeline does.
    proc = must(run([sys.executable, "scripts/fetch_artifacts.py"], fresh_clone))
    assert "artifacts verified against dvc.lock" in proc.stdout
    t0 = time.monotonic()
    proc = must(run([str(BIN / "snakemake"), "-n", "--cores", "1"], fresh_clone))
    noop_s = time.monotonic() - t0
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    print(f"\ndvc pull: {pull_s:.1f} s; no-op snakemake -n: {noop_s:.1f} s")
    check = must(run([sys.executable, "scripts/manifest.py", "check"], fresh_clone))
    assert ", 0 FAIL" in check.stdout


def test_corrupted_dvc_cache_object_is_named_and_never_checked_out(fresh_clone):
    lock = yaml.safe_load((fresh_clone / "dvc.lock").read_text())
    out = next(
        o for s in lock["stages"].values() for o in s["outs"] if o["path"].endswith(".parquet")
    )
    path, md5 = fresh_clone / out["path"], out["md5"]
    cache_dir = Path(dvc("cache", "dir", cwd=fresh_clone).stdout.strip())
    cached = cache_dir / "files" / "md5" / md5[:2] / md5[2:]
    cached.chmod(0o644)
    cached.write_bytes(cached.read_bytes()[: out["size"] // 2])  # truncated in the cache
    path.unlink()
    dvc("checkout", out["path"], cwd=fresh_clone)  # DVC copies the cache object as it is
    proc = run([sys.executable, "scripts/fetch_artifacts.py", "--no-pull"], fresh_clone)
    assert proc.returncode == 1
    assert f"TRUNCATED {out['path']}" in proc.stdout
    assert not path.exists() and not cached.exists()  # removed: never consumed
    # Running the one command again re-fetches it from the remote, intact.
    must(run([sys.executable, "scripts/fetch_artifacts.py"], fresh_clone))
    assert hashlib.md5(path.read_bytes()).hexdigest() == md5
    proc = must(run([str(BIN / "snakemake"), "-n", "--cores", "1"], fresh_clone))
    assert "Nothing to be done" in proc.stdout + proc.stderr
