//! The demo the binary carries: `assets/demo.ndjson` compressed with `zstd -19` and a 128 KiB
//! window (13 KB for its 567 KB), read as a stream each lap (a window's worth of memory, not the
//! text's), and whole only where a test or a tool asks for the text.

use std::io::{BufRead, BufReader, Read};
use std::sync::LazyLock;

use crate::recording::file::tail_at_ms;
use crate::recording::zst;

const DEMO_ZST: &[u8] = include_bytes!("../../../assets/demo.ndjson.zst");

/// The demo's NDJSON as it is read: decompressed as it goes.
pub type DemoReader = BufReader<zst::Decoder<&'static [u8]>>;

/// The demo from its start.
pub fn open() -> DemoReader {
    BufReader::new(zst::Decoder::new(DEMO_ZST))
}

/// The time of the demo's last sample, read through once (its span sets `--demo`'s history).
pub fn demo_last_at_ms() -> Option<u64> {
    let (mut last, mut line) = (Vec::new(), Vec::new());
    let mut text = open();
    loop {
        line.clear();
        match text.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line.trim_ascii().is_empty() => {}
            Ok(_) => std::mem::swap(&mut last, &mut line),
        }
    }
    tail_at_ms(&last, true)
}

/// The demo's NDJSON whole, decompressed at the first call and kept (for tests and tools that
/// read it as text; `--demo` streams it).
pub fn demo() -> &'static [u8] {
    static TEXT: LazyLock<Vec<u8>> = LazyLock::new(|| {
        let mut text = Vec::new();
        // Whole: a test reads it back as the asset.
        let _ = open().read_to_end(&mut text);
        text
    });
    &TEXT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binarys_demo_is_the_asset() {
        let asset = include_bytes!("../../../assets/demo.ndjson");
        assert!(
            demo() == asset,
            "assets/demo.ndjson.zst is `zstd -19 --zstd=wlog=17` of assets/demo.ndjson"
        );
        assert_eq!(demo_last_at_ms(), tail_at_ms(asset, true));
        assert!(demo_last_at_ms().is_some());
    }
}
