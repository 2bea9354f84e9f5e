"""Stand-in TTP sets of the rehearsal (personalir.rehearsal.data): a sample-world domain at a
given size written in PersonalWAB's format and read back by the stage's loader."""

import pytest

from personalir.rehearsal.data import SET_KEYS, check_sets, write_standin_set
from personalir.ttp.inputs.data import personalwab_examples

SEARCH_LOG = {
    "searches_per_user": 2,
    "label_shares": {"General": 0.35, "Broad": 0.35, "LongTail": 0.30},
    "misspell_share": 0.15,
    "broad_min_matches": 6,
    "broad_min_brands": 3,
    "longtail_quantile": 0.5,
    "max_gap_days": 90.0,
}


def test_a_personalwab_stand_in_has_the_requested_volume(tmp_path):
    spec = {
        "format": "personalwab",
        "domain": "Musical_Instruments",
        "n_products": 80,
        "n_users": 12,
        "test_share": 0.25,
        "source": "test",
    }
    report = write_standin_set(
        spec, seed=7, search_log=SEARCH_LOG, out_dir=tmp_path / "pw", min_sentences_per_user=10
    )
    assert report["synthetic"] is True
    assert report["world"]["products"] == 80 and report["world"]["users"] == 12
    written = report["written"]
    # every user searches twice; the split is by user
    assert written["tasks"]["train"] + written["tasks"]["test"] == 24
    assert written["products"] == 80
    assert sorted(p.name for p in (tmp_path / "pw").iterdir() if p.name[0] != ".") == [
        "all_products.json",
        "user_history.json",
        "user_instructions.json",
    ]
    examples, corpus = personalwab_examples(data_dir=tmp_path / "pw")
    assert len(corpus) == 80
    assert sum(e.split == "test" for e in examples) == written["tasks"]["test"]


def test_a_set_without_its_sizes_is_refused():
    with pytest.raises(ValueError, match=r"f\.yaml: set 'X' must give exactly .*n_users"):
        check_sets({"X": {k: 1 for k in SET_KEYS if k != "n_users"}}, "f.yaml")
    with pytest.raises(ValueError, match="must map set names"):
        check_sets(None, "f.yaml")
