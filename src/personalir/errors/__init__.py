"""Stage package: errors."""
