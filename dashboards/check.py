#!/usr/bin/env python3
"""Checks the Grafana dashboards in this folder.

1. Every dashboard is valid JSON with what Grafana needs: title, uid,
   schemaVersion, templating variables (data sources, host), panels with
   id, type, gridPos (h, w, x, y inside 24 columns) and targets, each
   target with a refId and a query.
2. Every PromQL expression parses: they are written (Grafana variables
   substituted) into a rules file that `promtool check rules` must accept.
3. Every metric and label a PromQL expression uses is one the daemon was
   seen exporting: the OTLP receiver tests (otlp_export, otlp_servicing and
   otlp_progress in tests/tests/telemetry/) write the exported metrics (name, unit, kind, attribute keys) to
   target/otlp/exported-metrics/<test>.json; their Prometheus names after an
   OpenTelemetry Collector (dots -> underscores, unit suffix, _total on
   counters, _bucket/_sum/_count on histograms) are compared.

Usage: python3 dashboards/check.py [--exported FILE] [--promtool PATH]
Exit status 0 when all checks pass; every failure is printed.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_EXPORTED = REPO / "target" / "otlp" / "exported-metrics"

# Labels that come from the resource (Collector: resource_to_telemetry_conversion)
# or from Prometheus itself, not from metric attributes.
RESOURCE_LABELS = {"host_name", "host_id", "service_name", "service_instance_id",
                   "service_version", "os_type", "job", "instance", "le"}
# Substitutes for Grafana's variables, so promtool sees plain PromQL.
VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
    "${host}": "host-1",
    "$host": "host-1",
    "${kind}": ".*",
    "$kind": ".*",
}
PROMQL_WORDS = {
    "sum", "by", "without", "rate", "increase", "histogram_quantile", "count",
    "sort_desc", "sort", "avg", "max", "min", "and", "or", "unless", "on",
    "ignoring", "group_left", "group_right", "bool", "offset", "topk", "bottomk",
    "irate", "delta", "label_values", "clamp_min", "clamp_max", "abs", "vector",
    "scalar", "time", "inf", "nan",
}
UNIT_SUFFIX = {"s": "seconds", "By": "bytes", "By/s": "bytes_per_second", "ms": "milliseconds", "1": "ratio"}


def prometheus_names(metric):
    """Prometheus series names an OTel metric gets after the Collector."""
    base = metric["name"].replace(".", "_").replace("-", "_")
    unit = metric.get("unit") or ""
    suffix = "" if unit.startswith("{") else UNIT_SUFFIX.get(unit, unit)
    if suffix and not base.endswith("_" + suffix):
        base = f"{base}_{suffix}"
    kind = metric.get("kind")
    if kind == "histogram":
        return {base + "_bucket", base + "_sum", base + "_count"}
    if kind == "counter":
        return {base if base.endswith("_total") else base + "_total"}
    return {base}


def substitute(expr):
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def check_structure(path, dashboard, errors):
    where = path.name
    for key in ("title", "uid", "schemaVersion", "panels", "templating"):
        if key not in dashboard:
            errors.append(f"{where}: missing {key}")
    if not isinstance(dashboard.get("schemaVersion"), int):
        errors.append(f"{where}: schemaVersion is not a number")
    variables = {v.get("name"): v for v in dashboard.get("templating", {}).get("list", [])}
    if not any(v.get("type") == "datasource" for v in variables.values()):
        errors.append(f"{where}: no data source variable")
    if "host" not in variables:
        errors.append(f"{where}: no host variable")
    ids = set()
    for panel in dashboard.get("panels", []):
        name = f"{where}: panel {panel.get('title')!r}"
        for key in ("id", "type", "title", "gridPos", "targets", "datasource"):
            if key not in panel:
                errors.append(f"{name}: missing {key}")
        if panel.get("id") in ids:
            errors.append(f"{name}: duplicate id {panel.get('id')}")
        ids.add(panel.get("id"))
        grid = panel.get("gridPos", {})
        if not all(isinstance(grid.get(k), int) for k in ("h", "w", "x", "y")):
            errors.append(f"{name}: gridPos needs integer h, w, x, y")
        elif grid["x"] + grid["w"] > 24:
            errors.append(f"{name}: wider than the 24-column grid")
        uid = str(panel.get("datasource", {}).get("uid", ""))
        if uid.startswith("${") and uid[2:-1] not in variables:
            errors.append(f"{name}: data source {uid} is not a dashboard variable")
        targets = panel.get("targets", [])
        if not targets:
            errors.append(f"{name}: no targets")
        for target in targets:
            if "refId" not in target:
                errors.append(f"{name}: target without refId")
            if not (target.get("expr") or target.get("query")):
                errors.append(f"{name}: target without a query")


def promql_targets(dashboard):
    for panel in dashboard.get("panels", []):
        if panel.get("datasource", {}).get("type") != "prometheus":
            continue
        for target in panel.get("targets", []):
            if target.get("expr"):
                yield panel.get("title"), target["expr"]
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        if isinstance(query, dict) and query.get("query", "").startswith("label_values("):
            # label_values(metric, label) is Grafana's, not PromQL: check the metric part.
            match = re.match(r"label_values\((\w+),\s*(\w+)\)", query["query"])
            if match:
                yield f"variable {variable['name']}", f"count by ({match.group(2)}) ({match.group(1)})"


def names_in(expr):
    """Metric names and label names used in a PromQL expression."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # drop string literals
    text = re.sub(r"\[[^\]]*\]", "", text)  # drop range selectors
    labels = set()
    for group in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", text):
        labels.update(l.strip() for l in group.split(",") if l.strip())
    for group in re.findall(r"\{([^}]*)\}", text):
        labels.update(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", group))
    text = re.sub(r"\b(?:by|without|on|ignoring)\s*\([^)]*\)", "", text)
    text = re.sub(r"\{[^}]*\}", "", text)
    metrics = {
        word for word in re.findall(r"[a-zA-Z_:][\w:]*", text)
        if word not in PROMQL_WORDS and not re.fullmatch(r"\d.*", word)
    }
    return metrics, labels


def run_promtool(promtool, exprs, errors):
    rules = {"groups": [{"name": "dashboards", "rules": [
        {"record": f"dashboard:expr_{i}", "expr": substitute(expr)}
        for i, (_, expr) in enumerate(exprs)
    ]}]}
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "dashboard-rules.yml"
        # JSON is YAML; promtool reads it as a rules file.
        path.write_text(json.dumps(rules, indent=1))
        result = subprocess.run([promtool, "check", "rules", str(path)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            errors.append("promtool check rules failed:\n" + result.stdout + result.stderr)
        else:
            print(f"promtool: {len(exprs)} PromQL expressions parse")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exported", default=os.environ.get("OTLP_EXPORTED_METRICS", str(DEFAULT_EXPORTED)))
    parser.add_argument("--promtool", default=shutil.which("promtool"))
    args = parser.parse_args()

    errors = []
    dashboards = []
    for path in sorted(HERE.glob("*.json")):
        try:
            dashboard = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            errors.append(f"{path.name}: invalid JSON: {error}")
            continue
        check_structure(path, dashboard, errors)
        dashboards.append((path, dashboard))
    if not dashboards:
        errors.append("no dashboards found")

    exprs = [(f"{p.name}: {title}", expr) for p, d in dashboards for title, expr in promql_targets(d)]
    if not args.promtool:
        errors.append("promtool not found (Debian package 'prometheus'); cannot check PromQL")
    else:
        run_promtool(args.promtool, exprs, errors)

    exported_path = pathlib.Path(args.exported)
    files = sorted(exported_path.glob("*.json")) if exported_path.is_dir() else (
        [exported_path] if exported_path.exists() else [])
    if not files:
        errors.append(f"{exported_path}: no exported metrics: run the OTLP receiver tests first "
                      "(cargo test -p trident-e2e --test telemetry -- otlp_export:: otlp_servicing:: otlp_progress::)")
    else:
        exported = [metric for path in files for metric in json.loads(path.read_text())]
        series = {}
        for metric in exported:
            for name in prometheus_names(metric):
                series.setdefault(name, set()).update(
                    a.replace(".", "_") for a in metric.get("attributes", []))
        used = 0
        for where, expr in exprs:
            metrics, labels = names_in(expr)
            for metric in metrics:
                used += 1
                if metric not in series:
                    errors.append(f"{where}: metric {metric} was not seen exported "
                                  f"(exported: {', '.join(sorted(series))})")
                    continue
            allowed = set(RESOURCE_LABELS)
            for metric in metrics:
                allowed |= series.get(metric, set())
            for label in labels - allowed:
                errors.append(f"{where}: label {label} is not an attribute of {', '.join(sorted(metrics))}")
        names = {metric["name"] for metric in exported}
        print(f"metric names: {used} uses checked against {len(names)} exported metrics "
              f"({', '.join(p.name for p in files)})")

    for error in errors:
        print(f"FAIL {error}", file=sys.stderr)
    print(f"dashboards: {len(dashboards)} checked, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
