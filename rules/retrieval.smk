# Retrieval stage (PQB): queries -> one run per retriever and domain -> per-query metrics ->
# summary with bootstrap intervals and paired tests -> the robustness tables and figures.
# Library: personalir.retrieval (docs/retrieval.md). Retrievers and imported run files are
# named in retrieval.use; their definitions are retrieval.retrievers / retrieval.run_files.

RETRIEVAL = config["retrieval"]
RETRIEVAL_USE = RETRIEVAL["use"]
RETRIEVER_DEFS = RETRIEVAL["retrievers"]
RUN_FILE_DEFS = RETRIEVAL["run_files"]
RETRIEVAL_BUILT, RETRIEVAL_IMPORTED = workflow_support.retrieval_names(RETRIEVAL)
_name_pattern = workflow_support.name_pattern
retrieval_first_stage = partial(workflow_support.retrieval_first_stage, RETRIEVAL)
retrieval_query_source = partial(workflow_support.retrieval_query_source, config)
retrieval_resource = partial(workflow_support.retrieval_resource, RETRIEVAL)
retrieval_encoding_donors = partial(workflow_support.retrieval_encoding_donors, RETRIEVAL)
# Encodings shared between runs (retrieval.encoding_cache; personalir.retrieval.encodings).
ENCODING_CACHE = results("retrieval", "encodings") if RETRIEVAL["encoding_cache"] else ""
RETRIEVAL_RUN_SETTINGS = params_json(
    "retrieval",
    keys=("depth", "device", "batch_size", "doc_chunk", "query_chunk", "allow_download"),
)

RETRIEVAL_CORPUS = expand(results("data", "{domain}", "products.parquet"), domain=DOMAINS)
RETRIEVAL_QUERIES = expand(results("retrieval", "{domain}", "queries.jsonl"), domain=DOMAINS)
RETRIEVAL_FIG = RETRIEVAL["figures"]["format"]


