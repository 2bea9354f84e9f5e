"""Rule validation_export: Label Studio tasks + config, CSV, annotator guide, assignment."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.validation.stage import export_annotation


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--human-items", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the validation.human section")
    ap.add_argument("--dimensions", nargs="+", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--guide", required=True)
    ap.add_argument("--assignment", required=True)
    args = ap.parse_args()
    log = setup_logging("validation_export")
    export_annotation(
        human_items_path=args.human_items,
        human_cfg=args.params,
        dimensions=args.dimensions,
        seed=args.seed,
        tasks_out=args.tasks,
        config_out=args.config,
        csv_out=args.csv,
        guide_out=args.guide,
        assignment_out=args.assignment,
    )
    log.info("annotation exports written next to %s", args.tasks)


if __name__ == "__main__":
    main()
