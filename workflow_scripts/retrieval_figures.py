"""Rule retrieval_figures: Flip@K by depth, and Deg@K with confidence intervals."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.retrieval.figures import deg_ci, flip_by_depth
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.summary import read_summary


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--names", nargs="+", required=True)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="retrieval.metrics")
    ap.add_argument("--flip", required=True)
    ap.add_argument("--deg", required=True)
    args = ap.parse_args()
    setup_logging("retrieval_figures")
    summary = read_summary(args.summary)
    metrics = MetricSettings.from_config(args.params)
    flip_by_depth(summary, args.names, args.domains, metrics, args.flip)
    deg_ci(summary, args.names, args.domains, metrics, args.deg)


if __name__ == "__main__":
    main()
