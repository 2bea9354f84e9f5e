# TTP stage, the paper's tables (rendering only, no model runs): Tables 3-8 in CSV and LaTeX,
# ours beside the paper's values, and Table 4 drawn as a figure. Names come from
# rules/ttp.smk.


rule ttp_table:
    """The paper's Table 4 layout (methods x General/Broad/LongTail) as CSV and LaTeX."""
    input:
        summary=results("ttp", "summary.parquet"),
        labels=results("ttp", "labels.json"),
        paper=TTP["paper_reference"] or [],
        relevance=expand(
            results("ttp", "{ttp_set}", "relevance", "{method}.json"),
            ttp_set=TTP_SETS,
            method=TTP_RELEVANCE_METHODS,
        ),
    output:
        csv=shown(results("ttp", "table4.csv"), "ttp_table4", "TTP", "Tables"),
        tex=generated("ttp_table4.tex"),
    params:
        ttp=params_json("ttp", keys=("methods", "paper_reference")),
        label=config["label"],
    benchmark:
        bench("ttp", "ttp_table")
    log:
        logs("ttp", "table.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_table.py --summary {input.summary:q}"
        " --labels {input.labels:q} --params {params.ttp:q} --label {params.label:q}"
        " --relevance {input.relevance:q} --csv {output.csv:q} --tex {output.tex:q} > {log:q} 2>&1"


rule ttp_table8:
    """The distilled student's Table 8 (teacher and student variants, Recall@20)."""
    input:
        summary=results("ttp", "summary.parquet"),
        labels=results("ttp", "labels.json"),
        paper=TTP["paper_reference"] or [],
    output:
        csv=results("ttp", "table8.csv"),
        tex=generated("ttp_table8.tex"),
    params:
        ttp=params_json("ttp", keys=("methods", "student", "paper_reference")),
        label=config["label"],
    benchmark:
        bench("ttp", "ttp_table8")
    log:
        logs("ttp", "table8.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_table8.py --summary {input.summary:q}"
        " --labels {input.labels:q} --params {params.ttp:q} --label {params.label:q}"
        " --csv {output.csv:q} --tex {output.tex:q} > {log:q} 2>&1"


rule ttp_table3:
    """Table 3: queries, items, history and query lengths, training searches per test set
    (the TTP sets' labels, the public sets, Relevance), ours beside the paper's."""
    input:
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
        public_examples=expand(
            results("ttp", "{public}", "examples.jsonl"), public=list(TTP_PUBLIC)
        ),
        public_corpus=expand(results("ttp", "{public}", "items.parquet"), public=list(TTP_PUBLIC)),
        # the Relevance set exists where Table 4 has its column
        relevance=(
            expand(results("ttp", "{ttp_set}", "relevance", "pairs.jsonl"), ttp_set=TTP_SETS)
            if TTP_RELEVANCE_METHODS
            else []
        ),
        paper=TTP["paper_reference"] or [],
    output:
        csv=results("ttp", "table3.csv"),
        tex=generated("ttp_table3.tex"),
    params:
        ttp=params_json(
            "ttp",
            keys=("source", "public", "paper_reference"),
            omit=("public.methods", "public.max_test"),
        ),
        label=config["label"],
        sets=TTP_SETS,
        public=list(TTP_PUBLIC),
    benchmark:
        bench("ttp", "ttp_table3")
    log:
        logs("ttp", "table3.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_table3.py --sets {params.sets}"
        " --examples {input.examples:q} --items {input.corpus:q}"
        " --public-sets {params.public} --public-examples {input.public_examples:q}"
        " --public-items {input.public_corpus:q} --relevance {input.relevance:q}"
        " --params {params.ttp:q} --label {params.label:q}"
        " --csv {output.csv:q} --tex {output.tex:q} > {log:q} 2>&1"


rule ttp_table5:
    """Table 5 (public benchmarks, ours beside the paper's); without public sets, the
    paper's values and the reason ours are absent."""
    input:
        summary=results("ttp", "public", "summary.parquet") if TTP_PUBLIC else [],
        paper=TTP["paper_reference"] or [],
    output:
        csv=results("ttp", "table5.csv"),
        tex=generated("ttp_table5.tex"),
    params:
        ttp=params_json("ttp", keys=("public", "paper_reference")),
        label=config["label"],
        summary=lambda w, input: ["--summary", input.summary] if input.summary else [],
    benchmark:
        bench("ttp", "ttp_table5")
    log:
        logs("ttp", "table5.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_table5.py {params.summary:q}"
        " --params {params.ttp:q} --label {params.label:q}"
        " --csv {output.csv:q} --tex {output.tex:q} > {log:q} 2>&1"


rule ttp_ablation_tables:
    """Tables 6 and 7 (CSV, LaTeX), Figure 5 (CSV, PDF) and the claims (Markdown, LaTeX)."""
    input:
        table6=results("ttp", "ablations", "table6.parquet"),
        table7=results("ttp", "ablations", "table7.parquet"),
        figure5=results("ttp", "ablations", "figure5.parquet"),
        claims=results("ttp", "claims", "claims.json"),
    output:
        table6=shown(results("ttp", "table6.csv"), "ttp_ablations", "TTP", "Tables"),
        table7=shown(results("ttp", "table7.csv"), "ttp_ablations", "TTP", "Tables"),
        figure5=results("ttp", "figure5.csv"),
        claims=results("ttp", "claims.md"),
        table6_tex=generated("ttp_table6.tex"),
        table7_tex=generated("ttp_table7.tex"),
        claims_tex=generated("ttp_claims.tex"),
        figure=shown(generated("ttp_figure5.pdf"), "ttp_figure5", "TTP", "Figures"),
    params:
        label=config["label"],
    benchmark:
        bench("ttp", "ttp_ablation_tables")
    log:
        logs("ttp", "ablation_tables.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_ablation_tables.py"
        " --ablation-dir \"$(dirname {input.table6:q})\" --claims {input.claims:q} --label {params.label:q}"
        " --tex-dir \"$(dirname {output.table6_tex:q})\" --csv-dir \"$(dirname {output.table6:q})\""
        " --figure {output.figure:q} > {log:q} 2>&1"


rule ttp_table4_figure:
    """Table 4 as a picture: Recall@20 per test set and method, ours (with bootstrap CIs)
    beside the paper's."""
    input:
        table=results("ttp", "table4.csv"),
    output:
        pdf=shown(generated("ttp_table4_figure.pdf"), "ttp_table4_figure", "TTP", "Figures"),
    params:
        label=config["label"],
    benchmark:
        bench("ttp", "ttp_table4_figure")
    log:
        logs("ttp", "table4_figure.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_table4_figure.py --table {input.table:q}"
        " --label {params.label:q} --pdf {output.pdf:q} > {log:q} 2>&1"
