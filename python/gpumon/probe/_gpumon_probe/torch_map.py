"""PyTorch's part of a map: ``torch.cuda.memory._snapshot()`` (taken here, or by the job's main
thread while allocation history is recorded) summarised device by device: segments in address
order with their blocks merged into runs, bounded to a budget of runs (the segments with the most
free bytes and the largest kept, the rest summed), free memory by hole size, and the sites that
hold the memory (from the blocks' frames, when history is recorded) and that strand the holes."""

import os

from .common import attr, loaded, map_device, num, torch_uuid
from .sites import Sites, own_frame, site_key

_BIG_BLOCK = 64 << 20  # a block this large is a run of its own
_HOLE_UPPERS = (1 << 20, 8 << 20, 64 << 20, 512 << 20, None)
_STATES = {"active_allocated": "a", "inactive": "f", "active_pending_free": "p"}
_NO_HISTORY = "allocation history is not being recorded"


def map_devices(probe, torch, budget, snapshot=None):
    """The PyTorch part of a map: of ``snapshot`` when the job's main thread took it (allocation
    history is recorded), else of a ``_snapshot()`` taken here."""
    cuda, memory = loaded("torch.cuda"), loaded("torch.cuda.memory")
    if cuda is None or not cuda.is_initialized():
        return []
    if snapshot is None:
        if memory is None or attr(memory, "_snapshot") is None:
            raise LookupError("torch.cuda.memory._snapshot not found")
        snapshot = memory._snapshot()
    by_device = {}
    for seg in snapshot.get("segments") or ():
        by_device.setdefault(num(seg.get("device")) or 0, []).append(seg)
    dirs = [os.path.dirname(attr(torch, "__file__") or "")]
    recording = probe.recording_on()
    devices = []
    for index in sorted(by_device):
        dev = map_device(index, torch_uuid(probe, cuda, index))
        dev.update(summarise(by_device[index], budget // len(by_device), dirs, recording))
        devices.append(dev)
    return devices


def summarise(segments, budget, framework_dirs, recording):
    """One device's segments (PyTorch snapshot dicts) as a map device entry's figures.

    It runs in the job's process holding the GIL, so it is written for speed (issue 26: a
    50,000-block pool): one tight pass over the blocks counts each segment's runs and sums its
    bytes, making no object per block or per run (objects that stay alive also set off the job's
    garbage collector, whose full passes over a large heap cost more than the summary); runs are
    built for the segments kept only, sites only for the allocated blocks that have frames."""
    segments = sorted(segments, key=lambda s: num(s.get("address")) or 0)
    alloc_state, free_state, big = "active_allocated", "inactive", _BIG_BLOCK
    holes, framed = [], []  # the size of every free block; allocated blocks with frames
    hole, framed_block = holes.append, framed.append
    run_counts, allocs, frees, totals, framed_ends = [], [], [], [], []
    allocated = reserved = blocks = pending = 0
    for seg in segments:
        seg_blocks = seg.get("blocks") or ()
        runs = seg_alloc = seg_free = 0
        last = None  # the state of the run being merged into; None after a big block
        for block in seg_blocks:
            size = block["size"]
            state = block["state"]
            if state == alloc_state:
                seg_alloc += size
                if block.get("frames"):
                    framed_block(block)
            elif state == free_state:
                seg_free += size
                hole(size)
            else:
                state = "p"
                pending += 1
            if state != last or size >= big:
                runs += 1
                last = state if size < big else None
        total = num(seg.get("total_size")) or 0
        blocks += len(seg_blocks)
        allocated, reserved = allocated + seg_alloc, reserved + total
        run_counts.append(runs)
        allocs.append(seg_alloc)
        frees.append(seg_free)
        totals.append(total)
        framed_ends.append(len(framed))
    chosen, cuts = _bound_segments(run_counts, frees, totals, budget)
    kept, elided = [], None
    if chosen is not None:
        elided = {"segments": 0, "allocated": 0, "free": 0, "bytes": 0}
    for i, seg in enumerate(segments):
        if chosen is None or i in chosen:
            kept.append(_segment_entry(seg, totals[i], cuts.get(i)))
        else:
            elided["segments"] += 1
            elided["allocated"] += allocs[i]
            elided["free"] += frees[i]
            elided["bytes"] += totals[i]
    free = sum(frees)
    allocated_blocks = blocks - len(holes) - pending
    dev = {"allocated": allocated, "reserved": reserved, "free": free,
           "largest_free": max(holes) if holes else 0, "holes": _holes(holes, free),
           "segments": kept, "segments_total": len(segments), "elided": elided,
           "unattributed": {"blocks": allocated_blocks, "bytes": allocated}}
    if framed:
        sites, stranding, framed_bytes = _torch_sites(framed, framed_ends, frees, framework_dirs)
        dev.update(unattributed={"blocks": allocated_blocks - len(framed),
                                 "bytes": allocated - framed_bytes},
                   sites=sites.top(20), sites_reason=None, stranding_sites=stranding.top(5))
    elif recording:
        dev.update(sites=[], sites_reason=None, stranding_sites=[])
    else:
        dev.update(sites=None, sites_reason=_NO_HISTORY, stranding_sites=None)
    return dev


def _holes(sizes, total):
    """``holes``: [[upper, count, bytes], ...] of the free blocks' sizes (``total`` their sum)."""
    h1, h8, h64, h512 = _HOLE_UPPERS[:4]
    rest = [size for size in sizes if size >= h1]  # most holes are small: counted at C speed
    counts, sums = [len(sizes) - len(rest), 0, 0, 0, 0], [total - sum(rest), 0, 0, 0, 0]
    for size in rest:
        i = 1 if size < h8 else 2 if size < h64 else 3 if size < h512 else 4
        counts[i] += 1
        sums[i] += size
    return [list(h) for h in zip(_HOLE_UPPERS, counts, sums)]


def _segment_entry(seg, total, cut):
    """A kept segment's entry, its blocks merged into runs (cut to ``cut`` runs when given)."""
    states, big = _STATES, _BIG_BLOCK
    runs, last, last_state, last_big = [], None, None, False  # the run being merged into
    for block in seg.get("blocks") or ():
        size = block["size"]
        state = states.get(block["state"], "p")
        if state == last_state and size < big and not last_big:
            last[1] += 1
            last[2] += size
            if size > last[3]:
                last[3] = size
        else:
            last, last_state, last_big = [state, 1, size, size], state, size >= big
            runs.append(last)
    pool = seg.get("segment_pool_id") or (0, 0)
    entry = {"address": num(seg.get("address")) or 0, "size": total,
             "kind": "small" if seg.get("segment_type") == "small" else "large",
             "expandable": seg.get("is_expandable") is True, "private": tuple(pool) != (0, 0),
             "stream": num(seg.get("stream")) or 0, "runs": runs}
    if cut is not None:
        tail, entry["runs"] = runs[cut:], runs[:cut]
        entry["truncated"] = {"runs": len(tail),
                              "allocated": sum(r[2] for r in tail if r[0] == "a"),
                              "free": sum(r[2] for r in tail if r[0] == "f"),
                              "bytes": sum(r[2] for r in tail)}
    return entry


def _bound_segments(run_counts, frees, totals, budget):
    """Which segments to keep within ``budget`` runs: (None, {}) when all fit, else (the indices
    kept, {index: runs kept} of a segment too long on its own, cut short). The segments with the
    most free bytes and the largest segments are taken alternately."""
    if sum(run_counts) <= budget:
        return None, {}
    by_free = sorted(range(len(frees)), key=lambda i: -frees[i])
    by_size = sorted(range(len(totals)), key=lambda i: -totals[i])
    chosen, cuts, left = set(), {}, budget
    for pair in zip(by_free, by_size):
        for i in pair:
            if i in chosen or left <= 0:
                continue
            if run_counts[i] <= left:
                chosen.add(i)
                left -= run_counts[i]
            elif run_counts[i] > budget // 2:
                cuts[i] = left
                chosen.add(i)
                left = 0
        if left <= 0:
            break
    return chosen, cuts


def _torch_sites(framed, ends, frees, framework_dirs):
    """(sites, stranding sites, bytes attributed) of the allocated blocks that have frames:
    ``framed``, segment after segment (``ends``: where each segment's blocks end; ``frees``: its
    free bytes, which make its blocks' sites stranding sites). Blocks are tallied by the identity
    of their site's frame dict (PyTorch shares them between stacks); keys are made once a frame."""
    sites, stranding = Sites(framework_dirs), Sites(framework_dirs)
    own, skips, start = sites.own, {}, 0
    by_frame, by_key = {}, {}  # id of a frame dict, key -> [blocks, bytes, stranding ones, bytes]
    for end, seg_free in zip(ends, frees):
        last = entry = None
        for block in framed[start:end]:
            frames = block["frames"]
            site = frames[0]
            if not own[site["filename"]]:
                site = own_frame(frames, own, skips)
            if site is not last:  # consecutive blocks of one line (a loop) skip the lookup
                last, entry = site, by_frame.get(id(site))
                if entry is None:
                    entry = by_frame[id(site)] = by_key.setdefault(site_key(site), [0, 0, 0, 0])
            size = block["size"]
            entry[0] += 1
            entry[1] += size
            if seg_free:
                entry[2] += 1
                entry[3] += size
        start = end
    framed_bytes = 0
    for key, (count, size, strand_count, strand_size) in by_key.items():
        sites.by_site[key] = [count, size]
        if strand_count:
            stranding.by_site[key] = [strand_count, strand_size]
        framed_bytes += size
    return sites, stranding, framed_bytes
