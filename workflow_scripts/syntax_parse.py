"""Rule syntax_parse: user sentences -> rule multisets per sentence (+ status counts)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.syntax.parse import run_parse
from personalir.syntax.rules import ParseSettings


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--sentences", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--cache-dir", default="", help="parse cache folder ('' disables)")
    ap.add_argument("--output", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    setup_logging("syntax_parse")
    run_parse(
        args.sentences,
        args.output,
        args.report,
        ParseSettings.from_config(args.params),
        cache_dir=args.cache_dir or None,
    )


if __name__ == "__main__":
    main()
