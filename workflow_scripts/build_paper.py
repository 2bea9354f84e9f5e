"""Rule paper_pdf: build the paper PDF from main.tex and the generated inputs."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.report.paper import build_pdf


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--engine", default="pdflatex")
    ap.add_argument("--tex", required=True)
    ap.add_argument(
        "--generated", required=True, help="folder the manuscript's generated/ inputs lie in"
    )
    ap.add_argument("--pdf", required=True)
    args = ap.parse_args()
    log = setup_logging("paper_pdf")
    build_pdf(args.tex, args.pdf, args.generated, engine=args.engine)
    log.info("wrote %s", args.pdf)


if __name__ == "__main__":
    main()
