//! Block maps end to end on the real binary in tmux: `gpumon run --no-probe` starts a job that
//! plays its own probe (writes `<pid>.json`, takes `<pid>.request`, answers, writes a map with a
//! hostile function name, and an export file); `m` opens the pane, `M` asks for a map, `e` asks
//! for an export, which gpumon moves next to it. Needs tmux and python3.

#[path = "common/tmux.rs"]
mod tmux;

use gpumon::source::scripted::maps::{fragmented, json};
use tmux::Session;

const JOB: &str = r#"
import json, os, sys, time
d = os.environ["GPUMON_PROBE_DIR"]
pid = os.getpid()
stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
btime = next(int(l.split()[1]) for l in open("/proc/stat") if l.startswith("btime"))
start = btime + int(stat[19]) // os.sysconf("SC_CLK_TCK")
MAP = open(sys.argv[1]).read().replace("4242424242", str(start)).replace("424242", str(pid))
log = sys.argv[2]

def write(name, text):
    tmp = os.path.join(d, "." + name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.write(fd, text.encode())
    os.close(fd)
    os.replace(tmp, os.path.join(d, name))

answer = None
while True:
    req = os.path.join(d, "%d.request" % pid)
    if os.path.exists(req):
        st = os.stat(req, follow_symlinks=False)
        line = open(req).read()
        os.remove(req)
        with open(log, "a") as f:
            f.write("%o %s" % (st.st_mode & 0o777, line))
        _, verb, rid = line.split()
        detail = ""
        if verb == "map":
            write("%d.map.json" % pid, MAP)
        if verb == "export":
            detail = "%d.export.%s.pickle" % (pid, rid)
            write(detail, "not really a pickle")
        answer = {"id": int(rid), "verb": verb, "ok": True, "detail": detail}
    doc = {"schema": "gpumon.probe/1", "pid": pid, "start_time": start,
           "at_ms": int(time.time() * 1000), "interval_ms": 300,
           "frameworks": [{"name": "pytorch", "version": "2.11.0", "devices": [
               {"index": 0, "uuid": None, "allocated": 4 << 30, "reserved": 9 << 30}]}],
           "answer": answer,
           "recording": {"on": True, "max_entries": 100000, "stacks": "python",
                         "since_ms": None, "reason": None}}
    write("%d.json" % pid, json.dumps(doc))
    time.sleep(0.3)
"#;

#[test]
fn a_key_asks_the_job_s_probe_for_a_map_and_an_export() {
    let dir = tempfile::tempdir().unwrap();
    let mut map = fragmented(424_242, "GPU-x", 1_763_800_000_000, 40);
    map.start_time = 4_242_424_242;
    let device = &mut map.frameworks[0].devices[0];
    device.uuid = None;
    device.sites.as_mut().unwrap()[1].function = "forward\u{1b}]0;pwned\u{7}".into();
    std::fs::write(dir.path().join("map.json"), json(&map)).unwrap();
    std::fs::write(dir.path().join("job.py"), JOB).unwrap();
    let probe_dir = dir.path().join("probe");
    std::fs::create_dir(&probe_dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&probe_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let log = dir.path().join("requests.log");
    let command = format!(
        "env GPUMON_PROBE_DIR={} {} run --no-probe -- python3 {} {} {}",
        probe_dir.display(),
        env!("CARGO_BIN_EXE_gpumon"),
        dir.path().join("job.py").display(),
        dir.path().join("map.json").display(),
        log.display()
    );
    let s = Session::run("map", &command, (120, 40));
    s.wait_for(|t| t.contains("4G/9G"), "the job's pool");
    s.keys(&["m"]);
    s.wait_for(
        |t| t.contains("no map yet: M asks its probe"),
        "the empty pane",
    );
    s.keys(&["M"]);
    let screen = s.wait_for(
        |t| t.contains("proj/train.py:87 collate") && t.contains("took a map"),
        "the map and the probe's answer",
    );
    assert!(
        screen.contains("does not fit") || screen.contains("the largest request that fits"),
        "{screen}"
    );
    assert!(
        screen.contains("forward\\u{1b}]0;pwned\\u{7}"),
        "escaped:\n{screen}"
    );
    assert!(screen.contains("recording allocation history"), "{screen}");
    s.keys(&["e"]);
    let screen = s.wait_for(|t| t.contains("export written"), "the export moved");
    let requests = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = requests.lines().collect();
    assert_eq!(lines.len(), 2, "{requests}");
    assert!(
        lines[0].starts_with("600 gpumon.request/1 map "),
        "{requests}"
    );
    assert!(
        lines[1].starts_with("600 gpumon.request/1 export "),
        "{requests}"
    );
    let exported: Vec<_> = std::fs::read_dir(s.path(""))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("gpumon-export-")
        })
        .collect();
    assert_eq!(exported.len(), 1, "{screen}");
    let meta = exported[0].metadata().unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::read_to_string(exported[0].path()).unwrap(),
        "not really a pickle"
    );
    s.keys(&["q"]);
    s.wait_for(|t| t.contains("k stop it"), "the quit question");
    s.keys(&["k"]);
    s.assert_restored(143);
}
