"""Rule ttp_pqb_evaluate: PQB's robustness metrics of personalised retrievers on PQB's query
pairs, with and without the user's history; the table and the history effects."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import write_text
from personalir.ttp.baselines import PERSONAL_RETRIEVERS
from personalir.ttp.on_pqb import evaluate, parse_set_name
from personalir.ttp.on_pqb_tables import absent_tex, write_tex


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--absent", default=None, help="write only the LaTeX, saying why absent")
    ap.add_argument("--runs", nargs="+", default=[], help="SET:METHOD:PATH per run")
    ap.add_argument("--examples", nargs="+", default=[], help="the history sets' examples")
    ap.add_argument("--reports", nargs="+", default=[], help="every set's examples report")
    ap.add_argument("--methods", nargs="+", default=[])
    ap.add_argument("--params", type=json_arg, default=None, help="the `ttp` config section")
    ap.add_argument("--metrics", type=json_arg, default=None, help="`retrieval.metrics`")
    ap.add_argument("--samples", type=int, default=1000, help="bootstrap resamples")
    ap.add_argument("--permutations", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--label", default="", help="configuration label for the captions")
    ap.add_argument("--synthetic", action="store_true")
    for name in ("table-tex", "effects-tex"):
        ap.add_argument(f"--{name}", required=True)
    for name in ("summary", "table", "effects", "effects-md"):
        ap.add_argument(f"--{name}", default=None)
    args = ap.parse_args()
    log = setup_logging("ttp_pqb_evaluate")
    if args.absent:
        write_text(args.table_tex, absent_tex(args.absent))
        write_text(args.effects_tex, absent_tex(args.absent, "tab:ttp-on-pqb-effects"))
        log.info("absent: %s", args.absent)
        return
    if not (args.runs and args.examples) or None in (args.params, args.metrics, args.summary):
        ap.error("give --runs, --examples, --params, --metrics and the outputs (or --absent)")
    classes = {m: PERSONAL_RETRIEVERS.get(m) for m in args.methods}
    uses_history = {m: bool(c.uses_history) for m, c in classes.items()}
    runs = {}
    for spec in args.runs:
        set_name, method, path = spec.split(":", 2)
        domain, mode = parse_set_name(set_name)
        runs[(domain, method, mode if uses_history[method] else None)] = path
    examples = {}
    for path in args.examples:
        domain, _ = parse_set_name(path.rstrip("/").split("/")[-2])
        examples[domain] = path
    result = evaluate(
        runs=runs,
        examples=examples,
        set_reports=args.reports,
        methods=args.methods,
        labels={m: c.label for m, c in classes.items()},
        uses_history=uses_history,
        retrieval_metrics=args.metrics,
        ttp=args.params,
        seed=args.seed,
        samples=args.samples,
        permutations=args.permutations,
        out={
            "summary": args.summary,
            "table": args.table,
            "effects": args.effects,
            "effects_md": args.effects_md,
        },
        log=log.info,
    )
    write_tex(
        result,
        config_label=args.label,
        synthetic=args.synthetic,
        table_out=args.table_tex,
        effects_out=args.effects_tex,
    )


if __name__ == "__main__":
    main()
