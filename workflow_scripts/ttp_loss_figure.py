"""Rule ttp_loss_figure: the SFT loss curve (a cheap plotting rule apart from training)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser
from personalir.common.io import read_json
from personalir.ttp.paper.figures import loss_figure


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--loss", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    backbone = read_json(args.report)["backbone"]
    loss_figure(
        loss_path=args.loss,
        out=args.output,
        title=f"TTP SFT loss, {backbone} + LoRA ({args.label} configuration)",
    )


if __name__ == "__main__":
    main()
