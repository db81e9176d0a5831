//! The map reader on good and bad map files: refused with a reason said once, parsed only when
//! the file changed, and news carried only when something changed.

use std::fs;
use std::os::unix::fs::symlink;

use super::super::dir::ProbeDirs;
use super::super::tests::{my_uid, proc_with};
use super::super::*;
use super::{MAX_BYTES, parse};
use crate::sample::pool_map::{BlockState, MapReason, Run};
use crate::source::scripted::maps::{fragmented, json};

const NOW: u64 = 1_763_800_100_000;
const GPU: &str = "GPU-00000000-0000-0000-0000-000000000000";

fn probe_doc(pid: u32, extra: &str) -> String {
    format!(
        r#"{{"schema":"gpumon.probe/1","pid":{pid},"start_time":{start},"at_ms":{NOW},"interval_ms":1000,
        "frameworks":[{{"name":"pytorch","version":"2.11.0","devices":[{{"index":0,"uuid":"{GPU}",
        "allocated":1,"reserved":2}}]}}]{extra}}}"#,
        start = 1_763_800_000 + u64::from(pid)
    )
}

#[test]
fn a_good_map_reads_whole() {
    let map = fragmented(873, GPU, NOW, 40);
    let back = parse(json(&map).as_bytes(), 873).unwrap();
    assert_eq!(back, map);
    let d = &back.frameworks[0].devices[0];
    assert_eq!(d.segments.as_ref().unwrap().len(), 40);
    assert_eq!(
        d.segments.as_ref().unwrap()[0].runs[1],
        Run(BlockState::Free, 1, 2 << 20, 2 << 20)
    );
}

#[test]
fn bad_maps_are_refused_with_a_reason() {
    let good = json(&fragmented(873, GPU, NOW, 4));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"".to_vec(), "malformed"),
        (b"{\"schema\":".to_vec(), "malformed"),
        (b"{\"pid\":873}".to_vec(), "no schema"),
        (
            good.replace("gpumon.map/1", "gpumon.map/2").into_bytes(),
            "schema \"gpumon.map/2\"",
        ),
        (
            good.replace("\"pid\":873", "\"pid\":874").into_bytes(),
            "describes pid 874",
        ),
        (
            good.replace("\"request\"", "\"whim\"").into_bytes(),
            "malformed",
        ),
        (good.replace("[\"f\",", "[\"z\",").into_bytes(), "malformed"),
        (
            good.replace("\"took_us\":1480", "\"took_us\":-1")
                .into_bytes(),
            "malformed",
        ),
        (vec![b' '; MAX_BYTES as usize + 1], "oversized"),
    ];
    for (bytes, want) in cases {
        let err = parse(&bytes, 873).unwrap_err();
        assert!(err.contains(want), "{err:?} should say {want:?}");
        assert!(!err.chars().any(char::is_control), "{err:?}");
    }
    // 10,000 runs: more than a probe ever writes.
    let mut big = fragmented(873, GPU, NOW, 1);
    big.frameworks[0].devices[0].segments.as_mut().unwrap()[0].runs =
        vec![Run(BlockState::Allocated, 1, 512, 512); 10_000];
    let text = json(&big);
    assert!(text.len() < MAX_BYTES as usize);
    let err = parse(text.as_bytes(), 873).unwrap_err();
    assert!(err.contains("10000 runs"), "{err}");
}

#[test]
fn hostile_names_arrive_escaped_and_bounded() {
    let mut map = fragmented(873, GPU, NOW, 4);
    let d = &mut map.frameworks[0].devices[0];
    let sites = d.sites.as_mut().unwrap();
    sites[0].file = format!("/w/\x1b[2J\x1b]0;owned\x07{}.py", "a".repeat(5000));
    sites[0].function = "f\nrm -rf /\r\u{202e}".into();
    sites.extend((0..40).map(|i| crate::source::scripted::maps::site("x.py", i, "g", 1, 1)));
    let back = parse(json(&map).as_bytes(), 873).unwrap();
    let d = &back.frameworks[0].devices[0];
    let s = &d.sites.as_ref().unwrap()[0];
    assert!(!s.file.chars().any(char::is_control) && s.file.starts_with("/w/\\u{1b}[2J"));
    assert!(
        s.file.ends_with("aaa") && s.file.chars().count() < crate::sample::pool_map::MAX_FILE + 20
    );
    assert_eq!(s.function, "f\\u{a}rm -rf /\\u{d}\\u{202e}");
    assert_eq!(
        d.sites.as_ref().unwrap().len(),
        20,
        "cut to the contract's 20"
    );
}

