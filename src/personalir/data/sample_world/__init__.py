"""The embedded synthetic sample world: Amazon-Reviews-2023-shaped data with a planted truth.

For one domain, :func:`build_world` draws products, users with planted syntactic styles,
writing-error habits and brand/colour/style preferences, and their chronological reviews
(:mod:`.world`); :func:`write_world` and :func:`generate_domain` write the world as
``<Domain>.jsonl``, ``meta_<Domain>.jsonl`` and ``planted_truth.json`` (:mod:`.files`), and
:func:`write_search_log` its product-search log (:mod:`.search_log`). The ``sample_world``
rule runs them (``workflow_scripts/sample_world.py``).

The domains and the language of the reviews are data shipped with the package:
``domains/<Domain>.yaml`` (one file per domain, :mod:`.domains`) and ``tables/*.yaml`` (the
sentence constructions and word lists shared by every domain, :mod:`.constructions`);
docs/extending.md ("A new domain") says how to add one. The modules:

- :mod:`.model`: the world's records, the generator's knobs and the seeded draws;
- :mod:`.confusability`: the knobs of the confusable catalogue;
- :mod:`.catalogue`, :mod:`.families`: products, then product families, lookalikes and
  accessories;
- :mod:`.users`: users and their planted habits and tastes;
- :mod:`.writing`, :mod:`.mechanisms`: review sentences and the injected writing errors;
- :mod:`.datafile`: strict reading of the YAML data files.
"""

from personalir.data.sample_world.confusability import ConfusabilityParams
from personalir.data.sample_world.files import (
    GENERATOR_NAME,
    GENERATOR_VERSION,
    generate_domain,
    meta_record,
    planted_truth,
    review_record,
    write_world,
)
from personalir.data.sample_world.search_log import SearchLogParams, write_search_log
from personalir.data.sample_world.world import CONFUSABILITY, DOMAINS, build_world

__all__ = [
    "CONFUSABILITY",
    "DOMAINS",
    "GENERATOR_NAME",
    "GENERATOR_VERSION",
    "ConfusabilityParams",
    "SearchLogParams",
    "build_world",
    "generate_domain",
    "meta_record",
    "planted_truth",
    "review_record",
    "write_search_log",
    "write_world",
]
