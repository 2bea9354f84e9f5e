# Query stage (PQB benchmark construction): LoRA adapter on the seed set -> candidates per
# domain (LM + construction grammar, eager validity filters) -> user matching, syntactic and
# writing-error pairs, release -> datasheet, filter report, identifiability (docs/queries.md).
# The LM steps (queries_lm, queries_candidates: generation and perplexity) are separate from
# selection and tables, so a changed matching or pair parameter never regenerates candidates.
QUERIES = config["queries"]
QUERIES_GPU = 1 if QUERIES["lm"]["device"] == "cuda" else 0
QUERIES_LM_KEYS = ("lm", "filters")
QUERIES_CANDIDATE_KEYS = (
    "products_per_domain", "min_reviewers", "backends", "lm", "grammar", "filters",
)
QUERIES_SELECT_KEYS = ("lm", "filters", "matching", "pairs", "writing_error", "identifiability")


rule queries_lm:
    """Fine-tune the instruction model with LoRA on the shipped seed set; fluency bound."""
    input:
        seeds="src/personalir/queries/seed_queries.jsonl",
    output:
        adapter=results("queries", "lm", "adapter_model.safetensors"),
        adapter_config=results("queries", "lm", "adapter_config.json"),
        report=results("queries", "lm", "lm.report.json"),
    params:
        queries=params_json("queries", keys=QUERIES_LM_KEYS),
        seed=config["seed"],
        model_cache=GGUF_CACHE,  # rules/common.smk
    benchmark:
        bench("queries", "queries_lm")
    log:
        logs("queries", "lm.log"),
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=QUERIES_GPU,
    threads: config["threads"]
    conda:
        workflow_support.conda_env(config, "queries")
    shell:
        "python -u workflow_scripts/queries_lm.py --seeds {input.seeds:q}"
        " --params {params.queries:q} --seed {params.seed} --threads {threads}"
        " --model-cache {params.model_cache:q} --adapter {output.adapter:q}"
        " --adapter-config {output.adapter_config:q} --report {output.report:q} > {log:q} 2>&1"


