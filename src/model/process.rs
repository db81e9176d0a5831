//! One tracked process on one GPU: identity (GPU, PID, start time), latest sample and history.

use crate::model::{GROWTH_WINDOW_MS, PoolHistory, Ring};
use crate::sample::{MainWhere, ProbeNews, ProcessEnd, ProcessSample, Reading, WhereNews};

/// Why a VMS of 0 is no reading: a process with a GPU context always maps memory, so /proc reads
/// 0 only once its address space is gone (it is exiting, or a zombie NVML still lists).
pub const HOST_MEMORY_GONE: &str = "its address space is gone (exiting): /proc reads 0";

/// Host memory as last read while the process still had its address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostMemory {
    pub vms: u64,
    pub rss: Option<u64>,
    pub at_ms: u64,
}

/// A process on a GPU; a reused PID has another start time, so it starts a new history.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProcKey {
    pub gpu_uuid: String,
    pub pid: u32,
    /// `None` when /proc could not give it (another PID namespace).
    pub start_time: Option<u64>,
}

impl ProcKey {
    pub fn of(p: &ProcessSample) -> Self {
        ProcKey {
            gpu_uuid: p.gpu_uuid.clone(),
            pid: p.pid,
            start_time: p.start_time.get(),
        }
    }
}

/// A change of device memory between two consecutive readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// Time of the later reading.
    pub at_ms: u64,
    /// Bytes gained (negative when freed).
    pub by: i128,
}

/// An OOM the allocator probe counted. While the job records allocation history, PyTorch's OOM
/// observer takes seconds to write the map of the failure (6 s on an H100), and the job's own
/// error (its log line) comes only after it: the count is seen first. So the OOM is judged once
/// that map has come, or the job records nothing, or `PROBE_OOM_MAP_WAIT_MS` has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeOom {
    /// The time of the sample in which the count rose.
    pub rose_ms: u64,
    /// The time of the sample in which it became ready to judge (`None` while it waits).
    pub ready_ms: Option<u64>,
}

/// How long an OOM the probe counted waits for its map (see [`ProbeOom`]).
pub const PROBE_OOM_MAP_WAIT_MS: u64 = 30_000;

#[derive(Debug, Clone)]
pub struct ProcessTrack {
    pub key: ProcKey,
    pub sample: ProcessSample,
    /// Device memory over the history window.
    pub history: Ring,
    /// Highest device memory seen (since start or the last reset).
    pub peak: Option<u64>,
    /// Bytes per second over the last `GROWTH_WINDOW_MS`: 0 when device memory has not changed
    /// in it (flat), `None` before two readings a second apart.
    pub growth: Option<f64>,
    /// The newest change of device memory between two readings (gaps skipped).
    pub last_change: Option<Change>,
    pub first_seen_ms: u64,
    pub last_seen_ms: u64,
    /// When it stopped being listed.
    pub exited_ms: Option<u64>,
    /// The allocator probe's figures one sample earlier (to see counters rise).
    pub prev_pool: Option<crate::sample::Pool>,
    /// The last OOM the probe counted (its count rose), and when it can be judged.
    pub probe_oom: Option<ProbeOom>,
    /// The allocator pool over the history window; `None` until the probe first reports one.
    pub pool_history: Option<PoolHistory>,
    /// VMS and RSS as last read (kept when /proc reads 0 as the process exits).
    pub host_last: Option<HostMemory>,
    /// How the process ended, as its probe recorded it (`None`: no record yet, or none will
    /// come — a process killed by a signal, `os._exit`, a crash). It often arrives a sample or
    /// two after the track is marked exited.
    pub end: Option<ProcessEnd>,
    /// Where its main thread stands, while its probe reports it (unmoved for a while, or asked
    /// for); kept as it was when the process ended.
    pub stuck: Option<MainWhere>,
}

impl ProcessTrack {
    pub fn new(p: &ProcessSample, at_ms: u64, capacity: usize) -> Self {
        ProcessTrack {
            key: ProcKey::of(p),
            sample: p.clone(),
            history: Ring::with_tiers(capacity),
            peak: None,
            growth: None,
            last_change: None,
            first_seen_ms: at_ms,
            last_seen_ms: at_ms,
            exited_ms: None,
            prev_pool: None,
            probe_oom: None,
            pool_history: None,
            host_last: None,
            end: None,
            stuck: None,
        }
    }

    /// Takes in what the probe said of the process's end and main thread (exited or not).
    pub fn hear(&mut self, news: &ProbeNews) {
        if let Some(end) = &news.end {
            self.end = Some(end.clone());
        }
        match &news.main_where {
            Some(WhereNews::At(w)) => self.stuck = Some(w.clone()),
            Some(WhereNews::Moved { .. }) => self.stuck = None,
            None => {}
        }
    }

