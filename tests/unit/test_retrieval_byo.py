"""Bring-your-own evaluation (``pqb-evaluate``) on a tiny released setting (tests/fixtures/byo.py):
both release formats, an unknown product, unpaired queries, a meta catalogue with ``details``,
the flag named in errors, the console counts, the help and the BM25 tie orders; the query
export, the summary table and summary.json, an empty run allowed, a class in the current
folder, the download policy. (Input errors: test_retrieval_byo_inputs.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import yaml

from personalir.common.config import REPO_ROOT
from personalir.queries.benchmark_format import (
    BenchmarkFormatError,
    from_released,
    read_released,
    to_released,
    write_benchmark,
)
from personalir.retrieval.base import QueryText
from personalir.retrieval.byo import write_query_export
from personalir.retrieval.byo_args import split_command
from personalir.retrieval.corpus import corpus_from_texts
from personalir.retrieval.evaluate import OFFLINE_VARIABLES, build_parser, download_policy, main
from personalir.retrieval.lexical import BM25Retriever
from tests.fixtures import byo

D = "Musical_Instruments"


@pytest.fixture(autouse=True)
def _offline_variables_restored(monkeypatch):
    """The command forces the hub's offline variables: each test gets them back as they were."""
    for name in OFFLINE_VARIABLES:
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def files(tmp_path):
    return {
        "meta": byo.write_catalogue(tmp_path / f"meta_{D}.jsonl"),
        "released": byo.write_released(tmp_path / f"released_{D}.json"),
        "v0_json": byo.write_released_v0(tmp_path / f"v0_{D}.json", jsonl=False),
        "v0_jsonl": byo.write_released_v0(tmp_path / f"v0_{D}.jsonl", jsonl=True),
        "config": byo.write_small_config(tmp_path / "config.yaml"),
        "out": tmp_path / "out",
    }


def _argv(files, queries, *extra, query_format="released"):
    return [
        "--domains", D,
        "--meta", str(files["meta"]).replace(D, "{domain}"),
        "--queries", str(queries).replace(D, "{domain}"),
        "--query-format", query_format,
        "--config", str(files["config"]),
        "--out", str(files["out"]),
        *extra,
    ]  # fmt: skip


# --- the release formats --------------------------------------------------------------------


def test_current_format_counts_unpaired_queries():
    recs = from_released(byo.RELEASED, D)
    kinds = pd.Series([r["kind"] for r in recs]).value_counts().to_dict()
    assert kinds == {"writing_error": 6, "syntactic": 4, "unpaired": 1}
    (single,) = [r for r in recs if r["kind"] == "unpaired"]
    assert (single["product"], single["user_id"], single["role"]) == ("B0002", "u3", "single")
    assert single["text"] == "yamaha digital piano"
    # u4 (B0003) is alone too but has a typo: it is in a writing-error pair, not unpaired
    assert {r["role"] for r in recs if r["product"] == "B0003"} == {"clean", "error"}


def test_unpaired_records_round_trip(tmp_path):
    recs = from_released(byo.RELEASED, D)
    assert write_benchmark(tmp_path / "b.jsonl", recs) == 11  # check_pairs accepts a single
    assert to_released(recs) == byo.RELEASED


@pytest.mark.parametrize("jsonl", [False, True])
def test_older_format_is_recognised_as_list_or_jsonl(files, jsonl):
    path = files["v0_jsonl" if jsonl else "v0_json"]
    data, found = read_released(path)
    assert found == "released-v0"
    assert read_released(path, "released-v0") == (data, "released-v0")
    assert data["B0002"] == [
        {"asin": "B0002", "uid": "u3", "syntax_query": "yamaha digital piano", "typo_query": None}
    ]
    kinds = pd.Series([r["kind"] for r in from_released(path, D)]).value_counts().to_dict()
    assert kinds == {"syntactic": 4, "unpaired": 2}


