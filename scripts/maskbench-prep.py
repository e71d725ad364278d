#!/usr/bin/env python3
"""Writes MaskBench's corpus as JSON lines for `lightllm bench-grammar --maskbench`.

MaskBench is guidance-ai/jsonschemabench's maskbench/data: one JSON file per schema with
"schema" and "tests" ({"data", "valid"}). Each test's text is what MaskBench's runner forces
through the mask, json.dumps(data, indent=None, ensure_ascii=False), which only Python
writes byte for byte, hence this script.

    python3 scripts/maskbench-prep.py PATH/TO/jsonschemabench/maskbench/data /tmp/maskbench.jsonl
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: maskbench-prep.py MASKBENCH_DATA_DIR OUT.jsonl")
    src, dst = sys.argv[1], sys.argv[2]
    names = sorted(n for n in os.listdir(src) if n.endswith(".json"))
    if not names:
        sys.exit(f"maskbench-prep.py: no *.json in {src}")
    skipped = 0
    with open(dst, "w", encoding="utf-8") as out:
        for name in names:
            try:
                with open(os.path.join(src, name), encoding="utf-8") as f:
                    rec = json.load(f)
            except (OSError, ValueError) as e:
                print(f"skip {name}: {e}", file=sys.stderr)
                skipped += 1
                continue
            tests = [{"text": json.dumps(t["data"], indent=None, ensure_ascii=False), "valid": t["valid"]}
                     for t in rec.get("tests", [])]
            out.write(json.dumps({"id": name, "schema": json.dumps(rec["schema"]), "tests": tests}) + "\n")
    print(f"{len(names) - skipped} schemas written to {dst} ({skipped} skipped)")


if __name__ == "__main__":
    main()
