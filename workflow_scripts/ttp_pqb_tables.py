"""Rule ttp_pqb_tables: the TTP-on-PQB table and history effects in LaTeX (or, where the
configuration evaluates no TTP method on PQB, both tables saying why)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.ttp.paper.on_pqb_tables import write_absent, write_tex


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--absent", default=None, help="why this configuration has no such table")
    ap.add_argument("--table", help="table.csv of ttp_pqb_evaluate")
    ap.add_argument("--effects", help="history_effects.csv of ttp_pqb_evaluate")
    ap.add_argument("--facts", help="facts.json of ttp_pqb_evaluate")
    ap.add_argument("--label", default="", help="configuration label for the captions")
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--table-tex", required=True)
    ap.add_argument("--effects-tex", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_pqb_tables")
    if args.absent:
        write_absent(args.absent, args.table_tex, args.effects_tex)
        log.info("absent: %s", args.absent)
        return
    if not (args.table and args.effects and args.facts):
        ap.error("give --table, --effects and --facts (or --absent)")
    write_tex(
        table=args.table,
        effects=args.effects,
        facts=args.facts,
        config_label=args.label,
        synthetic=args.synthetic,
        table_out=args.table_tex,
        effects_out=args.effects_tex,
    )


if __name__ == "__main__":
    main()