#[test]
fn the_scan_reads_a_map_once_and_refuses_bad_map_files_once() {
    let probe = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    let dir = probe.path();
    // 200: good. 201: a link. 202: oversized. 203: another owner's process. 204: other version.
    // 205: a map of an earlier process with this PID.
    for pid in [200, 201, 202, 204, 205] {
        proc_with(proc_root.path(), pid, my_uid());
        fs::write(dir.join(format!("{pid}.json")), probe_doc(pid, "")).unwrap();
    }
    fs::write(
        dir.join("200.map.json"),
        json(&fragmented(200, GPU, NOW, 8)),
    )
    .unwrap();
    symlink(dir.join("200.map.json"), dir.join("201.map.json")).unwrap();
    fs::write(
        dir.join("202.map.json"),
        vec![b' '; MAX_BYTES as usize + 10],
    )
    .unwrap();
    let other = json(&fragmented(204, GPU, NOW, 2)).replace("gpumon.map/1", "gpumon.map/7");
    fs::write(dir.join("204.map.json"), other).unwrap();
    let mut earlier = fragmented(205, GPU, NOW, 2);
    earlier.start_time -= 3600;
    fs::write(dir.join("205.map.json"), json(&earlier)).unwrap();

    let mut reader = ProbeDirs::new(vec![dir.to_path_buf()], false, my_uid())
        .with_proc_root(proc_root.path().into());
    let scan = reader.scan(NOW);
    let maps: Vec<u32> = scan
        .news
        .iter()
        .filter(|n| n.map.is_some())
        .map(|n| n.pid)
        .collect();
    assert_eq!(maps, vec![200]);
    let said = scan.notices.join("\n");
    for (file, why) in [
        ("201.map.json", "symbolic link"),
        ("202.map.json", "oversized"),
        ("204.map.json", "schema \"gpumon.map/7\""),
        ("205.map.json", "earlier process"),
    ] {
        assert!(
            scan.notices
                .iter()
                .any(|n| n.contains(file) && n.contains(why)),
            "{file}: {why} in\n{said}"
        );
    }
    // Nothing changed: no news, nothing said again.
    let again = reader.scan(NOW + 1000);
    assert!(again.news.is_empty(), "{:?}", again.news);
    assert!(again.notices.is_empty(), "{:?}", again.notices);
    // A new map (a new file renamed in place) and an answer: one piece of news each.
    let mut next = fragmented(200, GPU, NOW + 5000, 8);
    next.reason = MapReason::Oom;
    let tmp = dir.join(".200.map.json.tmp");
    fs::write(&tmp, json(&next)).unwrap();
    fs::rename(&tmp, dir.join("200.map.json")).unwrap();
    let answer =
        r#","answer":{"id":17638001000001,"verb":"map","ok":true,"detail":"\u001b[31mok"}"#;
    fs::write(dir.join("200.json"), probe_doc(200, answer)).unwrap();
    let third = reader.scan(NOW + 2000);
    assert_eq!(third.news.len(), 1);
    let n = &third.news[0];
    assert_eq!(n.map.as_ref().map(|m| m.reason), Some(MapReason::Oom));
    let a = n.answer.as_ref().unwrap();
    assert_eq!(
        (a.id, a.ok, a.detail.as_str()),
        (17_638_001_000_001, true, "\\u{1b}[31mok")
    );
}

#[test]
fn a_map_of_another_owner_is_refused() {
    let probe = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    // The process runs as another user than the one owning the files (this test's).
    proc_with(proc_root.path(), 300, my_uid() + 1);
    fs::write(
        probe.path().join("300.map.json"),
        json(&fragmented(300, GPU, NOW, 2)),
    )
    .unwrap();
    let mut reader = ProbeDirs::new(vec![probe.path().into()], false, my_uid())
        .with_proc_root(proc_root.path().into());
    let mut scan = ProbeScan::default();
    let path = probe.path().join("300.map.json");
    assert_eq!(reader.checked(&path, 300, MAX_BYTES, &mut scan), None);
    assert!(
        scan.notices[0].contains("owned by uid"),
        "{:?}",
        scan.notices
    );
}

#[test]
fn a_map_gpumon_asked_for_during_an_alert_reads_as_such() {
    use crate::sample::request::{Purpose, request_id};
    let mut map = fragmented(873, GPU, NOW, 2);
    map.request_id = Some(request_id(NOW, Purpose::Alert));
    assert_eq!(
        parse(json(&map).as_bytes(), 873).unwrap().reason,
        MapReason::Alert
    );
    map.request_id = Some(request_id(NOW, Purpose::Person));
    assert_eq!(
        parse(json(&map).as_bytes(), 873).unwrap().reason,
        MapReason::Request
    );
}

