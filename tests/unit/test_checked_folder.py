"""A cache folder is served only while its files match the sha256 recorded at write
(personalir.common.checked_folder, the model cache's guard); a damaged one is named, removed
and built again."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from personalir.common.checked_folder import (
    CHECKSUMS,
    checked_folder,
    folder_problem,
    write_checksums,
)

torch = pytest.importorskip("torch")


def _flip(path: Path, offset: int) -> None:
    """One flipped bit, size and modification time kept (as bit rot leaves a file)."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.fixture
def model_fill(tmp_path):
    """A fill that saves a tiny real causal LM (as the model cache saves SmolLM2), counting
    its calls."""
    from tests.fixtures.models import save_causal_lm

    calls = []

    def fill(folder: Path) -> None:
        calls.append(folder)
        save_causal_lm(folder, ["red", "guitar", "strap", "capo"], "llama", seed=3)

    fill.calls = calls
    return fill


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return {k: v.clone() for k, v in load_file(folder / "model.safetensors").items()}


def test_a_fresh_folder_is_filled_once_and_then_served(tmp_path, model_fill):
    target = tmp_path / "cache" / "key"
    assert checked_folder(target, model_fill) == target
    assert checked_folder(target, model_fill) == target
    assert len(model_fill.calls) == 1
    lines = (target / CHECKSUMS).read_text().splitlines()
    assert any(line.endswith("  model.safetensors") for line in lines)
    assert folder_problem(target) is None


def test_a_flipped_weight_is_named_dropped_and_rebuilt(tmp_path, model_fill, caplog):
    """The reproduction: one flipped byte in the cached weights changed a layer-0 weight and
    every job went on with it, with no warning."""
    target = tmp_path / "cache" / "key"
    checked_folder(target, model_fill)
    good = _weights(target)
    weights = target / "model.safetensors"
    _flip(weights, weights.stat().st_size - 7)  # inside the last tensor's data
    damaged = _weights(target)
    assert any(not torch.equal(good[k], damaged[k]) for k in good)  # the flip did change one
    with caplog.at_level(logging.WARNING, logger="personalir.common.checked_folder"):
        assert checked_folder(target, model_fill, label="model cache") == target
    assert len(model_fill.calls) == 2  # built again, not served
    assert f"model cache {target}: model.safetensors does not match its recorded sha256" in (
        caplog.text
    )
    rebuilt = _weights(target)
    assert all(torch.equal(good[k], rebuilt[k]) for k in good)
    assert not [p for p in target.parent.iterdir() if p.name != "key"]  # nothing left aside


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json is missing"),
        (lambda f: (f / "extra.bin").write_bytes(b"x"), "extra.bin is not in checksums.sha256"),
        (lambda f: (f / CHECKSUMS).unlink(), "has no checksums.sha256"),
        (
            lambda f: (f / CHECKSUMS).write_text("not a checksum line\n"),
            "checksums.sha256 line 1 is damaged",
        ),
        (
            lambda f: (f / "config.json").write_text((f / "config.json").read_text() + " "),
            "config.json does not match its recorded sha256",
        ),
    ],
    ids=["missing", "unlisted", "no_checksums", "damaged_checksums", "changed"],
)
def test_every_kind_of_damage_is_named(tmp_path, model_fill, damage, problem):
    target = tmp_path / "key"
    checked_folder(target, model_fill)
    damage(target)
    assert problem in folder_problem(target)
    checked_folder(target, model_fill)
    assert folder_problem(target) is None and len(model_fill.calls) == 2


def test_a_folder_filled_first_by_another_process_is_kept(tmp_path, model_fill):
    target = tmp_path / "key"

    def racing_fill(folder: Path) -> None:
        model_fill(folder)
        # Another process finishes its copy while this one is still writing.
        other = tmp_path / "other"
        model_fill(other)
        write_checksums(other)
        os.replace(other, target)

    assert checked_folder(target, racing_fill) == target
    assert folder_problem(target) is None
    assert [p.name for p in tmp_path.iterdir()] == ["key"]