def test_release_format_errors_name_the_file_and_record(files, tmp_path):
    with pytest.raises(BenchmarkFormatError, match="current release format, not released-v0"):
        read_released(files["released"], "released-v0")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"asin": "B1", "uid": "u", "query": "x y"}\n{"asin": "B1", "uid": "v"}\n')
    with pytest.raises(
        BenchmarkFormatError, match=r"bad.jsonl: record 2: missing field\(s\) \['query'\]"
    ):
        read_released(bad)
    bad.write_text('{"asin": "B1", "uid": "u", "query": "x"}\n{oops\n')
    with pytest.raises(BenchmarkFormatError, match=r"bad.jsonl:2: invalid JSON line"):
        read_released(bad)
    bad.write_text('"just a string"')
    with pytest.raises(BenchmarkFormatError, match="expected an object keyed by asin"):
        read_released(bad)


# --- the command end to end -----------------------------------------------------------------


def test_unknown_product_error_names_the_flag(files, capsys):
    with pytest.raises(SystemExit) as exc:
        main(_argv(files, files["released"], "--catalog", "bm25"))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "1 product(s) of the queries are not in the corpus (e.g. B9999)" in err
    assert "--unknown-products drop" in err
    assert "retrieval.queries.unknown_products" not in err


def test_released_file_end_to_end_with_drops_and_unpaired(files, capsys, tmp_path):
    # a run file made elsewhere that scores every target level with B0004: all tied
    kept = [r for r in from_released(byo.RELEASED, D) if r["product"] != "B9999"]
    run = "".join(
        f"{r['query_id']} Q0 {r['product']} 1 1.5 tied\n{r['query_id']} Q0 B0004 2 1.5 tied\n"
        for r in kept
    )
    (tmp_path / f"tied_{D}.run").write_text(run)
    tied = "tied=" + str(tmp_path / f"tied_{D}.run").replace(D, "{domain}")
    argv = _argv(files, files["released"], "--unknown-products", "drop", "--catalog", "bm25",
                 "--run", tied)  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    out = files["out"]
    # the corpus was built from the meta file: 5 products, their details read as attributes
    products = pd.read_parquet(out / D / "products.parquet").set_index("parent_asin")
    assert sorted(products.index) == ["B0001", "B0002", "B0003", "B0004", "B0005"]
    assert list(products.loc["B0001", "attribute_values"])[:3] == ["Fender", "Sunburst", "Alder"]
    assert products.loc["B0001", "document"].startswith("Fender Stratocaster Electric Guitar.")
    assert f"{D}: corpus of 5 products built from" in err
    assert "(0 records quarantined); document = title + description + features" in err
    # the console says what is evaluated, what was dropped and why
    assert (
        f"{D}: released {{asin: [{{asin, uid, syntax_query, typo_query}}]}} file, "
        "7 of 11 queries evaluated (2 syntactic, 4 writing-error, 1 unpaired "
        "[effectiveness only]) on 3 products; dropped 4 (2 syntactic, 2 writing_error): "
        "product not in corpus (1 products)"
    ) in err
    report = json.loads((out / D / "queries.report.json").read_text())
    assert report["queries_by_kind"] == {"syntactic": 2, "unpaired": 1, "writing_error": 4}
    assert report["queries_dropped"] == 4
    assert report["queries_dropped_by_reason"] == {
        "product_not_in_corpus": {
            "queries": 4,
            "products": 1,
            "by_kind": {"syntactic": 2, "writing_error": 2},
        }
    }
    assert report["query_format"] == "released"
    assert report["unpaired_reason"] == "the only user of its product and no typo_query"
    # the unpaired query is evaluated: BM25 ranks its product first (the only document with
    # "yamaha", "digital" or "piano")
    frame = pd.read_parquet(out / D / "bm25.metrics.parquet")
    single = frame[frame["kind"] == "unpaired"]
    assert single[["product", "rank", "R@1"]].to_dict("records") == [
        {"product": "B0002", "rank": 1, "R@1": 1.0}
    ]
    # ... and counted among the distinct queries of the effectiveness measures (6, see the
    # fixture), while Flip and Deg average only their pairs (1 and 2)
    summary = pd.read_csv(out / "summary.csv")
    here = summary[(summary["domain"] == D) & (summary["retriever"] == "bm25")]
    here = here.set_index("metric")["items"]
    assert here["R@1"] == 6
    assert here["Flip@1"] == 1
    assert here["Deg@1"] == 2
    # effectiveness per query subset: clean u1 u2 u3 u4, error u1 u4 (their typo_query)
    assert (here["R@1[clean]"], here["R@1[error]"]) == (4, 2)
    eff = pd.read_csv(out / "table_effectiveness.csv")
    assert list(eff["subset"]) == ["clean", "error", "all"] * 2  # bm25, then tied
    assert list(eff["queries"]) == [4, 2, 6] * 2
    tex = (out / "table_effectiveness.tex").read_text()
    # one part per subset (clean, error, all), each headed by its query count
    for n in (4, 2, 6):
        assert rf"Musical Instruments & n={n} &  &  &  &  &  \\" in tex
    # the document template is recorded with every retriever's run
    for name in ("bm25", "tied"):
        meta = json.loads((out / "meta" / f"{name}.json").read_text())
        assert meta["document"] == {
            "built_from": "meta",
            "fields": ["title", "description", "features"],
            "details": "{key}: {value}",
            "separator": " ",
            "terminator": ".",
        }
    # ties: BM25 scores every target above the rest here; the imported run ties them all
    assert f"bm25 {D}: 0 of 7 retrieved targets tie another document's score" in err
    assert f"tied {D}: 7 of 7 retrieved targets tie another document's score" in err


