"""Which torch build `make setup` installs: the CPU wheel, or the CUDA wheel of the same version.

The version is requirements.lock's torch pin (its public part: `torch==2.13.0+cpu` is 2.13.0).
The build:

- `TORCH=cpu` or `TORCH=cuda` (make variable or environment) decides;
- unset (or `auto`), the machine decides: the CUDA build where an NVIDIA driver is present
  (`nvidia-smi` runs, or the kernel module shows in /proc/driver/nvidia/version), else the CPU
  build;
- `TORCH_CUDA=cu126|cu128|cu130` picks the CUDA variant (and implies `TORCH=cuda`); unset, the
  driver and the GPUs pick it (`choose_variant`), and where no driver can be asked (a cluster's
  login node) it is `cu126`, the CUDA 12 build that runs on every driver from CUDA 12.0 on.

The CPU wheel comes from https://download.pytorch.org/whl/cpu and a CUDA wheel from
https://download.pytorch.org/whl/<variant>, after a try with pip's local sources only (its
configured find-links: a wheelhouse, or this project's development machines' CPU wheel), so that
nothing is downloaded when the wheel is already at hand.

    python3 scripts/torch_build.py choose --torch auto --state .venv/.torch-build
    .venv/bin/python scripts/torch_build.py install --state .venv/.torch-build

`choose` prints the choice and its reason, and rewrites the state file only when the choice
changes (so that make reinstalls only then); `install` installs the chosen wheel into the
interpreter that runs it and checks that this interpreter then imports that very build.
Standard library only: `choose` runs before the virtual environment exists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess  # nosec B404  # runs nvidia-smi and this interpreter's pip, fixed argv lists
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

BUILDS = ("cpu", "cuda")
INDEX = "https://download.pytorch.org/whl/{}"
# The CUDA builds of torch 2.13.0 on the PyTorch index (download.pytorch.org/whl/<variant>, local
# version `2.13.0+<variant>`) that this script chooses between, with the CUDA runtime each
# bundles. PyPI's own Linux wheel of 2.13.0 is a CUDA 13.0 build (its metadata requires
# cuda-toolkit==13.0.3). A driver runs builds of older CUDA versions and, within its major
# version, of newer minor versions too (CUDA's minor version compatibility), so a cu12x build
# needs a driver for CUDA 12.0 or newer, cu130 one for CUDA 13.0 or newer.
CUDA_VARIANTS = {"cu126": (12, 6), "cu128": (12, 8), "cu130": (13, 0)}
# Without a driver to ask (TORCH=cuda on a login node): the CUDA 12 build with the widest reach,
# every driver from R525 (CUDA 12.0) on, kernels up to Hopper and for GPUs older than Turing.
DEFAULT_VARIANT = "cu126"
# GPUs older than Turing (compute capability below 7.5) have kernels only in the cu126 build;
# Blackwell GPUs (10.0 and up) only in cu128 and newer.
TURING = (7, 5)
BLACKWELL = (10, 0)
# The oldest driver of each CUDA release (NVIDIA's CUDA toolkit release notes, "minimum required
# driver version", Linux): the CUDA version a driver supports when nvidia-smi does not say.
DRIVER_CUDA = [
    ((580, 65), (13, 0)),
    ((570, 26), (12, 8)),
    ((560, 28), (12, 6)),
    ((525, 60), (12, 0)),
]
PROC_VERSION = Path("/proc/driver/nvidia/version")
DRIVER_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?")


class ChoiceError(ValueError):
    """A setting this script refuses, or a machine no torch build of the pinned version fits."""


@dataclass(frozen=True)
class Probe:
    """What the machine says about NVIDIA GPUs: the driver's version (None: no driver), the newest
    CUDA version it supports, each GPU's compute capability, and where that was read."""

    driver: str | None = None
    cuda: tuple[int, int] | None = None
    capabilities: tuple[tuple[int, int], ...] = ()
    source: str = ""


@dataclass(frozen=True)
class Choice:
    build: str  # cpu | cuda
    variant: str  # cpu | cu126 | ...
    requirement: str  # torch==2.13.0+cu126
    index_url: str
    with_deps: bool  # the CPU wheel's dependencies come from the lock; a CUDA wheel's include
    reason: str = field(default="", compare=False)  # its NVIDIA libraries, absent from the lock

    def line(self) -> str:
        return (
            f"torch build: {self.build} ({self.requirement} from {self.index_url}): {self.reason}"
        )


def pinned_version(lock_text: str, where: str = "requirements.lock") -> str:
    """The public version of the lock's torch pin (`torch==2.13.0+cpu` -> `2.13.0`)."""
    for line in lock_text.splitlines():
        match = re.match(r"^torch==([0-9][^\s#;]*)", line.strip())
        if match:
            return match.group(1).split("+", 1)[0]
    raise ChoiceError(f"{where}: no `torch==<version>` line")


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def cuda_text(version: tuple[int, int]) -> str:
    return f"CUDA {version[0]}.{version[1]}"


