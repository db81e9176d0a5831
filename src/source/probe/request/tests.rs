//! Requests written beside a probe file (atomic, 0600, one fixed line, never through a link),
//! refused for an exited, unprobed or reused process, and exports moved out whole.

use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;

use super::*;

const START: u64 = 1_763_800_400;

fn probe_doc(pid: u32, extra: &str) -> String {
    format!(
        r#"{{"schema":"gpumon.probe/1","pid":{pid},"start_time":{START},"at_ms":1,"interval_ms":1000,"frameworks":[]{extra}}}"#
    )
}

struct Fixture {
    probe: tempfile::TempDir,
    _proc: tempfile::TempDir,
    requests: ProbeRequests,
}

fn fixture(running: &[u32]) -> Fixture {
    let probe = tempfile::tempdir().unwrap();
    let proc = tempfile::tempdir().unwrap();
    for pid in running {
        fs::create_dir_all(proc.path().join(pid.to_string())).unwrap();
    }
    let uid = rustix::process::getuid().as_raw();
    let dirs = ProbeDirs::new(vec![probe.path().into()], false, uid);
    let requests = ProbeRequests::new(dirs, proc.path().into());
    Fixture {
        probe,
        _proc: proc,
        requests,
    }
}

fn ask(pid: u32, verb: Verb) -> Ask {
    Ask {
        pid,
        start_time: Some(START),
        verb,
        id: request_id(1_763_800_500_000, Purpose::Person),
    }
}

#[test]
fn a_request_is_one_fixed_line_in_a_private_file() {
    let f = fixture(&[400]);
    fs::write(f.probe.path().join("400.json"), probe_doc(400, "")).unwrap();
    f.requests.send(&ask(400, Verb::RecordOn)).unwrap();
    let path = f.probe.path().join("400.request");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "gpumon.request/1 record-on 17638005000001\n"
    );
    let meta = fs::symlink_metadata(&path).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), rustix::process::getuid().as_raw());
    assert!(ask(400, Verb::Map).line().len() <= 128);
    // A link planted where the request goes is replaced, never written through.
    let target = f.probe.path().join("target");
    fs::write(&target, "keep").unwrap();
    fs::remove_file(&path).unwrap();
    symlink(&target, &path).unwrap();
    symlink(&target, f.probe.path().join(".400.request.tmp")).unwrap();
    f.requests.send(&ask(400, Verb::Map)).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
    assert!(
        !fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(purpose_of(request_id(5, Purpose::Alert)), Purpose::Alert);
}

#[test]
fn exited_unprobed_and_reused_processes_are_refused_in_words() {
    let f = fixture(&[401, 402]);
    fs::write(f.probe.path().join("402.json"), probe_doc(402, "")).unwrap();
    fs::write(f.probe.path().join("403.json"), probe_doc(403, "")).unwrap();
    let err = f.requests.send(&ask(403, Verb::Map)).unwrap_err();
    assert_eq!(err, "pid 403 has exited");
    let err = f.requests.send(&ask(401, Verb::Map)).unwrap_err();
    assert!(err.starts_with("pid 401 has no probe"), "{err}");
    let mut reused = ask(402, Verb::Map);
    reused.start_time = Some(START + 60);
    let err = f.requests.send(&reused).unwrap_err();
    assert!(err.contains("another process"), "{err}");
    assert!(!f.probe.path().join("402.request").exists());
}

#[test]
fn an_export_is_moved_out_private_and_a_bad_name_or_link_is_not_taken() {
    let f = fixture(&[404]);
    let answer = r#","answer":{"id":7,"verb":"export","ok":true,"detail":"404.export.7.pickle"}"#;
    fs::write(f.probe.path().join("404.json"), probe_doc(404, answer)).unwrap();
    let a = f.requests.answer(404).unwrap().unwrap();
    assert_eq!(a.detail, "404.export.7.pickle");
    fs::write(
        f.probe.path().join("404.export.7.pickle"),
        b"\x80\x04pickled",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let to = out.path().join("snap.pickle");
    assert_eq!(f.requests.take_export(404, &a.detail, &to).unwrap(), to);
    assert_eq!(fs::read(&to).unwrap(), b"\x80\x04pickled");
    assert_eq!(fs::metadata(&to).unwrap().mode() & 0o777, 0o600);
    assert!(!f.probe.path().join("404.export.7.pickle").exists());
    for bad in [
        "../404.export.7.pickle",
        "404.export.7.sh",
        "404.export..pickle",
        "405.export.7.pickle",
    ] {
        assert!(!export_name(bad, 404), "{bad}");
        assert!(f.requests.take_export(404, bad, &to).is_err());
    }
    symlink("/etc/passwd", f.probe.path().join("404.export.8.pb.gz")).unwrap();
    let err = f
        .requests
        .take_export(404, "404.export.8.pb.gz", &out.path().join("x"))
        .unwrap_err();
    assert!(!Path::new(&out.path().join("x")).exists(), "{err}");
}