@pytest.mark.parametrize("fmt", ["released", "released-v0"])
def test_older_release_end_to_end(files, capsys, fmt):
    argv = _argv(files, files["v0_jsonl"], "--unknown-products", "drop", "--catalog", "bm25",
                 query_format=fmt)  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert (
        f"{D}: released-v0 (one {{asin, uid, query}} per record) file, "
        "4 of 6 queries evaluated (2 syntactic, 0 writing-error, 2 unpaired "
        "[effectiveness only]) on 3 products; dropped 2 (2 syntactic)"
    ) in err
    frame = pd.read_parquet(files["out"] / D / "bm25.metrics.parquet")
    assert sorted(frame.loc[frame["kind"] == "unpaired", "product"]) == ["B0002", "B0003"]


def test_document_fields_of_ones_own(files, capsys):
    argv = _argv(files, files["released"], "--unknown-products", "drop", "--catalog", "bm25",
                 "--document-fields", "title", "details", "--document-separator", "\\n",
                 "--document-terminator", "", "--details-format", "{key} = {value}")  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    out = files["out"]
    products = pd.read_parquet(out / D / "products.parquet").set_index("parent_asin")
    assert products.loc["B0001", "document"] == (
        "Fender Stratocaster Electric Guitar\nBrand = Fender\nColor = Sunburst\n"
        "Body Material = Alder"
    )
    assert (
        "document = title + details (details as '{key} = {value}'), pieces joined by '\\n'"
    ) in err
    template = {
        "fields": ["title", "details"],
        "details": "{key} = {value}",
        "separator": "\n",
        "terminator": "",
    }
    assert json.loads((out / D / "products.report.json").read_text())["document"] == template
    meta = json.loads((out / "meta" / "bm25.json").read_text())
    assert meta["document"] == {"built_from": "meta", **template}
    # the corpus just built, given back with --corpus: its report beside it names the fields
    capsys.readouterr()
    argv = [
        "--domains", D,
        "--corpus", str(out / "{domain}" / "products.parquet"),
        "--queries", str(files["released"]).replace(D, "{domain}"),
        "--query-format", "released", "--unknown-products", "drop",
        "--config", str(files["config"]), "--out", str(out.with_name("again")),
        "--catalog", "bm25",
    ]  # fmt: skip
    assert main(argv) == 0
    assert "document = title + details (details as '{key} = {value}')" in capsys.readouterr().err
    meta = json.loads((out.with_name("again") / "meta" / "bm25.json").read_text())
    assert meta["document"] == {"built_from": "corpus", **template}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--document-fields", "title", "reviews"], "invalid choice: 'reviews'"),
        (["--details-format", "{name}"], "use the placeholders {key} and {value} only"),
        (["--document-fields", "title", "title"], "a field is listed twice"),
    ],
)
def test_bad_document_options_are_named(files, capsys, extra, message):
    with pytest.raises(SystemExit) as exc:
        main(_argv(files, files["released"], "--catalog", "bm25", *extra))
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_document_options_need_meta(files, capsys):
    argv = _argv(files, files["released"], "--catalog", "bm25", "--document-fields", "title")
    argv[2:4] = ["--corpus", "products_{domain}.parquet"]
    with pytest.raises(SystemExit):
        main(argv)
    assert "need --meta (a --corpus file holds its documents)" in capsys.readouterr().err


