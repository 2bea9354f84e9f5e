"""Parity of our bm25s BM25 with Lucene's BM25 (pyserini's Anserini jar) on the small world.

Both index the very same tokens (``lucene_bm25`` with ``analyzer: bm25s`` indexes bm25s'
tokens pre-tokenized), so only the scoring differs. Lucene stores a document's length in one
byte (SmallFloat), bm25s uses exact lengths, so scores differ slightly. Stated tolerances:

* the same documents are retrieved for every query (those sharing a term with it);
* every score within 5% (relative) of Lucene's;
* mean top-10 overlap >= 0.95 and R@10 within 0.02 (absolute).

Lucene runs in a child process: a JVM loaded into the test process (pyjnius) installs its own
signal handlers, and native code run later in the same process (torch, spaCy) then crashes.
"""

import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from personalir.retrieval.base import QueryText
from personalir.retrieval.corpus import load_corpus
from personalir.retrieval.lexical import BM25Retriever
from tests.fixtures.queries import toy_benchmark_from_products

pytest.importorskip("pyserini")
pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="no Java runtime")

LUCENE_CHILD = textwrap.dedent(
    """
    import json, sys
    from personalir.retrieval.base import QueryText
    from personalir.retrieval.corpus import load_corpus
    from personalir.retrieval.lexical import LuceneBM25Retriever

    products, queries_path, out = sys.argv[1:4]
    queries = [QueryText(q, t) for q, t in json.load(open(queries_path))]
    lucene = LuceneBM25Retriever()
    lucene.index(load_corpus(products))
    try:
        ranking = lucene.rank(queries, 200)
    finally:
        lucene.close()
    json.dump(ranking, open(out, "w"))
    """
)


def lucene_ranking(products, queries, tmp_path) -> dict:
    qpath, out = tmp_path / "queries.json", tmp_path / "lucene.json"
    qpath.write_text(json.dumps([[q.query_id, q.text] for q in queries]))
    proc = subprocess.run(
        [sys.executable, "-c", LUCENE_CHILD, str(products), str(qpath), str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {q: [(d, float(s)) for d, s in docs] for q, docs in json.loads(out.read_text()).items()}


def test_bm25s_matches_lucene_bm25(small_world, tmp_path):
    corpus = load_corpus(small_world["products"])
    records = toy_benchmark_from_products(
        str(small_world["products"]), small_world["domain"], seed=5
    )
    queries = [QueryText.from_record(r) for r in records]
    ours = BM25Retriever()
    ours.index(corpus)
    a, b = ours.rank(queries, 200), lucene_ranking(small_world["products"], queries, tmp_path)
    overlaps, rel_diffs, hits_a, hits_b = [], [], [], []
    for q in queries:
        sa, sb = dict(a[q.query_id]), dict(b[q.query_id])
        assert set(sa) == set(sb), q.query_id
        rel_diffs += [abs(sa[d] - sb[d]) / sb[d] for d in sb]
        top_a = [d for d, _ in a[q.query_id][:10]]
        top_b = [d for d, _ in b[q.query_id][:10]]
        overlaps.append(len(set(top_a) & set(top_b)) / max(1, len(top_b)))
        hits_a.append(q.query_id.split(":")[1] in top_a)
        hits_b.append(q.query_id.split(":")[1] in top_b)
    assert max(rel_diffs) <= 0.05
    assert np.mean(overlaps) >= 0.95
    assert abs(np.mean(hits_a) - np.mean(hits_b)) <= 0.02
