"""Where the TTP stage puts its models and tensors: the config key ``ttp.device``."""

from __future__ import annotations

from collections.abc import Mapping

from personalir.common.device import resolve_device

DEVICE_KEY = "ttp.device"


def ttp_device(ttp: Mapping | None) -> str:
    """The device of the ``ttp`` section (or of the part of it a rule passes): ``cpu`` when
    the key is absent; ``auto`` is CUDA when a GPU is visible; ``cuda`` without one raises a
    ValueError naming ``ttp.device`` (:func:`personalir.common.device.resolve_device`)."""
    return resolve_device((ttp or {}).get("device", "cpu"), DEVICE_KEY)


def to_device(model, device: str):
    """``model`` moved to ``device``; on the CPU (where TTP loads every model) untouched."""
    if device == "cpu":
        return model
    return model.to(device)


def use_cuda_index(device) -> None:
    """Make ``cuda:<n>`` torch's current GPU, so libraries that place on plain ``cuda``
    (accelerate, TRL) use the configured one."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)
