"""A small run of the real workflow (one domain, a reduced sample world) for the cluster,
DVC and reproducibility tests, which need several runs and must stay quick."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from personalir.common.provenance import build_manifest, default_artifacts

from .workflow import copy_workflow

DOMAIN = "Musical_Instruments"
SMALL_CONFIG = f"""# Reduced sample world for tests that run the workflow several times.
domains: [{DOMAIN}]
sample:
  n_products: 60
  n_users: 30
paper:
  build_pdf: false
  expected: null  # a reduced sample's values are not the sample's
ttp:  # Table 5's fixture sets from the one domain there is
  public:
    sets:
      Amazon: {{fixture_domain: {DOMAIN}}}
      KuaiSearch: {{fixture_domain: {DOMAIN}}}
"""
CONFIG_ARGS = ["--configfile", "config/config.yaml", "config/small.yaml"]
# The data stage of the domain plus the provenance of its folders.
DATA_TARGETS = [
    f"results/data/{DOMAIN}/{name}"
    for name in ("products.parquet", "user_sentences.parquet", "product_reviewers.parquet")
] + [f"results/{folder}/{DOMAIN}/provenance.json" for folder in ("sample_world", "data")]
BIN = Path(sys.executable).parent


def small_workflow(dest: Path) -> Path:
    copy_workflow(dest)
    (dest / "config" / "small.yaml").write_text(SMALL_CONFIG)
    return dest


def env(**extra: str) -> dict[str, str]:
    return dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        DVC_NO_ANALYTICS="1",
        PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
        **extra,
    )


def snakemake_cmd(*args: str) -> list[str]:
    return [str(BIN / "snakemake"), *args]


def run(cmd: list[str], cwd: Path, **extra_env: str):
    """``cmd`` in ``cwd``, with no time limit of its own: on a busy machine a run is slower, not
    wrong. pytest-timeout's per-test limit (pyproject.toml) is the backstop for a hang."""
    return subprocess.run(cmd, cwd=cwd, env=env(**extra_env), capture_output=True, text=True)


def must(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, proc.args))} failed ({proc.returncode}):\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


def local_run(work: Path, *targets: str, check: bool = True):
    # Targets before --configfile, which takes every following word as a file.
    proc = run(snakemake_cmd("--profile", "profiles/local", *targets, *CONFIG_ARGS), work)
    return must(proc) if check else proc


def manifest(work: Path) -> dict[str, str]:
    return build_manifest(work, default_artifacts(work))


@dataclass(frozen=True)
class KillAttempt:
    """One start of the workflow that was meant to be killed at `pattern`."""

    pattern: str
    killed: bool  # SIGKILLed while Snakemake was still running
    seen: bool  # the pattern appeared in the log
    returncode: int | None  # the exit status when it ended by itself (None: killed)
    log_tail: str

    def describe(self) -> str:
        if self.killed:
            return f"{self.pattern!r}: killed"
        how = "after" if self.seen else "before the pattern appeared, "
        return (
            f"{self.pattern!r}: not killed, Snakemake ended by itself {how}"
            f"(exit {self.returncode}); its log ended:\n{self.log_tail}"
        )


def run_and_kill(
    work: Path, targets: list[str], pattern: str, event: str | None = None
) -> KillAttempt:
    """Start the workflow and SIGKILL its whole process group (a crash: no cleanup handlers
    run) as soon as `pattern` has appeared in its log and then a file matching `event` (a glob
    under `work`: what the target job writes first, its log or an output) exists; with no
    `event`, at the pattern itself. The kill is timed by what the job has done, never by a
    delay, so it lands at the same point on a fast machine and on a busy one. Each attempt
    keeps its own log (`kill-<n>.log`), and the record says why a kill did not land."""
    n = len(list(work.glob("kill-*.log")))
    log_path = work / f"kill-{n}.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            snakemake_cmd("--profile", "profiles/local", *targets, *CONFIG_ARGS),
            cwd=work,
            env=env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    killed = seen = False
    while proc.poll() is None:
        seen = seen or pattern in log_path.read_text(errors="replace")
        if seen and (event is None or any(work.glob(event))):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
            except ProcessLookupError:  # it ended in the meantime
                pass
            break
        time.sleep(0.02)
    proc.wait()
    killed = killed and proc.returncode == -signal.SIGKILL
    text = log_path.read_text(errors="replace")
    seen = seen or pattern in text
    tail = "\n".join(text.splitlines()[-25:])
    return KillAttempt(pattern, killed, seen, None if killed else proc.returncode, tail)
