//! Tests of the NVML conversions, with hand-built nvml-wrapper values (no GPU needed).

use super::*;

const GIB: u64 = 1 << 30;

fn proc_info(pid: u32, used: Option<u64>) -> ProcessInfo {
    ProcessInfo {
        pid,
        used_gpu_memory: used.map_or(UsedGpuMemory::Unavailable, UsedGpuMemory::Used),
        gpu_instance_id: None,
        compute_instance_id: None,
    }
}

fn merged(total: Option<u64>, c: &[ProcessInfo], g: &[ProcessInfo]) -> Vec<GpuProcess> {
    let mut out = Vec::new();
    merge_processes("GPU-a", total, c, g, &mut out);
    out
}

#[test]
fn startup_messages_name_the_cause() {
    let Err(missing) = nvml_wrapper::Nvml::builder()
        .lib_path(std::ffi::OsStr::new("/nonexistent/libnvidia-ml.so.1"))
        .init()
    else {
        panic!("a missing library cannot load");
    };
    assert!(startup_message(&missing, None).contains("no NVIDIA driver installed"));
    // The path the user set is named, not the default's.
    let set = std::ffi::OsStr::new("/nonexistent/x");
    let said = startup_message(&missing, Some(set));
    assert!(
        said.starts_with(
            "NVML library not found: /nonexistent/x, named by GPUMON_NVML_LIB, cannot be loaded ("
        ) && !said.contains("libnvidia-ml.so.1 missing"),
        "{said}"
    );
    // A library without NVML's first call is no NVML, not an old one.
    let no_init =
        NvmlError::FailedToLoadSymbol("/lib/libz.so.1: undefined symbol: nvmlInit_v2".into());
    assert_eq!(
        startup_message(&no_init, Some(std::ffi::OsStr::new("/lib/libz.so.1"))),
        "/lib/libz.so.1 is not an NVML library (it has no nvmlInit_v2), named by GPUMON_NVML_LIB"
    );
    let old = NvmlError::FailedToLoadSymbol("undefined symbol: nvmlDeviceGetMemoryInfo_v2".into());
    assert!(startup_message(&old, None).starts_with("NVML library too old for gpumon"));
    assert!(startup_message(&NvmlError::DriverNotLoaded, None).contains("driver not loaded"));
    assert!(startup_message(&NvmlError::NoPermission, None).contains("no permission"));
    assert!(!NO_GPU.is_empty());
    for e in [
        NvmlError::Unknown,
        NvmlError::FailedToLoadSymbol("x".into()),
        missing,
    ] {
        assert!(!startup_message(&e, Some(set)).contains('\n'));
    }
}

#[test]
fn reasons_are_short_and_human() {
    assert_eq!(
        reason(&NvmlError::NotSupported),
        "not supported on this GPU"
    );
    assert_eq!(reason(&NvmlError::NoPermission), "no permission");
    assert_eq!(reason(&NvmlError::Timeout), "timed out");
    assert_eq!(
        reason(&NvmlError::FailedToLoadSymbol("undefined symbol".into())),
        "not available in this driver version"
    );
    assert_eq!(reason(&NvmlError::GpuLost), "GPU fell off the bus");
}

#[test]
fn unsupported_temperature_is_na_with_reason() {
    let t: Reading<u32> = field(Err(NvmlError::NotSupported));
    assert_eq!(t, Reading::na("not supported on this GPU"));
    assert_eq!(field(Ok::<u32, NvmlError>(54)), Reading::Value(54));
}

#[test]
fn lost_is_only_for_device_failures() {
    assert!(is_lost(&NvmlError::GpuLost));
    assert!(is_lost(&NvmlError::Unknown));
    assert!(!is_lost(&NvmlError::NotSupported));
    assert!(!is_lost(&NvmlError::NoPermission));
    assert!(!is_lost(&NvmlError::Timeout));
}

#[test]
fn cuda_versions() {
    assert_eq!(cuda_version(13000).as_deref(), Some("13.0"));
    assert_eq!(cuda_version(12040).as_deref(), Some("12.4"));
    assert_eq!(cuda_version(11080).as_deref(), Some("11.8"));
    assert_eq!(cuda_version(0), None);
}

#[test]
fn v2_memory_keeps_reserved_apart() {
    let m = memory_v2(&MemoryInfo {
        free: 126_221 << 20,
        reserved: 615 << 20,
        total: 143_771 << 20,
        used: 16_934 << 20,
        version: 0x0200_0028,
    });
    assert_eq!(m.reserved, Reading::Value(615 << 20));
    assert_eq!(
        (m.total, m.used, m.free),
        (143_771 << 20, 16_934 << 20, 126_221 << 20)
    );
}

