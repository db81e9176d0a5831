//! Snapshots end to end: built from a scripted `State`, written, read back, checked against the
//! published JSON Schema, rendered as text, and compared with `diff`.

use std::collections::BTreeMap;
use std::path::Path;

use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::oom::failure::Failure;
use gpumon::screen::{Msg, State};
use gpumon::snapshot::diff::{self, Topic};
use gpumon::snapshot::{self, Snapshot, SnapshotError, text};
use gpumon::source::live::{self, NOT_IN_NAMESPACE};
use gpumon::source::scripted::build::{self, GIB, MIB};
use gpumon::source::{
    Framework, GpuProcess, GpuSample, MachineInfo, ProcessKind, ProcessSample, ProcessUtil,
    Reading, Sample,
};
use serde_json::Value;

const T0: u64 = 1_763_812_987_000;

fn config() -> Config {
    Config::new(1000, 600_000)
}

fn env(pairs: &[(&str, &str)]) -> Reading<BTreeMap<String, String>> {
    Reading::Value(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
    )
}

fn run(machine: MachineInfo, samples: Vec<Sample>, actions: &[Action]) -> State {
    let mut state = State::new(config());
    state.update(Msg::from(Event::Started(machine)));
    for s in samples {
        state.update(Msg::from(Event::Sample(s)));
    }
    for a in actions {
        state.update(Msg::Action(*a));
    }
    state
}

/// Two GPUs (one on an NVML v1 driver), four processes: one in another PID namespace, one with
/// device memory n/a, and a text filter "train" that hides two of them; one failure alert.
fn scripted() -> State {
    let mut gpu0 = build::gpu(0, 143_771 * MIB, 110 * GIB, 615 * MIB);
    let mut gpu1 = build::gpu(1, 143_771 * MIB, 20 * GIB, 0);
    if let Reading::Value(m) = &mut gpu1.memory {
        m.reserved = Reading::na("NVML v1 (driver before R510): used includes reserved");
    }
    gpu1.temperature_c = Reading::na("NotSupported");
    let samples = (0..5u64)
        .map(|i| {
            gpu0.memory = match gpu0.memory.clone() {
                Reading::Value(mut m) => {
                    m.used = 108 * GIB + i * GIB;
                    m.free = m.total - m.used - 615 * MIB;
                    Reading::Value(m)
                }
                other => other,
            };
            let mut jax = build::process(4312, &gpu0, 105 * GIB, Framework::Jax, "python train.py");
            jax.settings = env(&[("XLA_PYTHON_CLIENT_MEM_FRACTION", ".75")]);
            let torch = build::process(
                4400,
                &gpu1,
                7 * GIB + i * 12 * MIB,
                Framework::Pytorch,
                "python finetune.py --epochs 3",
            );
            let foreign = live::join(
                GpuProcess {
                    pid: 3_652_628,
                    gpu_uuid: gpu0.uuid.clone(),
                    kind: ProcessKind::Compute,
                    device_memory: Reading::Value(2 * GIB),
                    util: Reading::Value(ProcessUtil::default()),
                    gpu_instance_id: None,
                    compute_instance_id: None,
                },
                None,
            );
            let mut wddm: ProcessSample =
                build::process(5100, &gpu1, 0, Framework::Cupy, "python train_cupy.py");
            wddm.device_memory = Reading::na("NVML_VALUE_NOT_AVAILABLE");
            wddm.settings = Reading::na("permission denied (another user's process)");
            wddm.user = Reading::Value("bo".into());
            Sample {
                at_ms: T0 + i * 1000,
                gpus: vec![gpu0.clone(), gpu1.clone()],
                processes: vec![jax, torch, foreign, wddm],
                failures: if i == 4 {
                    vec![failure(T0 + 4000, "/var/log/job.log", 812, Some(4400), "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 812.00 MiB is free. Including non-PyTorch memory, this process has 7.50 GiB memory in use. Of the allocated memory 3.90 GiB is allocated by PyTorch, and 3.06 GiB is reserved by PyTorch but unallocated.")]
                } else {
                    vec![]
                },
                ..Default::default()
            }
        })
        .collect();
    let filter: Vec<Action> = [Action::FilterPrompt]
        .into_iter()
        .chain("train".chars().map(Action::PromptChar))
        .chain([Action::PromptApply])
        .collect();
    run(build::machine(), samples, &filter)
}

