"""config/rehearsal.yaml laid over config/paper.yaml changes only the models, the data source
with its volumes, and the devices: the two merged, validated configurations compared key by
key against an allow-list that gives the reason for each key that differs."""

import re
from pathlib import Path

import pytest
import yaml

from personalir.common.config import deep_merge, validate_config
from personalir.rehearsal import standins

REPO = Path(__file__).resolve().parents[2]
MODELS = "results-rehearsal/rehearsal/models"

# key path (regex over the dotted path) -> why the rehearsal changes it.
ALLOWED = {
    # bookkeeping: where the run writes and what its tables call it
    r"label": "names the rehearsal in captions and provenance, so no output passes for the paper's",
    r"results_dir": "its own results root, so rehearsal outputs never mix with the paper run's",
    # models
    r"errors\.gec\.gector\.(model|transformer_model)": "model: GECToR stand-in",
    r"errors\.gec\.gector\.verb_dict": "model: the stand-in GECToR's verb dictionary",
    r"queries\.lm\.model": "model: Qwen2.5 stand-in",
    r"queries\.filters\.semantic\.model": "model: MiniLM stand-in",
    r"retrieval\.retrievers\.\w+\.model": "model: retriever and reranker stand-ins",
    r"ttp\.(history\.relevance|backbone|dense)\.model": "model: TTP stand-ins",
    # data source and volumes
    r"data\.source": "data source: the sample-world generator instead of the downloads",
    r"sample\.(n_products|n_users)": "data volume: the paper's corpus size and user count",
    r"ttp\.personalwab_dir": "data source: PersonalWAB-format stand-in at its released size",
    r"ttp\.public\.sets\.\w+\.dir": "data source: released-format stand-ins at their sizes",
    # devices
    r"(errors\.gec\.gector|queries\.lm|retrieval|ttp)\.device": "device: the CPU (no GPU here)",
}


def merged(*names: str) -> dict:
    """config/<names> laid over each other, as Snakemake merges `--configfile` files over
    config/config.yaml, then validated (defaults filled)."""
    config: dict = {}
    for name in ("config.yaml", *names):
        text = (REPO / "config" / name).read_text(encoding="utf-8")
        config = deep_merge(config, yaml.safe_load(text))
    return validate_config(config)


def flat(node, prefix: str = "") -> dict:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            out.update(flat(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: node}


def differing(a: dict, b: dict) -> dict[str, tuple]:
    fa, fb = flat(a), flat(b)
    return {k: (fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)}


def reason(key: str) -> str | None:
    return next((why for pattern, why in ALLOWED.items() if re.fullmatch(pattern, key)), None)


@pytest.fixture(scope="module")
def diff() -> dict[str, tuple]:
    return differing(merged("paper.yaml"), merged("paper.yaml", "rehearsal.yaml"))


def test_only_models_data_and_devices_differ(diff):
    unexplained = {k: v for k, v in diff.items() if reason(k) is None}
    assert not unexplained, f"the rehearsal changes keys it should not: {unexplained}"
    # every allowed kind of change is there (the allow-list holds no dead entry)
    dead = [p for p in ALLOWED if not any(re.fullmatch(p, k) for k in diff)]
    assert not dead, f"allow-list entries that match no difference: {dead}"


def test_every_hub_model_is_replaced_by_its_stand_in(diff):
    hub = standins.hub_models(merged("paper.yaml"))
    for key, name in hub.items():
        paper_value, rehearsal_value = diff[key]
        assert paper_value == name
        folder = standins.folder_name(standins.repo_of(name))
        assert rehearsal_value.startswith(f"{MODELS}/{folder}"), key
    # and no hub model is left in the rehearsal
    assert standins.hub_models(merged("paper.yaml", "rehearsal.yaml")) == {}


def test_the_paper_settings_stay(diff):
    rehearsal = merged("paper.yaml", "rehearsal.yaml")
    # a few of the settings the issue names: batch sizes, lengths, group size, N, the judge
    assert rehearsal["retrieval"]["batch_size"] == 64
    assert rehearsal["ttp"]["dense"]["max_length"] == 512
    assert rehearsal["ttp"]["rl"]["group_size"] == 8
    assert rehearsal["ttp"]["history"]["n"] == 10
    assert rehearsal["validation"]["judge"]["server"] == "remote"
    assert diff["sample.n_products"] == (300, 200000)


def test_the_checker_sees_a_change_it_does_not_allow():
    a = {"ttp": {"rl": {"group_size": 8}, "device": "cuda"}}
    b = {"ttp": {"rl": {"group_size": 4}, "device": "cpu"}}
    keys = differing(a, b)
    assert keys == {"ttp.device": ("cuda", "cpu"), "ttp.rl.group_size": (8, 4)}
    assert reason("ttp.device") and reason("ttp.rl.group_size") is None
