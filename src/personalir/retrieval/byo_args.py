"""The command lines of ``pqb-evaluate``: ``evaluate`` (the default) and ``export-queries``.

Both read the same inputs the same way (``--domains``, ``--queries`` in ``--query-format``,
optionally the corpus to check the queries against), so the query ids that ``export-queries``
writes are those the evaluation reads back from a run file.
"""

from __future__ import annotations

import argparse
import re

from personalir.common.config import DEFAULT_CONFIG
from personalir.data.products import DOCUMENT_FIELDS, DocumentTemplate
from personalir.queries.benchmark_format import RELEASED_FORMATS

PROG = "pqb-evaluate"
#: The sub-commands; a command line that names none is an ``evaluate`` one.
COMMANDS = ("evaluate", "export-queries")
DOMAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: How an unknown-product error names the drop policy on the command line.
DROP_HINT = "pass --unknown-products drop"
#: Formats of ``export-queries``, by the suffix of ``--out`` unless ``--format`` says.
EXPORT_FORMATS = {".tsv": "tsv", ".jsonl": "jsonl"}


class _Entry(argparse.Action):
    """Collect NAME=VALUE options of every kind into one ordered list."""

    def __call__(self, parser, namespace, value, option_string=None):
        if self.dest != "catalog":
            name, sep, rest = value.partition("=")
            if not sep or not name or not rest:
                parser.error(f"{option_string} expects NAME=VALUE, got {value!r}")
        else:
            name, rest = value, value
        entries = getattr(namespace, "entries", None) or []
        if any(n == name for _, n, _ in entries):
            parser.error(f"name {name!r} is given twice")
        entries.append((self.dest, name, rest))
        namespace.entries = entries


def split_command(argv: list[str]) -> tuple[str, list[str]]:
    """(sub-command, its arguments): ``evaluate`` when the first argument names none."""
    if argv and argv[0] in COMMANDS:
        return argv[0], argv[1:]
    return "evaluate", argv


def check_domains(parser: argparse.ArgumentParser, domains: list[str]) -> None:
    bad = [d for d in domains if not DOMAIN_NAME.match(d)]
    if bad:
        parser.error(
            f"--domains: {bad[0]!r} is not a safe name (letters, digits, _ - . ; not starting "
            "with _ - .)"
        )


def add_input_options(ap: argparse.ArgumentParser, *, corpus_required: bool) -> None:
    """--domains, the corpus (--corpus or --meta, --document-*), --queries, --query-format,
    --unknown-products and --config: what both commands read."""
    ap.add_argument(
        "--domains",
        nargs="+",
        required=True,
        metavar="DOMAIN",
        help="domains, each substituted for {domain} in the paths (e.g. "
        "Musical_Instruments, or a name of your own)",
    )
    corpus = ap.add_mutually_exclusive_group(required=corpus_required)
    corpus.add_argument(
        "--corpus",
        metavar="PATH",
        help="products.parquet per domain ({domain} in PATH): the retrieval corpus, e.g. "
        "'results/data/{domain}/products.parquet'",
    )
    corpus.add_argument(
        "--meta",
        metavar="PATH",
        help="Amazon Reviews 2023 meta JSONL(.gz) per domain ({domain} in PATH): the corpus "
        "is built from it into <out>/<Domain>/products.parquet, e.g. "
        "'data/meta_{domain}.jsonl.gz'",
    )
    ap.add_argument(
        "--document-fields",
        nargs="+",
        choices=DOCUMENT_FIELDS,
        metavar="FIELD",
        help="with --meta: the meta fields of a product document, in order (one or more of "
        f"{', '.join(DOCUMENT_FIELDS)}; default: the config's data.products.document.fields), "
        "e.g. --document-fields title features details",
    )
    ap.add_argument(
        "--document-separator",
        metavar="TEXT",
        help="with --meta: the text between a document's pieces, \\n and \\t read as newline "
        "and tab (default: the config's, a space), e.g. --document-separator '\\n'",
    )
    ap.add_argument(
        "--details-format",
        metavar="FORMAT",
        help="with --meta: how a details pair is written, with {key} and {value} (default: "
        "the config's, '{key}: {value}'), e.g. --details-format '{key} = {value}'",
    )
    ap.add_argument(
        "--document-terminator",
        metavar="TEXT",
        help="with --meta: appended to a piece not ending in . ! or ? ('' for nothing; "
        "default: the config's, '.'), e.g. --document-terminator ''",
    )
    ap.add_argument(
        "--queries",
        required=True,
        metavar="PATH",
        help="query file per domain ({domain} in PATH), in --query-format, e.g. "
        "'pqb_release/{domain}.json'",
    )
    ap.add_argument(
        "--query-format",
        choices=["benchmark", *RELEASED_FORMATS],
        default="benchmark",
        help="benchmark: this workflow's benchmark.jsonl; released: a released PQB file, "
        "current or older format (recognised by shape); released-v0: only the older "
        "{asin, uid, query} list/JSONL (default: %(default)s), e.g. --query-format released",
    )
    ap.add_argument(
        "--unknown-products",
        choices=["error", "drop"],
        default="error",
        help="queries whose product is not in the corpus: error stops and names them, drop "
        "removes their pairs and says how many (default: %(default)s), e.g. "
        "--unknown-products drop",
    )
    ap.add_argument(
        "--config",
        default=str(DEFAULT_CONFIG),
        metavar="YAML",
        help="config whose retrieval section (metrics, bootstrap, significance, depth, "
        "catalogue), seed and data section (for --meta) are used (default: the packaged "
        "config/config.yaml, %(default)s), e.g. --config config/paper.yaml",
    )


