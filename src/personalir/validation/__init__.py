"""Stage package: validation."""