rule queries_candidates:
    """Candidate queries of one domain from every backend; lexical, contradiction, duplicate,
    semantic and fluency filters (each removal counted)."""
    input:
        products=results("data", "{domain}", "products.parquet"),
        reviewers=results("data", "{domain}", "product_reviewers.parquet"),
        adapter=rules.queries_lm.output.adapter,
        adapter_config=rules.queries_lm.output.adapter_config,
        lm_report=rules.queries_lm.output.report,
    output:
        candidates=results("queries", "{domain}", "candidates.parquet"),
        report=results("queries", "{domain}", "candidates.report.json"),
    params:
        queries=params_json("queries", keys=QUERIES_CANDIDATE_KEYS),
        n_core_terms=config["data"]["products"]["n_core_terms"],
        seed=config["seed"],
        model_cache=GGUF_CACHE,  # rules/common.smk
    benchmark:
        bench("queries", "queries_candidates", "domain")
    log:
        logs("queries", "candidates_{domain}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=QUERIES_GPU,
    threads: config["threads"]
    conda:
        workflow_support.conda_env(config, "queries")
    shell:
        "python -u workflow_scripts/queries_candidates.py --domain {wildcards.domain}"
        " --products {input.products:q} --reviewers {input.reviewers:q} --adapter {input.adapter:q}"
        " --lm-report {input.lm_report:q}"
        " --params {params.queries:q} --n-core-terms {params.n_core_terms}"
        " --seed {params.seed} --threads {threads} --model-cache {params.model_cache:q}"
        " --candidates {output.candidates:q}"
        " --report {output.report:q} > {log:q} 2>&1"


rule queries_select:
    """Match candidates to reviewers' syntactic profiles, choose cross-user pairs at maximum
    Gaussian distance, inject each user's errors; benchmark + release."""
    input:
        candidates=rules.queries_candidates.output.candidates,
        candidates_report=rules.queries_candidates.output.report,
        products=results("data", "{domain}", "products.parquet"),
        reviewers=results("data", "{domain}", "product_reviewers.parquet"),
        encoder_weights=results("syntax", "{domain}", "encoder.safetensors"),
        encoder_meta=results("syntax", "{domain}", "encoder.json"),
        profiles=results("syntax", "{domain}", "profiles.parquet"),
        embeddings=results("syntax", "{domain}", "embeddings.parquet"),
        error_profiles=results("errors", "{domain}", "profiles.json"),
        lm_report=rules.queries_lm.output.report,
    output:
        benchmark=results("queries", "{domain}", "benchmark.jsonl"),
        released=results("queries", "{domain}", "released.json"),
        pairs=results("queries", "{domain}", "pairs.csv"),
        report=results("queries", "{domain}", "select.report.json"),
        filter_report=results("queries", "{domain}", "filter_report.json"),
    params:
        queries=params_json("queries", keys=QUERIES_SELECT_KEYS),
        syntax_parse=lambda w: params_json("syntax", "parse"),
        errors=params_json("errors", keys=("injection", "edits")),
        seed=config["seed"],
        model_cache=GGUF_CACHE,  # rules/common.smk
    benchmark:
        bench("queries", "queries_select", "domain")
    log:
        logs("queries", "select_{domain}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=QUERIES_GPU,
    threads: config["threads"]
    conda:
        workflow_support.conda_env(config, "queries")
    shell:
        "python -u workflow_scripts/queries_select.py --domain {wildcards.domain}"
        " --candidates {input.candidates:q} --candidates-report {input.candidates_report:q}"
        " --products {input.products:q} --reviewers {input.reviewers:q}"
        " --encoder-weights {input.encoder_weights:q} --encoder-meta {input.encoder_meta:q}"
        " --profiles {input.profiles:q} --embeddings {input.embeddings:q}"
        " --error-profiles {input.error_profiles:q} --lm-report {input.lm_report:q}"
        " --params {params.queries:q} --syntax-parse {params.syntax_parse:q}"
        " --errors {params.errors:q} --seed {params.seed} --threads {threads}"
        " --model-cache {params.model_cache:q}"
        " --benchmark {output.benchmark:q} --released {output.released:q} --pairs {output.pairs:q}"
        " --report {output.report:q} --filter-report {output.filter_report:q} > {log:q} 2>&1"


rule queries_tables:
    """Datasheet (the paper's Table 1 columns), filter report and the identifiability check
    across domains, CSV + LaTeX; fails when the identifiability share is below its minimum."""
    input:
        benchmarks=expand(rules.queries_select.output.benchmark, domain=DOMAINS),
        select_reports=expand(rules.queries_select.output.report, domain=DOMAINS),
        filter_reports=expand(rules.queries_select.output.filter_report, domain=DOMAINS),
        syntax_profiles=expand(results("syntax", "{domain}", "profiles.parquet"), domain=DOMAINS),
        syntax_embeddings=expand(
            results("syntax", "{domain}", "embeddings.parquet"), domain=DOMAINS
        ),
    output:
        datasheet_csv=results("queries", "datasheet.csv"),
        datasheet_tex=generated("queries_datasheet.tex"),
        filters_csv=results("queries", "filter_report.csv"),
        filters_tex=generated("queries_filters.tex"),
        identifiability_csv=results("queries", "identifiability.csv"),
        identifiability_tex=generated("queries_identifiability.tex"),
    params:
        domains=" ".join(DOMAINS),
        queries=params_json("queries", keys=("pairs", "identifiability")),
        label=config["label"],
    benchmark:
        bench("queries", "queries_tables")
    log:
        logs("queries", "tables.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/queries.yaml"
    shell:
        "python -u workflow_scripts/queries_tables.py --domains {params.domains}"
        " --benchmarks {input.benchmarks:q} --select-reports {input.select_reports:q}"
        " --filter-reports {input.filter_reports:q} --syntax-profiles {input.syntax_profiles:q}"
        " --syntax-embeddings {input.syntax_embeddings:q} --params {params.queries:q}"
        " --label {params.label:q} --datasheet-csv {output.datasheet_csv:q}"
        " --datasheet-tex {output.datasheet_tex:q} --filters-csv {output.filters_csv:q}"
        " --filters-tex {output.filters_tex:q} --identifiability-csv {output.identifiability_csv:q}"
        " --identifiability-tex {output.identifiability_tex:q} > {log:q} 2>&1"


if config["queries"]["enabled"]:
    FINAL_TARGETS.extend(
        expand(
            [rules.queries_select.output.benchmark, rules.queries_select.output.released],
            domain=DOMAINS,
        )
    )
    FINAL_TARGETS.extend(rules.queries_tables.output)
