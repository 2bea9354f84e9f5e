# Report stage: tables and figures for the paper, and the PDF that inputs them all.
# The manuscript decides what the PDF depends on: every `generated/...` file that
# paper/main.tex inputs is an input of `paper_pdf`, made by whichever rule outputs it into
# GENERATED (this configuration's `<results_dir>/paper/generated/`).
from personalir.report.expected import expected_tables
from personalir.report.paper import paper_inputs

PAPER_INPUTS = paper_inputs("paper/main.tex", GENERATED)
PAPER_PDF = results("paper", "main.pdf")


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
        " --products-reports {input.products} --sentences-reports {input.sentences}"
        " --reviews-quality {input.reviews_quality} --meta-quality {input.meta_quality}"
        " --label {params.label:q} --csv {output.csv} --tex {output.tex} > {log} 2>&1"


rule paper_pdf:
    """Build the paper PDF; it depends on every generated table and figure it inputs."""
    input:
        main="paper/main.tex",
        generated=PAPER_INPUTS,
    output:
        pdf=PAPER_PDF,
    params:
        engine=config["paper"]["tex_engine"],
        # The folder the manuscript's generated/ inputs lie in (the same GENERATED the rules
        # write to; a function, so the linter sees no hard-coded output prefix).
        generated=lambda w: GENERATED,
    log:
        logs("report", "paper_pdf.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/report.yaml"
    shell:
        "python -u workflow_scripts/build_paper.py --engine {params.engine} --tex {input.main}"
        " --generated {params.generated:q} --pdf {output.pdf} > {log} 2>&1"


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
            " --expected {input.expected} --csv {output.csv} > {log} 2>&1"
            " || (cat {log} >&2; exit 1)"

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
] + ([results("ttp", "ablations", "claims.json")] if config["ttp"]["enabled"] else [])


rule report_claims:
    """The PQB paper's claims, each evaluated on this run's tables (held / not held / not
    applicable, margin, CI), with the TTP claims; `python -m personalir.report.claims` does
    the same on any results tree."""
    input:
        tables=CLAIM_INPUTS,
        paper="config/paper_results/pqb.yaml",
    output:
        csv=results("report", "claims.csv"),
        md=results("report", "claims.md"),
    params:
        retrieval=params_json("retrieval", keys=("use", "retrievers")),
        results_dir=lambda w: RESULTS,
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
        " --retrieval {params.retrieval:q} --paper-results {input.paper}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"


FINAL_TARGETS.extend([results("report", "claims.csv"), results("report", "claims.md")])


rule report_claims_table:
    """The PQB claims' verdicts as the paper's LaTeX table (the TTP claims have theirs)."""
    input:
        claims=results("report", "claims.csv"),
    output:
        tex=generated("pqb_claims.tex"),
    params:
        label=config["label"],
    log:
        logs("report", "claims_table.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/report.yaml"
    shell:
        "python -u workflow_scripts/report_claims_table.py --claims {input.claims}"
        " --label {params.label:q} --tex {output.tex} > {log} 2>&1"

if CATALOGUE_DOMAINS == DOMAINS:  # the statistics count products too
    FINAL_TARGETS.append(results("report", "dataset_statistics.csv"))
if config["paper"]["build_pdf"]:
    FINAL_TARGETS.append(PAPER_PDF)
