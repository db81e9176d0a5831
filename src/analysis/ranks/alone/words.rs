//! What a rank growing alone is said to do: its alert's title, evidence and remedy.

use super::{Beside, Climb, GROWS_ALONE, Limit, LimitKind, Moved, eta_ms};
use crate::analysis::growth;
use crate::analysis::maps;
use crate::analysis::ranks::{gpu_name, job_line, rank_word, who};
use crate::analysis::risk::figures;
use crate::model::units::{duration_ms, rate};
use crate::model::{Alert, GpuTrack, Job, Level, Machine, ProcessTrack, RankRow};
use crate::oom::sizes::human;
use crate::sample::{Framework, Pool};

/// … and by at most this share (one part in …) to be called flat in words.
const STILL_SHARE: u64 = 10;
/// Stranded bytes worth naming beside a growth (the growth rule's figure for a fragmentation).
const STRANDED: u64 = 512 << 20;
/// Other ranks named one by one in the evidence; the rest are counted.
const NAMED: usize = 7;

/// A rank found growing alone, with what its alert says.
pub struct Grown<'a> {
    pub row: &'a RankRow,
    pub track: &'a ProcessTrack,
    pub gpu: &'a GpuTrack,
    /// Since it began to climb (`since_onset`).
    pub climb: Climb,
    /// The rate it keeps memory at (`kept_rate`: a probed rank's allocated memory alone).
    pub kept: f64,
    /// How the rank moved over the window the others were compared over (`compared_ms` long).
    pub compared_ms: u64,
    pub own: Moved,
    pub limit: Limit,
    pub pool: Option<&'a Pool>,
    /// When the leak rule says its allocated floor reaches the limit (probed): the time said is
    /// the sooner of that and its own climb's (each estimates seconds into a climb).
    pub floor_eta: Option<u64>,
}

impl Grown<'_> {
    pub fn alert(&self, machine: &Machine, job: &Job, beside: &[Beside], at_ms: u64) -> Alert {
        let (r, c, g) = (self.row, &self.climb, self.gpu);
        let fw = self.track.sample.framework.get();
        let name = match self.pool {
            Some(p) => growth::limit_name(&self.limit, p.framework, g),
            None => format!("GPU{}'s free memory", g.sample.index),
        };
        let eta = eta_ms(c, &self.limit).min(self.floor_eta.unwrap_or(u64::MAX));
        let reach = match self.limit.kind {
            LimitKind::Own => format!("reaches {name} in about {}", duration_ms(eta)),
            LimitKind::Gpu => format!("GPU{} full in about {}", g.sample.index, duration_ms(eta)),
        };
        // Flat in words: its floor and its median rose by a tenth as much at most (its ceiling is
        // the noisiest of the three: a group of readings that all fell inside steps).
        let still = beside.iter().all(|b| {
            b.moved.rises[1] == 0
                || (0..2).all(|i| b.moved.rises[i].saturating_mul(STILL_SHARE) <= self.own.rises[i])
        });
        let others = match (beside, still) {
            ([b], true) => format!("{} is flat", rank_word(b.row)),
            ([b], false) => format!(
                "{} rose only {} in the last {}",
                rank_word(b.row),
                human(b.moved.rises[1]),
                duration_ms(self.compared_ms)
            ),
            (_, true) => format!("the other {} ranks are flat", beside.len()),
            (_, false) => format!(
                "the other {} ranks rose {} at most in the last {}",
                beside.len(),
                human(beside.iter().map(|b| b.moved.rises[1]).max().unwrap_or(0)),
                duration_ms(self.compared_ms)
            ),
        };
        let why = match r.rank {
            Some(0) => {
                "work only rank 0 does — evaluation, logging, gathering a state dict".to_string()
            }
            _ => format!("something only {} keeps", rank_word(r)),
        };
        let what = |probed: bool| match probed {
            true => "allocated + stranded memory (allocator probe)",
            false => "device memory (NVML; no allocator probe)",
        };
        let mut evidence = vec![format!(
            "{} on {}: its {} rose from {} to {} in the {} since it began to climb ({}), nothing released in between",
            who(r),
            gpu_name(machine, &r.gpu),
            what(self.pool.is_some()),
            human(c.from),
            human(c.to),
            duration_ms(c.span_ms),
            rate(c.rate)
        )];
        if self.pool.is_some() {
            evidence.push(format!(
                "what it keeps, its allocated memory alone, grows {}",
                rate(self.kept)
            ));
        }
        for b in beside.iter().take(NAMED) {
            evidence.push(format!(
                "beside it over the last {}: {} on {}, its {} rose by {} (now {})",
                duration_ms(self.compared_ms),
                who(b.row),
                gpu_name(machine, &b.row.gpu),
                what(b.probed),
                human(b.moved.rises[1]),
                human(b.moved.now)
            ));
        }
        if beside.len() > NAMED {
            evidence.push(format!(
                "and {} more ranks, none rising by more than a quarter as much",
                beside.len() - NAMED
            ));
        }
        evidence.push(job_line(job));
        evidence.push(format!(
            "the limit that binds first: {name}, {} left",
            human(self.limit.headroom)
        ));
        evidence.push(format!(
            "at this rate it is reached in about {}",
            duration_ms(eta)
        ));
        if let Some(pool) = self.pool {
            // A leak that fragments: the holes between what it keeps are named second.
            if let Some(stranded) = pool.stranded.filter(|s| *s >= STRANDED) {
                #[allow(
                    clippy::cast_precision_loss,
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss
                )]
                let buys = (stranded as f64 / self.kept * 1000.0) as u64;
                evidence.push(format!(
                    "its pool also strands {} between the blocks it keeps: expandable segments would buy about {} at this rate; what it keeps is the cause",
                    human(stranded),
                    duration_ms(buys)
                ));
            }
            evidence.extend(maps::risk_evidence(machine, self.track, GROWS_ALONE));
            evidence.extend(figures(pool));
        } else {
            evidence.push("without the allocator probe, memory in use and cache kept for reuse are one figure, and a cap set inside the process (set_per_process_memory_fraction) is not seen".into());
        }
        Alert {
            at_ms,
            gpu_uuid: Some(r.gpu.clone()),
            pid: Some(r.pid),
            level: Level::Suspected,
            class: GROWS_ALONE.into(),
            confidence: None,
            title: format!(
                "{} grows {} while {others}: {why}; {reach}",
                who(r),
                rate(self.kept)
            ),
            evidence,
            remedy: Some(remedy(r, fw)),
            job: Some(job.id.clone()),
        }
    }
}

/// What to do about a rank that keeps what the others do not.
fn remedy(r: &RankRow, fw: Option<Framework>) -> String {
    let keeps = growth::leak_remedy(r.pid, fw);
    match (r.rank, fw) {
        (Some(0), Some(Framework::Pytorch) | None) => format!(
            "Keep what only rank 0 does off the GPU or short-lived: evaluate and log on CPU or every N steps (log loss.item(), not the tensor), gather a full state dict with FullStateDictConfig(rank0_only=True, offload_to_cpu=True) (pytorch#75908), and drop what rank 0 keeps from step to step (outputs or logits in a list). {keeps}"
        ),
        (Some(0), _) => format!(
            "Keep what only rank 0 does off the GPU or short-lived: evaluate and log on the host or every N steps, gather to host memory, and drop what rank 0 keeps from step to step. {keeps}"
        ),
        _ => format!(
            "Look for what {} alone keeps: work only it does, or inputs only it gets (a shard of longer sequences filling a cache keyed by shape). {keeps}",
            rank_word(r)
        ),
    }
}
