"""Stage package: syntax."""
