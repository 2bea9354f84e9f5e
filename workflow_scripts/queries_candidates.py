"""Rule queries_candidates: candidates of every backend for one domain, eager filters applied."""

import os
from pathlib import Path

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.queries.candidates import run_candidates

os.environ.setdefault("TQDM_DISABLE", "1")


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domain", required=True)
    ap.add_argument("--products", required=True)
    ap.add_argument("--reviewers", required=True)
    ap.add_argument(
        "--adapter", required=True, help="adapter_model.safetensors (its folder is read)"
    )
    ap.add_argument("--lm-report", required=True, help="lm.report.json (the fluency bound)")
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--n-core-terms", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model-cache", default="", help="dequantised-model cache ('' = none)")
    ap.add_argument("--candidates", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    setup_logging("queries_candidates")
    run_candidates(
        args.domain,
        args.products,
        args.reviewers,
        Path(args.adapter).parent,
        args.lm_report,
        args.params,
        args.seed,
        {"candidates": args.candidates, "report": args.report},
        n_core_terms=args.n_core_terms,
        threads=args.threads,
        model_cache=args.model_cache or None,
    )


if __name__ == "__main__":
    main()