fn taken() -> Snapshot {
    Snapshot::from_state(&scripted(), T0 + 4500)
}

/// Checks a document against `assets/snapshot.schema.json`, listing every fault.
fn assert_schema_valid(doc: &Value) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/snapshot.schema.json"),
    )
    .unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft202012::meta::validate(&schema).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors = validator.iter_errors(doc).into_errors();
    assert!(errors.is_empty(), "{errors}");
}

fn schema_valid(doc: &Value) -> bool {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/snapshot.schema.json"),
    )
    .unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft202012::is_valid(&schema, doc)
}

/// Reads a written file back as JSON and checks it against the schema.
fn read_checked(path: &Path) -> Snapshot {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_schema_valid(&doc);
    snapshot::read(path).unwrap()
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn round_trips_through_a_file_with_mode_0600_and_no_temp_left() {
    let snap = taken();
    let dir = tempfile::tempdir().unwrap();
    let path = snapshot::write_to_dir(&snap, dir.path()).unwrap();
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        "gpumon-gpu-07-20251122T120311Z.json"
    );
    assert_eq!(read_checked(&path), snap);
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "{names:?}");

    let again = snapshot::write_to_dir(&snap, dir.path()).unwrap();
    assert_eq!(
        again.file_name().unwrap().to_str().unwrap(),
        "gpumon-gpu-07-20251122T120311Z-2.json"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn write_atomic_replaces_and_keeps_the_file_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.json");
    std::fs::write(&path, b"old").unwrap();
    snapshot::write_atomic(&path, &taken().to_json()).unwrap();
    read_checked(&path);
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn unwritable_places_are_errors_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir");
    let err = snapshot::write_to_dir(&taken(), &missing).unwrap_err();
    assert!(matches!(err, SnapshotError::Io { .. }));
    assert!(err.to_string().contains("no/such/dir"), "{err}");
    // A regular file where a directory should be (root ignores permission bits, not this).
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let err = snapshot::write_atomic(file.join("snap.json"), b"{}").unwrap_err();
    assert!(!err.to_string().contains('\n'), "{err}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let ro = dir.path().join("read-only");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
        // Only meaningful where permission bits bind (not for root).
        if std::fs::File::create(ro.join("probe")).is_err() {
            assert!(snapshot::write_to_dir(&taken(), &ro).is_err());
        }
    }
}

#[test]
fn filtered_out_and_unavailable_fields_are_in_the_document() {
    let snap = taken();
    assert_eq!(
        snap.view.filter,
        Some(snapshot::FilterDoc::Text("train".into()))
    );
    let by_pid = |pid| snap.processes.iter().find(|p| p.pid == pid).unwrap();
    assert_eq!(snap.processes.len(), 4);
    assert!(by_pid(4312).shown && by_pid(5100).shown);
    let hidden = by_pid(4400);
    assert!(!hidden.shown);
    assert_eq!(hidden.history.len(), 5);
    assert_eq!(hidden.growth_bytes_per_s, Some(12 * 1_048_576));
    let foreign = by_pid(3_652_628);
    assert!(!foreign.shown);
    assert_eq!(foreign.user, None);
    assert_eq!(foreign.unavailable["user"], NOT_IN_NAMESPACE);
    assert_eq!(foreign.device_memory, Some(2 * GIB));
    let wddm = by_pid(5100);
    assert_eq!((wddm.device_memory, wddm.peak), (None, None));
    assert_eq!(wddm.unavailable["peak"], "NVML_VALUE_NOT_AVAILABLE");
    assert!(wddm.unavailable["settings"].contains("permission denied"));

    let gpu1 = &snap.gpus[1];
    assert_eq!(gpu1.memory.as_ref().unwrap().reserved, None);
    assert!(gpu1.unavailable["memory.reserved"].contains("NVML v1"));
    assert_eq!(gpu1.processes_without_memory, 1);
    let gpu0 = snap.gpus[0].memory.as_ref().unwrap();
    assert_eq!(gpu0.processes, 107 * GIB);
    assert_eq!(snap.gpus[0].used_history.len(), 5);
    assert_eq!(
        snap.alerts.len(),
        2,
        "the fragmentation failure and the JAX preallocation warning"
    );

    let doc = serde_json::to_value(&snap).unwrap();
    assert_eq!(doc["gpus"][1]["temperature_c"], Value::Null);
    assert_eq!(
        doc["gpus"][1]["unavailable"]["temperature_c"],
        "NotSupported"
    );
    assert_schema_valid(&doc);
}

