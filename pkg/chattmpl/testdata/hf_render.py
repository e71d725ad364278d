"""Reference renderer: Python jinja2 set up as Hugging Face transformers does
in apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, AssistantTracker's {% generation %}, HF's tojson,
raise_exception, strftime_now).

stdin:  {"now": "2026-03-05T07:08:09", "cases": [{"template": str, "ctx": {...}}, ...]}
stdout: [{"out": str} | {"error": str}, ...]

Used by gen_golden.py and by the Go differential test (which skips when
python3 or jinja2 is missing).
"""
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(jinja2.ext.Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


def main():
    req = json.load(sys.stdin)
    now = datetime.fromisoformat(req.get("now", "2026-03-05T07:08:09"))

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    results = []
    compiled = {}
    for c in req["cases"]:
        try:
            src = c["template"]
            if src not in compiled:
                compiled[src] = env.from_string(src)
            out = compiled[src].render(**c["ctx"])
            results.append({"out": out})
        except Exception as e:  # noqa: BLE001 - any failure is a result
            results.append({"error": f"{type(e).__name__}: {e}"})
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
