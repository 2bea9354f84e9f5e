"""Files that Hugging Face libraries write beside saved weights, made independent of the shell.

``save_pretrained`` copies keys of the loading call's environment into a saved
``tokenizer_config.json`` (``local_files_only`` follows ``HF_HUB_OFFLINE``). They say nothing
about the tokenizer, and left in they change a model folder's hash (the TTP embedding store's
model version, the fused retrievers' fingerprints) from one shell to another.
"""

from __future__ import annotations

import json
from pathlib import Path

from personalir.common.io import write_text

#: Keys of a saved ``tokenizer_config.json`` that record the environment, not the tokenizer.
ENVIRONMENT_TOKENIZER_KEYS = ("local_files_only",)


def stable_tokenizer_config(folder: str | Path) -> None:
    """Drop :data:`ENVIRONMENT_TOKENIZER_KEYS` from ``folder/tokenizer_config.json`` in place
    (a folder without one is left alone), keeping the format ``save_pretrained`` writes, so the
    same tokenizer saves the same bytes whether or not the saving process ran offline."""
    path = Path(folder) / "tokenizer_config.json"
    if not path.is_file():
        return
    config = json.loads(path.read_text(encoding="utf-8"))
    if not any(key in config for key in ENVIRONMENT_TOKENIZER_KEYS):
        return
    for key in ENVIRONMENT_TOKENIZER_KEYS:
        config.pop(key, None)
    write_text(path, json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
