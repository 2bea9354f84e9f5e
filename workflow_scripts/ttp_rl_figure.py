"""Rule ttp_rl_figure: reward components, KL and InfoNCE per GRPO step, per RL variant."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser
from personalir.ttp.paper.figures import rl_figure


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--logs", nargs="+", required=True)
    ap.add_argument("--variants", nargs="+", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    rl_figure(
        log_paths=args.logs,
        variants=args.variants,
        out=args.output,
        title=f"TTP GRPO per step ({args.label} configuration)",
    )


if __name__ == "__main__":
    main()
