"""Stage package: queries."""
