"""Shared utilities: atomic writes, config loading and validation, registries, seeding."""
