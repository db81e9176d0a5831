//! What maps add to alerts: the OOM's map in a failure's evidence, the climbing site in a leak's,
//! and which processes are asked for maps during an alert (at most every 30 s, the second 10 s after the first, only while the
//! alert's risk holds).

use crate::analysis::test_pools::{probed, torch};
use crate::model::{Alert, Config, Event, Level, Machine};
use crate::oom::parse_all;
use crate::pipeline::{self, alert_maps::AlertMaps};
use crate::sample::pool_map::{MapOom, MapReason};
use crate::sample::{Framework, Pool, PoolMap, ProbeNews, ProcessSample, Sample};
use crate::source::scripted::build::{GIB, gpu, machine, process};
use crate::source::scripted::maps::fragmented;

const PID: u32 = 100;

fn news(map: PoolMap) -> ProbeNews {
    ProbeNews {
        pid: PID,
        start_time: map.start_time,
        answer: None,
        recording: None,
        map: Some(Box::new(map)),
        end: None,
        main_where: None,
    }
}

fn apply(
    m: &mut Machine,
    at_ms: u64,
    p: ProcessSample,
    failures: Vec<crate::oom::failure::Failure>,
    probes: Vec<ProbeNews>,
) {
    let g = gpu(0, 80 * GIB, 79 * GIB, GIB / 2);
    pipeline::apply(
        m,
        Event::Sample(Sample {
            at_ms,
            gpus: vec![g],
            processes: vec![p],
            failures,
            probes,
            ..Default::default()
        }),
    );
}

#[test]
fn the_oom_alert_shows_the_map_at_the_failure() {
    let mut m = Machine::new(Config::new(1000, 600_000));
    m.update(&Event::Started(machine()));
    let g = gpu(0, 80 * GIB, 79 * GIB, GIB / 2);
    let p = process(PID, &g, 70 * GIB, Framework::Pytorch, "python train.py");
    let mut oom = fragmented(PID, &g.uuid, 4_900, 312);
    oom.reason = MapReason::Oom;
    oom.oom = Some(MapOom {
        device: 0,
        request: GIB,
        device_allocated: None,
        device_free: None,
    });
    let line = "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 500.00 MiB is free. Of the allocated memory 17.00 GiB is allocated by PyTorch, and 6.00 GiB is reserved by PyTorch but unallocated.";
    let failure = parse_all(line.as_bytes())
        .remove(0)
        .into_failure(5_000, "job.out", Some(PID));
    apply(&mut m, 5_000, p, vec![failure], vec![news(oom)]);
    let a: &Alert = m.alerts.iter().find(|a| a.level == Level::Failure).unwrap();
    assert_eq!(
        a.evidence[0],
        "at the failure: 624.00 MiB free in 312 holes, largest 2.00 MiB; held by proj/train.py:87 collate (2.44 GiB, 624 blocks), proj/model.py:41 forward (1.83 GiB, 156 blocks), proj/train.py:112 step (936.00 MiB, 156 blocks)",
        "{:#?}",
        a.evidence
    );
    // A failure minutes later, with no map of its own, is not shown the old OOM's map.
    let later = parse_all(line.as_bytes())
        .remove(0)
        .into_failure(305_000, "job.out", Some(PID));
    let p = process(PID, &g, 70 * GIB, Framework::Pytorch, "python train.py");
    apply(&mut m, 305_000, p, vec![later], Vec::new());
    let newest = m.alerts.iter().find(|a| a.level == Level::Failure).unwrap();
    assert_eq!(newest.at_ms, 305_000);
    assert!(
        newest
            .evidence
            .iter()
            .all(|e| !e.starts_with("at the failure")),
        "{:#?}",
        newest.evidence
    );
}