def driver_cuda(driver: str) -> tuple[int, int] | None:
    """The newest CUDA version a Linux driver supports (None: older than CUDA 12's drivers)."""
    have = version_tuple(driver)
    return next((cuda for oldest, cuda in DRIVER_CUDA if have >= oldest), None)


def parse_nvidia_smi(banner: str, query: str) -> Probe:
    """A probe from `nvidia-smi`'s banner ("CUDA Version: 12.4") and from
    `nvidia-smi --query-gpu=driver_version,compute_cap --format=csv,noheader`."""
    rows = [
        [cell.strip() for cell in line.split(",")] for line in query.splitlines() if line.strip()
    ]
    driver = rows[0][0] if rows and DRIVER_VERSION.fullmatch(rows[0][0]) else None
    if driver is None:
        match = re.search(r"Driver Version:\s*([0-9.]+)", banner)
        driver = match.group(1) if match else None
    capabilities = tuple(
        tuple(int(x) for x in row[1].split(".")[:2])
        for row in rows
        if len(row) > 1 and re.fullmatch(r"\d+\.\d+", row[1])
    )
    match = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", banner)
    cuda = (int(match.group(1)), int(match.group(2))) if match else None
    if cuda is None and driver:
        cuda = driver_cuda(driver)
    return Probe(driver, cuda, capabilities, "nvidia-smi")


def parse_proc_version(text: str) -> Probe:
    """A probe from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module
    550.54.15 ..."): the kernel module is loaded, nvidia-smi is not on PATH."""
    match = re.search(r"Kernel Module.*?\s(\d{3,}\.\d+(?:\.\d+)?)\s", text)
    driver = match.group(1) if match else "unknown"
    return Probe(driver, driver_cuda(driver) if match else None, (), str(PROC_VERSION))


def probe_machine() -> Probe:
    """Ask this machine: `nvidia-smi` first, then the kernel module's version file."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            banner = subprocess.run(  # nosec B603  # nvidia-smi from PATH, fixed argv, no shell
                [smi], capture_output=True, text=True, timeout=60, check=True
            ).stdout
            query = subprocess.run(  # nosec B603  # as above
                [smi, "--query-gpu=driver_version,compute_cap", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            # an old nvidia-smi without `compute_cap` fails the query: the banner still tells
            return parse_nvidia_smi(banner, query.stdout if query.returncode == 0 else "")
        except (OSError, subprocess.SubprocessError):
            pass  # nvidia-smi present but no driver answers: the kernel module decides
    if PROC_VERSION.is_file():
        return parse_proc_version(PROC_VERSION.read_text(errors="replace"))
    where = "nvidia-smi failed" if smi else "no nvidia-smi on PATH"
    return Probe(source=f"{where}, no {PROC_VERSION}")


def choose_variant(probe: Probe) -> tuple[str, str]:
    """The CUDA variant for this driver and these GPUs, and why."""
    if probe.driver is None:
        return DEFAULT_VARIANT, (
            f"no NVIDIA driver here to match ({probe.source}): {DEFAULT_VARIANT}, which runs on"
            " every driver from CUDA 12.0 (R525) on; TORCH_CUDA=cu130 or cu128 for Blackwell GPUs"
        )
    found = f"NVIDIA driver {probe.driver} ({probe.source})"
    if probe.cuda is None or probe.cuda < (12, 0):
        supports = "an unknown CUDA version" if probe.cuda is None else cuda_text(probe.cuda)
        raise ChoiceError(
            f"{found} supports {supports}; the CUDA builds of torch need a driver for CUDA 12.0"
            " (R525) or newer"
        )
    found += f", {cuda_text(probe.cuda)}"
    if any(cap < TURING for cap in probe.capabilities):
        return "cu126", f"{found}, a GPU older than Turing: only cu126 has its kernels"
    if any(cap >= BLACKWELL for cap in probe.capabilities):
        if probe.cuda >= CUDA_VARIANTS["cu130"]:
            return "cu130", f"{found}, a Blackwell GPU"
        if probe.cuda >= CUDA_VARIANTS["cu128"]:
            return "cu128", f"{found}, a Blackwell GPU"
    if probe.cuda >= CUDA_VARIANTS["cu130"]:
        return "cu130", f"{found}: the newest build it runs (PyPI's default CUDA build)"
    return "cu126", f"{found}: a CUDA 12 driver runs cu126"


def choose(version: str, torch: str | None, cuda: str | None, probe: Probe) -> Choice:
    """The build for `TORCH` (cpu, cuda, auto or unset) and `TORCH_CUDA` (a variant or unset)."""
    requested = (torch or "auto").strip().lower()
    variant = (cuda or "").strip().lower()
    if requested not in BUILDS + ("auto",):
        raise ChoiceError(f"TORCH={torch!r}: use cpu, cuda or auto (unset: auto)")
    if variant and variant not in CUDA_VARIANTS:
        raise ChoiceError(
            f"TORCH_CUDA={cuda!r}: use one of {', '.join(CUDA_VARIANTS)} (unset: chosen)"
        )
    if variant and requested == "cpu":
        raise ChoiceError(
            f"TORCH=cpu with TORCH_CUDA={cuda}: a CUDA variant needs TORCH=cuda (or unset)"
        )
    cpu = Choice("cpu", "cpu", f"torch=={version}+cpu", INDEX.format("cpu"), False)
    if requested == "cpu":
        return replace(cpu, reason="TORCH=cpu")
    if requested == "auto" and not variant and probe.driver is None:
        return replace(cpu, reason=f"no NVIDIA driver found ({probe.source}); TORCH=cuda overrides")
    if variant:
        why = (
            f"TORCH_CUDA={variant}" if requested == "auto" else f"TORCH=cuda, TORCH_CUDA={variant}"
        )
        if probe.cuda is not None and probe.cuda < (CUDA_VARIANTS[variant][0], 0):
            why += f" (warning: this machine's driver supports only {cuda_text(probe.cuda)})"
    else:
        try:
            variant, because = choose_variant(probe)
        except ChoiceError as err:
            if requested == "cuda":
                raise ChoiceError(
                    f"TORCH=cuda: {err}: update the driver, name a build with TORCH_CUDA=,"
                    " or install the CPU build with TORCH=cpu"
                ) from None
            # auto: a GPU that no CUDA build of this version runs on still runs the CPU build
            return replace(cpu, reason=f"{err}: the CPU build; TORCH_CUDA=<variant> overrides")
        why = (
            f"TORCH={requested}; {because}"
            if requested == "cuda"
            else (f"an NVIDIA driver is present, TORCH=cpu overrides; {because}")
        )
    return Choice("cuda", variant, f"torch=={version}+{variant}", INDEX.format(variant), True, why)


def write_if_changed(path: Path, choice: Choice) -> bool:
    """Write the choice (without its reason) unless the file already holds it: its time then
    tells make whether torch must be reinstalled."""
    text = json.dumps({k: v for k, v in asdict(choice).items() if k != "reason"}, sort_keys=True)
    if path.is_file() and path.read_text() == text + "\n":
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n")
    tmp.replace(path)
    return True


def read_state(path: Path) -> Choice:
    data = json.loads(path.read_text())
    return Choice(**data)


def pip_commands(choice: Choice, python: str) -> list[list[str]]:
    """The install attempts, in order: pip's local sources only (its configured find-links),
    then the PyTorch index of the build. The CPU wheel goes in without dependencies (the lock
    pins them); a CUDA wheel brings its NVIDIA libraries and triton."""
    base = [python, "-m", "pip", "install", "-q"] + ([] if choice.with_deps else ["--no-deps"])
    return [
        base + ["--no-index", choice.requirement],
        base + ["--extra-index-url", choice.index_url, choice.requirement],
    ]


CHECK = """
import importlib.metadata, sys
want = sys.argv[1]
have = importlib.metadata.version("torch")
if have != want:
    sys.exit(f"torch {have} is installed, {want} was chosen")
