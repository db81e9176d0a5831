# Resident memory of a process by what is mapped, from /proc/PID/smaps: "[anon]", each file, and
# gpumon's binary by permissions (its code and its read-only data apart); those of at least `min`
# kB (-v min=N, 100 by default). Used by perf_vs_rivals.sh and touched_pages.sh.
BEGIN { if (min == "") min = 100 }
/^[0-9a-f]+-[0-9a-f]+ / { n = $6; if (n == "") n = "[anon]"; else if (n ~ /gpumon/) n = n " " $2 }
/^Rss:/ { r[n] += $2 }
END { for (k in r) if (r[k] >= min) printf "%8d kB %s\n", r[k], k }
