"""Shared helper of the deploy_* tests: checks an llmcapd JSON config file against the settings
llmcapd really has — the keys bound in server/daemon_config.cc and the field types declared in
server/daemon_config.h — so example configs break when the daemon's settings drift."""
import re

_TYPES = {
    "std::string": "string", "bool": "bool", "int": "int", "std::int64_t": "int",
    "std::uint16_t": "int", "double": "number", "std::vector<std::string>": "list",
}


def config_schema(root):
    """{key: type} of llmcapd serve's settings."""
    with open(root + "/server/daemon_config.cc", encoding="utf-8") as f:
        keys = re.findall(r'\bs\.add\(\s*"(\w+)"', f.read())
    with open(root + "/server/daemon_config.h", encoding="utf-8") as f:
        header = f.read()
    fields = {name: _TYPES.get(t, t) for t, name in
              re.findall(r'^\s*([\w:<>]+)\s+(\w+)\s*(?:=[^;]*)?;', header, re.M)}
    return {k: fields.get(k, "unknown") for k in keys}


def check_config(cfg, schema, where):
    """Problems of one parsed config object (unknown keys, wrong value types)."""
    problems = []
    if not isinstance(cfg, dict):
        return ["%s: config must be a JSON object" % where]
    for key, value in cfg.items():
        if key not in schema:
            problems.append("%s: unknown key %r (llmcapd refuses it)" % (where, key))
            continue
        t = schema[key]
        ok = {
            "string": isinstance(value, str),
            "bool": isinstance(value, bool),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool),
            "list": isinstance(value, list) and all(isinstance(v, str) for v in value),
        }.get(t, True)
        if not ok:
            problems.append("%s: %s must be of type %s, got %r" % (where, key, t, value))
    return problems
