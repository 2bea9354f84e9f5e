"""Rules ttp_public_fixture_*: one sample-world domain written in a public benchmark's
published format (a fixture-scale Table 5 set; synthetic)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.common.io import write_json
from personalir.ttp.inputs.public_fixture import FORMATS, write_fixture


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--format", required=True, choices=sorted(FORMATS))
    ap.add_argument("--domain", required=True)
    ap.add_argument("--reviews", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--search-log", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--test-share", type=float, required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_public_fixture")
    report = write_fixture(
        args.format,
        reviews=args.reviews,
        meta=args.meta,
        search_log=args.search_log,
        out_dir=args.out_dir,
        domain=args.domain,
        seed=args.seed,
        test_share=args.test_share,
    )
    report["domain"] = args.domain
    write_json(args.report, report)
    log.info("%s", report)


if __name__ == "__main__":
    main()
