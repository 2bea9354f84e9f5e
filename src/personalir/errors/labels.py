"""Display names of the errors stage's samplers and mechanisms, in its tables and its figure.

In a module of their own, so the figure does not depend on the table code (nor the tables on
the figure's) and renaming a label re-runs only the rules that print it.
"""

SAMPLER_LABELS = {
    "global": "Global",
    "uniform": "Uniform",
    "character_random": "Character-random",
    "wrong_user": "Wrong user",
    "personalised": "Personalised",
}
MECHANISM_LABELS = {
    "keyboard": "Keyboard",
    "swap": "Swap",
    "repetition": "Repetition",
    "insertion": "Insertion",
    "deletion": "Deletion",
    "homophone": "Homophone",
    "other": "Other",
}