def build_parser(doc: str) -> argparse.ArgumentParser:
    """The ``evaluate`` command line; ``doc`` (the module docstring) gives its help text."""
    ap = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [evaluate] --domains DOMAIN [DOMAIN ...] (--corpus PATH | --meta PATH) "
        "--queries PATH --out DIR (--run | --st-model | --class | --retriever | --catalog) ...\n"
        f"       {PROG} export-queries --help",
        description=doc.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=doc.split("\n\n", 1)[1],
    )
    add_input_options(ap, corpus_required=True)
    ap.add_argument(
        "--out", required=True, metavar="DIR", help="output folder, e.g. --out byo_results"
    )
    ap.add_argument(
        "--label",
        default="bring-your-own",
        help="caption label of the tables (default: %(default)s), e.g. --label my-retriever",
    )
    ap.add_argument(
        "--device",
        default=None,
        help="override retrieval.device (cpu, cuda, cuda:0, auto), e.g. --device cuda:0",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of the retrievers (default: %(default)s), e.g. --threads 4",
    )
    ap.add_argument(
        "--allow-download",
        action="store_true",
        help="let models missing from the local Hugging Face cache be downloaded (as "
        "retrieval.allow_download: true; HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are then "
        "left as the environment sets them). Default: off, models load offline only (the "
        "command sets HF_HUB_OFFLINE=1, TRANSFORMERS_OFFLINE=1, HF_DATASETS_OFFLINE=1), "
        "e.g. --st-model e5=intfloat/e5-base-v2 --allow-download",
    )
    ap.add_argument(
        "--allow-empty-run",
        action="store_true",
        help="evaluate a run with no lines (a retriever that found nothing) instead of "
        "stopping: its summary rows say 'no results' and its table cells '--', e.g. "
        "--run mine='runs/{domain}.trec' --allow-empty-run",
    )
    for opt, metavar, help_ in (
        (
            "--run",
            "NAME=PATH",
            "a TREC run file per domain ({domain} in PATH), e.g. mine='runs/{domain}.trec'",
        ),
        (
            "--st-model",
            "NAME=MODEL",
            "a sentence-transformers model (hub id or folder), e.g. e5='intfloat/e5-base-v2'",
        ),
        (
            "--class",
            "NAME=MODULE:CLASS",
            "a class implementing the Retriever interface; MODULE is found in the current "
            "folder too, e.g. mine=my_retriever:MyRetriever or "
            "overlap='personalir.retrieval.examples:TermOverlapRetriever'",
        ),
        (
            "--retriever",
            "NAME=JSON",
            "a full retriever entry, e.g. "
            'bm25_native=\'{"type": "bm25", "params": {"ties": "native"}}\'',
        ),
        ("--catalog", "NAME", "a retriever of the config's retrieval.retrievers, e.g. bm25"),
    ):
        ap.add_argument(
            opt,
            action=_Entry,
            dest=opt[2:].replace("-", "_"),
            help=help_ + " (repeatable)",
            metavar=metavar,
        )
    return ap


