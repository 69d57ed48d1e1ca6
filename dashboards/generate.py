#!/usr/bin/env python3
"""Writes the Grafana dashboards of tridentd fleets (JSON, committed).

Run after changing a panel: `python3 dashboards/generate.py`. The JSON files
are the product; this script only keeps them consistent (ids, grid, data
source references). Metric names are the Prometheus forms an OpenTelemetry
Collector gives the daemon's OTLP metrics (see README.md).
"""

import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
SCHEMA_VERSION = 39

PROM = {"type": "prometheus", "uid": "${prometheus}"}
LOKI = {"type": "loki", "uid": "${loki}"}
TEMPO = {"type": "tempo", "uid": "${tempo}"}

HOSTS = 'host_name=~"$host"'
ONE_HOST = 'host_name="$host"'


def datasource_var(name, kind, label):
    return {
        "name": name,
        "label": label,
        "type": "datasource",
        "query": kind,
        "current": {},
        "hide": 0,
        "refresh": 1,
        "regex": "",
        "options": [],
    }


def host_var(multi):
    return {
        "name": "host",
        "label": "Host",
        "type": "query",
        "datasource": PROM,
        "query": {
            "query": "label_values(trident_bus_records_total, host_name)",
            "refId": "hosts",
        },
        "definition": "label_values(trident_bus_records_total, host_name)",
        "refresh": 2,
        "sort": 1,
        "multi": multi,
        "includeAll": multi,
        "allValue": ".*" if multi else None,
        "current": {},
        "hide": 0,
        "options": [],
        "regex": "",
    }


def kind_var():
    return {
        "name": "kind",
        "label": "Servicing kind",
        "type": "query",
        "datasource": PROM,
        "query": {
            "query": "label_values(trident_servicing_operations_total, kind)",
            "refId": "kinds",
        },
        "definition": "label_values(trident_servicing_operations_total, kind)",
        "refresh": 2,
        "multi": True,
        "includeAll": True,
        "allValue": ".*",
        "current": {},
        "hide": 0,
        "options": [],
        "regex": "",
    }


def trace_var():
    return {
        "name": "trace_id",
        "label": "Trace id",
        "type": "textbox",
        "query": "",
        "current": {"text": "", "value": ""},
        "hide": 0,
        "options": [],
    }


class Layout:
    """Places panels left to right, wrapping at Grafana's 24 columns."""

    def __init__(self):
        self.x = 0
        self.y = 0
        self.row_height = 0
        self.next_id = 1

    def place(self, w, h):
        if self.x + w > 24:
            self.x = 0
            self.y += self.row_height
            self.row_height = 0
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_height = max(self.row_height, h)
        return pos

    def panel(self, title, kind, targets, w, h, description, datasource=PROM, **extra):
        pid = self.next_id
        self.next_id += 1
        refs = iter("ABCDEFGHIJ")
        panel = {
            "id": pid,
            "title": title,
            "description": description,
            "type": kind,
            "datasource": datasource,
            "gridPos": self.place(w, h),
            "targets": [dict(t, refId=next(refs), datasource=datasource) for t in targets],
        }
        panel.update(extra)
        return panel


def prom(expr, legend="__auto", instant=False):
    target = {"expr": expr, "legendFormat": legend, "range": not instant, "instant": instant}
    return target


def unit(u, **defaults):
    return {"fieldConfig": {"defaults": dict(unit=u, **defaults), "overrides": []}}


# Overall progress gauges (the newest operation's figures, as the daemon
# derived them for the CLI and the Python client too). A figure the daemon
# does not know (no byte total, no measured rate, no honest ETA, no plan) is
# absent, so its panel shows no value rather than a made-up one.
PROGRESS_PERCENT = "trident_servicing_progress_done_bytes{sel} / trident_servicing_progress_planned_bytes{sel}"


