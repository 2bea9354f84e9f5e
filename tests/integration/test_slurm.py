"""The workflow on a real SLURM scheduler: a one-node cluster on loopback.

scripts/slurm_local_cluster.sh brings up Debian's slurmctld, slurmd and munge with a `cpu`
and a `gpu` partition (the GPU a GRES on /dev/null). The data stage of a small sample world
then runs through `--profile profiles/slurm` (with the local overrides of
`--workflow-profile profiles/slurm-test`), with the SLURM executor plugin installed from
requirements-cluster.txt into a folder outside the venv's site-packages, so local runs never
load it. Checked: every job was submitted to SLURM and completed there (job ids from the
executor's log, each job's SLURM log, `scontrol show job`), CPU jobs went to `cpu`, a job
that asks for a `gpu` went to `gpu` and was given the GPU, and the outputs are
byte-identical to a local run.

Skips only where the cluster cannot be set up at all: not root, or neither apt-get nor the
SLURM and munge binaries.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from personalir.common.config import REPO_ROOT

from .small_run import (
    CONFIG_ARGS,
    DATA_TARGETS,
    env,
    local_run,
    manifest,
    small_workflow,
    snakemake_cmd,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLUSTER = REPO_ROOT / "scripts" / "slurm_local_cluster.sh"
PROFILE = ["--profile", str(REPO_ROOT / "profiles/slurm")]
PROFILE += ["--workflow-profile", str(REPO_ROOT / "profiles/slurm-test")]
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")
GPU_PROBE = """
rule all:
    input: "gpu.txt", "cpu.txt"

rule gpu_probe:
    output: "gpu.txt"
    resources: gpu=1, mem_mb=100, runtime=5
    shell: "echo $SLURM_JOB_ID $SLURM_JOB_PARTITION ${{CUDA_VISIBLE_DEVICES:-none}} > {output}"

rule cpu_probe:
    output: "cpu.txt"
    resources: mem_mb=100, runtime=5
    shell: "echo $SLURM_JOB_ID $SLURM_JOB_PARTITION ${{CUDA_VISIBLE_DEVICES:-none}} > {output}"
"""


def _cannot_run() -> str | None:
    if os.geteuid() != 0:
        return "needs root: installs and starts slurmctld, slurmd and munged"
    have_binaries = all(shutil.which(b) for b in ("slurmctld", "slurmd", "sbatch", "munged"))
    if not have_binaries and not shutil.which("apt-get"):
        return "needs apt-get to install SLURM and munge (or them installed)"
    return None


@pytest.fixture(scope="module")
def cluster():
    reason = _cannot_run()
    if reason:
        pytest.skip(reason)
    was_up = subprocess.run(["bash", str(CLUSTER), "status"], capture_output=True).returncode == 0
    up = subprocess.run(["bash", str(CLUSTER), "up"], capture_output=True, text=True)
    assert up.returncode == 0, f"cluster did not come up:\n{up.stdout}\n{up.stderr}"
    yield
    if not was_up:  # stop only what this test started
        subprocess.run(["bash", str(CLUSTER), "down"], capture_output=True)


@pytest.fixture(scope="module")
def plugin_path(cluster) -> Path:
    """The cluster extra, installed beside (not into) the venv's site-packages."""
    target = Path(sys.prefix) / "cluster-plugin"
    wanted = (REPO_ROOT / "requirements-cluster.txt").read_text()
    stamp = target / ".requirements-cluster.txt"
    if not stamp.exists() or stamp.read_text() != wanted:
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
            + ["-r", str(REPO_ROOT / "requirements-cluster.txt")],
            check=True,
        )
        stamp.write_text(wanted)
    return target


@pytest.fixture(scope="module")
def runs(plugin_path, tmp_path_factory):
    slurm_dir = small_workflow(tmp_path_factory.mktemp("slurm"))
    local_dir = small_workflow(tmp_path_factory.mktemp("local"))
    probe_dir = tmp_path_factory.mktemp("gpu_probe")
    (probe_dir / "Snakefile").write_text(GPU_PROBE)
    cluster_env = env(PYTHONPATH=str(plugin_path))
    started = time.monotonic()
    slurm = subprocess.Popen(
        snakemake_cmd(*PROFILE, *DATA_TARGETS, *CONFIG_ARGS),
        cwd=slurm_dir,
        env=cluster_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    probe = subprocess.Popen(
        snakemake_cmd(*PROFILE),
        cwd=probe_dir,
        env=cluster_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    local_run(local_dir, *DATA_TARGETS)  # the reference, meanwhile
    slurm_log, _ = slurm.communicate()
    wall = time.monotonic() - started
    probe_log, _ = probe.communicate()
    print(f"\nSLURM data stage (small sample, 1 domain): {wall:.0f} s wall")
    assert slurm.returncode == 0, slurm_log[-6000:]
    assert probe.returncode == 0, probe_log[-6000:]
    return {
        "slurm_dir": slurm_dir,
        "local_dir": local_dir,
        "probe_dir": probe_dir,
        "slurm_log": slurm_log,
        "probe_log": probe_log,
    }


def scontrol_job(job_id: str) -> dict[str, str]:
    out = subprocess.run(
        ["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True
    ).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


def test_every_job_ran_under_slurm(runs):
    log = runs["slurm_log"]
    rules_run = re.findall(r"^rule (\w+):$", log, re.M)
    assert "localrule" not in log, "no job may run on the submitting host"
    assert sorted(set(rules_run)) == [
        "ingest",
        "product_documents",
        "provenance",
        "sample_world",
        "user_sentences",
    ]
    submitted = SUBMITTED.findall(log)
    assert len(submitted) == len(rules_run), (len(submitted), len(rules_run))
    slurm_ids = [slurm_id for _, slurm_id, _ in submitted]
    assert len(set(slurm_ids)) == len(slurm_ids)
    for _, slurm_id, slurm_log in submitted:
        text = Path(slurm_log).read_text()
        assert "--executor slurm-jobstep" in text  # the job's own snakemake, inside SLURM
        job = scontrol_job(slurm_id)  # kept by slurmctld for MinJobAge after completion
        assert job.get("JobState") == "COMPLETED", (slurm_id, job.get("JobState"))
        assert job.get("Partition") == "cpu", (slurm_id, job.get("Partition"))


def test_slurm_outputs_are_byte_identical_to_local(runs):
    slurm, local = manifest(runs["slurm_dir"]), manifest(runs["local_dir"])
    assert any(p.endswith("/user_sentences.parquet") for p in slurm)
    assert any(p.endswith("/provenance.json") for p in slurm)
    differing = sorted(k for k in set(slurm) | set(local) if slurm.get(k) != local.get(k))
    assert not differing, differing


def test_gpu_job_goes_to_gpu_partition_with_a_gpu(runs):
    probe = runs["probe_dir"]
    gpu_id, gpu_partition, gpu_devices = (probe / "gpu.txt").read_text().split()
    cpu_id, cpu_partition, cpu_devices = (probe / "cpu.txt").read_text().split()
    assert (gpu_partition, cpu_partition) == ("gpu", "cpu")
    assert gpu_devices != "none" and cpu_devices == "none"
    gpu_job = scontrol_job(gpu_id)
    assert gpu_job.get("Partition") == "gpu"
    assert "gpu" in (gpu_job.get("TresPerNode", "") + gpu_job.get("TresPerJob", ""))
    assert scontrol_job(cpu_id).get("Partition") == "cpu"
