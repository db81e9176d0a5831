//! One probe file (`gpumon.probe/1`): parsed and checked into a [`ProbeReport`], or the reason
//! it is not to be trusted. Pure: the checks that need the file system live in `dir.rs`.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{DevicePool, ProbeReport};
use crate::sample::pool_map::{AllocRecording, ProbeAnswer};
use crate::sample::{Framework, MainWhere, Pool, ProcessEnd};

/// The version of the format this gpumon reads.
pub const SCHEMA: &str = "gpumon.probe/1";
/// A file larger than this is not a probe file.
pub const MAX_BYTES: u64 = 64 * 1024;

#[derive(Deserialize)]
struct Doc {
    schema: String,
    pid: u32,
    start_time: u64,
    at_ms: u64,
    interval_ms: u64,
    #[serde(default)]
    stopped: Option<String>,
    #[serde(default)]
    frameworks: Vec<FrameworkDoc>,
    #[serde(default)]
    answer: Option<ProbeAnswer>,
    #[serde(default)]
    recording: Option<AllocRecording>,
    #[serde(default)]
    map_at_ms: Option<u64>,
    #[serde(default)]
    distributed: Option<DistributedDoc>,
    #[serde(default)]
    end: Option<ProcessEnd>,
    #[serde(default, rename = "where")]
    main_where: Option<MainWhere>,
}

/// What the probe read of `torch.distributed` or JAX's distributed state.
#[derive(Deserialize)]
struct DistributedDoc {
    framework: String,
    #[serde(default)]
    backend: Option<String>,
    #[serde(default)]
    rank: Option<u32>,
    #[serde(default)]
    world_size: Option<u32>,
    #[serde(default)]
    master: Option<String>,
    #[serde(default)]
    run_id: Option<String>,
}

impl DistributedDoc {
    /// The process's own word on its rank; its strings made printable and short (they came
    /// from the job's environment), a framework gpumon does not know refused.
    fn inside(self) -> Result<crate::sample::Inside, String> {
        use crate::sample::job::{MAX_JOB_ID, printable};
        let framework = Framework::from_pool_name(&self.framework)
            .filter(|f| matches!(f, Framework::Pytorch | Framework::Jax))
            .ok_or_else(|| {
                format!(
                    "distributed state of an unknown framework {:?}",
                    printable(&self.framework, 20)
                )
            })?;
        let text = |s: Option<String>| s.map(|s| printable(&s, MAX_JOB_ID));
        Ok(crate::sample::Inside {
            framework,
            backend: text(self.backend),
            rank: self.rank,
            world_size: self.world_size,
            master: text(self.master),
            run_id: text(self.run_id),
        })
    }
}

#[derive(Deserialize)]
struct FrameworkDoc {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    devices: Vec<DeviceDoc>,
}

#[derive(Deserialize)]
struct DeviceDoc {
    index: u32,
    #[serde(default)]
    uuid: Option<String>,
    #[serde(default)]
    allocated: Option<u64>,
    #[serde(default)]
    reserved: Option<u64>,
    #[serde(default)]
    cached_free: Option<u64>,
    #[serde(default)]
    stranded: Option<u64>,
    #[serde(default)]
    largest_free_block: Option<u64>,
    #[serde(default)]
    largest_alloc: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    peak_allocated: Option<u64>,
    #[serde(default)]
    peak_reserved: Option<u64>,
    #[serde(default)]
    alloc_retries: Option<u64>,
    #[serde(default)]
    ooms: Option<u64>,
}

/// A probe's document of `schema` in at most `max_bytes` (probe and map files alike): the size,
/// then the schema alone, so a newer version is named as such, not as malformed; the error is a
/// reason for a person, the foreign schema's name made printable.
pub(super) fn document<T: DeserializeOwned>(
    bytes: &[u8],
    schema: &str,
    max_bytes: u64,
) -> Result<T, String> {
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "oversized ({} bytes, at most {max_bytes})",
            bytes.len()
        ));
    }
    #[derive(Deserialize)]
    struct Head {
        schema: Option<String>,
    }
    let head: Head =
        serde_json::from_slice(bytes).map_err(|e| format!("malformed ({})", one_line(&e)))?;
    match head.schema.as_deref() {
        Some(s) if s == schema => {}
        Some(other) => {
            let other = crate::sample::pool_map::printable(other, 40);
            return Err(format!("schema {other:?}, this gpumon reads {schema}"));
        }
        None => return Err("malformed (no schema)".into()),
    }
    serde_json::from_slice(bytes).map_err(|e| format!("malformed ({})", one_line(&e)))
}

/// Parses a probe file named for `pid`; the error is a reason for a person.
pub fn parse(bytes: &[u8], pid: u32) -> Result<ProbeReport, String> {
    let doc: Doc = document(bytes, SCHEMA, MAX_BYTES)?;
    debug_assert_eq!(doc.schema, SCHEMA);
    if doc.pid != pid {
        return Err(format!(
            "describes pid {} but is named for pid {pid}",
            doc.pid
        ));
    }
    let mut devices = Vec::new();
    for f in doc.frameworks {
        let framework = Framework::from_pool_name(&f.name)
            .ok_or_else(|| format!("unknown framework {:?}", f.name))?;
        for d in f.devices {
            let uuid = d.uuid.filter(|u| valid_uuid(u));
            devices.push(DevicePool {
                index: d.index,
                uuid,
                pool: Pool {
                    framework,
                    version: f.version.clone(),
                    at_ms: doc.at_ms,
                    allocated: d.allocated,
                    reserved: d.reserved,
                    cached_free: d.cached_free,
                    stranded: d.stranded,
                    largest_free_block: d.largest_free_block,
                    largest_alloc: d.largest_alloc,
                    limit: d.limit,
                    peak_allocated: d.peak_allocated,
                    peak_reserved: d.peak_reserved,
                    alloc_retries: d.alloc_retries,
                    ooms: d.ooms,
                },
            });
        }
    }
    if devices.len() > 64 {
        return Err(format!(
            "{} devices: more than any machine has",
            devices.len()
        ));
    }
    Ok(ProbeReport {
        pid: doc.pid,
        start_time: doc.start_time,
        at_ms: doc.at_ms,
        interval_ms: doc.interval_ms,
        stopped: doc.stopped.map(|s| s.chars().take(200).collect()),
        devices,
        answer: doc.answer,
        recording: doc.recording,
        map_at_ms: doc.map_at_ms,
        distributed: doc.distributed.map(DistributedDoc::inside).transpose()?,
        end: doc.end,
        main_where: doc.main_where,
    })
}

/// `GPU-` and hex digits with dashes, as NVML names GPUs; anything else is not a GPU's name.
pub(super) fn valid_uuid(u: &str) -> bool {
    u.len() <= 64
        && u.strip_prefix("GPU-").is_some_and(|rest| {
            !rest.is_empty() && rest.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
        })
}

fn one_line(e: &serde_json::Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}
