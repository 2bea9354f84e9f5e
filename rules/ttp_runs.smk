# TTP stage, evaluation: one run per (example set, method), the Relevance scores, the
# measures with bootstrap CIs, the ablation tables, the paper's claims and the public sets.
# Names come from rules/ttp.smk.


rule ttp_run:
    """One method's run (TREC) on one example set's test queries, and what it produced."""
    input:
        unpack(lambda w: ttp_wf.run_inputs(config, w.method, w.ttp_set)),
        examples=results("ttp", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
    output:
        run=results("ttp", "{ttp_set}", "runs", "{method}.trec"),
        info=results("ttp", "{ttp_set}", "runs", "{method}.info.json"),
    params:
        ttp=lambda w: ttp_wf.run_params(config, w.method),
        models=lambda w: compact_json(ttp_wf.run_models(config, w.method, w.ttp_set)),
        rewrites=lambda w, input: ttp_wf.rewrites_option(dict(input)),
        seed=config["seed"],
        model_cache=GGUF_CACHE,
        # item encodings shared by a TTP method and its w/o-Intent-Q retrieval (untracked)
        encoding_cache=results("ttp", "encodings"),
    benchmark:
        bench("ttp", "ttp_run", "ttp_set", "method")
    log:
        logs("ttp", "run_{ttp_set}_{method}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=lambda w: ttp_wf.ttp_gpu(config, w.method),
    threads: lambda w: ttp_wf.run_threads(config, w.method)
    conda:
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_run.py --method {wildcards.method}"
        " --examples {input.examples:q} --items {input.corpus:q} --models {params.models:q}"
        " {params.rewrites:q} --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --run {output.run:q} --info {output.info:q}"
        " --model-cache {params.model_cache:q} --encoding-cache {params.encoding_cache:q}"
        " > {log:q} 2>&1"


rule ttp_relevance:
    """One method's history-free scores of the Relevance pairs and their Spearman."""
    input:
        unpack(lambda w: ttp_wf.run_inputs(config, w.method, w.ttp_set)),
        pairs=results("ttp", "{ttp_set}", "relevance", "pairs.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
        # after the method's run, whose item encodings it reads from the cache
        run_info=results("ttp", "{ttp_set}", "runs", "{method}.info.json"),
    output:
        results("ttp", "{ttp_set}", "relevance", "{method}.json"),
    params:
        ttp=lambda w: ttp_wf.run_params(config, w.method, ("evaluation",)),
        models=lambda w: compact_json(ttp_wf.run_models(config, w.method, w.ttp_set)),
        seed=config["seed"],
        model_cache=GGUF_CACHE,
        encoding_cache=results("ttp", "encodings"),
    benchmark:
        bench("ttp", "ttp_relevance", "ttp_set", "method")
    log:
        logs("ttp", "relevance_{ttp_set}_{method}.log"),
    resources:
        mem_mb=4000,
        runtime=30,
        gpu=lambda w: ttp_wf.ttp_gpu(config, w.method),
    threads: lambda w: ttp_wf.run_threads(config, w.method)
    conda:
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_relevance.py --method {wildcards.method}"
        " --pairs {input.pairs:q} --items {input.corpus:q} --models {params.models:q}"
        " --seed {params.seed} --threads {threads} --params {params.ttp:q}"
        " --model-cache {params.model_cache:q} --encoding-cache {params.encoding_cache:q}"
        " --output {output:q} > {log:q} 2>&1"


rule ttp_evaluate:
    """Measures per query (ir_measures), means with bootstrap CIs, the methods' labels."""
    input:
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
        runs=expand(
            results("ttp", "{ttp_set}", "runs", "{method}.trec"),
            ttp_set=TTP_SETS,
            method=TTP_METHODS,
        ),
        # The first set's run infos name each method's models (no set when TTP is off).
        infos=expand(
            results("ttp", "{ttp_set}", "runs", "{method}.info.json"),
            ttp_set=TTP_SETS[:1],
            method=TTP_METHODS,
        ),
    output:
        per_query=results("ttp", "per_query.parquet"),
        summary=results("ttp", "summary.parquet"),
        labels=results("ttp", "labels.json"),
    params:
        ttp=params_json("ttp", keys=("evaluation",)),
        seed=config["seed"],
        runs=ttp_wf.run_specs(config),
    benchmark:
        bench("ttp", "ttp_evaluate")
    log:
        logs("ttp", "evaluate.log"),
    resources:
        mem_mb=2000,
        runtime=20,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_evaluate.py --examples {input.examples:q}"
        " --runs {params.runs:q} --infos {input.infos:q} --seed {params.seed}"
        " --params {params.ttp:q} --per-query {output.per_query:q} --summary {output.summary:q}"
        " --labels {output.labels:q} > {log:q} 2>&1"


rule ttp_ablations:
    """Tables 6 and 7 and Figure 5 (Recall@20, paired bootstrap)."""
    input:
        per_query=results("ttp", "per_query.parquet"),
        paper_results="config/paper_results/ttp.yaml",
    output:
        table6=results("ttp", "ablations", "table6.parquet"),
        table7=results("ttp", "ablations", "table7.parquet"),
        figure5=results("ttp", "ablations", "figure5.parquet"),
    params:
        ttp=params_json("ttp", keys=("evaluation",)),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_ablations")
    log:
        logs("ttp", "ablations.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_ablations.py --per-query {input.per_query:q}"
        " --paper-results {input.paper_results:q} --params {params.ttp:q} --seed {params.seed}"
        " --out-dir \"$(dirname {output.table6:q})\" > {log:q} 2>&1"


rule ttp_claims:
    """The paper's TTP claims (Tables 4-8, Figures 5-6), one verdict each with its margin."""
    input:
        per_query=results("ttp", "per_query.parquet"),
        paper_results="config/paper_results/ttp.yaml",
        relevance=expand(
            results("ttp", "{ttp_set}", "relevance", "{method}.json"),
            ttp_set=TTP_SETS,
            method=TTP_RELEVANCE_METHODS,
        ),
        history_sweep=results("ttp", "history", "per_query.parquet") if TTP_HISTORY_VALUES else [],
        public=results("ttp", "public", "claims.json") if TTP_PUBLIC else [],
    output:
        claims=results("ttp", "claims", "claims.json"),
    params:
        ttp=params_json("ttp", keys=("evaluation", "student", "history")),
        seed=config["seed"],
        history_sweep=lambda w, input: (
            ["--history-sweep", input.history_sweep] if input.history_sweep else []
        ),
        public=lambda w, input: ["--public-claims", input.public] if input.public else [],
    benchmark:
        bench("ttp", "ttp_claims")
    log:
        logs("ttp", "claims.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_claims.py --per-query {input.per_query:q}"
        " --paper-results {input.paper_results:q} --params {params.ttp:q} --seed {params.seed}"
        " --relevance {input.relevance:q} {params.history_sweep:q} {params.public:q}"
        " --out {output.claims:q} > {log:q} 2>&1"


rule ttp_public_evaluate:
    """Table 5's measures (HR@20, nDCG@20, Recall@20; bootstrap CIs) of every public set's
    runs, and the paper's claim on them."""
    input:
        runs=[path for _, _, path in ttp_public_wf.public_run_specs(config)],
        examples=expand(results("ttp", "{public}", "examples.jsonl"), public=list(TTP_PUBLIC)),
        paper_results="config/paper_results/ttp.yaml",
    output:
        per_query=results("ttp", "public", "per_query.parquet"),
        summary=results("ttp", "public", "summary.parquet"),
        claims=results("ttp", "public", "claims.json"),
    params:
        ttp=params_json("ttp", keys=("evaluation",)),
        seed=config["seed"],
        runs=[f"{s}:{m}:{p}" for s, m, p in ttp_public_wf.public_run_specs(config)],
        cells=compact_json(ttp_public_wf.public_cells(config, "config/paper_results/ttp.yaml")),
        examples=" ".join(
            f"{s}:{RESULTS}/ttp/{s}/examples.jsonl" for s in TTP_PUBLIC
        ),
    benchmark:
        bench("ttp", "ttp_public_evaluate")
    log:
        logs("ttp", "public_evaluate.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_public_evaluate.py --runs {params.runs:q}"
        " --examples {params.examples} --paper-results {input.paper_results:q}"
        " --params {params.ttp:q} --cells {params.cells:q} --seed {params.seed}"
        " --per-query {output.per_query:q}"
        " --summary {output.summary:q} --claims {output.claims:q} > {log:q} 2>&1"
