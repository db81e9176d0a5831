//! The hook's files written whole, private and atomically, kept when they are there already, and
//! switched without disturbing a job that runs another version's parts.

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::*;

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o777
}

fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

fn assert_private_hook(dir: &Path) {
    let parts = dir.join(parts_dir_name());
    assert_eq!(
        names(dir),
        BTreeSet::from([LOADER.into(), PACKAGE.into(), parts_dir_name()]),
        "no temporary file or directory left"
    );
    assert_eq!(
        fs::read_link(dir.join(PACKAGE)).unwrap(),
        PathBuf::from(parts_dir_name()),
        "a relative link"
    );
    assert_eq!((mode(&parts), mode(&dir.join(LOADER))), (0o700, 0o600));
    assert_eq!(fs::read_to_string(dir.join(LOADER)).unwrap(), loader_text());
    for (path, text) in HOOK_FILES {
        assert_eq!(fs::read_to_string(dir.join(path)).unwrap(), *text, "{path}");
        assert_eq!(mode(&dir.join(path)), 0o600, "{path}");
    }
    assert_eq!(names(&parts).len(), HOOK_FILES.len() - 1);
}

#[test]
fn every_file_is_written_owner_only_behind_a_link_to_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let loader = write_private(dir.path()).unwrap();
    assert_eq!(loader, dir.path().join(LOADER));
    assert_private_hook(dir.path());
}

#[test]
fn written_again_the_parts_stay_with_their_bytecode_and_a_damaged_set_is_made_whole() {
    let dir = tempfile::tempdir().unwrap();
    write_private(dir.path()).unwrap();
    let parts = dir.path().join(parts_dir_name());
    fs::create_dir(parts.join("__pycache__")).unwrap();
    let inodes = || {
        [parts_dir_name().as_str(), PACKAGE, LOADER]
            .map(|name| fs::symlink_metadata(dir.path().join(name)).unwrap().ino())
    };
    let before = inodes();
    write_private(dir.path()).unwrap();
    assert_eq!(
        inodes(),
        before,
        "the parts, the link and the loader kept as they were"
    );
    assert!(parts.join("__pycache__").is_dir());

    fs::write(parts.join("probe.py"), "broken").unwrap();
    fs::remove_file(parts.join("maps.py")).unwrap();
    fs::set_permissions(dir.path().join(LOADER), fs::Permissions::from_mode(0o644)).unwrap();
    write_private(dir.path()).unwrap();
    assert!(!parts.join("__pycache__").exists(), "replaced whole");
    assert_private_hook(dir.path());
}

#[test]
fn another_versions_parts_stay_for_the_jobs_that_load_them() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join(".gpumon_probe-0000000000000000");
    fs::create_dir(&old).unwrap();
    fs::write(old.join("probe.py"), "# an older gpumon's part").unwrap();
    std::os::unix::fs::symlink(".gpumon_probe-0000000000000000", dir.path().join(PACKAGE)).unwrap();
    fs::write(dir.path().join(LOADER), "# an older gpumon's loader").unwrap();
    write_private(dir.path()).unwrap();
    assert_eq!(
        fs::read_to_string(old.join("probe.py")).unwrap(),
        "# an older gpumon's part"
    );
    fs::remove_dir_all(&old).unwrap();
    assert_private_hook(dir.path());
}

#[test]
fn a_real_directory_in_the_links_place_is_swapped_out() {
    let dir = tempfile::tempdir().unwrap();
    write_plain(dir.path()).unwrap();
    assert!(
        fs::symlink_metadata(dir.path().join(PACKAGE))
            .unwrap()
            .is_dir()
    );
    write_private(dir.path()).unwrap();
    assert_private_hook(dir.path());
}

#[test]
fn for_an_image_plain_files_everyone_may_read() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("opt/gpumon/hook");
    let loader = write_plain(&dir).unwrap();
    assert_eq!(loader, dir.join(LOADER));
    assert_eq!((mode(&dir), mode(&dir.join(PACKAGE))), (0o755, 0o755));
    for (path, text) in HOOK_FILES {
        assert_eq!(fs::read_to_string(dir.join(path)).unwrap(), *text, "{path}");
        assert_eq!(mode(&dir.join(path)), 0o644, "{path}");
    }
    assert_eq!(names(&dir), BTreeSet::from([LOADER.into(), PACKAGE.into()]));
    write_plain(&dir).unwrap();
    assert_eq!(names(&dir.join(PACKAGE)).len(), HOOK_FILES.len() - 1);

    let private = base.path().join("private");
    fs::create_dir(&private).unwrap();
    write_private(&private).unwrap();
    let refused = write_plain(&private).unwrap_err().to_string();
    assert!(refused.contains("is a link"), "{refused}");
}

#[test]
fn the_parts_are_the_files_of_the_package_and_name_their_version() {
    assert_eq!(parts_dir_name().len(), ".gpumon_probe-".len() + 16);
    assert_eq!(parts().count(), HOOK_FILES.len() - 1);
    assert!(parts().all(|(name, _)| !name.contains('/')));
}