    pub fn observe(&mut self, mut p: ProcessSample, at_ms: u64) {
        if p.vms.get() == Some(0) {
            p.vms = Reading::na(HOST_MEMORY_GONE);
            p.rss = Reading::na(HOST_MEMORY_GONE);
        } else if let Some(vms) = p.vms.get() {
            self.host_last = Some(HostMemory {
                vms,
                rss: p.rss.get(),
                at_ms,
            });
        }
        let pool = p.pool.value();
        if pool.is_some() || self.pool_history.is_some() {
            let capacity = self.history.capacity();
            self.pool_history
                .get_or_insert_with(|| PoolHistory::new(capacity))
                .push(at_ms, pool, self.sample.pool.value());
        }
        let mem = p.device_memory.get();
        let before = self.history.iter().rev().find_map(|p| p.value);
        if let (Some(b), Some(m)) = (before, mem)
            && b != m
        {
            self.last_change = Some(Change {
                at_ms,
                by: i128::from(m) - i128::from(b),
            });
        }
        self.history.push(at_ms, mem);
        if let Some(m) = mem {
            self.peak = Some(self.peak.map_or(m, |pk| pk.max(m)));
        }
        self.growth = self.history.rate_per_s(GROWTH_WINDOW_MS);
        self.last_seen_ms = at_ms;
        self.exited_ms = None;
        let ooms = |s: &ProcessSample| s.pool.value().and_then(|pool| pool.ooms);
        if let (Some(now), Some(before)) = (ooms(&p), ooms(&self.sample))
            && now > before
        {
            self.probe_oom = Some(ProbeOom {
                rose_ms: at_ms,
                ready_ms: None,
            });
        }
        self.prev_pool = std::mem::replace(&mut self.sample, p).pool.value().cloned();
    }

    /// VMS now, else as last read (`true`: the last reading, the process has no address space
    /// now); `None` when never read.
    pub fn vms(&self) -> Option<(u64, bool)> {
        match self.sample.vms.get() {
            Some(v) => Some((v, false)),
            None => self.host_last.map(|h| (h.vms, true)),
        }
    }

    /// RSS now, else as last read (see [`ProcessTrack::vms`]).
    pub fn rss(&self) -> Option<(u64, bool)> {
        match self.sample.rss.get() {
            Some(v) => Some((v, false)),
            None => self.host_last.and_then(|h| Some((h.rss?, true))),
        }
    }

    /// Host VMS (now or as last read) over device memory, when both are known and device memory
    /// is not zero.
    pub fn vms_ratio(&self) -> Option<f64> {
        let (vms, _) = self.vms()?;
        let dev = self.sample.device_memory.get().filter(|d| *d > 0)?;
        #[allow(clippy::cast_precision_loss)]
        Some(vms as f64 / dev as f64)
    }
}

/// The ends and main-thread places a sample's probe news tell, taken out of it (the rest goes
/// to the maps).
pub fn lives(news: &mut [ProbeNews]) -> Vec<ProbeNews> {
    news.iter_mut()
        .filter(|n| n.end.is_some() || n.main_where.is_some())
        .map(|n| ProbeNews {
            pid: n.pid,
            start_time: n.start_time,
            answer: None,
            recording: None,
            map: None,
            end: n.end.take(),
            main_where: n.main_where.take(),
        })
        .collect()
}

