"""Rule retrieval_run: one retriever over every domain -> TREC runs and run metadata."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.retrieval.base import RunSettings
from personalir.retrieval.pipeline import run_retriever


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--entry", type=json_arg, required=True, help="the retriever's config entry")
    ap.add_argument("--settings", type=json_arg, required=True, help="retrieval run settings")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--corpus", nargs="+", required=True)
    ap.add_argument("--queries", nargs="+", required=True)
    ap.add_argument("--first-stage", nargs="*", default=None)
    ap.add_argument("--runs", nargs="+", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--model-cache", default="", help="dequantised GGUF models ('': none)")
    ap.add_argument("--encoding-cache", default="", help="shared encodings ('': none)")
    args = ap.parse_args()
    setup_logging("retrieval_run")
    settings = RunSettings.from_config(
        args.settings,
        seed=args.seed,
        threads=args.threads,
        model_cache=args.model_cache,
        encoding_cache=args.encoding_cache,
    )
    run_retriever(
        name=args.name,
        entry=args.entry,
        settings=settings,
        depth=int(args.settings["depth"]),
        domains=args.domains,
        corpus_paths=args.corpus,
        query_paths=args.queries,
        run_paths=args.runs,
        meta_path=args.meta,
        first_stage_paths=args.first_stage or None,
    )


if __name__ == "__main__":
    main()