def progress_panels(lay, sel, by=""):
    """Percent, bytes, rate, ETA and steps n of m of the newest operation.
    `sel` selects hosts; `by` groups by host for the fleet view."""
    agg = (lambda e: f"max by ({by}) ({e})") if by else (lambda e: e)
    legend = "{{host_name}}" if by else "{{kind}}"
    pct = agg(PROGRESS_PERCENT.format(sel=f"{{{sel}}}"))
    return [
        lay.panel(
            "Overall progress", "bargauge" if by else "gauge",
            [prom(pct, legend, instant=True)],
            6, 6, "Share of the newest operation's bytes done (bytes from the image metadata).",
            **unit("percentunit", min=0, max=1),
        ),
        lay.panel(
            "Bytes done of planned", "stat",
            [
                prom(agg(f"trident_servicing_progress_done_bytes{{{sel}}}"), "done " + legend, instant=True),
                prom(agg(f"trident_servicing_progress_planned_bytes{{{sel}}}"), "planned " + legend, instant=True),
            ],
            6, 6, "Bytes the newest operation moved, and the total it moves in all.",
            **unit("bytes"),
        ),
        lay.panel(
            "Rate and ETA", "stat",
            [
                prom(agg(f"trident_servicing_progress_rate_bytes_per_second{{{sel}}}"), "rate " + legend, instant=True),
                prom(agg(f"trident_servicing_progress_eta_seconds{{{sel}}}"), "ETA " + legend, instant=True),
            ],
            6, 6, "The daemon's smoothed transfer rate (over bytes, time constant 5 s) and time left; no ETA while it cannot be honest or once the operation finished.",
            fieldConfig={"defaults": {"unit": "short"}, "overrides": [
                {"matcher": {"id": "byFrameRefID", "options": "A"}, "properties": [{"id": "unit", "value": "Bps"}]},
                {"matcher": {"id": "byFrameRefID", "options": "B"}, "properties": [{"id": "unit", "value": "s"}]},
            ]},
        ),
        lay.panel(
            "Steps done of planned", "stat",
            [
                prom(agg(f"trident_servicing_progress_steps_done{{{sel}}}"), "done " + legend, instant=True),
                prom(agg(f"trident_servicing_progress_steps_planned{{{sel}}}"), "planned " + legend, instant=True),
            ],
            6, 6, "Top-level phases the newest operation finished, of those it planned (SWUpdate's step n of m).",
            **unit("short"),
        ),
    ]


