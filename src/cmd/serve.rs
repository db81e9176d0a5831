//! `gpumon serve`: the sources built here, the serving itself in `crate::serve`.

use std::process::ExitCode;

use super::{Fail, shutdown_signal, sources};
use crate::cli::ServeArgs;
use crate::serve::{self, ServeError};
use crate::source::replay::ReplaySource;

pub(super) async fn serve(args: ServeArgs) -> Result<ExitCode, Fail> {
    let recorded = match (&args.replay, args.demo) {
        (Some(path), _) => Some(sources::open_replay(path)?),
        (None, true) => Some(ReplaySource::demo().map_err(Fail::runtime)?),
        (None, false) => None,
    };
    let spacing = recorded.as_ref().map(|s| s.header().interval_ms);
    let factory = recorded.map_or_else(
        || sources::live_factory(args.logs.clone()),
        sources::replay_factory,
    );
    serve::run(factory, &args, spacing, shutdown_signal())
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
