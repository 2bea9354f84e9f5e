# Report stage: tables and figures for the papers, and the two PDFs (paper/pqb, paper/ttp)
# that input them. Each manuscript decides what its PDF depends on: every `generated/...` file
# that paper/<doc>/main.tex inputs is an input of `paper_pdf`, made by whichever rule outputs
# it into GENERATED (this configuration's `<results_dir>/paper/generated/`).
import os

from personalir.common.config import config_hash
from personalir.report.expected import expected_tables
from personalir.report.paper import paper_inputs
from personalir.report.paper_compare import FIGURES as PQB_FIGURES
from personalir.report.paper_compare import SPECS as PQB_COMPARED

# The TTP document needs the TTP stage.
PAPER_DOCS = ["pqb"] + (["ttp"] if config["ttp"]["enabled"] else [])
PAPER_INPUTS = {doc: paper_inputs(f"paper/{doc}/main.tex", GENERATED) for doc in PAPER_DOCS}
PAPER_PDFS = [results("paper", f"{doc}.pdf") for doc in PAPER_DOCS]
# The front matter fingerprints the raw data and every other generated input of its document.
PAPER_FRONT = {doc: {generated(f"{doc}_contents.tex"), generated(f"{doc}_frontmatter.tex")}
               for doc in PAPER_DOCS}
RAW_DATA = {
    f"{domain}/{table}": raw_file(domain, table)
    for domain in DOMAINS
    for table in (("reviews", "meta") if domain in CATALOGUE_DOMAINS else ("reviews",))
}


