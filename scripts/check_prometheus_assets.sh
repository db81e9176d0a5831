#!/usr/bin/env bash
# Checks gpumon's Prometheus assets with promtool: the alerting rules parse, their unit tests
# pass, and the example configuration (which loads the rules) is valid.
# usage: scripts/check_prometheus_assets.sh PATH/TO/promtool
set -euo pipefail

promtool=${1:?usage: $0 PATH/TO/promtool}
dir="$(cd "$(dirname "$0")/../assets/prometheus" && pwd)"

"$promtool" check rules "$dir/gpumon.rules.yml"
"$promtool" test rules "$dir/gpumon.rules.test.yml"
"$promtool" check config "$dir/prometheus.example.yml"
