"""Rule ttp_cache_store: one example set's offline embedding store (serving's cache tier)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.methods.serving import build_store


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--models", type=json_arg, required=True, help="the teacher's role -> model")
    ap.add_argument("--params", type=json_arg, required=True, help="the ttp sections it reads")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_cache_store")
    build_store(
        examples_path=args.examples,
        items_path=args.items,
        ttp=args.params,
        models=args.models,
        seed=args.seed,
        threads=args.threads,
        out_dir=args.out_dir,
        report_out=args.report,
        log=log.info,
    )


if __name__ == "__main__":
    main()
