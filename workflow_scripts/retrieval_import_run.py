"""Rule retrieval_import_run: validate a run file made elsewhere (errors name the line)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.retrieval.pipeline import import_run


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--entry", type=json_arg, required=True, help="the run_files config entry")
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--sources", nargs="+", required=True)
    ap.add_argument("--corpus", nargs="+", required=True)
    ap.add_argument("--queries", nargs="+", required=True)
    ap.add_argument("--runs", nargs="+", required=True)
    ap.add_argument("--meta", required=True)
    args = ap.parse_args()
    setup_logging("retrieval_import_run")
    import_run(
        name=args.name,
        entry=args.entry,
        domains=args.domains,
        source_paths=args.sources,
        corpus_paths=args.corpus,
        query_paths=args.queries,
        run_paths=args.runs,
        meta_path=args.meta,
    )


if __name__ == "__main__":
    main()