#[test]
fn a_state_before_any_sample_is_a_valid_document() {
    let snap = Snapshot::from_state(&State::new(config()), T0);
    assert_eq!(snap.machine.host, None);
    assert!(snap.machine.unavailable.contains_key("host"));
    assert_schema_valid(&serde_json::to_value(&snap).unwrap());
    let name = snapshot::file_name(&snap);
    assert_eq!(name, "gpumon-unknown-host-20251122T120307Z.json");
}

#[test]
fn host_names_are_made_safe_for_a_file_name() {
    let mut snap = taken();
    snap.machine.host = Some("../etc/pass wd".into());
    assert_eq!(
        snapshot::file_name(&snap),
        "gpumon-_etc_pass_wd-20251122T120311Z.json"
    );
}

#[test]
fn text_fits_80_columns() {
    let out = text::render(&taken());
    for line in out.lines() {
        assert!(line.chars().count() <= snapshot::WIDTH, "{line}");
    }
    insta::with_settings!({filters => vec![(r"gpumon \d+\.\d+\.\d+[^)]*", "gpumon [version]")]}, {
        insta::assert_snapshot!("snapshot_text", out);
    });
}

#[test]
fn reading_bad_files_gives_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = serde_json::to_value(taken()).unwrap();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        serde_json::to_string(&v).unwrap()
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("empty.json", String::new(), "empty file"),
        ("broken.json", "{\"schema\": ".into(), "not JSON"),
        (
            "recording.ndjson",
            "{\"schema\":\"gpumon.recording/1\"}\n{}\n".into(),
            "not JSON",
        ),
        (
            "other.json",
            "{\"name\": \"not ours\"}".into(),
            "not a gpumon snapshot",
        ),
        (
            "future.json",
            with(&|v| v["schema"] = "gpumon.snapshot/5".into()),
            "newer than this gpumon reads",
        ),
        (
            "nan.json",
            with(&|v| v["gpus"][0]["memory"]["total"] = 0.into()).replacen(
                "\"total\":0",
                "\"total\":NaN",
                1,
            ),
            "not JSON",
        ),
        (
            "negative.json",
            with(&|v| v["gpus"][0]["memory"]["used"] = (-5).into()),
            "invalid gpumon.snapshot/4 document: invalid value: integer `-5`",
        ),
        (
            "extra.json",
            with(&|v| v["gpus"][0]["surprise"] = 1.into()),
            "unknown field `surprise`",
        ),
    ];
    for (name, body, expect) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let err = snapshot::read(&path).unwrap_err().to_string();
        assert!(!err.contains('\n'), "{name}: {err}");
        assert!(err.starts_with(path.to_str().unwrap()), "{name}: {err}");
        assert!(err.contains(expect), "{name}: {err}");
    }
    assert!(!schema_valid(
        &serde_json::from_str(&with(&|v| v["gpus"][0]["surprise"] = 1.into())).unwrap()
    ));

    let huge = dir.path().join("huge.json");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(snapshot::MAX_BYTES + 1).unwrap();
    let err = snapshot::read(&huge).unwrap_err();
    assert!(matches!(err, SnapshotError::TooLarge { .. }), "{err}");
    let err = snapshot::read(dir.path().join("absent.json")).unwrap_err();
    assert!(err.to_string().contains("absent.json"), "{err}");
}

