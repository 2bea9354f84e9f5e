"""The torch device a config key names: ``cpu``, ``auto``, ``cuda`` or ``cuda:<n>``.

Shared by the stages that put models on a device (``retrieval.device``, ``ttp.device``):
``auto`` is CUDA when a GPU is visible, else the CPU; ``cuda`` (or ``cuda:<n>``) without a
visible GPU fails at once, naming the config key, instead of deep inside a model call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

DEVICE_PATTERN = r"^(cpu|auto|cuda(:[0-9]+)?)$"


def resolve_device(name: str | None, key: str) -> str:
    """The device ``name`` (the value of config key ``key``) stands for on this machine.

    ``None`` and ``cpu`` are ``cpu`` (torch is not imported); ``auto`` is ``cuda`` when
    ``torch.cuda.is_available()``, else ``cpu``; ``cuda`` and ``cuda:<n>`` are returned as
    given when a GPU (that GPU) is visible, else a ValueError names ``key``. Another name
    (a schema may allow one, say ``mps``) is returned unchanged for torch to judge."""
    if name is None or name == "cpu":
        return "cpu"
    if not isinstance(name, str) or not name:
        raise ValueError(f"{key}: {name!r} is not a device (cpu, auto, cuda or cuda:<n>)")
    if not re.fullmatch(DEVICE_PATTERN, name):
        return name  # another torch device (say, mps): torch judges it
    import torch

    available = torch.cuda.is_available()
    if name == "auto":
        return "cuda" if available else "cpu"
    if not available:
        raise ValueError(
            f"{key} is {name!r} but torch sees no CUDA GPU on this machine; "
            f"set {key} to cpu (or auto) to run on the CPU"
        )
    if ":" in name and int(name.split(":", 1)[1]) >= torch.cuda.device_count():
        raise ValueError(
            f"{key} is {name!r} but torch sees {torch.cuda.device_count()} CUDA GPU(s)"
        )
    return name


# The TTP stage's device: the config key ``ttp.device``.
TTP_DEVICE_KEY = "ttp.device"


def ttp_device(ttp: Mapping | None) -> str:
    """The device of the ``ttp`` section (or of the part of it a rule passes): ``cpu`` when
    the key is absent; ``auto`` is CUDA when a GPU is visible; ``cuda`` without one raises a
    ValueError naming ``ttp.device`` (:func:`resolve_device`)."""
    return resolve_device((ttp or {}).get("device", "cpu"), TTP_DEVICE_KEY)


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