#[test]
fn v1_fallback_shape() {
    let m = memory_v1(100, 40, 60);
    assert_eq!((m.total, m.free, m.used), (100, 40, 60));
    assert_eq!(m.reserved, Reading::na(V1_RESERVED));
}

#[test]
fn unavailable_process_memory_is_na_not_zero() {
    let p = merged(Some(80 * GIB), &[proc_info(42, None)], &[]);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].device_memory, Reading::na(MEMORY_NOT_REPORTED));
    assert_eq!(p[0].kind, ProcessKind::Compute);
    assert_eq!(p[0].gpu_uuid, "GPU-a");
}

#[test]
fn compute_and_graphics_merge() {
    let c = [proc_info(10, Some(GIB)), proc_info(11, Some(2 * GIB))];
    let g = [proc_info(11, Some(2 * GIB)), proc_info(12, None)];
    let p = merged(Some(80 * GIB), &c, &g);
    let kinds: Vec<_> = p.iter().map(|p| (p.pid, p.kind)).collect();
    assert_eq!(
        kinds,
        [
            (10, ProcessKind::Compute),
            (11, ProcessKind::ComputeGraphics),
            (12, ProcessKind::Graphics)
        ]
    );
    assert_eq!(p[1].device_memory, Reading::Value(2 * GIB));
}

#[test]
fn merge_prefers_known_memory_across_lists() {
    let p = merged(None, &[proc_info(7, None)], &[proc_info(7, Some(GIB))]);
    assert_eq!(p[0].device_memory, Reading::Value(GIB));
    assert_eq!(p[0].kind, ProcessKind::ComputeGraphics);
}

#[test]
fn same_pid_twice_in_one_list_is_summed() {
    let c = [proc_info(7, Some(GIB)), proc_info(7, Some(2 * GIB))];
    let p = merged(Some(80 * GIB), &c, &[]);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].device_memory, Reading::Value(3 * GIB));
    let c = [proc_info(7, Some(GIB)), proc_info(7, None)];
    assert!(merged(None, &c, &[])[0].device_memory.get().is_none());
}

#[test]
fn stride_bug_entries_are_dropped() {
    // What a 32-byte-stride list read with a 24-byte stride looks like: PID 0 from the extra
    // field, the non-MIG instance id 0xFFFFFFFF as a PID, and memory bigger than the GPU.
    let c = [
        proc_info(4312, Some(3 * GIB)),
        proc_info(0, Some(4400)),
        proc_info(u32::MAX, Some(0)),
        proc_info(4401, Some(200 * GIB)),
    ];
    let p = merged(Some(80 * GIB), &c, &[]);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].pid, 4312);
    // Without a known total, only the PID checks apply.
    assert_eq!(merged(None, &c, &[]).len(), 2);
}

type List = Result<Vec<ProcessInfo>, NvmlError>;

fn no_symbol() -> List {
    Err(NvmlError::FailedToLoadSymbol("undefined symbol".into()))
}

#[test]
fn process_list_falls_back_to_v2_before_r510() {
    let v2 = || Ok(vec![proc_info(9, Some(GIB))]);
    let list = process_list(false, || unreachable!(), no_symbol, v2);
    assert_eq!(list, [proc_info(9, Some(GIB))]);
    assert!(process_list(false, || Ok(1), no_symbol, no_symbol).is_empty());
    let lost = || -> List { Err(NvmlError::GpuLost) };
    assert!(process_list(false, || Ok(1), lost, || unreachable!()).is_empty());
}

#[test]
fn long_lists_are_not_read_on_a_stride_bug_driver() {
    let one = || -> List { Ok(vec![proc_info(9, Some(GIB))]) };
    assert_eq!(process_list(true, || Ok(12), one, no_symbol).len(), 1);
    assert!(process_list(true, || Ok(13), || unreachable!(), no_symbol).is_empty());
    let count_fails = || Err(NvmlError::Unknown);
    assert!(process_list(true, count_fails, || unreachable!(), no_symbol).is_empty());
    assert_eq!(
        process_list(false, || unreachable!(), one, no_symbol).len(),
        1
    );
}

#[test]
fn merge_appends_after_other_gpus() {
    let mut out = Vec::new();
    merge_processes("GPU-a", None, &[proc_info(5, Some(1))], &[], &mut out);
    merge_processes("GPU-b", None, &[proc_info(5, Some(2))], &[], &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].gpu_uuid, "GPU-b");
    assert_eq!(out[1].kind, ProcessKind::Compute);
}

