//! Pure functions from a machine's data and parsed log failures to alerts: analysis reads the
//! model and returns findings; it is never called back from the model.

pub mod causes;
pub mod classify;
pub mod context;
pub mod explain;
pub mod fault;
pub mod filling;
pub mod gpu_events;
pub mod growth;
pub mod health;
pub mod idle;
pub mod job_failure;
pub mod late;
pub mod maps;
pub mod peaks;
pub mod pool;
pub mod ranks;
pub mod remedy;
pub mod risk;
pub mod warnings;

use crate::model::{Alert, Level, Machine};
use crate::oom::failure::{Dialect, Failure};
use crate::oom::sizes::human;
use crate::sample::GpuEvent;
use context::Context;

/// Everything to raise after `machine` took in a sample at `at_ms` whose logs showed `failures`,
/// whose GPUs reported `events` and whose source said `notices`: one alert per event and per
/// failure (a memory fault joined with its Xid), the notices, then what the GPUs' health says and
/// the risks the history and the allocator probes show (each raised once).
pub fn findings(
    machine: &Machine,
    failures: &[Failure],
    events: &[GpuEvent],
    notices: &[String],
    at_ms: u64,
) -> Vec<Alert> {
    let failed = failure_alerts(machine, failures);
    let mut alerts = gpu_events::alerts(events, machine, &failed);
    alerts.extend(failed);
    alerts.extend(notices.iter().map(|n| Alert {
        at_ms,
        gpu_uuid: None,
        pid: None,
        level: Level::Notice,
        class: "notice".into(),
        confidence: None,
        title: n.clone(),
        evidence: Vec::new(),
        remedy: None,
        job: None,
    }));
    alerts.extend(health::alerts(machine, at_ms));
    let risks = warnings::scan(machine, &alerts, at_ms);
    alerts.extend(risks);
    alerts
}

/// One alert per failure read from a log: a memory fault joined with its Xid, an OOM classified.
pub fn failure_alerts(machine: &Machine, failures: &[Failure]) -> Vec<Alert> {
    failures
        .iter()
        .map(|f| match f.fault {
            Some(kind) => fault::alert(f, kind, machine),
            None => alert_for_failure(f, machine),
        })
        .collect()
}

/// The alert for a failure read from a log, classified against the machine at that moment. Its
/// title and remedy name the decisive cause first (`causes.rs`): another process's idle
/// preallocated pool, then a leak, then the class's own.
pub fn alert_for_failure(f: &Failure, machine: &Machine) -> Alert {
    let ctx = Context::from_machine(f, machine);
    let v = classify::classify(f, &ctx);
    let mut remedy = remedy::remedy(f, &v, &ctx);
    let who = f.pid.map_or_else(String::new, |p| format!("pid {p} "));
    let dialect = f.source.map_or("GPU", Dialect::label);
    let likely = match v.confidence {
        classify::Confidence::Certain => "",
        classify::Confidence::Likely => " (likely)",
    };
    let mut evidence = v.evidence.clone();
    if let Some(p) = ctx.process_memory {
        evidence.push(format!("the process held {}", human(p)));
    }
    if let Some(at_failure) = f
        .pid
        .and_then(|p| maps::at_failure(machine, p, ctx.gpu_uuid.as_deref(), f.at_ms))
    {
        evidence.insert(0, at_failure);
    }
    evidence.push(late::place(f));
    let pid = f.pid.unwrap_or_default();
    let leak = causes::leaked(f, &v, &ctx, machine);
    let idle = causes::idle_beside(f, &v, &ctx, machine);
    let site = f
        .pid
        .and_then(|p| maps::leak_site(machine, p, ctx.gpu_uuid.as_deref(), f.at_ms));
    let mut class = v.class;
    let mut after = String::new();
    let mut headline = v.headline.clone();
    if let Some(i) = &idle {
        headline = format!(
            "{}: restart it with {}; {}",
            i.describe(),
            i.setting(),
            v.headline
        );
        evidence.insert(
            0,
            format!(
                "the memory it needed sat idle in another process's pool: {}",
                i.describe()
            ),
        );
        remedy = i.remedy();
        let rest: Vec<String> = v
            .holders
            .iter()
            .filter(|h| h.pid != i.pid)
            .map(context::Other::describe)
            .collect();
        if !rest.is_empty() {
            remedy = format!("{remedy} Also on this GPU: {}.", rest.join(", "));
        }
        if let Some(l) = &leak {
            evidence.insert(1, l.evidence());
            remedy = format!(
                "{remedy} Then, if pid {pid}'s own growth was not meant: {}",
                growth::find_what_keeps(pid, ctx.framework)
            );
        }
    } else if let Some(l) = &leak
        && matches!(
            v.class,
            classify::Class::Fragmentation | classify::Class::Split
        )
    {
        // A leak first: fragmentation second, with what an allocator setting would have bought.
        class = classify::Class::Leak;
        evidence.insert(0, l.evidence());
        let stranded = f.numbers.cached.map_or(0, |c| c.bytes);
        let second = growth::second::words(stranded, remedy::expandable(&ctx), l.climb.rate);
        headline = format!(
            "{} kept from step to step; then fragmentation: {}{}",
            l.rate_words(),
            v.headline,
            second.as_ref().map_or_else(String::new, |s| format!(
                " ({} would have bought about {})",
                s.short,
                crate::model::units::duration_ms(s.buys_ms)
            ))
        );
        remedy = l.remedy(pid, site.as_deref(), ctx.framework);
        if let Some(s) = second {
            evidence.insert(1, s.evidence);
            remedy = format!("{remedy} {}", s.remedy);
        }
    } else if let Some(l) = &leak {
        after = " after a leak".into();
        evidence.insert(0, l.evidence());
        remedy = match (v.class, v.holders.is_empty()) {
            (classify::Class::DeviceFull, false) => {
                format!("{} {remedy}", l.remedy(pid, site.as_deref(), ctx.framework))
            }
            _ => l.remedy(pid, site.as_deref(), ctx.framework),
        };
    } else if let Some(grew) = causes::peaked(f, &v, &ctx, machine) {
        after = " after a growing peak".into();
        evidence.insert(0, format!("a need that grew every step: {grew}"));
        remedy = format!("{} {remedy}", peaks::schedule_remedy(pid));
    }
    Alert {
        at_ms: f.at_ms,
        gpu_uuid: ctx.gpu_uuid,
        pid: f.pid,
        level: Level::Failure,
        class: class.as_str().into(),
        confidence: Some(v.confidence.as_str().into()),
        title: format!(
            "{who}{dialect} OOM: {}{after}{likely}, {headline}",
            class.as_str()
        ),
        evidence,
        remedy: Some(remedy),
        job: f
            .pid
            .and_then(|p| machine.job_of(p))
            .map(|(j, _)| j.id.clone()),
    }
}

