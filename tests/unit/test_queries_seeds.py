"""The shipped seed set: about a hundred valid attribute -> query examples for three domains."""

import json
from collections import Counter

import pytest

from personalir.queries.seeds import SeedError, load_seeds
from personalir.queries.terms import count_terms


def test_shipped_seed_set_is_valid_and_balanced():
    seeds = load_seeds()
    assert 95 <= len(seeds) <= 110
    by_domain = Counter(s["domain"] for s in seeds)
    assert set(by_domain) == {"Baby_Products", "Musical_Instruments", "Video_Games"}
    assert min(by_domain.values()) >= 30
    for s in seeds:
        values = [v for _, v in s["attributes"]]
        assert s["attributes"][0][0] == "Brand"
        assert count_terms(s["query"], values) == {v: 1 for v in values}
    # Varied sentence shapes, not one template: many distinct first words.
    assert len({s["query"].split()[0].lower() for s in seeds}) > 30
    assert load_seeds(domains=["Video_Games"]) == [s for s in seeds if s["domain"] == "Video_Games"]


def _write(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_bad_seeds_are_named(tmp_path):
    good = load_seeds()[0]
    path = tmp_path / "seeds.jsonl"
    _write(path, [good, {**good, "id": "x", "query": "nothing of it"}])
    with pytest.raises(SeedError, match=r"seeds.jsonl:2: query must name every value once"):
        load_seeds(path)
    _write(path, [good, good])
    with pytest.raises(SeedError, match="duplicate id"):
        load_seeds(path)
    _write(path, [{**good, "attributes": good["attributes"][:4]}])
    with pytest.raises(SeedError, match="five"):
        load_seeds(path)
