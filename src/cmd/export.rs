//! `gpumon snapshot --export PID -o FILE`: asks the process's probe (verb `export`) for its
//! framework's own full map, waits a bounded time for the answer, then moves the file the probe
//! wrote to FILE (0600). gpumon never unpickles or parses it.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::{Fail, sources};
use crate::sample::request::{Ask, Purpose, Verb, request_id};
use crate::source::probe::request::Requests;

/// How long the probe has to answer: a few of its intervals and the export itself.
pub const WAIT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(100);

pub(super) fn export(pid: u32, output: Option<&Path>) -> Result<ExitCode, Fail> {
    let to = match output {
        Some(p) if p != Path::new("-") => p,
        _ => {
            return Err(Fail::usage(
                "--export writes a file: give it with -o FILE (not standard output)",
            ));
        }
    };
    let requests =
        sources::requests(true).ok_or_else(|| Fail::runtime("requests to probes are off"))?;
    let path = run(requests.as_ref(), pid, to, WAIT, POLL).map_err(Fail::runtime)?;
    crate::say!("gpumon: pid {pid}'s export written to {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The request, the wait for its answer, the move; the error says what went wrong in words.
pub(super) fn run(
    requests: &dyn Requests,
    pid: u32,
    to: &Path,
    wait: Duration,
    poll: Duration,
) -> Result<std::path::PathBuf, String> {
    let id = request_id(crate::clock::unix_ms(), Purpose::Person);
    let ask = Ask {
        pid,
        start_time: None,
        verb: Verb::Export,
        id,
    };
    requests.send(&ask)?;
    let deadline = Instant::now() + wait;
    loop {
        if let Some(a) = requests.answer(pid)?.filter(|a| a.id == id) {
            if !a.ok {
                return Err(format!(
                    "pid {pid}'s probe refused the export: {}",
                    a.detail
                ));
            }
            return requests.take_export(pid, &a.detail, to);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "pid {pid}'s probe did not answer within {} s (its probe may be older than this \
                 gpumon, or the process is stuck)",
                wait.as_secs()
            ));
        }
        std::thread::sleep(poll);
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Mutex;

    use super::*;
    use crate::sample::pool_map::ProbeAnswer;

    /// A probe that answers the way it is told.
    struct Fake {
        answer: Option<(bool, &'static str)>,
        sent: Mutex<Option<u64>>,
        send_fails: Option<&'static str>,
    }

    impl Requests for Fake {
        fn send(&self, ask: &Ask) -> Result<(), String> {
            if let Some(e) = self.send_fails {
                return Err(e.into());
            }
            assert_eq!(ask.verb, Verb::Export);
            *self.sent.lock().unwrap() = Some(ask.id);
            Ok(())
        }
        fn answer(&self, _pid: u32) -> Result<Option<ProbeAnswer>, String> {
            let id = self.sent.lock().unwrap().unwrap();
            Ok(self.answer.map(|(ok, detail)| ProbeAnswer {
                id,
                verb: "export".into(),
                ok,
                detail: detail.into(),
            }))
        }
        fn take_export(&self, pid: u32, name: &str, to: &Path) -> Result<PathBuf, String> {
            assert_eq!((pid, name), (7, "7.export.1.pickle"));
            Ok(to.to_path_buf())
        }
    }

    fn fake(answer: Option<(bool, &'static str)>, send_fails: Option<&'static str>) -> Fake {
        Fake {
            answer,
            sent: Mutex::new(None),
            send_fails,
        }
    }

    #[test]
    fn every_way_an_export_ends_is_said_clearly() {
        let to = Path::new("/x/out.pickle");
        let ms = Duration::from_millis(1);
        let ok = fake(Some((true, "7.export.1.pickle")), None);
        assert_eq!(run(&ok, 7, to, ms, ms).unwrap(), to);
        let cupy = fake(Some((false, "cupy has no export format")), None);
        let err = run(&cupy, 7, to, ms, ms).unwrap_err();
        assert_eq!(
            err,
            "pid 7's probe refused the export: cupy has no export format"
        );
        let silent = fake(None, None);
        let err = run(&silent, 7, to, Duration::from_millis(20), ms).unwrap_err();
        assert!(
            err.starts_with("pid 7's probe did not answer within 0 s"),
            "{err}"
        );
        for why in ["pid 7 has exited", "pid 7 has no probe (start it under …)"] {
            assert_eq!(run(&fake(None, Some(why)), 7, to, ms, ms).unwrap_err(), why);
        }
    }
}