#[test]
fn a_leak_names_the_site_that_climbs_and_its_probe_is_asked_for_maps_every_30_s() {
    let mut m = Machine::new(Config::new(1000, 600_000));
    m.update(&Event::Started(machine()));
    let g = gpu(0, 80 * GIB, 70 * GIB, GIB / 2);
    let mut maps = AlertMaps::default();
    let mut asked = Vec::new();
    // A pool that leaks 100 MiB a second, its allocated memory in one site.
    for k in 0..40u64 {
        let at = 1_000 + k * 1000;
        let allocated = 4 * GIB + k * (100 << 20);
        let pool = Pool {
            at_ms: at,
            ..torch(allocated, allocated + (64 << 20), 0, None, None)
        };
        let p = probed(PID, &g, 20 * GIB, pool);
        let probes = match k {
            2 | 30 => {
                let mut map = fragmented(PID, &g.uuid, at, 16);
                let sites = map.frameworks[0].devices[0].sites.as_mut().unwrap();
                sites[1].bytes += k * (100 << 20);
                vec![news(map)]
            }
            _ => Vec::new(),
        };
        apply(&mut m, at, p, Vec::new(), probes);
        for ask in maps.due(&m, at) {
            asked.push((at, ask.pid, crate::sample::request::purpose_of(ask.id)));
        }
    }
    assert!(
        m.alerts.iter().any(|a| a.class == "leak"),
        "{:#?}",
        m.alerts
    );
    // The leak came before a second map: the site that climbs is its own finding once it shows.
    let site = m
        .alerts
        .iter()
        .find(|a| a.class == "leak-site")
        .expect("the site");
    assert_eq!(
        site.title,
        "pid 100 torch leak: proj/model.py:41 forward climbs between its maps"
    );
    assert!(
        site.evidence[0]
            .starts_with("the site whose bytes climb between maps: proj/model.py:41 forward"),
        "{:#?}",
        site.evidence
    );
    // Its remedy starts at the line that climbs.
    assert!(
        site.remedy.as_deref().unwrap().starts_with(
            "Find what keeps memory alive from step to step in pid 100, starting at proj/model.py:41 forward ("
        ),
        "{:?}",
        site.remedy
    );
    // The second map 10 s after the first (the climbing line is named from two), then every 30 s.
    let times: Vec<u64> = asked.iter().map(|a| a.0).collect();
    assert!(!times.is_empty(), "asked during the alert");
    assert!(
        times.len() < 2 || times[1] - times[0] == 10_000,
        "{times:?}"
    );
    assert!(
        times
            .iter()
            .skip(1)
            .collect::<Vec<_>>()
            .windows(2)
            .all(|w| *w[1] - *w[0] >= 30_000),
        "{times:?}"
    );
    assert!(
        asked
            .iter()
            .all(|a| a.1 == PID && a.2 == crate::sample::request::Purpose::Alert)
    );
}

#[test]
fn the_sites_of_a_leaking_pools_holes_are_named_as_the_leaks() {
    // A fragmentation warning raised before the leak showed; then two maps in which the line
    // whose blocks sit between the holes is the one that climbs.
    let mut m = Machine::new(Config::new(1000, 600_000));
    m.update(&Event::Started(machine()));
    let g = gpu(0, 80 * GIB, 70 * GIB, GIB / 2);
    let mut maps = Vec::new();
    for (k, grown) in [(1u64, 0u64), (2, 3 * GIB)] {
        let mut map = fragmented(PID, &g.uuid, k * 1000, 16);
        let d = &mut map.frameworks[0].devices[0];
        d.sites.as_mut().unwrap()[0].bytes += grown;
        d.stranding_sites.as_mut().unwrap()[0] = d.sites.as_ref().unwrap()[0].clone();
        maps.push(map);
    }
    for (k, map) in maps.into_iter().enumerate() {
        let at = 1000 * (k as u64 + 1);
        let pool = Pool {
            at_ms: at,
            ..torch(4 * GIB, 6 * GIB, 2 * GIB, Some(2 << 20), Some(8 * GIB))
        };
        apply(
            &mut m,
            at,
            probed(PID, &g, 7 * GIB, pool),
            Vec::new(),
            vec![news(map)],
        );
    }
    m.add_alerts(vec![Alert {
        at_ms: 2000,
        gpu_uuid: Some(g.uuid.clone()),
        pid: Some(PID),
        level: Level::Suspected,
        class: "fragmentation-risk".into(),
        confidence: None,
        title: "pid 100 torch pool fragmenting".into(),
        evidence: Vec::new(),
        remedy: Some("Set PYTORCH_ALLOC_CONF=expandable_segments:True".into()),
        job: None,
    }]);
    let found = super::site_risks(&m);
    let sites = found
        .iter()
        .find(|r| r.class == "fragmentation-sites")
        .expect("the sites");
    assert_eq!(
        sites.title,
        "pid 100 torch fragmentation from a leak: its holes sit between the blocks of proj/train.py:87 collate, which hold the leak"
    );
    assert!(
        sites
            .remedy
            .starts_with("Find what keeps memory alive from step to step in pid 100, starting at proj/train.py:87 collate"),
        "{}",
        sites.remedy
    );
}
