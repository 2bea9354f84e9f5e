# Syntax stage: user sentences -> structural rules -> contrastive style space -> per-user
# Gaussian profiles -> attribution evaluation (docs/syntax.md). The parse depends only on the
# sentences and `syntax.parse`, so a changed encoder, profile or evaluation key never re-parses.

SYNTAX = config["syntax"]


rule syntax_parse:
    """Parse every user sentence with spaCy into D3/D4/P3 rules (cached by text hash)."""
    input:
        sentences=results("data", "{domain}", "user_sentences.parquet"),
    output:
        parsed=results("syntax", "{domain}", "parsed_rules.parquet"),
        report=results("syntax", "{domain}", "parse.report.json"),
    params:
        parse=lambda w: params_json("syntax", "parse"),
        cache=results("syntax", "parse_cache") if SYNTAX["parse"]["cache"] else "",
    benchmark:
        bench("syntax", "syntax_parse", "domain")
    log:
        logs("syntax", "parse_{domain}.log"),
    resources:
        mem_mb=3000,
        runtime=120,
    threads: SYNTAX["parse"]["n_process"]
    conda:
        "../envs/syntax.yaml"
    shell:
        "python -u workflow_scripts/syntax_parse.py --sentences {input.sentences:q}"
        " --params {params.parse:q} --cache-dir {params.cache:q}"
        " --output {output.parsed:q} --report {output.report:q} > {log:q} 2>&1"


rule syntax_features:
    """Usable sentences and users, per-user splits, rule vocabulary, sparse vectors."""
    input:
        parsed=rules.syntax_parse.output.parsed,
        sentences=results("data", "{domain}", "user_sentences.parquet"),
    output:
        vectors=results("syntax", "{domain}", "rule_vectors.npz"),
        index=results("syntax", "{domain}", "sentences.parquet"),
        vocab=results("syntax", "{domain}", "rule_vocab.parquet"),
        report=results("syntax", "{domain}", "features.report.json"),
    params:
        features=lambda w: params_json("syntax", "features"),
        seed=config["seed"],
    benchmark:
        bench("syntax", "syntax_features", "domain")
    log:
        logs("syntax", "features_{domain}.log"),
    resources:
        mem_mb=3000,
        runtime=30,
    threads: 1
    conda:
        "../envs/syntax.yaml"
    shell:
        "python -u workflow_scripts/syntax_features.py --parsed {input.parsed:q}"
        " --sentences {input.sentences:q} --params {params.features:q} --seed {params.seed}"
        " --vectors {output.vectors:q} --index {output.index:q} --vocab {output.vocab:q}"
        " --report {output.report:q} > {log:q} 2>&1"


