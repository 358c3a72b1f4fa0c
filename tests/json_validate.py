"""A JSON text against a JSON schema's simple keywords, by hand (Debian 12's
python3 has no jsonschema unless python3-jsonschema is installed, and the
tests use only Debian's python3): type, properties, required,
additionalProperties (false, or a schema), enum, const, pattern,
minLength, maxLength, format date, items, prefixItems, minItems, maxItems,
anyOf, oneOf, allOf, $ref to "#/...". Any other keyword is an error of the
validator, so a schema it cannot judge is never passed by mistake.

usage: json_validate.py SCHEMA_FILE TEXT   (TEXT '-': stdin)
prints "ok", or why not (exit 1)
"""
import json
import re
import sys

ANNOTATIONS = {"title", "description", "$schema", "$id", "$comment",
               "examples", "default", "$defs", "definitions"}
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool,
         "null": type(None)}


def is_type(v, t):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])


def resolve(root, ref):
    at = root
    for seg in ref[2:].split("/"):
        at = at[seg.replace("~1", "/").replace("~0", "~")]
    return at


def check(root, s, v, path="$"):
    """None when v is valid under s, else why not."""
    if s is True or s == {}:
        return None
    for k in s:
        if k not in ANNOTATIONS and k not in KEYWORDS:
            raise SystemExit("validator: keyword %s not handled" % k)
    if "$ref" in s:
        return check(root, resolve(root, s["$ref"]), v, path)
    if "const" in s and v != s["const"]:
        return "%s: %r is not the const" % (path, v)
    if "enum" in s and v not in s["enum"]:
        return "%s: %r not in the enum" % (path, v)
    for k in ("anyOf", "oneOf"):
        if k in s:
            ok = [check(root, x, v, path) is None for x in s[k]]
            if not any(ok) or (k == "oneOf" and sum(ok) != 1):
                return "%s: %r matches %d of %s" % (path, v, sum(ok), k)
    for x in s.get("allOf", []):
        why = check(root, x, v, path)
        if why:
            return why
    t = s.get("type")
    if t is not None:
        ts = t if isinstance(t, list) else [t]
        if not any(is_type(v, x) for x in ts):
            return "%s: %r is not %s" % (path, v, t)
    if isinstance(v, dict):
        props = s.get("properties", {})
        for r in s.get("required", []):
            if r not in v:
                return "%s: %s is required" % (path, r)
        extra = s.get("additionalProperties", True)
        for k, x in v.items():
            if k in props:
                why = check(root, props[k], x, path + "." + k)
            elif extra is False:
                why = "%s: %s is not a declared property" % (path, k)
            else:
                why = check(root, extra, x, path + "." + k)
            if why:
                return why
    if isinstance(v, list):
        if len(v) < s.get("minItems", 0) or len(v) > s.get("maxItems", 1 << 60):
            return "%s: %d items" % (path, len(v))
        pre = s.get("prefixItems", [])
        if pre and len(v) != len(pre) and s.get("items", False) is False:
            return "%s: %d items for a tuple of %d" % (path, len(v), len(pre))
        for i, x in enumerate(v):
            sub = pre[i] if i < len(pre) else s.get("items", True)
            why = check(root, sub, x, "%s[%d]" % (path, i))
            if why:
                return why
    if isinstance(v, str):
        if len(v) < s.get("minLength", 0) or len(v) > s.get("maxLength", 1 << 60):
            return "%s: length %d" % (path, len(v))
        if "pattern" in s and not re.search(s["pattern"], v):
            return "%s: %r does not match %s" % (path, v, s["pattern"])
        f = s.get("format")
        if f == "date" and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
            return "%s: %r is not a date" % (path, v)
        if f == "date-time" and not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", v):
            return "%s: %r is not a date-time" % (path, v)
    return None


KEYWORDS = {"$ref", "const", "enum", "anyOf", "oneOf", "allOf", "type",
            "properties", "required", "additionalProperties", "items",
            "prefixItems", "minItems", "maxItems", "minLength", "maxLength",
            "pattern", "format"}


def main():
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    text = sys.stdin.read() if sys.argv[2] == "-" else sys.argv[2]
    try:
        doc = json.loads(text)
    except ValueError as e:
        print("not JSON: %s: %r" % (e, text[:80]))
        sys.exit(1)
    why = check(schema, schema, doc)
    print(why or "ok")
    sys.exit(1 if why else 0)


if __name__ == "__main__":
    main()