#[test]
fn lost_gpu_keeps_its_identity() {
    let id = Identity {
        uuid: "GPU-1234".into(),
        name: "NVIDIA H200".into(),
        pci_bus_id: Reading::Value("00000000:19:00.0".into()),
    };
    let g = lost_gpu(3, Some(&id), reason(&NvmlError::GpuLost));
    assert_eq!(
        (g.uuid.as_str(), g.index, g.name.as_str()),
        ("GPU-1234", 3, "NVIDIA H200")
    );
    assert_eq!(g.pci_bus_id, id.pci_bus_id);
    assert_eq!(
        g.status,
        GpuStatus::Lost {
            reason: "GPU fell off the bus".into()
        }
    );
    assert_eq!(g.memory, Reading::na("GPU fell off the bus"));
    assert!(g.utilization.get().is_none() && g.temperature_c.get().is_none());
    assert!(g.power_mw.get().is_none());
}

#[test]
fn lost_gpu_never_seen_gets_a_stable_placeholder() {
    let g = lost_gpu(1, None, "unknown driver error".into());
    assert_eq!(g.uuid, "unknown-uuid-gpu1");
    assert_eq!(g.pci_bus_id.reason(), Some("unknown driver error"));
}

fn mem() -> Memory {
    memory_v2(&MemoryInfo {
        free: GIB,
        reserved: GIB / 2,
        total: 80 * GIB,
        used: 78 * GIB + GIB / 2,
        version: 0,
    })
}

/// Each per-field error kind leaves only that field n/a, with a short one-line reason.
#[test]
fn per_field_errors_are_na_with_the_reason() {
    type Make = fn() -> NvmlError;
    let cases: [(Make, &str); 7] = [
        (|| NvmlError::NotSupported, "not supported on this GPU"),
        (|| NvmlError::NoPermission, "no permission"),
        (|| NvmlError::Timeout, "timed out"),
        (
            || NvmlError::FailedToLoadSymbol("nvmlDeviceGetMemoryInfo_v2".into()),
            "not available in this driver version",
        ),
        (
            || NvmlError::FunctionNotFound,
            "not available in this driver version",
        ),
        (
            || NvmlError::InsufficientPower,
            "external power cables not attached",
        ),
        (|| NvmlError::NoData, "no data"),
    ];
    for (make, why) in cases {
        assert!(!is_lost(&make()), "{:?}", make());
        assert_eq!(memory_reading(Err(make())), Ok(Reading::na(why)));
        assert_eq!(field::<u32>(Err(make())), Reading::na(why));
    }
    assert_eq!(memory_reading(Ok(mem())), Ok(Reading::Value(mem())));
}

/// Each error that means the device itself is gone makes the GPU lost, with the reason.
#[test]
fn device_errors_make_the_gpu_lost() {
    for (e, why) in [
        (NvmlError::GpuLost, "GPU fell off the bus"),
        (NvmlError::Unknown, "unknown driver error"),
        (NvmlError::ResetRequired, "GPU needs a reset"),
        (NvmlError::Uninitialized, "NVML not initialised"),
        (NvmlError::InvalidArg, "invalid device handle"),
        (NvmlError::DriverNotLoaded, "NVIDIA driver not loaded"),
        (
            NvmlError::LibRmVersionMismatch,
            "driver/library version mismatch",
        ),
    ] {
        assert!(is_lost(&e), "{e:?}");
        assert_eq!(memory_reading(Err(e)), Err(why.to_string()));
    }
    for e in [
        NvmlError::IrqIssue,
        NvmlError::OperatingSystem,
        NvmlError::UnexpectedVariant(999),
    ] {
        let why = memory_reading(Err(e)).unwrap_err();
        assert!(!why.is_empty() && !why.contains('\n'), "{why}");
    }
}

/// A process list that fails is empty (that GPU's processes are absent, not the GPU); only a
/// missing v3 symbol falls back to v2.
#[test]
fn process_list_errors_leave_the_list_empty() {
    let listed = || Ok(vec![proc_info(7, Some(GIB))]);
    for e in [
        NvmlError::NotSupported,
        NvmlError::NoPermission,
        NvmlError::Timeout,
        NvmlError::GpuLost,
        NvmlError::Unknown,
    ] {
        let got = process_list(false, || Ok(1), || Err(e), listed);
        assert!(got.is_empty());
    }
    let v2 = process_list(
        false,
        || Ok(1),
        || Err(NvmlError::FailedToLoadSymbol("v3".into())),
        listed,
    );
    assert_eq!(v2.len(), 1);
    let unreadable_count = process_list(true, || Err(NvmlError::Timeout), listed, listed);
    assert!(unreadable_count.is_empty());
}
