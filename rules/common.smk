# Names shared by the rule modules; the functions live in personalir.workflow_support.
from functools import partial

from personalir import workflow_support

params_json = partial(workflow_support.params_json, config)
results = partial(workflow_support.results_path, RESULTS)
raw_files = partial(workflow_support.raw_files, config)
PY = "python -u"