def fleet_overview():
    lay = Layout()
    rate = "$__rate_interval"
    panels = [
        lay.panel(
            "Operations in flight", "stat",
            [prom(f"sum(trident_servicing_operations_active{{{HOSTS}}})", "running")],
            4, 5, "Servicing operations running now across the selected hosts.",
            **unit("short"),
        ),
        lay.panel(
            "Success rate by kind", "stat",
            [prom(
                f'sum by (kind) (increase(trident_servicing_operations_total{{{HOSTS}, kind=~"$kind", result="success"}}[$__range]))'
                f' / sum by (kind) (increase(trident_servicing_operations_total{{{HOSTS}, kind=~"$kind"}}[$__range]))',
                "{{kind}}")],
            8, 5, "Share of completed operations that succeeded in the time range, per servicing kind.",
            **unit("percentunit", min=0, max=1),
        ),
        lay.panel(
            "Hosts with failures", "stat",
            [prom(
                f'count(sum by (host_name) (increase(trident_servicing_operations_total{{{HOSTS}, result="failure"}}[$__range])) > 0)',
                "hosts")],
            4, 5, "Hosts where at least one operation failed in the time range.",
            **unit("short"),
        ),
        lay.panel(
            "Telemetry drops", "stat",
            [
                prom(f"sum(increase(trident_export_drops_total{{{HOSTS}}}[$__range]))", "export"),
                prom(f"sum(increase(trident_bus_drops_total{{{HOSTS}}}[$__range]))", "bus"),
            ],
            8, 5, "Telemetry lost in the time range: by the OTLP export (collector down or slow) and by the in-daemon bus (ring overwritten).",
            **unit("short"),
        ),
        lay.panel(
            "Completed operations by kind and result", "timeseries",
            [prom(
                f'sum by (kind, result) (increase(trident_servicing_operations_total{{{HOSTS}, kind=~"$kind"}}[{rate}]))',
                "{{kind}} {{result}}")],
            12, 8, "How many operations finished, per kind and result.",
            **unit("short"),
        ),
        lay.panel(
            "Operation duration percentiles", "timeseries",
            [
                prom(
                    f'histogram_quantile({q}, sum by (le) (rate(trident_servicing_operation_duration_seconds_bucket{{{HOSTS}, kind=~"$kind"}}[{rate}])))',
                    f"p{int(q * 100)}")
                for q in (0.5, 0.9, 0.99)
            ],
            12, 8, "How long servicing operations take (p50, p90, p99).",
            **unit("s"),
        ),
        lay.panel(
            "Disk write and image read throughput", "timeseries",
            [
                prom(f"sum(rate(trident_servicing_disk_written_bytes_total{{{HOSTS}}}[{rate}]))", "written"),
                prom(f"sum(rate(trident_image_read_bytes_total{{{HOSTS}}}[{rate}]))", "image read"),
            ],
            12, 8, "Bytes per second written to disks by servicing and read from OS images, fleet-wide.",
            **unit("Bps"),
        ),
        lay.panel(
            "Errors by category", "timeseries",
            [prom(f"sum by (category) (increase(trident_errors_total{{{HOSTS}}}[{rate}]))", "{{category}}")],
            12, 8, "Error reports per category (invalid input, servicing, internal, ...).",
            **unit("short"),
        ),
        lay.panel(
            "Telemetry drops by signal", "timeseries",
            [
                prom(f"sum by (signal, reason) (rate(trident_export_drops_total{{{HOSTS}}}[{rate}]))", "export {{signal}} {{reason}}"),
                prom(f"sum by (kind) (rate(trident_bus_drops_total{{{HOSTS}}}[{rate}]))", "bus {{kind}}"),
            ],
            12, 8, "Where telemetry is lost: export per signal and reason, bus per record kind.",
            **unit("short"),
        ),
        lay.panel(
            "Failures per host", "table",
            [prom(
                f'sort_desc(sum by (host_name) (increase(trident_servicing_operations_total{{{HOSTS}, result="failure"}}[$__range])) > 0)',
                "{{host_name}}", instant=True)],
            12, 8, "Hosts with failed operations in the time range; open the host drill-down for one.",
            **unit("short"),
            links=[{"title": "Host drill-down", "url": "/d/trident-host?var-host=${__field.labels.host_name}"}],
        ),
        *progress_panels(lay, HOSTS, by="host_name"),
    ]
    return {
        "uid": "trident-fleet",
        "title": "Trident fleet servicing overview",
        "description": "Servicing across a fleet of tridentd daemons exporting OTLP through an OpenTelemetry Collector.",
        "tags": ["trident", "servicing"],
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "timezone": "utc",
        "time": {"from": "now-24h", "to": "now"},
        "refresh": "1m",
        "templating": {"list": [
            datasource_var("prometheus", "prometheus", "Prometheus"),
            host_var(multi=True),
            kind_var(),
        ]},
        "annotations": {"list": []},
        "links": [{"title": "Host drill-down", "type": "link", "url": "/d/trident-host"}],
        "panels": panels,
    }


