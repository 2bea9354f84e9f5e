"""Stage package: retrieval."""
