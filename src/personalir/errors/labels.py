"""Display names of the errors stage's mechanisms, in its tables and its figure (samplers carry
their own label: ``personalir.errors.sampling``).

In a module of their own, so the figure does not depend on the table code (nor the tables on
the figure's) and renaming a label re-runs only the rules that print it.
"""

MECHANISM_LABELS = {
    "keyboard": "Keyboard",
    "swap": "Swap",
    "repetition": "Repetition",
    "insertion": "Insertion",
    "deletion": "Deletion",
    "homophone": "Homophone",
    "other": "Other",
}
