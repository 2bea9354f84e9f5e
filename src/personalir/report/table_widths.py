"""How wide each table of a manuscript is: its natural width against the text width.

A table is legible at 100% zoom when it is printed at (nearly) its natural size. The check
compiles a manuscript (``paper/<doc>/main.tex`` with its generated inputs) with a probe
added after its preamble, and reads from the TeX log, for every outermost ``tabular``:

- the generated file it comes from and the table's number;
- its natural width and the line width at that point;
- whether it is inside a ``\\resizebox`` and to which width, hence its scale.

and every overfull box (text or a table running into the margin, a float taller than the
page) with its file. A table passes when it is not shrunk below ``min_scale`` of its
natural size (shrunk at all only when it is wider than the line) and runs into no margin.
The probe changes no layout: it boxes each table, measures the box and prints it as it
was.

:func:`measure` returns the readings; :func:`problems` applies the criterion; the script
``scripts/check_table_widths.py`` runs both on a results folder's manuscripts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess  # nosec B404  # runs the TeX engine with an argv list, no shell
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

#: The criterion: a table is printed at no less than this share of its natural size.
MIN_SCALE = 0.85
#: Widths within this of the line width count as fitting (TeX rounding).
SLACK_PT = 0.5

#: The probe, one line of LaTeX (so the log's line numbers stay the manuscript's): each
#: outermost tabular is boxed, measured, logged and printed as it was; a \resizebox logs
#: the width it gives its content (graphicx's ``\width`` there is the content's width).
PROBE = "".join(
    (
        r"\makeatletter",
        r"\newcount\probe@depth\newdimen\probe@natural\def\probe@resized{0}",
        r"\let\probe@resizebox\resizebox",
        r"\renewcommand{\resizebox}[3]{\sbox\z@{\def\probe@resized{1}#3}",
        r"\probe@natural=\wd\z@",
        r"\begingroup\let\width\probe@natural",
        r"\typeout{PROBE-RESIZE target=\the\dimexpr#1\relax}\endgroup",
        r"\probe@resizebox{#1}{#2}{\usebox\z@}}",
        r"\let\probe@tabular\tabular\let\probe@endtabular\endtabular",
        r"\renewenvironment{tabular}{\global\advance\probe@depth\@ne",
        r"\setbox\@tempboxa\hbox\bgroup\probe@tabular}{\probe@endtabular\egroup",
        r"\global\advance\probe@depth\m@ne",
        r"\ifnum\probe@depth=\z@",
        r"\typeout{PROBE-TABLE table=\thetable\space natural=\the\wd\@tempboxa\space ",
        r"line=\the\linewidth\space resized=\probe@resized}",
        r"\fi\usebox\@tempboxa}",
        r"\makeatother",
    )
)
_INPUT = re.compile(r"\\input\{generated/([^}]+)\}")
_TABLE = re.compile(r"^PROBE-TABLE table=(\S*) natural=([\d.]+)pt line=([\d.]+)pt resized=(\d)")
_RESIZE = re.compile(r"^PROBE-RESIZE target=([\d.]+)pt")
_OVERFULL = re.compile(r"^Overfull \\hbox \(([\d.]+)pt too wide\)(.*)$")
_TOO_TALL = re.compile(r"^LaTeX Warning: Float too large for page by ([\d.]+)pt(.*)$")


@dataclass(frozen=True)
class Reading:
    """One outermost tabular: where it is, its natural width and what it was printed at."""

    file: str
    table: str
    natural: float
    line: float
    target: float  # the \resizebox width, 0 when not resized

    @property
    def scale(self) -> float:
        return self.target / self.natural if self.target else 1.0

    @property
    def printed(self) -> float:
        return self.natural * self.scale


@dataclass(frozen=True)
class Overfull:
    """A box running past the margin (or a float past the page's foot) and by how much."""

    file: str
    excess: float
    where: str
    what: str = "too wide"


class ProbeError(RuntimeError):
    pass


def probed_source(main_tex: str) -> str:
    """``main_tex`` with the probe after its preamble and each generated input announced."""
    marker = r"\input{preamble}"
    if marker not in main_tex:
        raise ProbeError(r"the manuscript has no \input{preamble} to put the probe after")
    text = main_tex.replace(marker, marker + PROBE, 1)
    return _INPUT.sub(
        lambda m: rf"\typeout{{PROBE-FILE {m[1]}}}{m[0]}\typeout{{PROBE-FILE main.tex}}", text
    )


def parse_log(log: str) -> tuple[list[Reading], list[Overfull]]:
    readings, overfull, current = [], [], "main.tex"
    pending = None  # a table inside a \resizebox, waiting for the box's target width
    for line in log.splitlines():
        if line.startswith("PROBE-FILE "):
            current = line.split(" ", 1)[1].strip()
        elif m := _TABLE.match(line):
            readings.append(Reading(current, m[1], float(m[2]), float(m[3]), 0.0))
            pending = len(readings) - 1 if m[4] == "1" else None
        elif (m := _RESIZE.match(line)) and pending is not None:
            readings[pending] = replace(readings[pending], target=float(m[1]))
            pending = None
        elif m := _OVERFULL.match(line):
            overfull.append(Overfull(current, float(m[1]), m[2].strip()))
        elif m := _TOO_TALL.match(line):
            overfull.append(Overfull(current, float(m[1]), m[2].strip(), "too tall for the page"))
    return readings, overfull


def measure(
    main_tex: str | Path, texinputs: list[str | Path], engine: str = "pdflatex"
) -> tuple[list[Reading], list[Overfull]]:
    """Compile ``main_tex`` (twice, for its references) with the probe; ``texinputs`` are
    the folders TeX searches first (the one holding ``generated/``, the preamble's)."""
    main_tex = Path(main_tex)
    if shutil.which(engine) is None:
        raise ProbeError(f"TeX engine {engine!r} not found")
    env = dict(
        os.environ,
        max_print_line="100000",  # one log line per message, not wrapped at 79
        TEXINPUTS=os.pathsep.join([*(str(Path(p).resolve()) for p in texinputs), ""]),
    )
    with tempfile.TemporaryDirectory() as tmp:
        # A name of its own: a folder on TEXINPUTS may hold a main.tex of the same name.
        probe = Path(tmp) / f"probe-{main_tex.stem}.tex"
        probe.write_text(probed_source(main_tex.read_text(encoding="utf-8")), encoding="utf-8")
        for _ in range(2):
            proc = subprocess.run(  # nosec B603  # engine found by shutil.which, no shell
                [engine, "-interaction=nonstopmode", "-halt-on-error", probe.name],
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                tail = "\n".join(proc.stdout.splitlines()[-30:])
                raise ProbeError(f"{engine} failed on {main_tex} with the probe:\n{tail}")
        log = probe.with_suffix(".log").read_text(encoding="utf-8", errors="replace")
    return parse_log(log)


def problems(
    readings: list[Reading], overfull: list[Overfull], *, min_scale: float = MIN_SCALE
) -> list[str]:
    """What breaks the criterion, one line each (empty: every table is legible)."""
    out = []
    for r in readings:
        where = f"{r.file} (table {r.table})"
        if r.scale < min_scale - 1e-9:
            out.append(
                f"{where}: shrunk to {r.scale:.2f} of its natural width "
                f"({r.natural:.1f}pt on a {r.line:.1f}pt line; at least {min_scale} wanted)"
            )
        elif r.printed > r.line + SLACK_PT:
            out.append(
                f"{where}: {r.printed:.1f}pt runs {r.printed - r.line:.1f}pt past the "
                f"{r.line:.1f}pt line"
            )
    for o in overfull:
        out.append(f"{o.file}: overfull box, {o.excess:.1f}pt {o.what} {o.where}")
    return out