/// Gives each process track its probe's news of its end and main thread, exited tracks too
/// (an end is often read once the process has gone); a track of each GPU the process is on.
pub fn hear(
    processes: &mut std::collections::BTreeMap<ProcKey, ProcessTrack>,
    lives: &[ProbeNews],
) {
    for n in lives {
        let same = |k: &ProcKey| {
            k.pid == n.pid && k.start_time.is_some_and(|s| s.abs_diff(n.start_time) <= 1)
        };
        for t in processes.values_mut().filter(|t| same(&t.key)) {
            t.hear(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Reading;
    use crate::source::scripted::build::{GIB, gpu, process};

    /// The growth rule on one jump then flat: the rate counts the jump only while it is inside
    /// the window, then reads 0 (flat); the jump stays known as the last change, with its time.
    #[test]
    fn one_jump_then_flat_reads_flat_after_the_window() {
        let g = gpu(0, 80 * GIB, 0, 0);
        let at = |k: u64| 1_000_000 + k * 1000;
        let mem = |k: u64| if k < 5 { GIB } else { 13 * GIB };
        let sample = |k: u64| {
            let mut p = process(7, &g, mem(k), crate::sample::Framework::Pytorch, "py");
            p.start_time = Reading::Value(1);
            p
        };
        let mut t = ProcessTrack::new(&sample(0), at(0), 1000);
        for k in 0..60 {
            t.observe(sample(k), at(k));
            let since_jump = k.saturating_sub(5) * 1000;
            match k {
                0 => assert_eq!(t.growth, None, "one reading"),
                1..5 => assert_eq!(t.growth, Some(0.0), "flat before the jump"),
                _ if since_jump < GROWTH_WINDOW_MS => {
                    assert!(
                        t.growth.unwrap() > 0.0,
                        "tick {k}: the jump is in the window"
                    );
                }
                _ => assert_eq!(t.growth, Some(0.0), "tick {k}: flat once the jump left"),
            }
        }
        let jump = i128::from(12 * GIB);
        assert_eq!(
            t.last_change,
            Some(Change {
                at_ms: at(5),
                by: jump
            })
        );
    }

    /// A zombie NVML still lists reads 0 VMS and RSS from /proc: that is no reading, and the
    /// last figures read while it ran stay known as such (absent is not zero).
    #[test]
    fn a_vms_of_zero_is_no_reading_and_the_last_figures_stay() {
        let g = gpu(0, 80 * GIB, 0, 0);
        let sample = |vms: u64, rss: u64| {
            let mut p = process(1409, &g, 5 * GIB, crate::sample::Framework::Pytorch, "py");
            p.vms = Reading::Value(vms);
            p.rss = Reading::Value(rss);
            p
        };
        let mut t = ProcessTrack::new(&sample(1, 1), 1000, 100);
        t.observe(sample(22_689_554_432, 635_899_904), 1000);
        assert_eq!(t.vms(), Some((22_689_554_432, false)));
        t.observe(sample(0, 0), 2000);
        assert_eq!(t.sample.vms.reason(), Some(HOST_MEMORY_GONE));
        assert_eq!(t.sample.rss.reason(), Some(HOST_MEMORY_GONE));
        assert_eq!(t.vms(), Some((22_689_554_432, true)));
        assert_eq!(t.rss(), Some((635_899_904, true)));
        assert_eq!(
            t.host_last.map(|h| h.at_ms),
            Some(1000),
            "the zeros are not a reading"
        );
        assert!(t.vms_ratio().is_some_and(|r| r > 4.0));
    }

    /// An end told a sample after its process stopped being listed reaches the exited track;
    /// a main thread reported still is `stuck` until the probe says it moved again.
    #[test]
    fn an_exited_track_takes_its_end_and_stuck_clears_when_it_moves() {
        use crate::model::{Config, Machine};
        use crate::sample::process_end::{EndException, EndHow, Frame};
        use crate::sample::{MainWhere, ProcessEnd, Sample, WhereNews};
        let g = gpu(0, 80 * GIB, 0, 0);
        let mut p = process(7, &g, GIB, crate::sample::Framework::Pytorch, "py");
        p.start_time = Reading::Value(1_700_000_000);
        let sample = |at_ms: u64, processes: Vec<ProcessSample>, probes: Vec<ProbeNews>| Sample {
            at_ms,
            gpus: vec![g.clone()],
            processes,
            probes,
            ..Default::default()
        };
        let news = |end: Option<ProcessEnd>, main_where: Option<WhereNews>| ProbeNews {
            pid: 7,
            start_time: 1_700_000_001,
            answer: None,
            recording: None,
            map: None,
            end,
            main_where,
        };
        let at = MainWhere {
            frames: vec![Frame {
                file: "/w/data/loader.py".into(),
                line: 88,
                function: "next_batch".into(),
            }],
            since_ms: 1000,
            at_ms: 12_000,
            asked: false,
        };
        let mut m = Machine::new(Config::new(1000, 600_000));
        m.ingest(sample(1000, vec![p.clone()], vec![]));
        m.ingest(sample(
            2000,
            vec![p.clone()],
            vec![news(None, Some(WhereNews::At(at.clone())))],
        ));
        let track = || m.processes.values().next().unwrap();
        assert_eq!(track().stuck.as_ref(), Some(&at));
        assert_eq!(
            track().stuck.as_ref().and_then(MainWhere::label).as_deref(),
            Some("data/loader.py:88 next_batch")
        );
        m.ingest(sample(
            3000,
            vec![p.clone()],
            vec![news(None, Some(WhereNews::Moved { at_ms: 3000 }))],
        ));
        let track = || m.processes.values().next().unwrap();
        assert_eq!(track().stuck, None, "it moved again");
        m.ingest(sample(4000, vec![], vec![]));
        assert_eq!(m.processes.values().next().unwrap().exited_ms, Some(4000));
        let end = ProcessEnd {
            how: EndHow::Exception,
            code: Some(1),
            exception: Some(EndException {
                kind: "torch.OutOfMemoryError".into(),
                message: "CUDA out of memory.".into(),
            }),
            at_ms: 3900,
        };
        m.ingest(sample(5000, vec![], vec![news(Some(end.clone()), None)]));
        let t = m.processes.values().next().unwrap();
        assert_eq!(t.end.as_ref(), Some(&end), "the exited track took its end");
        assert_eq!(
            end.words(),
            "raised torch.OutOfMemoryError: CUDA out of memory."
        );
    }
}
