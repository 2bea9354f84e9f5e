"""Personalised query robustness (PQB) and Think-to-Personalize (TTP) research code.

One sub-package per stage of the data flow:
data -> syntax -> errors -> queries -> validation -> retrieval -> ttp -> report.
"""

__version__ = "0.1.0"
