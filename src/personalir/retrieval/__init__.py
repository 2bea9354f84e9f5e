"""Retrieval robustness evaluation (PQB): retrievers, run files, metrics, tables and figures.

Modules, in the order the data flows through them:

``corpus``        product documents and PQB query files (ours or the released format)
``base``          the retriever interface, the registry and deterministic top-k helpers
                  (models are resolved by ``personalir.common.models``, shared by all stages)
``lexical`` ...   one module per family: lexical, sparse, dense, hybrid, late_interaction, rerank
``runio``         TREC run files: writing, and reading with errors that name the line
``metrics``       per-query ranks and measures; Flip@K (+ per product), RRstd, Deg@K, MRRdeg;
                  ir_measures
``stats``         bootstrap confidence intervals and paired randomisation tests
``pipeline``      what a workflow rule (or the bring-your-own CLI) runs end to end
``tables``        the paper's tables (CSV + LaTeX) and ``figures``
``evaluate``      ``pqb-evaluate`` (``python -m personalir.retrieval.evaluate``): bring your own
                  run, model or class; ``export-queries`` writes the query ids and texts
``byo`` ...       its helpers: ``byo`` (corpus from meta, inputs, query export), ``byo_args``
                  (the command lines), ``byo_summary`` (the console table and summary.json)
"""
