#!/usr/bin/env python3
"""Scrapes a URL as Prometheus would and parses the answer with Prometheus'
own text parser (Debian's python3-prometheus-client), for e2e_metrics_test.

    prom_scrape.py check             exit 0 if the parser can be imported
    prom_scrape.py URL [METHOD]      one request; prints one JSON object:
        {"status": 200, "content_type": "...", "body": "...",
         "families": [{"name", "type", "help",
                       "samples": [{"name", "labels": {...}, "value"}]}]}
    ("families" only for a 200; a body the parser refuses exits 1 with its
    error on stderr.)
"""
import json
import sys
import urllib.error
import urllib.request


def number(v):
    """The parser's floats: vdev's values are integers, kept exact up to 2**53."""
    return int(v) if float(v).is_integer() else v


def main():
    from prometheus_client.parser import text_string_to_metric_families

    if sys.argv[1:] == ["check"]:
        return 0
    url = sys.argv[1]
    method = sys.argv[2] if len(sys.argv) > 2 else "GET"
    req = urllib.request.Request(url, method=method, data=b"x" if method in ("POST", "PUT") else None)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, headers, body = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, headers, body = e.code, e.headers, e.read()
    out = {
        "status": status,
        "content_type": headers.get("Content-Type", ""),
        "allow": headers.get("Allow", ""),
        "body": body.decode("utf-8"),
    }
    if status == 200 and method == "GET":
        out["families"] = [
            {
                "name": f.name,
                "type": f.type,
                "help": f.documentation,
                "samples": [{"name": s.name, "labels": s.labels, "value": number(s.value)} for s in f.samples],
            }
            for f in text_string_to_metric_families(out["body"])
        ]
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