#[cfg(test)]
mod test_pools {
    //! What the analysis tests build alike: PyTorch and JAX pools as the probe reads them, a
    //! probed process, a process's settings, and a runner that applies one sample a second
    //! through the pipeline. Inline, in this file's test part, because analysis code may not
    //! import `pipeline` (tests/architecture.rs); its tests may.

    use crate::model::{Alert, Config, Event, Machine};
    use crate::oom::failure::Failure;
    use crate::pipeline;
    use crate::sample::{Framework, GpuSample, Pool, ProbeNews, ProcessSample, Reading, Sample};
    use crate::source::scripted::build::{machine, process};

    /// When a scripted run takes its first sample, and when its pools are read.
    pub const T0: u64 = 1_763_812_900_000;

    /// A PyTorch pool holding `reserved`, `allocated` of it in use and `stranded` in split
    /// blocks, with its largest free block and cap where known; no retries or OOMs yet.
    pub fn torch(
        allocated: u64,
        reserved: u64,
        stranded: u64,
        largest_free_block: Option<u64>,
        limit: Option<u64>,
    ) -> Pool {
        Pool {
            framework: Framework::Pytorch,
            version: None,
            at_ms: T0,
            allocated: Some(allocated),
            reserved: Some(reserved),
            cached_free: Some(reserved - allocated),
            stranded: Some(stranded),
            largest_free_block,
            largest_alloc: None,
            limit,
            peak_allocated: None,
            peak_reserved: None,
            alloc_retries: Some(0),
            ooms: Some(0),
        }
    }

    /// A JAX pool preallocated up to its `limit`, `in_use` of it used, the rest one free block.
    pub fn jax(in_use: u64, limit: u64) -> Pool {
        Pool {
            framework: Framework::Jax,
            version: None,
            at_ms: T0,
            allocated: Some(in_use),
            reserved: Some(limit),
            cached_free: Some(limit - in_use),
            stranded: None,
            largest_free_block: Some(limit - in_use),
            largest_alloc: None,
            limit: Some(limit),
            peak_allocated: None,
            peak_reserved: None,
            alloc_retries: None,
            ooms: None,
        }
    }

    /// `python train.py` (PyTorch) as pid `pid` holding `device` on `g`, its probe reading `pool`.
    pub fn probed(pid: u32, g: &GpuSample, device: u64, pool: Pool) -> ProcessSample {
        ProcessSample {
            pool: Reading::Value(pool),
            ..process(pid, g, device, Framework::Pytorch, "python train.py")
        }
    }

    /// `p` with `env` as the settings of its initial environment.
    pub fn with_env(mut p: ProcessSample, env: &[(&str, &str)]) -> ProcessSample {
        p.settings = Reading::Value(
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        p
    }

    /// One second of a scripted run: its GPU, the processes on it, their probes' news and the
    /// failures its logs showed.
    pub struct Second {
        pub gpu: GpuSample,
        pub processes: Vec<ProcessSample>,
        pub probes: Vec<ProbeNews>,
        pub failures: Vec<Failure>,
    }

    impl From<(GpuSample, Vec<ProcessSample>)> for Second {
        fn from((gpu, processes): (GpuSample, Vec<ProcessSample>)) -> Self {
            Second {
                gpu,
                processes,
                probes: Vec::new(),
                failures: Vec::new(),
            }
        }
    }

    /// Applies `seconds` through the pipeline, the first at `T0` and one a second after, on a
    /// machine just started; returns its alerts, oldest first.
    pub fn run<S: Into<Second>>(seconds: impl IntoIterator<Item = S>) -> Vec<Alert> {
        let mut m = Machine::new(Config::new(1000, 600_000));
        pipeline::apply(&mut m, Event::Started(machine()));
        for (k, s) in seconds.into_iter().enumerate() {
            let s: Second = s.into();
            let sample = Sample {
                at_ms: T0 + k as u64 * 1000,
                gpus: vec![s.gpu],
                processes: s.processes,
                failures: s.failures,
                probes: s.probes,
                ..Default::default()
            };
            pipeline::apply(&mut m, Event::Sample(sample));
        }
        m.alerts.into_iter().rev().collect()
    }
}

#[cfg(test)]
mod tests;
