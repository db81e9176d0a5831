//! `gpumon record`: samples to an NDJSON recording, without the screen, until the duration
//! ends or a signal arrives. Each line is flushed as written (a `.zst` file: a frame every
//! `recording::zst::FRAME_MS` of samples); the file is created mode 0600. Like the screen and
//! `serve`, it asks probes for maps during leak and fragmentation alerts
//! (`pipeline::alert_maps`), so the recording holds the sites that climb, not only the OOM's map.

use std::fs::OpenOptions;
use std::future::Future;
use std::io::BufWriter;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::model::{Config, Event, Machine};
use crate::pipeline::alert_maps::AlertMaps;
use crate::pipeline::{self, Feed};
use crate::recording::file::Output;
use crate::recording::{Header, Writer};
use crate::sampler::Factory;
use crate::source::probe::request::Requests;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The source could not start (no NVML, …).
    #[error("{0}")]
    Start(String),
    /// The sampler stopped (a panic in the source); the samples written so far are kept.
    #[error("sampling stopped: {0}")]
    Stopped(String),
    #[error("{path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What a recording session ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub samples: u64,
    /// The alerts the pipeline raised on the recorded samples, oldest first.
    pub alerts: Vec<String>,
}

/// Records until `duration` passes, the source ends, or `shutdown` resolves; asks probes for
/// maps during alerts through `requests` (a live machine's).
pub async fn record(
    factory: Factory,
    path: &Path,
    interval: Duration,
    duration: Option<Duration>,
    requests: Option<Arc<dyn Requests>>,
    shutdown: impl Future<Output = i32>,
) -> Result<Recorded, RecordError> {
    let io_err = |source| RecordError::Write {
        path: path.display().to_string(),
        source,
    };
    let interval_ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
    let mut feed = Feed::start(factory, interval);
    // The samples also go through the pipeline, so a recording sees what the screen would.
    let mut machine = Machine::new(Config::new(interval_ms, 600_000));
    let mut alert_maps = AlertMaps::default();
    let deadline = async {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    tokio::pin!(shutdown);
    let mut writer = None;
    let mut written = 0u64;
    let mut last_failure = String::new();
    loop {
        tokio::select! {
            event = feed.next() => match event {
                Some(Event::Started(info)) => {
                    let file = OpenOptions::new()
                        .write(true)
                        .create(true)
                        .truncate(true)
                        .mode(0o600)
                        .open(path)
                        .map_err(io_err)?;
                    owner_only(&file).map_err(io_err)?;
                    let header = Header::new(info.clone(), interval_ms);
                    let out = Output::new(BufWriter::new(file), path, interval_ms);
                    writer = Some(Writer::new(out, &header).map_err(io_err)?);
                    pipeline::apply(&mut machine, Event::Started(info));
                }
                Some(Event::Sample(sample)) => {
                    if let Some(w) = writer.as_mut() {
                        w.sample(&sample).map_err(io_err)?;
                        written += 1;
                    }
                    pipeline::apply(&mut machine, Event::Sample(sample));
                    if let Some(requests) = &requests {
                        for ask in alert_maps.due(&machine, machine.now_ms) {
                            let requests = Arc::clone(requests);
                            // Asked quietly, off the reactor: a failure is the next try's; the
                            // map comes back in a later sample's probe news, recorded with it.
                            tokio::task::spawn_blocking(move || requests.send(&ask));
                        }
                    }
                }
                Some(Event::SourceFailed { reason, .. }) if writer.is_none() => {
                    return Err(RecordError::Start(reason));
                }
                Some(Event::SourceFailed { reason, .. }) => last_failure = reason,
                Some(Event::SourceEnded) => break,
                Some(_) => {}
                None => {
                    // What was recorded is kept: the last compressed frame is written too.
                    if let Some(w) = writer.as_mut() {
                        w.finish().map_err(io_err)?;
                    }
                    return Err(RecordError::Stopped(last_failure));
                }
            },
            () = &mut deadline => break,
            _ = &mut shutdown => break,
        }
    }
    if let Some(w) = writer.as_mut() {
        w.finish().map_err(io_err)?;
    }
    Ok(Recorded {
        samples: written,
        alerts: machine
            .alerts
            .iter()
            .rev()
            .map(|a| a.title.clone())
            .collect(),
    })
}

/// A file that existed before keeps its mode on open; a regular one is made owner-only too
/// (devices such as `/dev/full` are left alone).
fn owner_only(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if file.metadata()?.is_file() {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}
