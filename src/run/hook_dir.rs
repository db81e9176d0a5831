//! Writing the allocator probe's files (`source::probe::hook`) into a hook directory.
//!
//! For the jobs of `gpumon run` and `gpumon probe env` (a private, lasting directory that every
//! later run writes again, while jobs started from it may still run): the parts go into a
//! directory named by their hash, `.gpumon_probe-<hash>/` (0700, files 0600), made whole under a
//! temporary name and renamed into place, and kept as they are when it already holds them;
//! `_gpumon_probe` is a relative link to it, switched atomically; then `sitecustomize.py` (0600,
//! temporary file and rename). What already is as this gpumon writes it is left alone (so
//! Python's bytecode cache of it stays valid). A job that is running keeps loading its own parts
//! (the loader resolves the link once, at start), so another gpumon's parts never mix with its.
//! For `gpumon probe hook DIR` (a directory to bake into an image, read by other users): plain
//! files, `sitecustomize.py` and `_gpumon_probe/`, readable by everyone (0755 and 0644).

use std::fs::{self, DirBuilder};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::source::probe::hook::{HOOK_FILES, HOOK_HASH, LOADER, PACKAGE};

/// The name of the directory that holds this gpumon's parts inside a private hook directory.
pub fn parts_dir_name() -> String {
    format!(".gpumon_probe-{HOOK_HASH:016x}")
}

/// The package's files: (name inside the package, text).
fn parts() -> impl Iterator<Item = (&'static str, &'static str)> {
    HOOK_FILES.iter().filter_map(|(path, text)| {
        path.strip_prefix(PACKAGE)
            .and_then(|p| p.strip_prefix('/'))
            .map(|name| (name, *text))
    })
}

fn loader_text() -> &'static str {
    HOOK_FILES
        .iter()
        .find(|(path, _)| *path == LOADER)
        .map(|(_, text)| *text)
        .unwrap_or_default()
}

/// Writes the hook into `dir` (which exists and is the user's own, owner-only) for the jobs of
/// `gpumon run` and `gpumon probe env`; the loader's path.
pub fn write_private(dir: &Path) -> io::Result<PathBuf> {
    let name = parts_dir_name();
    let parts = dir.join(&name);
    if !holds_parts(&parts) {
        let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let made = make_parts(&tmp).and_then(|()| place(&tmp, &parts));
        if made.is_err() {
            let _ = fs::remove_dir_all(&tmp);
        }
        made?;
    }
    let link = dir.join(PACKAGE);
    if fs::read_link(&link).ok() != Some(PathBuf::from(&name)) {
        switch_link(dir, &name, &link)?;
    }
    // kept as it is when it holds this text (Python's bytecode cache of it stays valid)
    let loader = dir.join(LOADER);
    if !holds(&loader, loader_text(), 0o600) {
        write_file(&loader, loader_text(), 0o600)?;
    }
    Ok(loader)
}

/// Points `link` at `name` atomically: a new link renamed over it.
fn switch_link(dir: &Path, name: &str, link: &Path) -> io::Result<()> {
    let tmp_link = dir.join(format!(".{PACKAGE}.{}.tmp", std::process::id()));
    let _ = fs::remove_file(&tmp_link);
    std::os::unix::fs::symlink(name, &tmp_link)?;
    let switched = match fs::symlink_metadata(link) {
        // a real directory where the link goes (put there by hand): swapped, then removed (where
        // the file system cannot swap, as NFS, removed first)
        Ok(meta) if meta.is_dir() => match exchange(&tmp_link, link) {
            Ok(()) => fs::remove_dir_all(&tmp_link),
            Err(_) => fs::remove_dir_all(link).and_then(|()| fs::rename(&tmp_link, link)),
        },
        _ => fs::rename(&tmp_link, link),
    };
    if switched.is_err() {
        let _ = fs::remove_file(&tmp_link);
    }
    switched
}

/// Writes the hook into `dir` as plain files anyone may read, for an image: `dir` and
/// `dir/_gpumon_probe` are made (0755) when missing; a link in the package's place is refused.
pub fn write_plain(dir: &Path) -> io::Result<PathBuf> {
    DirBuilder::new().recursive(true).mode(0o755).create(dir)?;
    let package = dir.join(PACKAGE);
    match fs::symlink_metadata(&package) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(io::Error::other(format!(
                "{} is a link (a hook directory of `gpumon run`?): choose another directory",
                package.display()
            )));
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new().mode(0o755).create(&package)?;
        }
        Err(e) => return Err(e),
    }
    for (name, text) in parts() {
        write_file(&package.join(name), text, 0o644)?;
    }
    let loader = dir.join(LOADER);
    write_file(&loader, loader_text(), 0o644)?;
    Ok(loader)
}

/// Whether `dir` is a directory (not a link) holding every part with this gpumon's text.
fn holds_parts(dir: &Path) -> bool {
    fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
        && parts().all(|(name, text)| holds(&dir.join(name), text, 0o600))
}

/// Whether `path` is a regular file (not a link) of `mode` holding `text`.
fn holds(path: &Path, text: &str, mode: u32) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o777 == mode)
        && fs::read(path).is_ok_and(|bytes| bytes == text.as_bytes())
}

fn make_parts(dir: &Path) -> io::Result<()> {
    DirBuilder::new().mode(0o700).create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    for (name, text) in parts() {
        write_file(&dir.join(name), text, 0o600)?;
    }
    Ok(())
}

/// Renames the whole directory `tmp` to `parts`. Where another gpumon put the same parts there
/// first, `tmp` is removed; where something else is there, it is swapped out and removed.
fn place(tmp: &Path, parts: &Path) -> io::Result<()> {
    match fs::rename(tmp, parts) {
        Ok(()) => Ok(()),
        Err(_) if holds_parts(parts) => fs::remove_dir_all(tmp),
        Err(_) if fs::symlink_metadata(parts).is_ok_and(|m| m.is_dir()) => {
            match exchange(tmp, parts) {
                Ok(()) => fs::remove_dir_all(tmp),
                Err(_) => fs::remove_dir_all(parts).and_then(|()| fs::rename(tmp, parts)),
            }
        }
        Err(e) => Err(e),
    }
}

/// Swaps two paths atomically (`renameat2` with `RENAME_EXCHANGE`).
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(io::Error::from)
}

/// Writes `path` atomically: a temporary file beside it (not through a link), `mode` whatever
/// the umask, synced, then renamed onto it.
fn write_file(path: &Path, text: &str, mode: u32) -> io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)?;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests;
