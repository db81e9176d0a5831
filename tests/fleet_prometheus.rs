//! `--prometheus`: instant-query answers in Prometheus' real format, of gpumon's own series and
//! of dcgm-exporter's, grouped into hosts; and answers that are errors or garbage.

use gpumon::model::Level;
use gpumon::remote::prometheus::{QUERY, parse, processes_query};
use gpumon::sample::Reading;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("tests/fixtures/prometheus/{name}.json")).unwrap()
}

#[test]
fn gpumon_series_give_gpus_processes_and_alerts() {
    let hosts = parse(&fixture("gpumon")).unwrap();
    let h = &hosts["gpu-07"];
    assert_eq!(h.sample.at_ms, 1_763_812_900_123);
    let g = &h.sample.gpus[0];
    assert_eq!(g.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(g.uuid, "GPU-fd6139b1-5f4c-3f2a-9e2e-1c1f4c7c0a11");
    let m = g.memory.value().unwrap();
    assert_eq!(
        (m.total, m.used, m.free),
        (85_520_809_984, 22_548_578_304, 62_408_966_144)
    );
    assert_eq!(m.reserved, Reading::Value(563_265_536));
    let p = &h.sample.processes[0];
    assert_eq!((p.pid, p.device_memory.get()), (4312, Some(20 << 30)));
    assert_eq!(p.command, Reading::Value("python3.12".into()));
    assert_eq!(p.rss, Reading::Value(600 * MIB));
    assert!(p.vms.reason().unwrap().contains("not exported"));
    assert!(p.start_time.reason().is_some());
    // Only the alert kinds that are active (value > 0).
    assert_eq!(h.alerts.len(), 1);
    assert_eq!(
        (h.alerts[0].level, h.alerts[0].class.as_str()),
        (Level::Suspected, "fragmentation-risk")
    );
}

#[test]
fn dcgm_series_in_mib_give_gpus_without_processes() {
    let hosts = parse(&fixture("dcgm")).unwrap();
    let h = &hosts["a100-12"];
    assert_eq!(h.sample.gpus.len(), 2);
    assert!(h.sample.processes.is_empty());
    let m = h.sample.gpus[0].memory.value().unwrap();
    assert_eq!((m.used, m.free), (30_000 * MIB, 10_000 * MIB));
    assert_eq!(m.total, 40_450 * MIB);
    let m1 = h.sample.gpus[1].memory.value().unwrap();
    assert_eq!(m1.total, 40_000 * MIB);
    assert!(m1.reserved.reason().unwrap().contains("dcgm"));
}

#[test]
fn errors_and_garbage_are_one_line_each() {
    let err = |bytes: &[u8]| parse(bytes).unwrap_err();
    assert!(err(&fixture("error")).starts_with("Prometheus says error: invalid parameter"));
    assert!(err(b"<html>").starts_with("not a Prometheus query answer"));
    assert!(err(b"[]").starts_with("not a Prometheus query answer"));
    assert!(err(br#"{"status":"success"}"#).contains("without \"data\""));
    assert!(
        err(br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#)
            .contains("matrix")
    );
    // Series that make no sense are skipped, not turned into zeroes.
    let odd = br#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"__name__":"DCGM_FI_DEV_FB_USED","Hostname":"x","gpu":"0"},"value":[1,"NaN"]},
        {"metric":{"__name__":"DCGM_FI_DEV_FB_USED","gpu":"0"},"value":[1,"5"]},
        {"metric":{"__name__":"DCGM_FI_DEV_FB_FREE","Hostname":"y","gpu":"0"},"value":[1,"-5"]}]}}"#;
    assert!(parse(odd).unwrap().is_empty());
    let half = br#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"__name__":"DCGM_FI_DEV_FB_USED","Hostname":"x","gpu":"0"},"value":[1,"5"]}]}}"#;
    let hosts = parse(half).unwrap();
    assert!(
        hosts["x"].sample.gpus[0]
            .memory
            .reason()
            .unwrap()
            .contains("no used and free")
    );
}

#[test]
fn the_query_asks_for_both_families() {
    for name in [
        "gpumon_gpu_memory_",
        "DCGM_FI_DEV_FB_",
        "gpumon_alerts_active > 0",
    ] {
        assert!(QUERY.contains(name), "{name}");
    }
    // Processes only for the host that is open, by its selector, but for the ranks' device
    // memory (a job's ranks group across hosts in the overview).
    let ranks = r#"gpumon_process_device_memory_bytes{job_id!=""}"#;
    assert!(QUERY.contains(ranks), "{QUERY}");
    assert!(!QUERY.replace(ranks, "").contains("gpumon_process_"));
    let hosts = parse(&fixture("gpumon")).unwrap();
    let selector = &hosts["gpu-07"].selector;
    assert_eq!(selector, r#"Hostname="gpu-07""#);
    assert_eq!(
        processes_query(selector),
        r#"{__name__=~"gpumon_process_(device|virtual|resident)_memory_bytes",Hostname="gpu-07"}"#
    );
}

/// A series of `name` for GPU 0 of the host `Hostname`, scraped from `instance` (the GPU's
/// UUID follows the instance's address: one node's exporters see the same GPU).
fn series(name: &str, host: &str, instance: &str, value: u64) -> String {
    let ip = instance.split(':').next().unwrap();
    format!(
        r#"{{"metric":{{"__name__":"{name}","Hostname":"{host}","instance":"{instance}","gpu":"0","UUID":"GPU-{ip}"}},"value":[1763812900.5,"{value}"]}}"#
    )
}

fn answer(series: &[String]) -> Vec<u8> {
    format!(
        r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#,
        series.join(",")
    )
    .into_bytes()
}

#[test]
fn hosts_with_one_hostname_stay_apart_by_instance() {
    // Two gpumon servers both calling themselves "vm" (pods without --hostname), and a node
    // whose gpumon and dcgm-exporter share a name.
    let mut all = Vec::new();
    for (instance, used) in [("10.0.0.1:9477", 1), ("10.0.0.2:9477", 2)] {
        all.push(series(
            "gpumon_gpu_memory_used_bytes",
            "vm",
            instance,
            used << 30,
        ));
        all.push(series(
            "gpumon_gpu_memory_free_bytes",
            "vm",
            instance,
            8 << 30,
        ));
    }
    all.push(series(
        "gpumon_gpu_memory_used_bytes",
        "n3",
        "10.0.0.3:9477",
        3 << 30,
    ));
    all.push(series(
        "gpumon_gpu_memory_free_bytes",
        "n3",
        "10.0.0.3:9477",
        5 << 30,
    ));
    all.push(series(
        "DCGM_FI_DEV_FB_RESERVED",
        "n3",
        "10.0.0.3:9400",
        512,
    ));
    // `gpumon_alerts_active > 0` comes back without its name.
    all.push(
        series("x", "n3", "10.0.0.3:9477", 1)
            .replace(r#""__name__":"x","#, r#""kind":"fragmentation-risk","#),
    );
    let hosts = parse(&answer(&all)).unwrap();
    let names: Vec<&str> = hosts.keys().map(String::as_str).collect();
    assert_eq!(names, ["n3", "vm (10.0.0.1:9477)", "vm (10.0.0.2:9477)"]);
    assert_eq!(
        hosts["vm (10.0.0.2:9477)"].selector,
        r#"Hostname="vm",instance="10.0.0.2:9477""#
    );
    let used = |h: &str| hosts[h].sample.gpus[0].memory.value().unwrap().used;
    assert_eq!(used("vm (10.0.0.1:9477)"), 1 << 30);
    assert_eq!(used("vm (10.0.0.2:9477)"), 2 << 30);
    // One node's two exporters stay one host, with gpumon's figures for its GPU.
    assert_eq!(used("n3"), 3 << 30);
    assert_eq!(hosts["n3"].sample.gpus.len(), 1);
    assert_eq!(hosts["n3"].alerts[0].class, "fragmentation-risk");
}

/// One alert kind of one host exported by two series (the host scraped by two jobs: the same
/// instance, two `job` labels) is one alert, not two.
#[test]
fn the_same_alert_from_two_series_is_one_alert() {
    let answer = br#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"__name__":"gpumon_gpu_memory_total_bytes","Hostname":"vm","gpu":"0","instance":"a:9477"},"value":[1,"100"]},
        {"metric":{"__name__":"gpumon_gpu_memory_used_bytes","Hostname":"vm","gpu":"0","instance":"a:9477"},"value":[1,"10"]},
        {"metric":{"__name__":"gpumon_gpu_memory_free_bytes","Hostname":"vm","gpu":"0","instance":"a:9477"},"value":[1,"90"]},
        {"metric":{"__name__":"gpumon_alerts_active","Hostname":"vm","kind":"preallocation","instance":"a:9477","job":"gpumon"},"value":[1,"1"]},
        {"metric":{"__name__":"gpumon_alerts_active","Hostname":"vm","kind":"preallocation","instance":"a:9477","job":"gpus"},"value":[1,"1"]}]}}"#;
    let hosts = parse(answer).unwrap();
    let classes: Vec<&str> = hosts["vm"]
        .alerts
        .iter()
        .map(|a| a.class.as_str())
        .collect();
    assert_eq!(classes, ["preallocation"]);
}