EXPORT_DOC = """Write the query ids and texts of PQB query files, to make a run file from.

Reads the queries exactly as the evaluation does (the same --queries, --query-format and
--domains), so the ids written are those a run file must use. Give the corpus (--corpus or
--meta) and --unknown-products as you will for the evaluation to write exactly the queries it
evaluates (without a corpus, every query of the file is written). For example::

    pqb-evaluate export-queries \\
        --domains Musical_Instruments \\
        --queries 'pqb_release/{domain}.json' --query-format released \\
        --out 'queries/{domain}.tsv'

Formats (by the suffix of --out, or --format): tsv, one ``query_id<TAB>text`` line per query
(no header, as MS MARCO's queries.tsv; a tab or line break inside a text is written as a
space, and the console counts those queries); jsonl, one ``{query_id, domain, user_id,
text}`` object per line, every text as it is. The same text can have several ids (a user's
query in a syntactic pair and in a writing-error pair): rank it under each. A run file then
has one ``query_id Q0 parent_asin rank score tag`` line per retrieved document (TREC format).
"""


def build_export_parser() -> argparse.ArgumentParser:
    """The ``export-queries`` command line."""
    ap = argparse.ArgumentParser(
        prog=f"{PROG} export-queries",
        description=EXPORT_DOC.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXPORT_DOC.split("\n\n", 1)[1],
    )
    add_input_options(ap, corpus_required=False)
    ap.add_argument(
        "--out",
        required=True,
        metavar="PATH",
        help="output file per domain ({domain} in PATH, needed with several domains), e.g. "
        "'queries/{domain}.tsv'",
    )
    ap.add_argument(
        "--format",
        choices=sorted(set(EXPORT_FORMATS.values())),
        help="tsv or jsonl (default: by the suffix of --out), e.g. --format jsonl",
    )
    return ap


def export_format(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The export format: ``--format``, else the suffix of ``--out``; a usage error if neither."""
    if len(args.domains) > 1 and "{domain}" not in args.out:
        parser.error("--out needs {domain} in the path when there are several domains")
    if args.format:
        return args.format
    for suffix, fmt in EXPORT_FORMATS.items():
        if args.out.endswith(suffix):
            return fmt
    parser.error(f"--out {args.out!r}: end it in .tsv or .jsonl, or give --format")
    raise AssertionError  # parser.error exits


DOCUMENT_OPTIONS = {
    "document_fields": "fields",
    "document_separator": "separator",
    "details_format": "details",
    "document_terminator": "terminator",
}


def _unescape(text: str) -> str:
    """``\\n`` and ``\\t`` as newline and tab (a shell passes them as two characters)."""
    return re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m.group(1)], text)


def document_template(args: argparse.Namespace, config: dict) -> DocumentTemplate | None:
    """With ``--meta``: the config's document template with the ``--document-*`` options
    applied (written back into ``config``); None with ``--corpus`` (its documents exist)."""
    given = {key: getattr(args, opt) for opt, key in DOCUMENT_OPTIONS.items()}
    given = {k: v for k, v in given.items() if v is not None}
    if not args.meta:
        if given:
            raise ValueError(
                "--document-fields, --document-separator, --details-format and "
                "--document-terminator need --meta (a --corpus file holds its documents)"
            )
        return None
    for key in ("separator", "details", "terminator"):
        if key in given:
            given[key] = _unescape(given[key])
    section = config["data"]["products"].setdefault("document", {})
    section.update(given)
    template = DocumentTemplate.from_config(section)
    config["data"]["products"]["document"] = template.as_dict()
    return template
