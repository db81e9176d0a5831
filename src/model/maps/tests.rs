//! The derived values of a map: the "does it fit" sentence, the hole buckets and the sites'
//! changes between two maps.

use super::*;
use crate::sample::pool_map::{Holes, MapOom};
use crate::source::scripted::maps::{fragmented, site};

const GPU: &str = "GPU-00000000-0000-0000-0000-000000000000";
const MIB: u64 = 1 << 20;

fn news(map: PoolMap) -> ProbeNews {
    ProbeNews {
        pid: map.pid,
        start_time: map.start_time,
        answer: None,
        recording: None,
        map: Some(Box::new(map)),
        end: None,
        main_where: None,
    }
}

#[test]
fn the_sentence_answers_whether_the_request_fits() {
    let mut map = fragmented(7, GPU, 1000, 312);
    let d = &mut map.frameworks[0].devices[0];
    d.free = Some(2_415_919_104); // 2.25 GiB
    d.largest_free = Some(8 * MIB);
    assert_eq!(
        fit(d, Some(1 << 30)),
        "a 1.00 GiB request does not fit: 2.25 GiB is free in 312 holes, the largest 8.00 MiB"
    );
    assert_eq!(
        fit(d, None),
        "the largest request that fits without new memory from CUDA is 8.00 MiB: 2.25 GiB is free in 312 holes"
    );
    assert!(
        fit(d, Some(MIB))
            .starts_with("a 1.00 MiB request failed though the largest hole is 8.00 MiB")
    );
    d.holes = Some(vec![Holes(Some(MIB), 0, 0), Holes(None, 0, 0)]);
    d.free = Some(0);
    d.largest_free = Some(0);
    assert_eq!(
        fit(d, None),
        "no free block in the pool: every request takes new memory from CUDA"
    );
    d.holes = None;
    d.largest_free = None;
    d.segments_reason = Some("JAX gives no block map".into());
    assert_eq!(
        fit(d, None),
        "n/a: JAX gives no block map",
        "absent is not zero"
    );
}

#[test]
fn holes_read_as_size_buckets() {
    let map = fragmented(7, GPU, 1000, 4);
    let rows = holes(&map.frameworks[0].devices[0]);
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["<1M", "1-8M", "8-64M", "64-512M", ">=512M"]);
    assert_eq!((rows[1].count, rows[1].bytes), (4, 8 * MIB));
}

#[test]
fn sites_say_how_they_changed_since_the_previous_map_and_the_oom_map_is_kept() {
    let mut maps = BTreeMap::new();
    let first = fragmented(7, GPU, 1000, 10);
    let key = (7, first.start_time);
    ingest(&mut maps, vec![news(first.clone())]);
    assert_eq!(maps[&key].views[0].sites[0].change, SiteChange::Unknown);
    let mut oom = first.clone();
    oom.at_ms = 2000;
    oom.reason = MapReason::Oom;
    oom.oom = Some(MapOom {
        device: 0,
        request: 1 << 30,
        device_allocated: None,
        device_free: None,
    });
    let sites = oom.frameworks[0].devices[0].sites.as_mut().unwrap();
    sites[0].bytes += 64 * MIB;
    sites.push(site("eval.py", 3, "score", 1, MIB));
    ingest(&mut maps, vec![news(oom)]);
    let v = &maps[&key].views[0];
    assert_eq!(v.sites[0].change, SiteChange::By(i128::from(64 * MIB)));
    assert_eq!(v.sites[1].change, SiteChange::By(0));
    assert_eq!(v.sites[3].change, SiteChange::New);
    assert!(
        v.fit.starts_with("a 1.00 GiB request does not fit"),
        "{}",
        v.fit
    );
    assert_eq!(v.sites[0].label, "proj/train.py:87 collate");
    let mut later = first;
    later.at_ms = 3000;
    ingest(&mut maps, vec![news(later)]);
    let t = &maps[&key];
    assert_eq!(t.map.as_ref().unwrap().at_ms, 3000);
    assert_eq!(
        t.at_oom.as_ref().unwrap().at_ms,
        2000,
        "the OOM's map stays"
    );
    assert!(t.view_for(GPU).is_some() && t.view_for("GPU-other").is_none());
}