/// A process on the diff's machine: pid, device memory, framework, command, settings.
type Proc = (
    u32,
    u64,
    Framework,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// One machine for the diff: its GPU, driver, and processes.
struct Machine {
    host: &'static str,
    gpu: &'static str,
    total: u64,
    reserved: u64,
    driver: &'static str,
    cuda: &'static str,
    processes: Vec<Proc>,
}

fn machine_snapshot(m: &Machine) -> Snapshot {
    let used: u64 = m.processes.iter().map(|p| p.1).sum();
    let mut gpu: GpuSample = build::gpu(0, m.total, used, m.reserved);
    gpu.name = m.gpu.into();
    let processes = m
        .processes
        .iter()
        .map(|(pid, dev, fw, cmd, settings)| {
            let mut p = build::process(*pid, &gpu, *dev, *fw, cmd);
            p.settings = env(settings);
            p
        })
        .collect();
    let info = MachineInfo {
        host: m.host.into(),
        driver_version: Some(m.driver.into()),
        cuda_version: Some(m.cuda.into()),
        ..build::machine()
    };
    let sample = Sample {
        at_ms: T0,
        gpus: vec![gpu],
        processes,
        ..Default::default()
    };
    let snap = Snapshot::from_state(&run(info, vec![sample], &[]), T0);
    assert_schema_valid(&serde_json::to_value(&snap).unwrap());
    snap
}

fn h100_and_h200() -> (Snapshot, Snapshot) {
    let torch: &[(&str, &str)] = &[("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")];
    let h100_total = 81_559 * MIB;
    let a = machine_snapshot(&Machine {
        host: "h100-box",
        gpu: "NVIDIA H100 80GB HBM3",
        total: h100_total,
        reserved: 529 * MIB,
        driver: "570.86.15",
        cuda: "12.8",
        processes: vec![
            (
                100,
                h100_total * 3 / 4 + 512 * MIB,
                Framework::Jax,
                "python train.py",
                &[],
            ),
            (
                101,
                16 * GIB + 512 * MIB + 430 * MIB,
                Framework::Pytorch,
                "python finetune.py",
                torch,
            ),
        ],
    });
    let b = machine_snapshot(&Machine {
        host: "h200-box",
        gpu: "NVIDIA H200",
        total: 143_771 * MIB,
        reserved: 615 * MIB,
        driver: "580.159.04",
        cuda: "13.0",
        processes: vec![
            (
                200,
                6 * GIB + 480 * MIB,
                Framework::Jax,
                "python train.py",
                &[("XLA_PYTHON_CLIENT_PREALLOCATE", "false")],
            ),
            (
                201,
                16 * GIB + 512 * MIB + 518 * MIB,
                Framework::Pytorch,
                "python finetune.py",
                torch,
            ),
            (
                202,
                2 * GIB + 512 * MIB,
                Framework::Cupy,
                "python cupy_job.py",
                &[],
            ),
        ],
    });
    (a, b)
}

#[test]
fn diff_of_two_machines_names_what_matters() {
    let (a, b) = h100_and_h200();
    let d = diff::diff(&a, &b);
    let find = |topic: Topic, subject: &str| {
        d.differences
            .iter()
            .find(|x| x.topic == topic && x.subject.contains(subject))
            .unwrap_or_else(|| panic!("no {topic:?} {subject}: {d:#?}"))
    };
    let driver = find(Topic::DriverVersion, "driver");
    assert_eq!(
        (driver.a.as_str(), driver.b.as_str()),
        ("570.86.15", "580.159.04")
    );
    find(Topic::CudaVersion, "CUDA");
    find(Topic::GpuModel, "GPU 0");
    find(Topic::TotalMemory, "GPU 0");
    let reserved = find(Topic::ReservedMemory, "GPU 0 reserved");
    assert_eq!(
        (reserved.a_bytes, reserved.b_bytes),
        (Some(529 * MIB), Some(615 * MIB))
    );
    assert!(
        reserved.effect.contains("B has 86M less"),
        "{}",
        reserved.effect
    );

    let prealloc = find(Topic::Setting, "XLA_PYTHON_CLIENT_PREALLOCATE");
    assert_eq!(prealloc.a, "unset");
    assert_eq!(prealloc.b, "XLA_PYTHON_CLIENT_PREALLOCATE=false");
    assert!(
        prealloc
            .effect
            .contains("JAX preallocates 75% of total memory by default; B disabled it"),
        "{}",
        prealloc.effect
    );
    let jax = find(Topic::DeviceMemory, "jax `python train.py`");
    assert!(
        jax.effect
            .contains("A's device memory is JAX's preallocated pool (75% of 79.6G"),
        "{}",
        jax.effect
    );
    let overhead = find(Topic::Overhead, "jax");
    assert_eq!(overhead.a_bytes, Some(512 * MIB));
    assert_eq!(overhead.b_bytes, None);
    let torch = find(Topic::DeviceMemory, "torch `python finetune.py`");
    assert_eq!(torch.b_bytes.unwrap() - torch.a_bytes.unwrap(), 88 * MIB);
    assert!(torch.effect.contains("CUDA context"), "{}", torch.effect);
    assert!(
        !d.differences
            .iter()
            .any(|x| x.subject.contains("PyTorch allocator")),
        "same settings are not a difference"
    );
    let cupy = find(Topic::ProcessOnOneSide, "cupy");
    assert_eq!(cupy.a, "absent");

    let json: Value = serde_json::from_str(&diff::render_json(&d)).unwrap();
    assert_eq!(
        json["differences"].as_array().unwrap().len(),
        d.differences.len()
    );
    assert_eq!(json["differences"][0]["topic"], "driver_version");

    let out = diff::render_text(&d);
    for line in out.lines() {
        assert!(line.chars().count() <= snapshot::WIDTH, "{line}");
    }
    insta::assert_snapshot!("diff_text", out);
}

#[test]
fn diff_of_a_snapshot_with_itself_is_empty() {
    let (a, _) = h100_and_h200();
    let d = diff::diff(&a, &a);
    assert!(d.differences.is_empty(), "{:#?}", d.differences);
    assert!(diff::render_text(&d).contains("No differences"));
}

/// A failure as the log parser makes it from a real message line.
fn failure(at_ms: u64, log: &str, line: u64, pid: Option<u32>, message: &str) -> Failure {
    let mut parsed = gpumon::oom::parse_all(message.as_bytes());
    assert_eq!(parsed.len(), 1, "{message}");
    let mut f = parsed.remove(0).into_failure(at_ms, log, pid);
    f.line = line;
    f
}

#[test]
fn container_and_pool_are_optional_fields_of_a_process() {
    let mut snap = taken();
    let plain = serde_json::to_value(&snap).unwrap();
    assert!(
        plain["processes"][0].get("pool").is_none()
            && plain["processes"][0].get("container").is_none()
    );
    snap.processes[0].container = Some("slurm:48211.0".into());
    snap.processes[0].pool = Some(snapshot::PoolDoc {
        framework: "pytorch".into(),
        allocated: Some(1),
        reserved: Some(3),
        cached_free: Some(2),
        stranded: Some(1),
        largest_free_block: None,
        limit: None,
        version: Some("2.11.0".into()),
        read_at: Some("2025-11-22T12:03:11.000Z".into()),
        largest_alloc: None,
        peak_allocated: Some(1),
        peak_reserved: Some(3),
        alloc_retries: Some(0),
        ooms: Some(0),
    });
    let doc = serde_json::to_value(&snap).unwrap();
    assert_schema_valid(&doc);
    let back: Snapshot = serde_json::from_value(doc).unwrap();
    assert_eq!(back, snap);
}

/// The demo replayed: a probed process's pool over time and an exited one's last VMS/RSS are
/// optional fields of the document (schema-valid, read back into the same rings), and the text
/// form draws the selected process's timeline; without them an older document still reads.
#[test]
fn pool_history_and_last_host_memory_travel_in_the_snapshot() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson");
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut source = gpumon::source::replay::ReplaySource::read(path, file).unwrap();
    let mut state = State::new(Config::new(1000, 600_000));
    state.update(Msg::from(Event::Started(source.header().machine.clone())));
    for s in source.samples() {
        state.update(Msg::from(Event::Sample(s.unwrap())));
    }
    let at = state.machine().last_sample_ms.unwrap();
    let snap = Snapshot::from_state(&state, at);
    let doc = serde_json::to_value(&snap).unwrap();
    assert_schema_valid(&doc);
    let process = |pid: u32| snap.processes.iter().find(|p| p.pid == pid).unwrap();
    // The fragmenting PyTorch job (named by its OOM), probed; the growing one (named by its leak
    // alert), which read 0 VMS and RSS from /proc as it exited at the recording's end.
    let pid_of = |class: &str| {
        let alerts = &state.machine().alerts;
        alerts.iter().find(|a| a.class == class).and_then(|a| a.pid)
    };
    let (probed, exiting) = (pid_of("fragmentation").unwrap(), pid_of("leak").unwrap());
    let pool = process(probed)
        .pool_history
        .as_ref()
        .expect("the fragmenting job was probed");
    assert!(pool.allocated.iter().any(|p| p.value.is_some()));
    let gone = process(exiting);
    assert_eq!(
        (gone.vms, gone.rss),
        (None, None),
        "no 0 for an exited process"
    );
    let last = gone.host_memory_last.as_ref().unwrap();
    assert_eq!(last.vms, 29_751_255_040);
    let machine = snap.to_machine(&Config::new(1000, 600_000));
    let t = machine
        .processes
        .values()
        .find(|t| t.key.pid == probed)
        .unwrap();
    let original = state
        .machine()
        .processes
        .values()
        .find(|t| t.key.pid == probed)
        .unwrap();
    // The four rings travel; when the allocator flushed its cache does not (a restored machine
    // judges retries from the samples it sees next).
    let rings = |t: &gpumon::model::ProcessTrack| {
        t.pool_history.as_ref().map(|h| {
            [
                h.allocated.clone(),
                h.reserved.clone(),
                h.stranded.clone(),
                h.limit.clone(),
            ]
        })
    };
    assert_eq!(rings(t), rings(original));
    let t = machine
        .processes
        .values()
        .find(|t| t.key.pid == exiting)
        .unwrap();
    assert_eq!(t.vms(), Some((29_751_255_040, true)));
    let out = text::render(&snap);
    let selected = snap.processes.iter().find(|p| p.selected).unwrap().pid;
    assert!(out.contains(&format!("  pid {selected} from ")), "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    // An older document (no pool_history, no host_memory_last) still reads.
    let mut old = doc.clone();
    for p in old["processes"].as_array_mut().unwrap() {
        let p = p.as_object_mut().unwrap();
        p.remove("pool_history");
        p.remove("host_memory_last");
    }
    let back: Snapshot = serde_json::from_value(old).unwrap();
    assert!(back.processes.iter().all(|p| p.pool_history.is_none()));
}

/// A probed process's end and the place its main thread stood when it ended are in the
/// snapshot (valid against the schema) and come back with `to_machine`.
#[test]
fn a_processs_end_and_place_are_in_the_document_and_come_back() {
    use gpumon::sample::process_end::{EndException, EndHow, Frame};
    use gpumon::sample::{MainWhere, ProbeNews, ProcessEnd, WhereNews};
    let g = build::gpu(0, 80 * GIB, 10 * GIB, 0);
    let mut p = build::process(1479, &g, 9 * GIB, Framework::Pytorch, "python train.py");
    p.start_time = Reading::Value(T0 / 1000 - 60);
    let place = MainWhere {
        frames: vec![Frame {
            file: "/w/data/loader.py".into(),
            line: 88,
            function: "next_batch".into(),
        }],
        since_ms: T0 - 41_000,
        at_ms: T0,
        asked: false,
    };
    let end = ProcessEnd {
        how: EndHow::Exception,
        code: Some(1),
        exception: Some(EndException {
            kind: "torch.OutOfMemoryError".into(),
            message: "CUDA out of memory.".into(),
        }),
        at_ms: T0 + 1500,
    };
    let news = |end: Option<ProcessEnd>, main_where: Option<WhereNews>| ProbeNews {
        pid: 1479,
        start_time: T0 / 1000 - 60,
        answer: None,
        recording: None,
        map: None,
        end,
        main_where,
    };
    let sample = |at_ms: u64, processes: Vec<ProcessSample>, probes: Vec<ProbeNews>| Sample {
        at_ms,
        gpus: vec![g.clone()],
        processes,
        probes,
        ..Default::default()
    };
    let state = run(
        build::machine(),
        vec![
            sample(
                T0,
                vec![p.clone()],
                vec![news(None, Some(WhereNews::At(place.clone())))],
            ),
            sample(T0 + 1000, vec![p.clone()], vec![]),
            sample(T0 + 2000, vec![], vec![news(Some(end.clone()), None)]),
        ],
        &[],
    );
    let snap = Snapshot::from_state(&state, T0 + 2000);
    let doc = serde_json::to_value(&snap).unwrap();
    assert_schema_valid(&doc);
    let process = &doc["processes"][0];
    assert_eq!(
        process["end"]["exception"]["type"],
        "torch.OutOfMemoryError"
    );
    assert_eq!(process["stuck"]["frames"][0]["function"], "next_batch");
    let back = snap.to_machine(&config());
    let track = back.processes.values().next().unwrap();
    assert_eq!(track.end.as_ref(), Some(&end));
    assert_eq!(track.stuck.as_ref(), Some(&place));
    let old = doc.to_string().replace(r#""end":"#, r#""x":"#);
    assert!(
        !schema_valid(&serde_json::from_str(&old).unwrap()),
        "no unknown keys"
    );
}

/// Issue 40: a followed log read behind its writer is in the document (its backlog, since when),
/// valid against the schema, said in the text form, and comes back with `to_machine`; a machine
/// whose logs are read to their end has no `logs_behind`.
#[test]
fn a_log_read_behind_is_in_the_document_and_comes_back() {
    use gpumon::sample::LogBehind;
    let g = build::gpu(0, 80 * GIB, 10 * GIB, 0);
    let behind = LogBehind {
        log: "/w/train.log".into(),
        bytes: 222_298_112,
        since_ms: Some(T0 - 41_000),
    };
    let sample = |logs: Vec<LogBehind>| Sample {
        at_ms: T0,
        gpus: vec![g.clone()],
        logs,
        ..Default::default()
    };
    let snap = Snapshot::from_state(
        &run(build::machine(), vec![sample(vec![behind.clone()])], &[]),
        T0,
    );
    let doc = serde_json::to_value(&snap).unwrap();
    assert_schema_valid(&doc);
    assert_eq!(doc["logs_behind"][0]["bytes"], 222_298_112);
    assert_eq!(doc["logs_behind"][0]["since"], "2025-11-22T12:02:26.000Z");
    assert!(
        text::render(&snap).contains(
            "log /w/train.log read behind its writer: 212.00 MiB not read yet (its first"
        ),
        "{}",
        text::render(&snap)
    );
    let back = snap.to_machine(&config());
    assert_eq!(back.logs_behind, [behind]);
    let caught_up = Snapshot::from_state(&run(build::machine(), vec![sample(vec![])], &[]), T0);
    let doc = serde_json::to_value(&caught_up).unwrap();
    assert!(doc.get("logs_behind").is_none(), "{doc}");
}