def test_empty_meta_file_is_an_error(files, capsys):
    files["meta"].write_text("")
    with pytest.raises(SystemExit) as exc:
        main(_argv(files, files["released"], "--catalog", "bm25"))
    assert exc.value.code == 2
    assert "no product read from the meta file" in capsys.readouterr().err


def test_domain_names_must_be_safe(files, capsys):
    argv = _argv(files, files["released"], "--catalog", "bm25")
    argv[1] = "../elsewhere"
    with pytest.raises(SystemExit):
        main(argv)
    assert "'../elsewhere' is not a safe name" in capsys.readouterr().err


# --- help and the console command -----------------------------------------------------------


def test_help_documents_every_option_with_an_example(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for action in build_parser()._actions:
        for opt in action.option_strings:
            assert opt in text
        if action.option_strings and action.dest != "help":
            assert action.help, f"{action.option_strings} has no help"
            assert "e.g." in action.help, f"{action.option_strings} has no example"
    assert "pqb-evaluate \\" in text and "--domains Baby_Products" in text  # the example
    assert "ties: native" in text and "ascending\n``parent_asin``" in text  # the tie rule
    assert "released-v0" in text and "unpaired" in text


def test_console_command_and_module_entry():
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["pqb-evaluate"] == "personalir.retrieval.evaluate:main"
    proc = subprocess.run(
        [sys.executable, "-m", "personalir.retrieval.evaluate", "--help"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(__file__).parents[2] / "src"), "PATH": ""},
        check=True,
    )
    assert proc.stdout.startswith("usage: pqb-evaluate")
    assert "--queries PATH" in proc.stdout and "--config YAML" in proc.stdout


# --- BM25 ties ------------------------------------------------------------------------------

TIED = {
    "D1": "red guitar strings",
    "D2": "red guitar strings",
    "D3": "blue piano keys",
    "D4": "red guitar strings",
    "D5": "green drum",
}


def _rank(ties: str | None) -> list[str]:
    params = {} if ties is None else {"ties": ties}
    retriever = BM25Retriever(params=params)
    retriever.index(corpus_from_texts(list(TIED), list(TIED.values())))
    return [d for d, _ in retriever.rank([QueryText("q", "red guitar")], 200)["q"]]


def test_bm25_ties_corpus_order_by_default_and_native_as_bm25s():
    import bm25s

    # D1, D2, D4 score the same: corpus order (ascending id) is the default
    assert _rank(None) == _rank("corpus_order") == ["D1", "D2", "D4"]
    # native: what plain bm25s returns (numpy top-k), without the zero-score documents
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index(bm25s.tokenize(list(TIED.values()), stopwords="en", show_progress=False),
                show_progress=False)  # fmt: skip
    docs, scores = model.retrieve(
        bm25s.tokenize(["red guitar"], stopwords="en", show_progress=False),
        k=len(TIED),
        backend_selection="numpy",
        show_progress=False,
    )
    plain = [list(TIED)[i] for i, s in zip(docs[0], scores[0], strict=True) if s > 0]
    assert _rank("native") == plain == ["D4", "D1", "D2"]  # bm25s 0.3.16's order


def test_bm25_unknown_tie_rule_is_refused():
    with pytest.raises(ValueError, match=r"ties 'random' not in \['corpus_order', 'native'\]"):
        _rank("random")


# --- the workflow's path keeps its messages and report --------------------------------------


