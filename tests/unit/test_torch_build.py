"""`scripts/torch_build.py`: which torch build `make setup` installs, decided without a GPU.

The machine's answers (nvidia-smi's banner and query, /proc/driver/nvidia/version) are inline
text, so every branch runs here: no driver, a driver of each CUDA generation, GPUs older than
Turing and Blackwell ones, `TORCH=cpu|cuda` overriding the guess both ways, `TORCH_CUDA`, and
the values that are refused. The install commands are checked as argv lists (nothing is
installed), and the state file make reads is rewritten only when the choice changes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time

import pytest

from personalir.common.config import REPO_ROOT

SPEC = importlib.util.spec_from_file_location(
    "torch_build", REPO_ROOT / "scripts" / "torch_build.py"
)
tb = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = tb  # dataclasses look their module up there
SPEC.loader.exec_module(tb)

VERSION = "2.13.0"
NO_DRIVER = tb.Probe(source="no nvidia-smi on PATH, no /proc/driver/nvidia/version")
# nvidia-smi's banner on an H100 node whose driver supports CUDA 12.4 (R550), and its query.
BANNER_550 = """\
Mon Dec  7 20:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
"""
QUERY_H100 = "550.54.15, 9.0\n"
BANNER_580 = "| NVIDIA-SMI 580.82.07    Driver Version: 580.82.07    CUDA Version: 13.0 |\n"
BANNER_570 = "| NVIDIA-SMI 570.86.10    Driver Version: 570.86.10    CUDA Version: 12.8 |\n"
BANNER_470 = "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4 |\n"
PROC_550 = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)
PROC_OPEN_580 = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build\n"
)


def smi(banner: str, query: str = "") -> tb.Probe:
    return tb.parse_nvidia_smi(banner, query)


# ------------------------------------------------------------------------------ probes
def test_nvidia_smi_banner_and_query_are_read():
    probe = smi(BANNER_550, QUERY_H100)
    assert probe.driver == "550.54.15"
    assert probe.cuda == (12, 4)
    assert probe.capabilities == ((9, 0),)
    two = smi(BANNER_550, "550.54.15, 8.0\n550.54.15, 7.0\n")
    assert two.capabilities == ((8, 0), (7, 0))


def test_an_old_nvidia_smi_without_compute_cap_falls_back_to_the_banner():
    # `compute_cap` unknown to the query: probe_machine passes no query text; a garbage
    # first cell is not taken for a driver version either
    for query in ("", 'Field "compute_cap" is not a valid field to query.\n'):
        probe = smi(BANNER_550, query)
        assert (probe.driver, probe.cuda, probe.capabilities) == ("550.54.15", (12, 4), ())


def test_banner_without_cuda_version_maps_the_driver():
    probe = smi("Driver Version: 570.86.10\n", "570.86.10, 10.0\n")
    assert probe.cuda == (12, 8)
    assert tb.driver_cuda("580.65.06") == (13, 0)
    assert tb.driver_cuda("560.28.03") == (12, 6)
    assert tb.driver_cuda("535.104.05") == (12, 0)
    assert tb.driver_cuda("470.82.01") is None


def test_proc_version_file_is_read():
    probe = tb.parse_proc_version(PROC_550)
    assert (probe.driver, probe.cuda) == ("550.54.15", (12, 0))
    assert tb.parse_proc_version(PROC_OPEN_580).cuda == (13, 0)
    unknown = tb.parse_proc_version("NVRM version: something else\n")
    assert unknown.driver == "unknown" and unknown.cuda is None


def test_probe_machine_without_a_driver(monkeypatch, tmp_path):
    monkeypatch.setattr(tb.shutil, "which", lambda name: None)
    monkeypatch.setattr(tb, "PROC_VERSION", tmp_path / "absent")
    probe = tb.probe_machine()
    assert probe.driver is None
    assert "no nvidia-smi on PATH" in probe.source


def test_probe_machine_runs_nvidia_smi(monkeypatch, tmp_path):
    fake = tmp_path / "nvidia-smi"
    fake.write_text(
        '#!/bin/sh\nif [ "$#" -eq 0 ]; then printf "%s" "$BANNER"; else printf "%s" "$QUERY"; fi\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("BANNER", BANNER_580)
    monkeypatch.setenv("QUERY", "580.82.07, 10.0\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    probe = tb.probe_machine()
    assert (probe.driver, probe.cuda, probe.capabilities) == ("580.82.07", (13, 0), ((10, 0),))


def test_a_failing_nvidia_smi_leaves_the_kernel_module_to_decide(monkeypatch, tmp_path):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    proc = tmp_path / "version"
    monkeypatch.setattr(tb, "PROC_VERSION", proc)
    assert tb.probe_machine().driver is None
    proc.write_text(PROC_550)
    assert tb.probe_machine().driver == "550.54.15"


# ------------------------------------------------------------------------------ choices
def test_no_driver_gives_the_cpu_wheel():
    choice = tb.choose(VERSION, None, None, NO_DRIVER)
    assert (choice.build, choice.requirement) == ("cpu", "torch==2.13.0+cpu")
    assert choice.index_url == "https://download.pytorch.org/whl/cpu"
    assert choice.with_deps is False  # its dependencies are the lock's
    assert "no NVIDIA driver found" in choice.reason and "TORCH=cuda" in choice.reason
    assert tb.choose(VERSION, "auto", "", NO_DRIVER) == choice
    assert tb.choose(VERSION, "", None, NO_DRIVER) == choice


def test_a_driver_gives_the_cuda_wheel_of_the_same_version():
    choice = tb.choose(VERSION, None, None, smi(BANNER_550, QUERY_H100))
    assert (choice.build, choice.variant) == ("cuda", "cu126")
    assert choice.requirement == "torch==2.13.0+cu126"
    assert choice.index_url == "https://download.pytorch.org/whl/cu126"
    assert choice.with_deps is True  # the NVIDIA libraries and triton come with it
    assert "550.54.15" in choice.reason and "CUDA 12.4" in choice.reason
    assert "TORCH=cpu overrides" in choice.reason


@pytest.mark.parametrize(
    ("banner", "query", "variant"),
    [
        (BANNER_580, "580.82.07, 9.0\n", "cu130"),  # CUDA 13 driver, Hopper
        (BANNER_580, "580.82.07, 10.0\n", "cu130"),  # CUDA 13 driver, Blackwell
        (BANNER_570, "570.86.10, 10.0\n", "cu128"),  # CUDA 12.8 driver, Blackwell
        (BANNER_570, "570.86.10, 8.0\n", "cu126"),  # CUDA 12.8 driver, Ampere
        (BANNER_580, "580.82.07, 7.0\n", "cu126"),  # V100 (Volta): only cu126 has its kernels
        (BANNER_580, "580.82.07, 9.0\n580.82.07, 6.1\n", "cu126"),  # one Pascal GPU among them
        (BANNER_550, "", "cu126"),  # capabilities unknown
    ],
)
def test_the_variant_follows_driver_and_gpus(banner, query, variant):
    choice = tb.choose(VERSION, None, None, smi(banner, query))
    assert choice.variant == variant
    assert choice.requirement == f"torch==2.13.0+{variant}"


def test_torch_cpu_overrides_a_driver():
    choice = tb.choose(VERSION, "cpu", None, smi(BANNER_550, QUERY_H100))
    assert (choice.build, choice.requirement, choice.reason) == (
        "cpu",
        "torch==2.13.0+cpu",
        "TORCH=cpu",
    )
    assert tb.choose(VERSION, " CPU ", None, smi(BANNER_550)).build == "cpu"


def test_torch_cuda_overrides_no_driver():
    # a cluster's login node: no GPU here, the GPU nodes share the venv
    choice = tb.choose(VERSION, "cuda", None, NO_DRIVER)
    assert (choice.build, choice.variant) == ("cuda", tb.DEFAULT_VARIANT)
    assert choice.reason.startswith("TORCH=cuda; no NVIDIA driver here to match")


def test_torch_cuda_names_the_variant_and_implies_cuda():
    choice = tb.choose(VERSION, None, "cu130", NO_DRIVER)
    assert (choice.build, choice.requirement) == ("cuda", "torch==2.13.0+cu130")
    assert choice.index_url == "https://download.pytorch.org/whl/cu130"
    assert tb.choose(VERSION, "cuda", "CU128", NO_DRIVER).requirement == "torch==2.13.0+cu128"
    # a variant the driver cannot run is installed as asked, with a warning
    warned = tb.choose(VERSION, "cuda", "cu130", smi(BANNER_550, QUERY_H100))
    assert warned.variant == "cu130" and "warning" in warned.reason and "CUDA 12.4" in warned.reason


@pytest.mark.parametrize(
    ("torch", "cuda", "message"),
    [
        ("gpu", None, "TORCH='gpu': use cpu, cuda or auto"),
        ("rocm", None, "TORCH='rocm'"),
        ("cuda", "cu118", "TORCH_CUDA='cu118': use one of cu126, cu128, cu130"),
        ("cpu", "cu126", "TORCH=cpu with TORCH_CUDA=cu126"),
    ],
)
def test_unknown_or_contradictory_settings_are_refused(torch, cuda, message):
    with pytest.raises(tb.ChoiceError) as err:
        tb.choose(VERSION, torch, cuda, NO_DRIVER)
    assert message in str(err.value)


def test_a_driver_too_old_for_every_cuda_build():
    old = smi(BANNER_470, "470.82.01, 7.0\n")
    with pytest.raises(tb.ChoiceError, match="CUDA 11.4.*CUDA 12.0 .R525. or newer.*TORCH=cpu"):
        tb.choose(VERSION, "cuda", None, old)
    # guessing, it falls back to the CPU build and says why
    choice = tb.choose(VERSION, None, None, old)
    assert choice.build == "cpu" and "470.82.01" in choice.reason


def test_the_version_is_the_locks():
    lock = "numpy==2.4.6\ntorch==2.13.0+cpu\ntorchvision==0.28.0+cpu\n"
    assert tb.pinned_version(lock) == "2.13.0"
    assert tb.pinned_version((REPO_ROOT / "requirements.lock").read_text()) == VERSION
    with pytest.raises(tb.ChoiceError, match="lock.txt: no `torch==<version>` line"):
        tb.pinned_version("numpy==2.4.6\n", "lock.txt")


# ------------------------------------------------------------------------------ install
def test_install_commands_try_local_wheels_first_then_the_builds_index():
    cpu = tb.choose(VERSION, "cpu", None, NO_DRIVER)
    local, index = tb.pip_commands(cpu, "/venv/bin/python")
    assert local == [
        "/venv/bin/python", "-m", "pip", "install", "-q", "--no-deps", "--no-index",
        "torch==2.13.0+cpu",
    ]  # fmt: skip
    assert index[-3:] == [
        "--extra-index-url",
        "https://download.pytorch.org/whl/cpu",
        "torch==2.13.0+cpu",
    ]
    cuda = tb.choose(VERSION, "cuda", "cu126", NO_DRIVER)
    local, index = tb.pip_commands(cuda, "py")
    assert "--no-deps" not in local and "--no-deps" not in index
    assert index[-3:] == [
        "--extra-index-url",
        "https://download.pytorch.org/whl/cu126",
        "torch==2.13.0+cu126",
    ]


def test_state_is_rewritten_only_when_the_choice_changes(tmp_path):
    state = tmp_path / "venv" / ".torch-build"
    cpu = tb.choose(VERSION, None, None, NO_DRIVER)
    assert tb.write_if_changed(state, cpu) is True
    assert json.loads(state.read_text())["requirement"] == "torch==2.13.0+cpu"
    past = time.time() - 100
    os.utime(state, (past, past))
    # the same choice, reached another way (another reason): the file keeps its time
    assert tb.write_if_changed(state, tb.choose(VERSION, "cpu", None, NO_DRIVER)) is False
    assert state.stat().st_mtime == pytest.approx(past)
    cuda = tb.choose(VERSION, "cuda", None, NO_DRIVER)
    assert tb.write_if_changed(state, cuda) is True
    assert state.stat().st_mtime > past
    assert tb.read_state(state) == cuda


def test_choose_prints_the_choice_and_refuses_with_status_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tb, "probe_machine", lambda: NO_DRIVER)
    lock = tmp_path / "requirements.lock"
    lock.write_text("torch==2.13.0+cpu\n")
    state = tmp_path / "state"
    args = ["choose", "--lock", str(lock), "--state", str(state)]
    assert tb.main([*args, "--torch", "auto", "--cuda", ""]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "torch build: cpu (torch==2.13.0+cpu from https://download.pytorch.org/whl/cpu)"
    )
    assert tb.main([*args, "--torch", "cuda"]) == 0
    assert "torch build: cuda (torch==2.13.0+cu126" in capsys.readouterr().out
    assert tb.read_state(state).variant == "cu126"
    assert tb.main([*args, "--torch", "gpu"]) == 2
    assert "TORCH='gpu'" in capsys.readouterr().err
    assert tb.read_state(state).variant == "cu126"  # a refused setting leaves the record alone
