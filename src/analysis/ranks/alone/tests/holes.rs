//! Holes that build in one rank's pool while it keeps nothing more: that rank's fragmentation,
//! not work only it does.

use crate::analysis::ranks::tests::{Spec, none, of, run};
use crate::source::scripted::build::{GIB, MIB};

#[test]
fn holes_that_build_on_one_rank_are_its_fragmentation_not_work_only_it_does() {
    // Rank 0 keeps nothing more, but the holes in its pool grow 100 MiB a second.
    let mut specs = [
        Spec::new(1446, 0, |_| 3 * GIB),
        Spec::new(1447, 1, |_| 3 * GIB),
    ];
    specs[0].stranded = Box::new(|k| 600 * MIB + k.saturating_sub(10) * 100 * MIB);
    let (_, alerts) = run(45, 2, 2, &specs, &none);
    assert!(
        of(&alerts, super::super::GROWS_ALONE).is_empty(),
        "{alerts:#?}"
    );
    assert_eq!(of(&alerts, "fragmentation-risk").len(), 1, "{alerts:#?}");
}
