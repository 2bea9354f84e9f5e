"""Data stage: sample world, download, ingest, product documents, user sentences, statistics."""
