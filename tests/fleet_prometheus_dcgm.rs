//! A host without gpumon, read through a real Prometheus on 127.0.0.1 from dcgm-exporter's series
//! (a stand-in exporter serving the text dcgm-exporter serves): its GPUs' memory health (ECC
//! errors, a row remap pending) and its last Xid arrive in the fleet's machine for that host.
//! `GPUMON_TEST_PROMETHEUS` names the prometheus binary (`.ci/run` unpacks Debian's); without it
//! the test is skipped, unless `CI=true`.

#[path = "common/prometheus.rs"]
mod prometheus;
#[path = "common/serve.rs"]
mod serve;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use gpumon::model::health::Trouble;
use gpumon::model::{Config, Machine};
use gpumon::remote::{Client, Schedule};
use gpumon::screen::{Msg, Remote};

/// Two H100s as dcgm-exporter labels them; GPU1 has an uncorrectable error and a remap pending.
const DCGM: &str = r#"# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 1024
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 80000
DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 81000
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 48
# HELP DCGM_FI_DEV_ECC_SBE_VOL_TOTAL Total number of single-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_SBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 3
# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 1
# HELP DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS Number of remapped rows for correctable errors
# TYPE DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS counter
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
# HELP DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS Number of remapped rows for uncorrectable errors
# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 1
# HELP DCGM_FI_DEV_ROW_REMAP_PENDING Whether remapping of rows is pending
# TYPE DCGM_FI_DEV_ROW_REMAP_PENDING gauge
DCGM_FI_DEV_ROW_REMAP_PENDING{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
DCGM_FI_DEV_ROW_REMAP_PENDING{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 1
# HELP DCGM_FI_DEV_ROW_REMAP_FAILURE Whether remapping of rows has failed
# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge
DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:19:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-3"} 0
"#;

/// Serves `DCGM` on every request until the test ends (the thread dies with the process).
fn fake_dcgm_exporter() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{DCGM}",
                DCGM.len()
            );
        }
    });
    addr
}

#[test]
fn dcgm_exporters_health_series_through_a_real_prometheus() {
    let Some(prometheus) = prometheus::binary() else {
        return;
    };
    let exporter = fake_dcgm_exporter();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: dcgm\n    honor_labels: true\n    static_configs:\n      - targets: ['{exporter}']\n"
    );
    let (_prometheus, api) = prometheus::start(&prometheus, dir.path(), &config);
    let port = api.port();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Polls every 200 ms until the host's GPU1 has its health (at most 60 s).
    let host: Option<Machine> = runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(16);
        let (_open_tx, open) = tokio::sync::watch::channel(None);
        let schedule = Schedule::new(
            Client::new(None),
            Config::new(1000, 60_000),
            Duration::from_millis(200),
            open,
            tx,
        );
        schedule.spawn_prometheus(0, format!("http://127.0.0.1:{port}"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let Ok(Some(Msg::Remote(_, Remote::Hosts(hosts)))) =
                tokio::time::timeout(Duration::from_secs(5), rx.recv()).await
            else {
                continue;
            };
            if let Some((_, m)) = hosts.into_iter().find(|(n, _)| n == "dgx-3")
                && m.gpus
                    .get("GPU-bbbb")
                    .is_some_and(|g| g.sample.health.is_some())
            {
                return Some(m);
            }
        }
        None
    });
    let host = host.expect("dgx-3's health within 60 s");
    let bad = &host.gpus["GPU-bbbb"];
    let h = bad.sample.health.as_ref().unwrap();
    assert_eq!(
        h.ecc_volatile.value().map(|c| (c.corrected, c.uncorrected)),
        Some((3, 1))
    );
    assert_eq!(
        h.ecc_aggregate.reason(),
        Some("not in Prometheus"),
        "absent is not zero"
    );
    assert!(
        bad.troubles.contains(&Trouble::RemapPending),
        "{:?}",
        bad.troubles
    );
    assert!(host.gpus["GPU-aaaa"].troubles.is_empty());
    assert!(
        host.alerts
            .iter()
            .any(|a| a.class == "xid" && a.title.contains("Xid 48 (double-bit ECC error)")),
        "{:?}",
        host.alerts
    );
}
