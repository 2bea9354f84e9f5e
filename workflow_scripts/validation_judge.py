"""Rule validation_judge: every question of the items to the LLM judge."""

import sys

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.validation.judge import JudgeRequestError, JudgeUnavailableError
from personalir.validation.stage import run_judge


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--items", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the validation.judge section")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--cache", default="", help="SQLite answer cache ('' = none)")
    ap.add_argument("--model-cache", default="", help="dequantised GGUF cache ('' = none)")
    ap.add_argument("--server-log", required=True, help="the local server's log")
    ap.add_argument("--judgements", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("validation_judge")
    try:
        report = run_judge(
            items_path=args.items,
            judge_cfg=args.params,
            seed=args.seed,
            threads=args.threads,
            cache_path=args.cache or None,
            model_cache=args.model_cache,
            server_log=args.server_log,
            judgements_out=args.judgements,
            report_out=args.report,
        )
    except (JudgeUnavailableError, JudgeRequestError) as exc:
        sys.exit(f"validation_judge: {exc}")
    log.info(
        "%s: %d questions, %d answered, %d calls, %d cache hits, failed %s",
        report["judge"],
        report["questions"],
        report["answered"],
        report["calls_this_run"],
        report["cache_hits_this_run"],
        report["failed"] or "none",
    )


if __name__ == "__main__":
    main()