def test_workflow_path_names_the_config_key_and_keeps_its_report(files, tmp_path, caplog):
    from personalir.common.config import validate_config
    from personalir.retrieval.byo import corpus_from_meta
    from personalir.retrieval.pipeline import prepare_queries

    corpus_from_meta(
        meta_path=files["meta"], out_dir=tmp_path / "c", data_section=validate_config({})["data"]
    )
    recs = [r for r in from_released(byo.RELEASED, D) if r["kind"] != "unpaired"]
    write_benchmark(tmp_path / "benchmark.jsonl", recs)
    kwargs = dict(domain=D, source="benchmark", source_path=tmp_path / "benchmark.jsonl",
                  corpus_path=tmp_path / "c" / "products.parquet")  # fmt: skip
    with pytest.raises(BenchmarkFormatError, match="set retrieval.queries.unknown_products: drop"):
        prepare_queries(**kwargs, unknown_products="error", out_path=tmp_path / "q.jsonl",
                        report_path=tmp_path / "r.json")  # fmt: skip
    report = prepare_queries(**kwargs, unknown_products="drop", out_path=tmp_path / "q.jsonl",
                             report_path=tmp_path / "r.json")  # fmt: skip
    assert report["queries_dropped_by_reason"]["product_not_in_corpus"]["queries"] == 4
    assert (
        "dropped 4 of 10 queries (2 syntactic, 2 writing_error) because their product is not "
        "in the corpus (1 products, e.g. B9999); 6 queries kept"
    ) in caplog.text
    # nothing dropped, benchmark source: the report has exactly the keys it always had
    kept = [r for r in recs if r["product"] != "B9999"]
    write_benchmark(tmp_path / "benchmark.jsonl", kept)
    report = prepare_queries(**kwargs, unknown_products="error", out_path=tmp_path / "q.jsonl",
                             report_path=tmp_path / "r.json")  # fmt: skip
    assert list(report) == [
        "queries_read", "products_not_in_corpus", "queries_dropped", "queries", "pairs",
        "queries_by_kind", "products", "domain", "source", "source_path",
    ]  # fmt: skip


def test_one_record_jsonl_is_the_older_format(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text('{"asin": "B0002", "uid": "u3", "query": "yamaha digital piano"}\n')
    data, found = read_released(path)
    assert found == "released-v0" and list(data) == ["B0002"]


# --- export-queries, the summary, empty runs, --class from the current folder, downloads ----


def _kept(domain: str = D) -> list[dict]:
    return [r for r in from_released(byo.RELEASED, domain) if r["product"] != "B9999"]


def _pattern(path: Path, domain: str = D) -> str:
    return str(path).replace(domain, "{domain}")


def test_sub_command_or_none():
    assert split_command(["export-queries", "--out", "x"]) == ("export-queries", ["--out", "x"])
    assert split_command(["evaluate", "--domains", D]) == ("evaluate", ["--domains", D])
    assert split_command(["--domains", D]) == ("evaluate", ["--domains", D])


def test_export_queries_as_tsv_and_jsonl(files, capsys, tmp_path):
    base = ["export-queries", "--domains", D, "--query-format", "released"]
    base += ["--queries", _pattern(files["released"])]
    assert main([*base, "--out", str(tmp_path / "q" / "{domain}.tsv")]) == 0
    lines = (tmp_path / "q" / f"{D}.tsv").read_text(encoding="utf-8").splitlines()
    every = from_released(byo.RELEASED, D)  # without a corpus: every query of the file
    assert lines == [f"{r['query_id']}\t{r['text']}" for r in every] and len(lines) == 11
    assert lines[0] == f"{D}:B0001:syn:0-1:a:0\tfender stratocaster guitar"
    out = capsys.readouterr().out
    assert f"{D}: 11 queries (4 syntactic, 6 writing-error, 1 unpaired; all of the file)" in out
    # with the corpus and the drop policy: exactly the 7 queries the evaluation evaluates
    corpus = ["--meta", _pattern(files["meta"]), "--unknown-products", "drop"]
    corpus += ["--config", str(files["config"])]
    assert main([*base, *corpus, "--out", str(tmp_path / "q" / "{domain}.jsonl")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "q" / f"{D}.jsonl").read_text().splitlines()]
    assert [r["query_id"] for r in rows] == [r["query_id"] for r in _kept()]
    assert rows[0] == {
        "query_id": f"{D}:B0001:syn:0-1:a:0",
        "domain": D,
        "user_id": "u1",
        "text": "fender stratocaster guitar",
    }
    assert "7 queries (2 syntactic, 4 writing-error, 1 unpaired; checked against the corpus)" in (
        capsys.readouterr().out
    )


def test_export_of_texts_with_line_breaks(tmp_path):
    records = [
        {"query_id": "q1", "domain": D, "user_id": "u", "text": "1. red guitar\n2. strings"},
        {"query_id": "q2", "domain": D, "user_id": "v", "text": "blue\tpiano"},
        {"query_id": "q3", "domain": D, "user_id": "w", "text": "plain drum"},
    ]
    assert write_query_export(tmp_path / "q.tsv", records, "tsv") == (3, ["q1", "q2"])
    assert (tmp_path / "q.tsv").read_text() == (
        "q1\t1. red guitar 2. strings\nq2\tblue piano\nq3\tplain drum\n"
    )
    assert write_query_export(tmp_path / "q.jsonl", records, "jsonl") == (3, [])
    kept = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert kept == records  # every text as it is
    with pytest.raises(ValueError, match="query id 'a b' contains white space"):
        write_query_export(tmp_path / "x.tsv", [{**records[0], "query_id": "a b"}], "tsv")


def test_export_needs_a_format_and_domain_paths(files, capsys, tmp_path):
    base = ["export-queries", "--domains", D, "--queries", _pattern(files["released"])]
    with pytest.raises(SystemExit) as exc:
        main([*base, "--out", str(tmp_path / "q.txt")])
    assert exc.value.code == 2
    assert "end it in .tsv or .jsonl, or give --format" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base[:3], D, "Other", *base[3:], "--out", str(tmp_path / "q.tsv")])
    assert "--out needs {domain} in the path" in capsys.readouterr().err


