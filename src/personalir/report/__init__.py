"""Report stage: tables (CSV + LaTeX), figures and the paper build."""
