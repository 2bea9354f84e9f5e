# TTP stage, the paper's descriptive items (plotting and counting only, no model runs):
# Table 3 (the test sets' statistics) from the example files, Figure 3 (what the rewrites
# do) from a method's run by a rule-based classifier, and Table 4 drawn as a figure. Names come from rules/ttp.smk.

from personalir.ttp.paper import figure3 as ttp_figure3_lib

TTP_FIGURE3_METHOD = ttp_figure3_lib.figure3_method(config)


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
        " --examples {input.examples} --items {input.corpus}"
        " --public-sets {params.public} --public-examples {input.public_examples}"
        " --public-items {input.public_corpus} --relevance {input.relevance}"
        " --params {params.ttp:q} --label {params.label:q}"
        " --csv {output.csv} --tex {output.tex} > {log} 2>&1"


rule ttp_figure3:
    """Figure 3: `ttp.figure3.method`'s rewrites of every `ttp.figure3.set` test query, by a
    rule-based classifier, beside the paper's human-annotated shares (cases, shares, PDF)."""
    input:
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
        infos=expand(
            results("ttp", "{ttp_set}", "runs", f"{TTP_FIGURE3_METHOD}.info.json"),
            ttp_set=TTP_SETS,
        ),
        paper=TTP["paper_reference"] or [],
    output:
        cases=results("ttp", "figure3_cases.csv"),
        csv=results("ttp", "figure3.csv"),
        pdf=shown(generated("ttp_figure3.pdf"), "ttp_figure3", "TTP", "Figures"),
    params:
        ttp=params_json("ttp", keys=("figure3", "items", "paper_reference")),
        label=config["label"],
        sets=TTP_SETS,
    benchmark:
        bench("ttp", "ttp_figure3")
    log:
        logs("ttp", "figure3.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_figure3.py --sets {params.sets}"
        " --examples {input.examples} --items {input.corpus} --infos {input.infos}"
        " --params {params.ttp:q} --label {params.label:q} --cases {output.cases}"
        " --csv {output.csv} --pdf {output.pdf} > {log} 2>&1"


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
        "python -u workflow_scripts/ttp_table4_figure.py --table {input.table}"
        " --label {params.label:q} --pdf {output.pdf} > {log} 2>&1"


if TTP["enabled"]:
    FINAL_TARGETS.extend(
        [
            results("ttp", "table3.csv"),
            generated("ttp_table3.tex"),
            results("ttp", "figure3_cases.csv"),
            results("ttp", "figure3.csv"),
            generated("ttp_figure3.pdf"),
            generated("ttp_table4_figure.pdf"),
        ]
    )