def test_exported_ids_make_a_run_and_the_summary_has_its_values(files, capsys, tmp_path):
    # the user's run, made from the exported ids (the fixture's graded run: known values)
    export = ["export-queries", "--domains", D, "--queries", _pattern(files["released"])]
    export += ["--query-format", "released", "--meta", _pattern(files["meta"])]
    export += ["--unknown-products", "drop", "--config", str(files["config"])]
    assert main([*export, "--out", str(tmp_path / "{domain}.jsonl")]) == 0
    exported = [json.loads(x)["query_id"] for x in (tmp_path / f"{D}.jsonl").open()]
    records = {r["query_id"]: r for r in _kept()}
    (tmp_path / f"graded_{D}.run").write_text(byo.graded_run([records[q] for q in exported]))
    capsys.readouterr()
    argv = _argv(files, files["released"], "--unknown-products", "drop", "--catalog", "bm25",
                 "--run", "graded=" + _pattern(tmp_path / f"graded_{D}.run"))  # fmt: skip
    assert main(["evaluate", *argv]) == 0
    out = capsys.readouterr().out
    summary = json.loads((files["out"] / "summary.json").read_text())
    assert summary["columns"] == ["Flip@1", "RRstd", "Deg@20", "MRRdeg", "R@10"]
    assert summary["overall"] == D and summary["unit"] == "percent"
    by_name = {r["name"]: r for r in summary["retrievers"]}
    graded, bm25 = by_name["graded"], by_name["bm25"]
    assert {c: graded["values"][D][c]["value"] for c in byo.GRADED} == byo.GRADED
    assert graded["values"][D]["Flip@1"]["items"] == 1  # the one syntactic pair
    assert graded["paper_system"] is None and graded["paper"] is None  # a run: family external
    # BM25 (family lexical) stands in for the paper's BM25: its values from the paper's file
    paper = yaml.safe_load((REPO_ROOT / "config/paper_results/pqb.yaml").read_text())
    flip, deg = paper["flip_rrstd"]["rows"]["BM25"], paper["degradation"]["rows"]["BM25"]
    assert bm25["paper_system"] == "BM25"
    assert bm25["paper"] == {
        "Flip@1": flip["Flip@1"],
        "RRstd": flip["Mean RRstd"],
        "Deg@20": deg["Deg@20"],
        "MRRdeg": deg["MRRdeg"],
        "R@10": None,
    }
    # the console table: ours and the paper's side by side
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["retriever"] == ["retriever", "paper", "system"] + ["Flip@1", "paper", "RRstd",
        "paper", "Deg@20", "paper", "MRRdeg", "paper", "R@10", "paper"]  # fmt: skip
    assert rows["graded"] == ["graded", "--", "100.00", "--", "25.00", "--", "50.00", "--",
                              "50.00", "--", "83.33", "--"]  # fmt: skip
    assert rows["bm25"][1:4] == [
        "BM25",
        f"{bm25['values'][D]['Flip@1']['value']:.2f}",
        f"{flip['Flip@1']:.2f}",
    ]
    assert "PQB summary, in percent, on Musical_Instruments" in out


