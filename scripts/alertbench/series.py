"""How long a figure climbed before a moment, and per-second floors of a job's figures.

The climb rule (written down once, used for leaks and for build-up times): walk back from the
last point before the moment; the climb goes on while
  - nothing was released: no point is more than TOL above any later point of the climb, and
  - it keeps rising: a point at least TOL below the climb's earliest rise so far is a new start,
    and a stretch of more than GAP_S seconds with no such rise ends the walk.
The climb starts at its earliest rise point; with no rise there is no climb."""

TOL = 32 << 20  # 32 MiB: smaller moves are noise (rounding, allocator bookkeeping)
GAP_S = 5.0     # a pause longer than this without a rise ends a climb


def per_second(points, pick=min):
    """[(t_s, value)] -> one point a second (the second's `pick`, at the second's first time)."""
    out = {}
    for t, v in points:
        if v is None:
            continue
        k = int(t)
        if k in out:
            out[k] = (out[k][0], pick(out[k][1], v))
        else:
            out[k] = (t, v)
    return [out[k] for k in sorted(out)]


def climb(points, before, tol=TOL, gap_s=GAP_S):
    """The climb that ends at the last point before `before` (seconds): (t_start, v_start,
    t_end, v_end), or None when the series did not rise into that moment."""
    pts = [(t, v) for t, v in points if t < before and v is not None]
    if len(pts) < 2:
        return None
    n = len(pts) - 1
    start = n
    low = pts[n][1]
    lowest_later = pts[n][1]
    last_rise_t = pts[n][0]
    for i in range(n - 1, -1, -1):
        t, v = pts[i]
        if v > lowest_later + tol:
            break  # memory was released after this point
        lowest_later = min(lowest_later, v)
        if v <= low - tol:
            low, start, last_rise_t = v, i, t
        elif last_rise_t - t > gap_s:
            break
    if start == n:
        return None
    return pts[start][0], pts[start][1], pts[n][0], pts[n][1]
