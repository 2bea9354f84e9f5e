# Data stage: raw review/meta files -> typed Parquet -> product documents and user sentences.

rule sample_world:
    """Generate the synthetic embedded world of one domain (Amazon Reviews 2023 schemas) and its
    search log (each search ends in a purchase; TTP's `sample_world` examples)."""
    output:
        reviews=results("sample_world", "{domain}", "{domain}.jsonl"),
        meta=results("sample_world", "{domain}", "meta_{domain}.jsonl"),
        truth=results("sample_world", "{domain}", "planted_truth.json"),
        search_log=results("sample_world", "{domain}", "search_log.jsonl"),
        search_log_report=results("sample_world", "{domain}", "search_log.report.json"),
    params:
        sample=lambda w: params_json("sample"),
        seed=config["seed"],
    benchmark:
        bench("data", "sample_world", "domain")
    log:
        logs("sample_world", "{domain}.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    threads: 1
    conda:
        "../envs/data.yaml"
    shell:
        "python -u workflow_scripts/sample_world.py --domain {wildcards.domain} --seed {params.seed}"
        " --params {params.sample:q} --reviews {output.reviews:q} --meta {output.meta:q}"
        " --truth {output.truth:q} --search-log {output.search_log:q}"
        " --search-log-report {output.search_log_report:q} > {log:q} 2>&1"


rule download:
    """Fetch the official Amazon Reviews 2023 files of one domain (streamed, resumable, verified)."""
    output:
        reviews=results("download", "{domain}", "{domain}.jsonl.gz"),
        meta=results("download", "{domain}", "meta_{domain}.jsonl.gz"),
    params:
        download=lambda w: params_json("data", "download"),
    benchmark:
        bench("data", "download", "domain")
    log:
        logs("download", "{domain}.log"),
    resources:
        mem_mb=1000,
        runtime=240,
    threads: 1
    conda:
        "../envs/data.yaml"
    shell:
        "python -u workflow_scripts/download.py --domain {wildcards.domain}"
        " --params {params.download:q} --out-dir \"$(dirname {output.reviews:q})\" > {log:q} 2>&1"


rule ingest:
    """Stream one raw JSONL(.gz) file into typed Parquet; bad records follow the policy."""
    input:
        raw=lambda w: raw_file(w.domain, w.table),
    output:
        parquet=results("data", "{domain}", "{table}.parquet"),
        quality=results("data", "{domain}", "{table}.quality.json"),
        quarantine=results("data", "{domain}", "{table}.quarantine.jsonl"),
    wildcard_constraints:
        table="reviews|meta",
    params:
        ingest=lambda w: params_json("data", "ingest"),
    benchmark:
        bench("data", "ingest", "domain", "table")
    log:
        logs("data", "ingest_{domain}_{table}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
    threads: 1
    conda:
        "../envs/data.yaml"
    shell:
        "python -u workflow_scripts/ingest.py --table {wildcards.table} --input {input.raw:q}"
        " --params {params.ingest:q} --output {output.parquet:q} --quality {output.quality:q}"
        " --quarantine {output.quarantine:q} > {log:q} 2>&1"


rule product_documents:
    """Retrieval document and core terms (generation constraints) of every product."""
    input:
        meta=results("data", "{domain}", "meta.parquet"),
    output:
        products=results("data", "{domain}", "products.parquet"),
        report=results("data", "{domain}", "products.report.json"),
    params:
        products=lambda w: params_json("data", "products"),
    benchmark:
        bench("data", "product_documents", "domain")
    log:
        logs("data", "product_documents_{domain}.log"),
    resources:
        mem_mb=2000,
        runtime=30,
    threads: 1
    conda:
        "../envs/data.yaml"
    shell:
        "python -u workflow_scripts/product_documents.py --meta {input.meta:q}"
        " --params {params.products:q} --output {output.products:q} --report {output.report:q}"
        " > {log:q} 2>&1"


rule user_sentences:
    """Split reviews into sentences, select users, map products to their reviewers."""
    input:
        reviews=results("data", "{domain}", "reviews.parquet"),
    output:
        sentences=results("data", "{domain}", "user_sentences.parquet"),
        users=results("data", "{domain}", "users.parquet"),
        reviewers=results("data", "{domain}", "product_reviewers.parquet"),
        report=results("data", "{domain}", "user_sentences.report.json"),
    params:
        sentences=lambda w: params_json("data", "sentences"),
    benchmark:
        bench("data", "user_sentences", "domain")
    log:
        logs("data", "user_sentences_{domain}.log"),
    resources:
        mem_mb=4000,
        runtime=30,
    threads: 1
    conda:
        "../envs/data.yaml"
    shell:
        "python -u workflow_scripts/user_sentences.py --reviews {input.reviews:q}"
        " --params {params.sentences:q} --sentences {output.sentences:q} --users {output.users:q}"
        " --reviewers {output.reviewers:q} --report {output.report:q} > {log:q} 2>&1"


DATA_OUTPUTS = [
    results("data", "{domain}", name)
    for name in ("user_sentences.parquet", "product_reviewers.parquet")
]
FINAL_TARGETS.extend(expand(DATA_OUTPUTS, domain=DOMAINS))
# Without a catalogue (data.source: local, no meta file) there are no product documents.
FINAL_TARGETS.extend(expand(results("data", "{domain}", "products.parquet"), domain=CATALOGUE_DOMAINS))
