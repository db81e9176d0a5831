//! Block maps summarised from real `torch.cuda.memory._snapshot()`s taken on an H100
//! (tests/fixtures/maps, made by scripts/map_fixture.py): the reader takes them, their figures
//! equal `torch.cuda.memory_stats()` taken at the same moment, and the sentence says what the
//! OOM's request met: 192 holes of 12 MiB.

use gpumon::model::maps::{SiteChange, ingest};
use gpumon::sample::ProbeNews;
use gpumon::source::probe::map_file::parse;

fn fixture(name: &str) -> (gpumon::sample::PoolMap, serde_json::Value) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/maps/");
    let bytes = std::fs::read(format!("{dir}{name}.map.json")).unwrap();
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}{name}.stats.json")).unwrap())
            .unwrap();
    (parse(&bytes, 4242).unwrap(), stats["stats"].clone())
}

#[test]
fn real_maps_match_memory_stats_and_say_what_the_oom_met() {
    for name in ["torch-oom", "torch-history"] {
        let (map, stats) = fixture(name);
        let d = &map.frameworks[0].devices[0];
        let stat = |k: &str| stats[k].as_u64().unwrap();
        assert_eq!(
            d.allocated,
            Some(stat("allocated_bytes.all.current")),
            "{name}"
        );
        assert_eq!(
            d.reserved,
            Some(stat("reserved_bytes.all.current")),
            "{name}"
        );
        let free = stat("reserved_bytes.all.current") - stat("allocated_bytes.all.current");
        assert_eq!(d.free, Some(free), "{name}");
        let runs: u64 = d
            .segments
            .iter()
            .flatten()
            .flat_map(|s| &s.runs)
            .map(|r| r.2)
            .sum();
        assert_eq!(
            Some(runs),
            d.reserved,
            "{name}: the runs cover the segments"
        );
    }
    let (oom, _) = fixture("torch-oom");
    let mut maps = std::collections::BTreeMap::new();
    ingest(
        &mut maps,
        vec![ProbeNews {
            pid: 4242,
            start_time: oom.start_time,
            answer: None,
            recording: None,
            map: Some(Box::new(oom)),
            end: None,
            main_where: None,
        }],
    );
    let t = maps.values().next().unwrap();
    let v = &t.views[0];
    assert_eq!(
        v.fit,
        "a 1.00 GiB request does not fit: 2.25 GiB is free in 192 holes, the largest 12.00 MiB"
    );
    assert_eq!(
        v.sites_reason.as_deref(),
        Some("allocation history is not being recorded")
    );
    assert!(t.at_oom.is_some());

    let (history, _) = fixture("torch-history");
    let mut maps = std::collections::BTreeMap::new();
    let news = |map| ProbeNews {
        pid: 4242,
        start_time: 1_763_804_242,
        answer: None,
        recording: None,
        map: Some(Box::new(map)),
        end: None,
        main_where: None,
    };
    ingest(&mut maps, vec![news(history.clone()), news(history)]);
    let v = &maps.values().next().unwrap().views[0];
    assert_eq!(v.sites[0].label, "gpu/capture_pool_maps.py:76 <module>");
    assert_eq!((v.sites[0].blocks, v.sites[0].bytes), (104, 311_980_032));
    assert_eq!(v.sites[0].change, SiteChange::By(0));
}
