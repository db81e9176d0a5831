//! `gpumon record`: samples to an NDJSON recording, without the screen, until the duration
//! ends or a signal arrives. Each line is flushed as written; the file is created mode 0600.

use std::fs::OpenOptions;
use std::future::Future;
use std::io::BufWriter;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::model::Msg;
use crate::recording::{Header, Writer};
use crate::sampler::{self, Factory};

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

/// Records until `duration` passes, the source ends, or `shutdown` resolves; returns the
/// number of samples written.
pub async fn record(
    factory: Factory,
    path: &Path,
    interval: Duration,
    duration: Option<Duration>,
    shutdown: impl Future<Output = i32>,
) -> Result<u64, RecordError> {
    let io_err = |source| RecordError::Write {
        path: path.display().to_string(),
        source,
    };
    let (tx, mut rx) = mpsc::channel(8);
    let sampler = sampler::spawn(factory, interval, tx);
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
            msg = rx.recv() => match msg {
                Some(Msg::Started(machine)) => {
                    let file = OpenOptions::new()
                        .write(true)
                        .create(true)
                        .truncate(true)
                        .mode(0o600)
                        .open(path)
                        .map_err(io_err)?;
                    owner_only(&file).map_err(io_err)?;
                    let header = Header::new(machine, u64::try_from(interval.as_millis()).unwrap_or(u64::MAX));
                    writer = Some(Writer::new(BufWriter::new(file), &header).map_err(io_err)?);
                }
                Some(Msg::Sample(sample)) => {
                    if let Some(w) = writer.as_mut() {
                        w.sample(&sample).map_err(io_err)?;
                        written += 1;
                    }
                }
                Some(Msg::SourceFailed { reason, .. }) if writer.is_none() => {
                    return Err(RecordError::Start(reason));
                }
                Some(Msg::SourceFailed { reason, .. }) => last_failure = reason,
                Some(Msg::SourceEnded) => break,
                Some(_) => {}
                None => return Err(RecordError::Stopped(last_failure)),
            },
            () = &mut deadline => break,
            _ = &mut shutdown => break,
        }
    }
    sampler.abort();
    Ok(written)
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
