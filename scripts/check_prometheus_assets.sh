#!/usr/bin/env bash
# Checks gpumon's Prometheus assets with promtool: the alerting rules parse, their unit tests
# pass, the example configuration (which loads the rules) is valid, and every query of the
# Grafana dashboard parses as PromQL (its variables replaced by sample values; written as
# recording rules into a temporary file that promtool checks).
# usage: scripts/check_prometheus_assets.sh PATH/TO/promtool
set -euo pipefail

promtool=${1:?usage: $0 PATH/TO/promtool}
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/assets/prometheus"

"$promtool" check rules "$dir/gpumon.rules.yml"
"$promtool" test rules "$dir/gpumon.rules.test.yml"
"$promtool" check config "$dir/prometheus.example.yml"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$root/assets/grafana/gpumon-dashboard.json" "$tmp/dashboard.rules.yml" <<'PY'
import json, sys

dashboard, out = sys.argv[1], sys.argv[2]
values = {"$__rate_interval": "1m", "$job_id": "torchrun:ddp", "$Hostname": "gpu-a", "$gpu": "0"}
exprs = []
for panel in json.load(open(dashboard))["panels"]:
    for target in panel.get("targets", []):
        expr = target["expr"]
        for name, value in values.items():
            expr = expr.replace(name, value)
        if "$" in expr:
            sys.exit(f"{panel['title']}: a dashboard variable this check does not know: {expr}")
        exprs.append(expr)
with open(out, "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, expr in enumerate(exprs):
        f.write(f"      - record: gpumon_dashboard_query_{i}\n        expr: {json.dumps(expr)}\n")
print(f"dashboard: {len(exprs)} queries")
PY
"$promtool" check rules "$tmp/dashboard.rules.yml"
