//! `gpumon serve`: the sources built here, the serving itself in `crate::serve`.

use std::process::ExitCode;

use super::{Fail, shutdown_signal, sources};
use crate::cli::ServeArgs;
use crate::serve::{self, ServeError};
use crate::source::replay::ReplaySource;

pub(super) async fn serve(args: ServeArgs) -> Result<ExitCode, Fail> {
    if (args.demo || args.replay.is_some())
        && let Some(why) = crate::cli::replay_interval_refused(args.interval)
    {
        return Err(Fail::usage(why));
    }
    if (args.demo || args.replay.is_some())
        && let Some(why) = crate::cli::replay_log_refused(&args.logs)
    {
        return Err(Fail::usage(why));
    }
    let (factory, spacing) = match (&args.replay, args.demo) {
        (Some(path), _) => {
            let source = sources::open_replay(path)?.source;
            let spacing = source.header().interval_ms;
            (sources::replay_factory(source), Some(spacing))
        }
        (None, true) => {
            let source = ReplaySource::demo().map_err(Fail::runtime)?;
            let spacing = source.header().interval_ms;
            (sources::replay_factory(source), Some(spacing))
        }
        (None, false) => (sources::live_factory(args.logs.clone()), None),
    };
    // A live machine's probes are asked for maps during leak and fragmentation alerts.
    let requests = sources::requests(spacing.is_none());
    serve::run(factory, &args, spacing, requests, shutdown_signal())
        .await
        .map_err(|e| match e {
            ServeError::Start(reason) => Fail::usage(format!(
                "{reason}\nhint: `gpumon serve --demo` serves a real recording without a GPU"
            )),
            listen @ ServeError::Listen { .. } => Fail::runtime(listen),
            other => Fail::usage(other.to_string()),
        })?;
    Ok(ExitCode::SUCCESS)
}
