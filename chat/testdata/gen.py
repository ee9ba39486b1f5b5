#!/usr/bin/env python3
"""Regenerates chat/testdata/golden/*.json: every template in templates/
rendered over every conversation in cases.json, with and without the
generation prompt, by Python's jinja2 set up as Hugging Face transformers'
apply_chat_template sets it up (ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, loopcontrols, tojson without ASCII escaping,
raise_exception and strftime_now globals). strftime_now reads a fixed clock
(2026-01-15 09:30:00) so the goldens do not change from day to day.

Run from anywhere: python3 chat/testdata/gen.py  (or go test ./chat -update).
Requires jinja2 (tested with 3.1.6).
"""
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
NOW = datetime.datetime(2026, 1, 15, 9, 30, 0)


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return NOW.strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    env = environment()
    with open(os.path.join(HERE, "templates.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    os.makedirs(os.path.join(HERE, "golden"), exist_ok=True)
    for name in sorted(tokens):
        with open(os.path.join(HERE, "templates", name + ".jinja"), encoding="utf-8", newline="") as f:
            tmpl = env.from_string(f.read())
        results = []
        for case in cases:
            for gen in (True, False):
                r = {"case": case["name"], "add_generation_prompt": gen}
                try:
                    r["output"] = tmpl.render(messages=case["messages"], add_generation_prompt=gen,
                                              **tokens[name], **case.get("vars", {}))
                except TemplateError as e:
                    r["error"] = str(e)
                results.append(r)
        out = os.path.join(HERE, "golden", name + ".json")
        with open(out, "w", encoding="utf-8", newline="") as f:
            json.dump(results, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print("wrote", os.path.relpath(out), file=sys.stderr)


if __name__ == "__main__":
    main()
