"""Rule ttp_figure3: a method's rewrites of one test set sorted into the paper's rewrite
categories by a rule-based classifier (TTP paper, Figure 3): cases, shares (CSV) and PDF."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS
from personalir.ttp.paper.figure3 import make_figure3


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--sets", nargs="+", required=True, help="TTP example set names")
    ap.add_argument("--examples", nargs="+", required=True, help="their examples.jsonl")
    ap.add_argument("--items", nargs="+", required=True, help="their items.parquet")
    ap.add_argument("--infos", nargs="+", required=True, help="the method's run info per set")
    ap.add_argument(
        "--params", type=json_arg, required=True, help="`ttp` keys figure3, items, paper_reference"
    )
    ap.add_argument("--label", required=True, help="configuration label for the title")
    ap.add_argument("--cases", required=True, help="per-query categories (CSV)")
    ap.add_argument("--csv", required=True, help="shares, ours beside the paper's")
    ap.add_argument("--pdf", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_figure3")
    if not len(args.sets) == len(args.examples) == len(args.items) == len(args.infos):
        raise SystemExit("give one --examples, --items and --infos file per --sets name, in order")
    settings = args.params["figure3"]
    shares = make_figure3(
        sets=list(zip(args.sets, args.examples, args.items, args.infos, strict=True)),
        method_label=PERSONAL_RETRIEVERS.get(settings["method"]).label,
        settings=settings,
        items_settings=args.params["items"],
        paper_path=args.params["paper_reference"],
        config_label=args.label,
        cases_out=args.cases,
        csv_out=args.csv,
        pdf_out=args.pdf,
    )
    log.info("\n%s", shares.to_string())


if __name__ == "__main__":
    main()