rule dataset_statistics:
    """Per-domain statistics (the paper's Table 1 columns available so far)."""
    input:
        products=expand(results("data", "{domain}", "products.report.json"), domain=DOMAINS),
        sentences=expand(
            results("data", "{domain}", "user_sentences.report.json"), domain=DOMAINS
        ),
        reviews_quality=expand(results("data", "{domain}", "reviews.quality.json"), domain=DOMAINS),
        meta_quality=expand(results("data", "{domain}", "meta.quality.json"), domain=DOMAINS),
    output:
        csv=results("report", "dataset_statistics.csv"),
        tex=generated("dataset_statistics.tex"),
    params:
        domains=" ".join(DOMAINS),
        label=config["label"],
    benchmark:
        bench("report", "dataset_statistics")
    log:
        logs("report", "dataset_statistics.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/report.yaml"
    shell:
        "python -u workflow_scripts/dataset_statistics.py --domains {params.domains}"
        " --products-reports {input.products:q} --sentences-reports {input.sentences:q}"
        " --reviews-quality {input.reviews_quality:q} --meta-quality {input.meta_quality:q}"
        " --label {params.label:q} --csv {output.csv:q} --tex {output.tex:q} > {log:q} 2>&1"


rule paper_front:
    """The contents table (the paper's tables and figures, ours or why absent) and the front
    matter (configuration, commit, data fingerprints) that open one document."""
    input:
        data=list(RAW_DATA.values()),
        generated=lambda w: [p for p in PAPER_INPUTS[w.doc] if p not in PAPER_FRONT[w.doc]],
    output:
        contents=generated("{doc}_contents.tex"),
        front=generated("{doc}_frontmatter.tex"),
    wildcard_constraints:
        doc="|".join(PAPER_DOCS),
    params:
        label=config["label"],
        config_sha256=config_hash(config),
        # Relative to the working directory (the configfile directive's is absolute), so
        # the command reads the same in every checkout.
        config_files=list(dict.fromkeys(os.path.relpath(f) for f in _config_files)),
        data=[f"{name}={path}" for name, path in RAW_DATA.items()],
        repo=os.path.relpath(workflow.basedir),
        synthetic="--synthetic" if config["data"]["source"] == "sample" else "",
    benchmark:
        bench("report", "paper_front", "doc")
    log:
        logs("report", "paper_front_{doc}.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/report.yaml"
    shell:
        "python -u workflow_scripts/paper_front.py --doc {wildcards.doc} --label {params.label:q}"
        " --config-sha256 {params.config_sha256} --config-files {params.config_files:q}"
        " --repo {params.repo:q} --data {params.data:q} --inputs {input.generated:q}"
        " {params.synthetic} --contents {output.contents:q} --front {output.front:q} > {log:q} 2>&1"


rule paper_pdf:
    """Build one document's PDF; it depends on every generated table and figure it inputs."""
    input:
        main="paper/{doc}/main.tex",
        preamble="paper/preamble.tex",
        generated=lambda w: PAPER_INPUTS[w.doc],
    output:
        pdf=shown(results("paper", "{doc}.pdf"), "paper_pdf", "Documents"),
    wildcard_constraints:
        doc="|".join(PAPER_DOCS),
    params:
        engine=config["paper"]["tex_engine"],
        # The folder the manuscript's generated/ inputs lie in (the same GENERATED the rules
        # write to; a function, so the linter sees no hard-coded output prefix).
        generated=lambda w: GENERATED,
    benchmark:
        bench("report", "paper_pdf", "doc")
    log:
        logs("report", "paper_pdf_{doc}.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/report.yaml"
    shell:
        "python -u workflow_scripts/build_paper.py --engine {params.engine} --tex {input.main:q}"
        " --generated {params.generated:q} --pdf {output.pdf:q} > {log:q} 2>&1"


if config["paper"]["expected"]:

    rule expected_results:
        """Every headline value of every table against this configuration's expected results
        (`paper.expected`, with tolerances); fails naming each value that moved."""
        input:
            expected=config["paper"]["expected"],
            tables=expected_tables(config["paper"]["expected"], RESULTS),
        output:
            csv=results("report", "expected_check.csv"),
        params:
            results_dir=lambda w: RESULTS,
        benchmark:
            bench("report", "expected_results")
        log:
            logs("report", "expected_results.log"),
        resources:
            mem_mb=1000,
            runtime=10,
        threads: 1
        conda:
            "../envs/report.yaml"
        shell:
            "python -u workflow_scripts/expected_results.py --results-dir {params.results_dir:q}"
            " --expected {input.expected:q} --csv {output.csv:q} > {log:q} 2>&1"
            " || (cat {log:q} >&2; exit 1)"

    FINAL_TARGETS.append(results("report", "expected_check.csv"))

# The tables the claims read that this configuration produces (a claim whose table is absent
# is reported as not applicable), and the TTP stage's claims.
CLAIM_INPUTS = [
    t
    for t in (
        results("retrieval", "table_flip_rrstd.csv"),
        results("retrieval", "table_degradation.csv"),
        results("retrieval", "table_effectiveness.csv"),
        results("validation", "ratings.csv"),
        results("validation", "agreement.csv"),
        results("syntax", "attribution.csv"),
        results("errors", "sampling_eval.csv"),
    )
    if t in FINAL_TARGETS
] + ([results("ttp", "claims", "claims.json")] if config["ttp"]["enabled"] else [])


rule report_claims:
    """The PQB paper's claims, each evaluated on this run's tables (held / not held / not
    applicable, margin, CI), with the TTP claims; `python -m personalir.report.claims_output` does
    the same on any results tree."""
    input:
        tables=CLAIM_INPUTS,
        paper="config/paper_results/pqb.yaml",
    output:
        csv=shown(results("report", "claims.csv"), "pqb_claims", "Documents"),
        md=results("report", "claims.md"),
    params:
        retrieval=params_json("retrieval", keys=("use", "retrievers")),
        results_dir=lambda w: RESULTS,
    benchmark:
        bench("report", "report_claims")
    log:
        logs("report", "claims.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/report.yaml"
    shell:
        "python -u workflow_scripts/report_claims.py --results-dir {params.results_dir:q}"
        " --retrieval {params.retrieval:q} --paper-results {input.paper:q}"
        " --csv {output.csv:q} --md {output.md:q} > {log:q} 2>&1"


FINAL_TARGETS.extend([results("report", "claims.csv"), results("report", "claims.md")])


rule report_claims_table:
    """The PQB claims' verdicts as the paper's LaTeX table (the TTP claims have theirs)."""
    input:
        claims=results("report", "claims.csv"),
    output:
        tex=generated("pqb_claims.tex"),
    params:
        label=config["label"],
    benchmark:
        bench("report", "report_claims_table")
    log:
        logs("report", "claims_table.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/report.yaml"
    shell:
        "python -u workflow_scripts/report_claims_table.py --claims {input.claims:q}"
        " --label {params.label:q} --tex {output.tex:q} > {log:q} 2>&1"


rule report_paper_compare:
    """The PQB paper's tables (dataset, Flip@K/RRstd, Deg@K/MRRdeg, attribution, error
    sampling) with ours beside them, row by row, in the paper's units."""
    input:
        tables=[
            t
            for t in [*CLAIM_INPUTS, results("queries", "datasheet.csv")]
            if t in FINAL_TARGETS
        ],
        paper="config/paper_results/pqb.yaml",
    output:
        csv=shown(results("report", "pqb_vs_paper.csv"), "pqb_vs_paper", "PQB", "Tables"),
        tex=[generated(f"pqb_paper_{key}.tex") for key in PQB_COMPARED],
        figures=[
            shown(generated(f"pqb_paper_{name}.pdf"), "pqb_paper_figure", "PQB", "Figures")
            for name in PQB_FIGURES
        ],
    params:
        retrieval=params_json("retrieval", keys=("use", "retrievers")),
        results_dir=lambda w: RESULTS,
        label=config["label"],
        synthetic="--synthetic" if config["data"]["source"] == "sample" else "",
        tex=lambda w, output: [
            f"{key}={path}" for key, path in zip(PQB_COMPARED, output.tex, strict=True)
        ],
        figures=lambda w, output: [
            f"{name}={path}" for name, path in zip(PQB_FIGURES, output.figures, strict=True)
        ],
    benchmark:
        bench("report", "report_paper_compare")
    log:
        logs("report", "paper_compare.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/report.yaml"
    shell:
        "python -u workflow_scripts/report_paper_compare.py --results-dir {params.results_dir:q}"
        " --retrieval {params.retrieval:q} --paper-results {input.paper:q}"
        " --label {params.label:q} {params.synthetic} --csv {output.csv:q} --tex {params.tex:q}"
        " --figures {params.figures:q} > {log:q} 2>&1"


if CATALOGUE_DOMAINS == DOMAINS:  # the statistics count products too
    FINAL_TARGETS.append(results("report", "dataset_statistics.csv"))
FINAL_TARGETS.append(results("report", "pqb_vs_paper.csv"))
if config["paper"]["build_pdf"]:
    FINAL_TARGETS.extend(PAPER_PDFS)
