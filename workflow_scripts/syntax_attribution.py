"""Rule syntax_attribution: embeddings -> the three attribution measures of every model."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.syntax.attribution import run_attribution


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--embeddings", required=True)
    ap.add_argument("--reviewers", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--domain", required=True)
    for name in ("summary", "users", "roc", "report"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args()
    setup_logging("syntax_attribution")
    out = {k: getattr(args, k) for k in ("summary", "users", "roc", "report")}
    run_attribution(args.embeddings, args.reviewers, out, args.params, args.seed, args.domain)


if __name__ == "__main__":
    main()
