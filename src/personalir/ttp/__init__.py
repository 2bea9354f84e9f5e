"""Stage package: ttp."""
