"""Rule errors_figure: mechanism distributions of a few users against their domain's."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.common.io import read_json, write_text
from personalir.errors.figures import mechanism_figure
from personalir.errors.profiles import ProfileSet


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--profiles", nargs="+", required=True)
    ap.add_argument("--n-users", type=int, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--figure", required=True)
    ap.add_argument("--data", required=True)
    args = ap.parse_args()
    log = setup_logging("errors_figure")
    profiles = {
        d: ProfileSet.from_json(read_json(p))
        for d, p in zip(args.domains, args.profiles, strict=True)
    }
    data = mechanism_figure(profiles, args.n_users, args.figure, label=args.label)
    write_text(args.data, data.to_csv(index=False, lineterminator="\n"))
    log.info("figure %s: %d bars", args.figure, len(data))


if __name__ == "__main__":
    main()
