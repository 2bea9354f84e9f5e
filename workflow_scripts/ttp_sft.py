"""Rule ttp_sft: LoRA SFT of the TTP model on every example set's teacher targets."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.training import run_sft


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--backbone", required=True)
    ap.add_argument("--sft", nargs="+", required=True)
    ap.add_argument("--items", nargs="+", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_sft")
    run_sft(
        backbone=args.backbone,
        sft_paths=args.sft,
        items_paths=args.items,
        ttp=args.params,
        seed=args.seed,
        out_dir=args.out_dir,
        report_out=args.report,
        threads=args.threads,
        log=log.info,
    )


if __name__ == "__main__":
    main()
