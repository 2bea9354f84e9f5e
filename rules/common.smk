# Helpers shared by the rule modules: paths, parameter passing, env files.
import json


def params_json(*keys):
    """A config section as compact JSON, handed to a workflow script (and a rerun trigger)."""
    node = config
    for key in keys:
        node = node[key]
    return json.dumps(node, sort_keys=True, separators=(",", ":"))


def results(*parts):
    return "/".join([RESULTS, *parts])


def log_path(stage, name):
    return f"logs/{stage}/{name}.log"


PY = "python -u"
