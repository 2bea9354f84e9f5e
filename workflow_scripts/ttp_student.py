"""Rule ttp_student: one Table 8 variant of the distilled student (bi-encoder)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import (
    json_arg,
    output_folder,
    parser,
    require_written,
    setup_logging,
)
from personalir.ttp.training.distill import VARIANTS
from personalir.ttp.training.student import train_student

# The files of the student's model folder that the rule tracks.
OUTPUTS = {"model": "config.json", "weights": "model.safetensors"}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--variant", required=True, choices=list(VARIANTS))
    ap.add_argument("--examples", nargs="+", required=True)
    ap.add_argument("--rewrites", nargs="+", required=True, help="teacher rewrites per set")
    ap.add_argument("--items", nargs="+", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    for name in OUTPUTS:
        ap.add_argument(f"--{name}", required=True, help=f"output: {OUTPUTS[name]}")
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_student")
    named = {name: getattr(args, name) for name in OUTPUTS}
    train_student(
        variant=args.variant,
        examples_paths=args.examples,
        items_paths=args.items,
        rewrites_paths=args.rewrites,
        ttp=args.params,
        seed=args.seed,
        out_dir=output_folder(named, OUTPUTS),
        report_out=args.report,
        threads=args.threads,
        log=log.info,
    )
    require_written(named)


if __name__ == "__main__":
    main()