def test_empty_run_allowed_says_no_results(files, capsys, tmp_path):
    other = "Copy_Of_MI"  # a second domain: the same files under another name
    byo.write_catalogue(tmp_path / f"meta_{other}.jsonl")
    byo.write_released(tmp_path / f"released_{other}.json")
    (tmp_path / f"m_{D}.run").write_text(byo.graded_run(_kept()))
    (tmp_path / f"m_{other}.run").write_text("")
    run = "m=" + _pattern(tmp_path / f"m_{D}.run")
    argv = _argv(files, files["released"], "--unknown-products", "drop", "--catalog", "bm25",
                 "--run", run, "--allow-empty-run")  # fmt: skip
    argv[1:2] = [D, other]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert f"m {other}: the run has no lines: no results" in captured.err
    out = files["out"]
    summary = json.loads((out / "summary.json").read_text())
    mine = next(r for r in summary["retrievers"] if r["name"] == "m")
    assert mine["values"][other] == "no results" and mine["values"]["Average"] == "no results"
    assert mine["values"][D]["Flip@1"]["value"] == byo.GRADED["Flip@1"]
    row = next(line for line in captured.out.splitlines() if line.startswith("m "))
    assert row.split("  ")[0] == "m" and row.count("no results") == 5 and "0.00" not in row
    frame = pd.read_csv(out / "summary.csv").set_index(["retriever", "domain", "metric"])
    assert frame.loc[("m", other, "Flip@1"), "value"] != frame.loc[("m", other, "Flip@1"), "value"]
    assert frame.loc[("m", D, "Flip@1"), "value"] == 1.0
    tex = (out / "table_flip_rrstd.tex").read_text()
    assert "m & External & 1 & -- & -- & -- & -- & -- \\\\" in tex
    tests = pd.read_csv(out / "significance.csv")
    assert not tests[tests["domain"].isin([other, "Average"])].size
    assert set(tests["domain"]) == {D}


def test_class_module_in_the_current_folder(files, tmp_path, monkeypatch):
    (tmp_path / "my_own_retriever.py").write_text(byo.OWN_MODULE)
    monkeypatch.chdir(tmp_path)
    here = str(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if os.path.abspath(p or ".") != here])
    monkeypatch.delitem(sys.modules, "my_own_retriever", raising=False)
    argv = _argv(files, files["released"], "--unknown-products", "drop",
                 "--class", "mine=my_own_retriever:Mine")  # fmt: skip
    try:
        assert main(argv) == 0
    finally:
        sys.modules.pop("my_own_retriever", None)
    meta = json.loads((files["out"] / "meta" / "mine.json").read_text())
    assert meta["class"] == "my_own_retriever:Mine" and meta["family"] == "lexical"


def test_class_module_not_found_says_where_it_looked(files, capsys):
    argv = _argv(files, files["released"], "--unknown-products", "drop",
                 "--class", "x=no_such_module_here:X")  # fmt: skip
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--class x: cannot import module 'no_such_module_here'" in err
    assert f"looked up in the current folder, {os.getcwd()}" in err and "Traceback" not in err


def test_download_policy(monkeypatch):
    for name in OFFLINE_VARIABLES:
        monkeypatch.setenv(name, "0")
    section = {"allow_download": False}
    download_policy(False, section)  # the default: offline only, forced
    assert {os.environ[n] for n in OFFLINE_VARIABLES} == {"1"} and not section["allow_download"]
    for name in OFFLINE_VARIABLES:
        monkeypatch.setenv(name, "0")
    download_policy(True, section)  # --allow-download: the environment as it is
    assert {os.environ[n] for n in OFFLINE_VARIABLES} == {"0"} and section["allow_download"]


def test_uncached_hub_model_names_allow_download(files, capsys):
    argv = _argv(files, files["released"], "--unknown-products", "drop",
                 "--st-model", "e5=example-org/no-such-model-cached")  # fmt: skip
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--st-model e5: model 'example-org/no-such-model-cached' is not in the local" in err
    assert "(or pass --allow-download)" in err and "Traceback" not in err
    assert os.environ["HF_HUB_OFFLINE"] == "1"
