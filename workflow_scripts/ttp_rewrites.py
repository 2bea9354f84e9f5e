"""Rule ttp_rewrites: the frozen Decoupled-Stage rewriter's rewrite of every example of a set."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.training.decoupled import write_rewrites


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--backbone", required=True)
    ap.add_argument("--adapter", required=True, help="the rewriter's adapter folder")
    ap.add_argument("--examples", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_rewrites")
    write_rewrites(
        backbone=args.backbone,
        adapter=args.adapter,
        examples_path=args.examples,
        items_path=args.items,
        ttp=args.params,
        threads=args.threads,
        out=args.output,
        log=log.info,
    )


if __name__ == "__main__":
    main()