rule retrieval_queries:
    """PQB queries of one domain (ours or released), checked against the corpus."""
    input:
        source=retrieval_query_source,
        corpus=results("data", "{domain}", "products.parquet"),
    output:
        queries=results("retrieval", "{domain}", "queries.jsonl"),
        report=results("retrieval", "{domain}", "queries.report.json"),
    params:
        source=RETRIEVAL["queries"]["source"],
        unknown=RETRIEVAL["queries"]["unknown_products"],
    benchmark:
        bench("retrieval", "retrieval_queries", "domain")
    log:
        logs("retrieval", "queries_{domain}.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    threads: 1
    conda:
        "../envs/retrieval.yaml"
    shell:
        "python -u workflow_scripts/retrieval_queries.py --domain {wildcards.domain}"
        " --source {params.source} --source-path {input.source:q} --corpus {input.corpus:q}"
        " --unknown-products {params.unknown} --output {output.queries:q}"
        " --report {output.report:q} > {log:q} 2>&1"


rule retrieval_run:
    """One retriever over every domain (its model loads once): TREC runs to depth >= 200."""
    input:
        corpus=RETRIEVAL_CORPUS,
        queries=RETRIEVAL_QUERIES,
        first_stage=lambda w: (
            expand(results("retrieval", "{domain}", f"{retrieval_first_stage(w.retriever)}.run.gz"),
                   domain=DOMAINS)
            if retrieval_first_stage(w.retriever)
            else []
        ),
        # runs whose cached encodings this one reads: they go first
        encodings_from=lambda w: [
            results("retrieval", "meta", f"{d}.json") for d in retrieval_encoding_donors(w.retriever)
        ],
    output:
        runs=expand(results("retrieval", "{domain}", "{{retriever}}.run.gz"), domain=DOMAINS),
        meta=results("retrieval", "meta", "{retriever}.json"),
    wildcard_constraints:
        retriever=_name_pattern(RETRIEVAL_BUILT),
    params:
        entry=lambda w: compact_json(RETRIEVER_DEFS[w.retriever]),
        settings=RETRIEVAL_RUN_SETTINGS,
        seed=config["seed"],
        model_cache=GGUF_CACHE,
        encoding_cache=ENCODING_CACHE,
        domains=" ".join(DOMAINS),
        first_stage=lambda w, input: (
            ["--first-stage", *input.first_stage] if input.first_stage else []
        ),
    benchmark:
        bench("retrieval", "retrieval_run", "retriever")
    log:
        logs("retrieval", "run_{retriever}.log"),
    resources:
        mem_mb=lambda w: retrieval_resource(w.retriever, "mem_mb"),
        runtime=lambda w: retrieval_resource(w.retriever, "runtime"),
        gpu=lambda w: retrieval_resource(w.retriever, "gpu"),
    threads: RETRIEVAL["threads"]
    conda:
        workflow_support.conda_env(config, "retrieval")
    shell:
        "python -u workflow_scripts/retrieval_run.py --name {wildcards.retriever}"
        " --entry {params.entry:q} --settings {params.settings:q} --seed {params.seed}"
        " --threads {threads} --domains {params.domains} --corpus {input.corpus:q}"
        " --queries {input.queries:q} {params.first_stage:q} --runs {output.runs:q}"
        " --meta {output.meta:q} --model-cache {params.model_cache:q}"
        " --encoding-cache {params.encoding_cache:q} > {log:q} 2>&1"


rule retrieval_import_run:
    """Bring your own run: validate a run file made elsewhere and take it in."""
    input:
        sources=lambda w: [RUN_FILE_DEFS[w.retriever]["path"].format(domain=d) for d in DOMAINS],
        corpus=RETRIEVAL_CORPUS,
        queries=RETRIEVAL_QUERIES,
    output:
        runs=expand(results("retrieval", "{domain}", "{{retriever}}.run.gz"), domain=DOMAINS),
        meta=results("retrieval", "meta", "{retriever}.json"),
    wildcard_constraints:
        retriever=_name_pattern(RETRIEVAL_IMPORTED),
    params:
        entry=lambda w: compact_json(RUN_FILE_DEFS[w.retriever]),
        domains=" ".join(DOMAINS),
    benchmark:
        bench("retrieval", "retrieval_import_run", "retriever")
    log:
        logs("retrieval", "import_{retriever}.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    threads: 1
    conda:
        "../envs/retrieval.yaml"
    shell:
        "python -u workflow_scripts/retrieval_import_run.py --name {wildcards.retriever}"
        " --entry {params.entry:q} --domains {params.domains} --sources {input.sources:q}"
        " --corpus {input.corpus:q} --queries {input.queries:q} --runs {output.runs:q}"
        " --meta {output.meta:q} > {log:q} 2>&1"


rule retrieval_metrics:
    """Per-query ranks, Flip/Deg hits, RR@200 and ir_measures values of one retriever."""
    input:
        runs=expand(results("retrieval", "{domain}", "{{retriever}}.run.gz"), domain=DOMAINS),
        meta=results("retrieval", "meta", "{retriever}.json"),
        corpus=RETRIEVAL_CORPUS,
        queries=RETRIEVAL_QUERIES,
    output:
        metrics=expand(
            results("retrieval", "{domain}", "{{retriever}}.metrics.parquet"), domain=DOMAINS
        ),
    wildcard_constraints:
        retriever=_name_pattern(RETRIEVAL_BUILT + RETRIEVAL_IMPORTED),
    params:
        metrics=lambda w: params_json("retrieval", "metrics"),
        domains=" ".join(DOMAINS),
    benchmark:
        bench("retrieval", "retrieval_metrics", "retriever")
    log:
        logs("retrieval", "metrics_{retriever}.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    threads: 1
    conda:
        "../envs/retrieval.yaml"
    shell:
        "python -u workflow_scripts/retrieval_metrics.py --name {wildcards.retriever}"
        " --params {params.metrics:q} --domains {params.domains} --corpus {input.corpus:q}"
        " --queries {input.queries:q} --runs {input.runs:q} --meta {input.meta:q}"
        " --outputs {output.metrics:q} > {log:q} 2>&1"


rule retrieval_summary:
    """Every metric per domain and averaged, bootstrap 95% CIs, paired tests (Holm)."""
    input:
        metrics=[
            results("retrieval", d, f"{n}.metrics.parquet") for n in RETRIEVAL_USE for d in DOMAINS
        ],
    output:
        summary=results("retrieval", "summary.csv"),
        significance=results("retrieval", "significance.csv"),
    params:
        settings=params_json("retrieval", keys=("metrics", "bootstrap", "significance")),
        names=" ".join(RETRIEVAL_USE),
        domains=" ".join(DOMAINS),
        seed=config["seed"],
    benchmark:
        bench("retrieval", "retrieval_summary")
    log:
        logs("retrieval", "summary.log"),
    resources:
        mem_mb=4000,
        runtime=20,
    threads: 1
    conda:
        "../envs/retrieval.yaml"
    shell:
        "python -u workflow_scripts/retrieval_summary.py --names {params.names}"
        " --domains {params.domains} --metrics {input.metrics:q} --params {params.settings:q}"
        " --seed {params.seed} --summary {output.summary:q}"
        " --significance {output.significance:q} > {log:q} 2>&1"


rule retrieval_tables:
    """The paper's two robustness tables and the effectiveness table (CSV + LaTeX)."""
    input:
        summary=results("retrieval", "summary.csv"),
    output:
        flip_csv=shown(
            results("retrieval", "table_flip_rrstd.csv"), "retrieval_flip", "PQB", "Tables"
        ),
        deg_csv=shown(
            results("retrieval", "table_degradation.csv"),
            "retrieval_degradation",
            "PQB",
            "Tables",
        ),
        eff_csv=shown(
            results("retrieval", "table_effectiveness.csv"),
            "retrieval_effectiveness",
            "PQB",
            "Tables",
        ),
        flip_tex=generated("retrieval_flip_rrstd.tex"),
        deg_tex=generated("retrieval_degradation.tex"),
        eff_tex=generated("retrieval_effectiveness.tex"),
    params:
        metrics=lambda w: params_json("retrieval", "metrics"),
        names=" ".join(RETRIEVAL_USE),
        domains=" ".join(DOMAINS),
        label=config["label"],
    benchmark:
        bench("retrieval", "retrieval_tables")
    log:
        logs("retrieval", "tables.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/retrieval.yaml"
    shell:
        "python -u workflow_scripts/retrieval_tables.py --summary {input.summary:q}"
        " --names {params.names} --domains {params.domains} --params {params.metrics:q}"
        " --label {params.label:q}"
        " --csv {output.flip_csv:q} {output.deg_csv:q} {output.eff_csv:q}"
        " --tex {output.flip_tex:q} {output.deg_tex:q} {output.eff_tex:q} > {log:q} 2>&1"


rule retrieval_figures:
    """Flip@K by depth per retriever; Deg@K with 95% bootstrap intervals."""
    input:
        summary=results("retrieval", "summary.csv"),
    output:
        flip=shown(
            generated(f"retrieval_flip_by_depth.{RETRIEVAL_FIG}"),
            "retrieval_flip_figure",
            "PQB",
            "Figures",
        ),
        deg=shown(
            generated(f"retrieval_deg_ci.{RETRIEVAL_FIG}"),
            "retrieval_degradation_figure",
            "PQB",
            "Figures",
        ),
    params:
        metrics=lambda w: params_json("retrieval", "metrics"),
        names=" ".join(RETRIEVAL_USE),
        domains=" ".join(DOMAINS),
    benchmark:
        bench("retrieval", "retrieval_figures")
    log:
        logs("retrieval", "figures.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/retrieval.yaml"
    shell:
        "python -u workflow_scripts/retrieval_figures.py --summary {input.summary:q}"
        " --names {params.names} --domains {params.domains} --params {params.metrics:q}"
        " --flip {output.flip:q} --deg {output.deg:q} > {log:q} 2>&1"


RETRIEVAL_TARGETS = [
    results("retrieval", "significance.csv"),
    results("retrieval", "table_flip_rrstd.csv"),
    results("retrieval", "table_degradation.csv"),
    results("retrieval", "table_effectiveness.csv"),
    generated("retrieval_flip_rrstd.tex"),
    generated("retrieval_degradation.tex"),
    generated("retrieval_effectiveness.tex"),
    generated(f"retrieval_flip_by_depth.{RETRIEVAL_FIG}"),
    generated(f"retrieval_deg_ci.{RETRIEVAL_FIG}"),
]
if RETRIEVAL["enabled"]:
    FINAL_TARGETS.extend(RETRIEVAL_TARGETS)
