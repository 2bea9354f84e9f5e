"""Rule syntax_profiles: embeddings -> per-user rank-one + diagonal Gaussians and thresholds."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.syntax.gaussian import run_profiles


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--embeddings", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--profiles", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    setup_logging("syntax_profiles")
    run_profiles(args.embeddings, {"profiles": args.profiles, "report": args.report}, args.params)


if __name__ == "__main__":
    main()
