"""Rule syntax_figures: mean ROC curves and training curves -> the two figures."""

import pandas as pd

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.common.io import read_json
from personalir.syntax.figures import plot_roc, plot_training


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domains", nargs="+", required=True)
    for name in ("rocs", "summaries", "curves", "encoder-reports"):
        ap.add_argument(f"--{name}", nargs="+", required=True)
    ap.add_argument("--roc", nargs="+", required=True, help="output files (same figure)")
    ap.add_argument("--training", nargs="+", required=True, help="output files (same figure)")
    args = ap.parse_args()
    setup_logging("syntax_figures")
    for name in ("rocs", "summaries", "curves", "encoder_reports"):
        if len(getattr(args, name)) != len(args.domains):
            ap.error(f"--{name.replace('_', '-')} needs one file per domain")
    summaries = pd.concat([pd.read_csv(p) for p in args.summaries], ignore_index=True)
    labels = dict(zip(summaries["model"], summaries["label"], strict=True))
    aurocs = {
        (d, m): a for d, m, a in summaries[["domain", "model", "auroc"]].itertuples(index=False)
    }
    rocs = [pd.read_csv(p) for p in args.rocs]
    plot_roc(args.domains, rocs, labels, aurocs, args.roc)
    curves = [pd.read_csv(p) for p in args.curves]
    best = [read_json(p)["best_epoch"] for p in args.encoder_reports]
    plot_training(args.domains, curves, best, args.training)


if __name__ == "__main__":
    main()
