"""Rule ttp_teacher: K teacher rewrites per training example, gain-filtered SFT targets."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.training.teacher import run_teacher


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--output", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_teacher")
    run_teacher(
        examples_path=args.examples,
        items_path=args.items,
        ttp=args.params,
        seed=args.seed,
        sft_out=args.output,
        report_out=args.report,
        log=log.info,
    )


if __name__ == "__main__":
    main()