def host_drilldown():
    lay = Layout()
    rate = "$__rate_interval"
    panels = [
        lay.panel(
            "Running operations", "stat",
            [prom(f"sum(trident_servicing_operations_active{{{ONE_HOST}}})", "running")],
            4, 5, "Operations running on this host now.",
            **unit("short"),
        ),
        lay.panel(
            "Operations in range", "stat",
            [prom(f"sum by (result) (increase(trident_servicing_operations_total{{{ONE_HOST}}}[$__range]))", "{{result}}")],
            8, 5, "Completed operations on this host in the time range, by result.",
            **unit("short"),
        ),
        lay.panel(
            "Bus subscribers", "stat",
            [prom(f"sum(trident_bus_subscribers{{{ONE_HOST}}})", "subscribers")],
            4, 5, "Clients watching this daemon's telemetry bus (trident watch, orchestrators).",
            **unit("short"),
        ),
        lay.panel(
            "Telemetry drops", "stat",
            [
                prom(f"sum(increase(trident_export_drops_total{{{ONE_HOST}}}[$__range]))", "export"),
                prom(f"sum(increase(trident_bus_drops_total{{{ONE_HOST}}}[$__range]))", "bus"),
            ],
            8, 5, "Telemetry this host lost in the time range (export, bus).",
            **unit("short"),
        ),
        *progress_panels(lay, ONE_HOST),
        lay.panel(
            "Overall progress over time", "timeseries",
            [prom(PROGRESS_PERCENT.format(sel=f"{{{ONE_HOST}}}"), "{{kind}}")],
            24, 6, "The newest operation's share of bytes done over time: a flat line while it waits (a slow source, scripts).",
            **unit("percentunit", min=0, max=1),
        ),
        lay.panel(
            "Operations by kind and result", "timeseries",
            [prom(f"sum by (kind, result) (increase(trident_servicing_operations_total{{{ONE_HOST}}}[{rate}]))", "{{kind}} {{result}}")],
            12, 8, "This host's completed operations over time.",
            **unit("short"),
        ),
        lay.panel(
            "Mean phase time", "bargauge",
            [prom(
                f"sum by (phase) (increase(trident_servicing_phase_duration_seconds_sum{{{ONE_HOST}}}[$__range]))"
                f" / sum by (phase) (increase(trident_servicing_phase_duration_seconds_count{{{ONE_HOST}}}[$__range]))",
                "{{phase}}", instant=True)],
            12, 8, "Where servicing time goes on this host: mean wall time per phase in the range.",
            **unit("s"),
        ),
        lay.panel(
            "Phase duration p90", "timeseries",
            [prom(
                f"histogram_quantile(0.9, sum by (le, phase) (rate(trident_servicing_phase_duration_seconds_bucket{{{ONE_HOST}}}[{rate}])))",
                "{{phase}}")],
            12, 8, "Slow phases over time (90th percentile per phase).",
            **unit("s"),
        ),
        lay.panel(
            "Throughput", "timeseries",
            [
                prom(f"sum(rate(trident_servicing_disk_written_bytes_total{{{ONE_HOST}}}[{rate}]))", "written"),
                prom(f"sum(rate(trident_image_read_bytes_total{{{ONE_HOST}}}[{rate}]))", "image read"),
            ],
            12, 8, "Disk write and image read bytes per second on this host.",
            **unit("Bps"),
        ),
        lay.panel(
            "Bus records by kind", "timeseries",
            [prom(f"sum by (kind) (rate(trident_bus_records_total{{{ONE_HOST}}}[{rate}]))", "{{kind}}")],
            12, 8, "Records per second on the daemon's telemetry bus (logs, spans, progress, errors, operations).",
            **unit("short"),
        ),
        lay.panel(
            "Errors by category", "timeseries",
            [prom(f"sum by (category) (increase(trident_errors_total{{{ONE_HOST}}}[{rate}]))", "{{category}}")],
            12, 8, "This host's error reports per category.",
            **unit("short"),
        ),
        lay.panel(
            "Servicing traces", "table",
            [{
                "queryType": "traceql",
                "query": '{ resource.service.name = "tridentd" && resource.host.name = "$host" && name = "servicing_operation" }',
                "limit": 50,
                "tableType": "traces",
            }],
            24, 9, "This host's servicing operations as traces (Tempo); a trace id opens the span tree. Copy one into the Trace id box to filter the logs below.",
            datasource=TEMPO,
        ),
        lay.panel(
            "Logs of the host", "logs",
            [{"expr": '{service_name="tridentd"} | host_name = "$host"', "queryType": "range"}],
            24, 10, "This host's daemon logs (Loki). With Loki's derived field on trace_id, each line links to its trace in Tempo.",
            datasource=LOKI,
            options={"showTime": True, "wrapLogMessage": True, "sortOrder": "Descending", "enableLogDetails": True},
        ),
        lay.panel(
            "Logs of the trace", "logs",
            [{"expr": '{service_name="tridentd"} | host_name = "$host" | trace_id = "$trace_id"', "queryType": "range"}],
            24, 10, "Only the log lines of one servicing trace (the Trace id box): the logs that belong to the operation's spans.",
            datasource=LOKI,
            options={"showTime": True, "wrapLogMessage": True, "sortOrder": "Ascending", "enableLogDetails": True},
        ),
    ]
    return {
        "uid": "trident-host",
        "title": "Trident host drill-down",
        "description": "One tridentd host: its operations, phase timings, and its traces and logs linked by trace id.",
        "tags": ["trident", "servicing"],
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "timezone": "utc",
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [
            datasource_var("prometheus", "prometheus", "Prometheus"),
            datasource_var("loki", "loki", "Loki"),
            datasource_var("tempo", "tempo", "Tempo"),
            host_var(multi=False),
            trace_var(),
        ]},
        "annotations": {"list": []},
        "links": [{"title": "Fleet overview", "type": "link", "url": "/d/trident-fleet"}],
        "panels": panels,
    }


def main():
    for name, dashboard in (
        ("fleet-overview.json", fleet_overview()),
        ("host-drilldown.json", host_drilldown()),
    ):
        (HERE / name).write_text(json.dumps(dashboard, indent=2) + "\n")
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