rule syntax_encoder:
    """Train the same-product contrastive encoder; embed every usable sentence."""
    input:
        vectors=rules.syntax_features.output.vectors,
        index=rules.syntax_features.output.index,
        vocab=rules.syntax_features.output.vocab,
        reviewers=results("data", "{domain}", "product_reviewers.parquet"),
    output:
        weights=results("syntax", "{domain}", "encoder.safetensors"),
        meta=results("syntax", "{domain}", "encoder.json"),
        embeddings=results("syntax", "{domain}", "embeddings.parquet"),
        curve=results("syntax", "{domain}", "training_curve.csv"),
        report=results("syntax", "{domain}", "encoder.report.json"),
    params:
        encoder=lambda w: params_json("syntax", "encoder"),
        seed=config["seed"],
    benchmark:
        bench("syntax", "syntax_encoder", "domain")
    log:
        logs("syntax", "encoder_{domain}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
    # The MLP is small: one thread is fastest, and several oversubscribe a shared machine.
    threads: 1
    conda:
        "../envs/syntax.yaml"
    shell:
        "python -u workflow_scripts/syntax_encoder.py --vectors {input.vectors:q} --index {input.index:q}"
        " --vocab {input.vocab:q} --reviewers {input.reviewers:q} --params {params.encoder:q}"
        " --seed {params.seed} --threads {threads} --weights {output.weights:q}"
        " --meta {output.meta:q} --embeddings {output.embeddings:q} --curve {output.curve:q}"
        " --report {output.report:q} > {log:q} 2>&1"


rule syntax_profiles:
    """Per-user rank-one + diagonal Gaussians (MLE and eigenpair heuristic) and thresholds."""
    input:
        embeddings=rules.syntax_encoder.output.embeddings,
    output:
        profiles=results("syntax", "{domain}", "profiles.parquet"),
        report=results("syntax", "{domain}", "profiles.report.json"),
    params:
        profiles=lambda w: params_json("syntax", "profiles"),
    benchmark:
        bench("syntax", "syntax_profiles", "domain")
    log:
        logs("syntax", "profiles_{domain}.log"),
    resources:
        mem_mb=2000,
        runtime=30,
    threads: 1
    conda:
        "../envs/syntax.yaml"
    shell:
        "python -u workflow_scripts/syntax_profiles.py --embeddings {input.embeddings:q}"
        " --params {params.profiles:q} --profiles {output.profiles:q} --report {output.report:q}"
        " > {log:q} 2>&1"


rule syntax_attribution:
    """Balanced attribution, user AUROC and full-profile attribution of every profile model."""
    input:
        embeddings=rules.syntax_encoder.output.embeddings,
        reviewers=results("data", "{domain}", "product_reviewers.parquet"),
    output:
        summary=results("syntax", "{domain}", "attribution.csv"),
        users=results("syntax", "{domain}", "attribution_users.parquet"),
        roc=results("syntax", "{domain}", "attribution_roc.csv"),
        report=results("syntax", "{domain}", "attribution.report.json"),
    params:
        attribution=lambda w: params_json("syntax", "attribution"),
        seed=config["seed"],
    benchmark:
        bench("syntax", "syntax_attribution", "domain")
    log:
        logs("syntax", "attribution_{domain}.log"),
    resources:
        mem_mb=3000,
        runtime=60,
    threads: 1
    conda:
        "../envs/syntax.yaml"
    shell:
        "python -u workflow_scripts/syntax_attribution.py --embeddings {input.embeddings:q}"
        " --reviewers {input.reviewers:q} --params {params.attribution:q} --seed {params.seed}"
        " --domain {wildcards.domain} --summary {output.summary:q} --users {output.users:q}"
        " --roc {output.roc:q} --report {output.report:q} > {log:q} 2>&1"


rule syntax_table:
    """Attribution table (per domain + equal-weight average) and rule statistics, CSV + LaTeX."""
    input:
        summaries=expand(rules.syntax_attribution.output.summary, domain=DOMAINS),
        parse_reports=expand(rules.syntax_parse.output.report, domain=DOMAINS),
        feature_reports=expand(rules.syntax_features.output.report, domain=DOMAINS),
    output:
        csv=results("syntax", "attribution.csv"),
        tex=results("syntax", "attribution.tex"),
        paper_tex=generated("syntax_attribution.tex"),
        stats_csv=results("syntax", "rules_summary.csv"),
        stats_tex=results("syntax", "rules_summary.tex"),
        paper_stats_tex=generated("syntax_rules_summary.tex"),
    params:
        domains=" ".join(DOMAINS),
        label=config["label"],
    benchmark:
        bench("syntax", "syntax_table")
    log:
        logs("syntax", "table.log"),
    resources:
        mem_mb=1000,
        runtime=5,
    threads: 1
    conda:
        "../envs/syntax.yaml"
    shell:
        "python -u workflow_scripts/syntax_table.py --domains {params.domains}"
        " --summaries {input.summaries:q} --parse-reports {input.parse_reports:q}"
        " --feature-reports {input.feature_reports:q} --label {params.label:q}"
        " --csv {output.csv:q} --tex {output.tex:q} --paper-tex {output.paper_tex:q}"
        " --stats-csv {output.stats_csv:q} --stats-tex {output.stats_tex:q}"
        " --paper-stats-tex {output.paper_stats_tex:q} > {log:q} 2>&1"


rule syntax_figures:
    """ROC curves of the profile models and the encoder training curves (plots only)."""
    input:
        rocs=expand(rules.syntax_attribution.output.roc, domain=DOMAINS),
        summaries=expand(rules.syntax_attribution.output.summary, domain=DOMAINS),
        curves=expand(rules.syntax_encoder.output.curve, domain=DOMAINS),
        metas=expand(rules.syntax_encoder.output.report, domain=DOMAINS),
    output:
        roc=shown(results("syntax", "figures", "syntax_roc.pdf"), "syntax_roc", "PQB", "Figures"),
        training=shown(
            results("syntax", "figures", "syntax_training.pdf"), "syntax_training", "PQB", "Figures"
        ),
        paper_roc=generated("syntax_roc.pdf"),
        paper_training=generated("syntax_training.pdf"),
    params:
        domains=" ".join(DOMAINS),
    benchmark:
        bench("syntax", "syntax_figures")
    log:
        logs("syntax", "figures.log"),
    resources:
        mem_mb=1500,
        runtime=5,
    threads: 1
    conda:
        "../envs/syntax.yaml"
    shell:
        "python -u workflow_scripts/syntax_figures.py --domains {params.domains}"
        " --rocs {input.rocs:q} --summaries {input.summaries:q} --curves {input.curves:q}"
        " --encoder-reports {input.metas:q} --roc {output.roc:q} {output.paper_roc:q}"
        " --training {output.training:q} {output.paper_training:q} > {log:q} 2>&1"


SYNTAX_OUTPUTS = [
    results("syntax", "{domain}", name)
    for name in ("profiles.parquet", "profiles.report.json", "attribution.csv")
]
FINAL_TARGETS.extend(expand(SYNTAX_OUTPUTS, domain=DOMAINS))
FINAL_TARGETS.extend(rules.syntax_table.output)
FINAL_TARGETS.extend(rules.syntax_figures.output)
