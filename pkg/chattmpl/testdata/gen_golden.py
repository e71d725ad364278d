"""Regenerates edge_golden.json from edge_cases.json with Python jinja2 in
Hugging Face's configuration (hf_render.py). Run from this directory:

    python3 gen_golden.py
"""
import json
import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
cases = json.loads((here / "edge_cases.json").read_text())
req = {"now": "2026-03-05T07:08:09",
       "cases": [{"template": c["template"], "ctx": c["ctx"]} for c in cases]}
res = subprocess.run([sys.executable, str(here / "hf_render.py")], input=json.dumps(req),
                     capture_output=True, text=True, check=True)
outs = json.loads(res.stdout)
golden = [{"name": c["name"], **o} for c, o in zip(cases, outs)]
(here / "edge_golden.json").write_text(json.dumps(golden, ensure_ascii=False, indent=1) + "\n")
print(f"{len(golden)} cases, {sum('error' in g for g in golden)} errors")