#[test]
fn a_map_file_is_read_again_only_when_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.map.json");
    let mut watch = super::super::maps::MapWatch::default();
    fs::write(&path, "a").unwrap();
    let meta = || fs::symlink_metadata(&path).unwrap();
    assert!(watch.changed(1, &meta()), "new");
    assert!(!watch.changed(1, &meta()), "unchanged: not read");
    // The probe writes a new file and renames it in place: another inode.
    let tmp = dir.path().join(".1.map.json.tmp");
    fs::write(&tmp, "a").unwrap();
    fs::rename(&tmp, &path).unwrap();
    assert!(watch.changed(1, &meta()), "replaced");
}

/// A JAX job's map as its probe writes it (`tests/fixtures/maps/jax-live.map.json`, derived by
/// `scripts/jax_map_fixture.py` from the H100's real JAX figures and device memory profile):
/// no block map, so `segments_total` is null.
const JAX_MAP: &str = include_str!("../../../../tests/fixtures/maps/jax-live.map.json");

#[test]
fn a_jax_map_with_no_segment_count_reads_with_its_sites() {
    assert!(
        JAX_MAP.contains("\"segments_total\": null"),
        "the case itself"
    );
    let map = parse(JAX_MAP.as_bytes(), 598).unwrap();
    // Its request id ends in the alert's digit: asked for during an alert (as serve does).
    assert_eq!(map.reason, MapReason::Alert);
    let f = &map.frameworks[0];
    assert_eq!(f.framework, crate::sample::Framework::Jax);
    let d = &f.devices[0];
    assert_eq!((d.segments_total, d.segments.as_ref()), (None, None));
    assert_eq!(
        d.segments_reason.as_deref(),
        Some("JAX's allocator gives no block map")
    );
    assert_eq!(
        (d.allocated, d.reserved),
        (Some(216_006_656), Some(266_338_304))
    );
    let sites = d.sites.as_ref().unwrap();
    assert_eq!(sites[0].label(), "gpu/capture_pool_maps.py:106 make_cache");
    assert_eq!((sites[0].blocks, sites[0].bytes), (200, 200 << 20));
    // The field left out altogether reads the same.
    let without = JAX_MAP.replace("\"segments_total\": null, ", "");
    let d2 = parse(without.as_bytes(), 598).unwrap().frameworks[0].devices[0].clone();
    assert_eq!(&d2, d);
}

#[test]
fn one_bad_map_file_is_said_once_per_process_and_reason_not_with_each_new_map() {
    let probe = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    let dir = probe.path();
    proc_with(proc_root.path(), 598, my_uid());
    fs::write(dir.join("598.json"), probe_doc(598, "")).unwrap();
    let start = 1_763_800_000 + 598;
    // A map the reader refuses (a number it needs is null), at another place in each new file.
    let bad = |at_ms: u64, pad: usize| {
        JAX_MAP
            .replace(
                "\"start_time\": 1795540000",
                &format!("\"start_time\": {start}"),
            )
            .replace("\"at_ms\": 1795540030000", &format!("\"at_ms\": {at_ms}"))
            .replace("\"took_us\": 2143", "\"took_us\": null")
            .replace(
                "\"version\": \"0.11.2\"",
                &format!("\"version\": \"0.11.2{}\"", " ".repeat(pad)),
            )
    };
    let write = |text: String| {
        let tmp = dir.join(".598.map.json.tmp");
        fs::write(&tmp, text).unwrap();
        fs::rename(&tmp, dir.join("598.map.json")).unwrap();
    };
    let mut reader = ProbeDirs::new(vec![dir.to_path_buf()], false, my_uid())
        .with_proc_root(proc_root.path().into());
    write(bad(NOW, 0));
    let first = reader.scan(NOW);
    assert_eq!(first.notices.len(), 1, "{:?}", first.notices);
    assert!(
        first.notices[0].contains("598.map.json ignored: malformed (invalid type: null"),
        "{:?}",
        first.notices
    );
    // The next maps, every 30 s, fail the same way at other columns: nothing said again.
    for k in 1..4u64 {
        write(bad(NOW + k * 30_000, k as usize * 7));
        let later = reader.scan(NOW + k * 30_000);
        assert!(later.notices.is_empty(), "{:?}", later.notices);
        assert!(later.news.iter().all(|n| n.map.is_none()));
    }
    // Another fault of the same file is said; so is the same fault of a new process (pid reused).
    write("{\"schema\":\"gpumon.map/9\"}".into());
    assert_eq!(reader.scan(NOW + 200_000).notices.len(), 1);
    let reused = probe_doc(598, "").replace(
        &format!("\"start_time\":{start}"),
        "\"start_time\":1763809999",
    );
    fs::write(dir.join("598.json"), reused).unwrap();
    write(bad(NOW + 300_000, 3));
    let again = reader.scan(NOW + 300_000);
    assert_eq!(again.notices.len(), 1, "{:?}", again.notices);
}
