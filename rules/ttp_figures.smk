# TTP stage, the paper's figures (plotting and counting only, no model runs): Figure 3 (what
# the rewrites do, by a rule-based classifier), Figures 6 and 8, the SFT loss and RL reward
# curves. Names come from rules/ttp.smk.


TTP_FIGURE3_METHOD = ttp_wf.figure3_method(config)


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
        " --examples {input.examples:q} --items {input.corpus:q} --infos {input.infos:q}"
        " --params {params.ttp:q} --label {params.label:q} --cases {output.cases:q}"
        " --csv {output.csv:q} --pdf {output.pdf:q} > {log:q} 2>&1"


rule ttp_figure6:
    """Figure 6: Recall@20 per test set against the history length N (CSV and PDF)."""
    input:
        figure6=results("ttp", "history", "figure6.parquet") if TTP_HISTORY_VALUES else [],
        paper_results="config/paper_results/ttp.yaml",
    output:
        csv=results("ttp", "figure6.csv"),
        pdf=shown(generated("ttp_figure6.pdf"), "ttp_figure6", "TTP", "Figures"),
    params:
        label=config["label"],
        main_n=TTP["history"]["n"],
        rows=lambda w, input: ["--rows", input.figure6] if input.figure6 else [],
    benchmark:
        bench("ttp", "ttp_figure6")
    log:
        logs("ttp", "figure6.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_figure6.py {params.rows:q}"
        " --paper-results {input.paper_results:q} --main-n {params.main_n}"
        " --label {params.label:q} --csv {output.csv:q} --pdf {output.pdf:q} > {log:q} 2>&1"


rule ttp_figure8:
    """Figure 8: each serving path's Avg Recall@20 against its per-query latency (the
    serving benchmark's checked-in JSON); the cache's hit rate from the ttp_cached runs."""
    input:
        summary=results("ttp", "summary.parquet"),
        labels=results("ttp", "labels.json"),
        latency=TTP["serving"]["latency"] or [],
        cached=expand(
            results("ttp", "{ttp_set}", "runs", "{method}.info.json"),
            ttp_set=TTP_SETS,
            method=ttp_wf.serving_methods(config),
        ),
    output:
        csv=shown(results("ttp", "figure8.csv"), "ttp_figure8", "TTP", "Tables"),
        pdf=shown(generated("ttp_figure8.pdf"), "ttp_figure8", "TTP", "Figures"),
    params:
        teacher=TTP["student"]["teacher"],
        label=config["label"],
        latency=lambda w, input: input.latency or "",
    benchmark:
        bench("ttp", "ttp_figure8")
    log:
        logs("ttp", "figure8.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_figure8.py --summary {input.summary:q}"
        " --labels {input.labels:q} --latency {params.latency:q} --cached-infos {input.cached:q}"
        " --teacher {params.teacher} --label {params.label:q} --csv {output.csv:q}"
        " --pdf {output.pdf:q} > {log:q} 2>&1"


# --------------------------------------------------------------------------- history sweep


rule ttp_loss_figure:
    """The SFT loss curve (plotting only; restyling never re-trains)."""
    input:
        loss=results("ttp", "sft", "loss.json"),
        report=results("ttp", "sft", "train.report.json"),
    output:
        pdf=shown(generated("ttp_sft_loss.pdf"), "ttp_loss", "TTP", "Figures"),
    params:
        label=config["label"],
    benchmark:
        bench("ttp", "ttp_loss_figure")
    log:
        logs("ttp", "loss_figure.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_loss_figure.py --loss {input.loss:q}"
        " --report {input.report:q} --label {params.label:q} --output {output.pdf:q} > {log:q} 2>&1"


rule ttp_rl_figure:
    """Reward components and KL per GRPO step of every RL variant (plotting only)."""
    input:
        logs=expand(results("ttp", "rl", "{rl_variant}", "log.json"), rl_variant=TTP_RL_VARIANTS),
    output:
        pdf=shown(generated("ttp_rl_curves.pdf"), "ttp_rl", "TTP", "Figures"),
    params:
        label=config["label"],
        variants=TTP_RL_VARIANTS,
    benchmark:
        bench("ttp", "ttp_rl_figure")
    log:
        logs("ttp", "rl_figure.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_rl_figure.py --logs {input.logs:q}"
        " --variants {params.variants} --label {params.label:q} --output {output.pdf:q} > {log:q} 2>&1"
