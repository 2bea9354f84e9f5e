"""Rule ttp_ablation_tables: Tables 6 and 7 (CSV, LaTeX), Figure 5 (CSV, PDF), the claims."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser
from personalir.ttp.paper.ablation_tables import make_ablation_outputs


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--ablation-dir", required=True)
    ap.add_argument("--claims", required=True, help="ttp_claims' verdicts (JSON)")
    ap.add_argument("--label", required=True)
    ap.add_argument("--tex-dir", required=True)
    ap.add_argument("--csv-dir", required=True)
    ap.add_argument("--figure", required=True)
    args = ap.parse_args()
    make_ablation_outputs(
        ablation_dir=args.ablation_dir,
        claims_path=args.claims,
        config_label=args.label,
        tex_dir=args.tex_dir,
        csv_dir=args.csv_dir,
        figure_out=args.figure,
    )


if __name__ == "__main__":
    main()
