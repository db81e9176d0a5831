//! Block maps for tests and benchmarks, shaped like the ones the probe summarises from a real
//! PyTorch `_snapshot()`: a fragmented pool of large segments with small holes between kept
//! tensors, the sites that hold it, and the probe file's JSON form of a map.

use crate::sample::Framework;
use crate::sample::pool_map::{
    BlockState, Holes, MapDevice, MapFramework, MapReason, PoolMap, Run, Segment, SegmentKind,
    Site, Unattributed,
};

const MIB: u64 = 1 << 20;

/// A site of the job's code.
pub fn site(file: &str, line: u64, function: &str, blocks: u64, bytes: u64) -> Site {
    Site {
        file: file.into(),
        line,
        function: function.into(),
        blocks,
        bytes,
    }
}

/// A PyTorch pool on `gpu` of `segments` 20 MiB segments, each 2 MiB free at its end and an
/// 18 MiB tensor before it, (a private one and an expandable one among them), held by three sites.
pub fn fragmented(pid: u32, gpu: &str, at_ms: u64, segments: usize) -> PoolMap {
    let segs: Vec<Segment> = (0..segments)
        .map(|i| Segment {
            address: 0x7f00_0000_0000 + i as u64 * 20 * MIB,
            size: 20 * MIB,
            kind: SegmentKind::Large,
            expandable: i == 1,
            private: i == 2,
            stream: 0,
            runs: vec![
                Run(BlockState::Allocated, 3, 18 * MIB, 8 * MIB),
                Run(
                    if i % 7 == 3 {
                        BlockState::Pending
                    } else {
                        BlockState::Free
                    },
                    1,
                    2 * MIB,
                    2 * MIB,
                ),
            ],
        })
        .collect();
    let n = segments as u64;
    let device = MapDevice {
        index: 0,
        uuid: Some(gpu.into()),
        allocated: Some(18 * MIB * n),
        reserved: Some(20 * MIB * n),
        free: Some(2 * MIB * n),
        largest_free: Some(2 * MIB),
        holes: Some(vec![
            Holes(Some(MIB), 0, 0),
            Holes(Some(8 * MIB), n, 2 * MIB * n),
            Holes(Some(64 * MIB), 0, 0),
            Holes(Some(512 * MIB), 0, 0),
            Holes(None, 0, 0),
        ]),
        segments: Some(segs),
        segments_reason: None,
        segments_total: Some(n),
        elided: None,
        sites: Some(vec![
            site("/home/ana/proj/train.py", 87, "collate", 2 * n, 8 * MIB * n),
            site("/home/ana/proj/model.py", 41, "forward", n / 2, 6 * MIB * n),
            site("/home/ana/proj/train.py", 112, "step", n / 2, 3 * MIB * n),
        ]),
        sites_reason: None,
        stranding_sites: Some(vec![site(
            "/home/ana/proj/train.py",
            87,
            "collate",
            2 * n,
            8 * MIB * n,
        )]),
        unattributed: Some(Unattributed {
            blocks: 0,
            bytes: 0,
        }),
        shapes: None,
        free_blocks: None,
    };
    PoolMap {
        pid,
        start_time: 1_763_800_000 + u64::from(pid),
        at_ms,
        reason: MapReason::Request,
        request_id: None,
        took_us: 1480,
        oom: None,
        frameworks: vec![MapFramework {
            framework: Framework::Pytorch,
            version: Some("2.11.0".into()),
            error: None,
            devices: vec![device],
        }],
    }
}

/// The map as the probe writes it: `gpumon.map/1` JSON.
pub fn json(map: &PoolMap) -> String {
    let mut v = serde_json::to_value(map).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("schema".into(), "gpumon.map/1".into());
    }
    v.to_string()
}