import torch
cuda = torch.version.cuda
if want.split("+")[-1] != "cpu" and not cuda:
    sys.exit(f"torch {have} is not a CUDA build")
seen = torch.cuda.is_available() if cuda else False
extra = f" (CUDA {cuda}; a GPU visible here: {'yes' if seen else 'no'})" if cuda else ""
print(f"torch {have}{extra}")
"""


def install(choice: Choice, python: str) -> None:
    first, second = pip_commands(choice, python)
    local = subprocess.run(  # nosec B603  # this interpreter's pip, fixed argv, no shell
        first, capture_output=True, text=True
    )
    if local.returncode != 0:
        print(f"{choice.requirement}: not among pip's local wheels; from {choice.index_url}")
        subprocess.run(second, check=True)  # nosec B603  # as above
    version = choice.requirement.split("==", 1)[1]
    subprocess.run([python, "-c", CHECK, version], check=True)  # nosec B603  # as above


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    pick = sub.add_parser("choose", help="print the build for this machine and record it")
    pick.add_argument("--torch", default=os.environ.get("TORCH"), help="cpu, cuda or auto")
    pick.add_argument("--cuda", default=os.environ.get("TORCH_CUDA"), help="cu126, cu128, cu130")
    pick.add_argument("--lock", type=Path, default=Path("requirements.lock"))
    pick.add_argument("--state", type=Path, help="record the choice here (rewritten on change)")
    put = sub.add_parser("install", help="install the recorded choice into this interpreter")
    put.add_argument("--state", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "install":
        install(read_state(args.state), sys.executable)
        return 0
    try:
        choice = choose(
            pinned_version(args.lock.read_text(), str(args.lock)),
            args.torch,
            args.cuda,
            probe_machine(),
        )
    except (ChoiceError, OSError) as err:
        print(f"torch build: {err}", file=sys.stderr)
        return 2
    print(choice.line())
    if args.state is not None:
        write_if_changed(args.state, choice)
    return 0


if __name__ == "__main__":
    sys.exit(main())