/// The overview's answer for two hosts each holding one rank of a torchrun job: each rank's
/// device memory with its `job_id` and `rank`, each host's job series; every rank comes back
/// with its job, rank, world size and launcher, so the two group as one job.
#[test]
fn ranks_of_one_job_on_two_hosts_come_back_with_their_job() {
    let rank = |host: &str, pid: u32, rank: &str, bytes: u64| {
        format!(
            r#"{{"metric":{{"__name__":"gpumon_process_device_memory_bytes","Hostname":"{host}","instance":"{host}:9477","job":"gpumon","gpu":"0","UUID":"GPU-{host}","pid":"{pid}","exe":"python3","user":"ana","framework":"pytorch","container":"","job_id":"torchrun:ddp","rank":"{rank}"}},"value":[1763812900.5,"{bytes}"]}}"#
        )
    };
    let job = |host: &str, name: &str, extra: &str, value: u64| {
        format!(
            r#"{{"metric":{{"__name__":"{name}","Hostname":"{host}","instance":"{host}:9477","job":"gpumon","job_id":"torchrun:ddp"{extra}}},"value":[1763812900.5,"{value}"]}}"#
        )
    };
    let mut all = Vec::new();
    for (host, pid, r, bytes) in [
        ("gpu-a", 1446, "0", 11 << 30),
        ("gpu-b", 2210, "1", 9 << 30),
    ] {
        all.push(series(
            "gpumon_gpu_memory_used_bytes",
            host,
            &format!("{host}:9477"),
            bytes,
        ));
        all.push(series(
            "gpumon_gpu_memory_free_bytes",
            host,
            &format!("{host}:9477"),
            60 << 30,
        ));
        all.push(rank(host, pid, r, bytes));
        all.push(job(
            host,
            "gpumon_job_ranks",
            r#","launcher":"torchrun""#,
            1,
        ));
        all.push(job(host, "gpumon_job_world_size", "", 2));
    }
    // A process of no job, and one whose rank its gpumon did not trust.
    all.push(rank("gpu-b", 77, "", GIB).replace(r#""job_id":"torchrun:ddp""#, r#""job_id":"""#));
    all.push(rank("gpu-b", 78, "", GIB));
    let hosts = parse(&answer(&all)).unwrap();
    let ranks = |h: &str| -> Vec<(u32, Option<gpumon::sample::Rank>)> {
        hosts[h]
            .sample
            .processes
            .iter()
            .map(|p| (p.pid, p.rank.clone()))
            .collect()
    };
    let a = ranks("gpu-a");
    assert_eq!(a.len(), 1);
    let r = a[0].1.as_ref().unwrap();
    assert_eq!(
        (a[0].0, r.job.as_deref(), r.rank, r.world_size, r.launcher),
        (
            1446,
            Some("torchrun:ddp"),
            Some(0),
            Some(2),
            gpumon::sample::Launcher::Torchrun
        )
    );
    let b = ranks("gpu-b");
    let of = |pid: u32| b.iter().find(|(p, _)| *p == pid).unwrap().1.clone();
    assert_eq!(of(2210).unwrap().rank, Some(1));
    assert_eq!(of(77), None, "an empty job_id is no job");
    let untrusted = of(78).unwrap();
    assert_eq!(
        (untrusted.rank, untrusted.job.as_deref()),
        (None, Some("torchrun:ddp"))
    );
    // The job series are facts about ranks, not processes or GPUs of their own.
    assert_eq!(hosts["gpu-a"].sample.gpus.len(), 1);
}
