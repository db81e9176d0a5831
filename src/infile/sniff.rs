//! What a file is, told from its first bytes (decompressed): a gpumon recording or snapshot by
//! its `schema`, other JSON, a text log, or a binary file and why. Runs of NUL bytes are holes,
//! not evidence (logrotate's `copytruncate` leaves KiBs of them at the start of a log).

/// What the first bytes of an input say it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Nothing but white space.
    Empty,
    /// NDJSON whose first line is a `gpumon.recording/N` header.
    Recording,
    /// A JSON document whose `schema` is `gpumon.snapshot/N`.
    Snapshot,
    /// JSON gpumon does not know as its own: a JSON log, or a gpumon file too damaged to tell
    /// (the format's reader then says what is wrong with it).
    Json,
    /// Text.
    Log,
    /// Not text: why (NUL bytes, or how much of the first block is not text).
    Binary(String),
}

impl Kind {
    /// The kind in a sentence: "a text log", "a gpumon recording", …
    pub fn describe(&self) -> String {
        match self {
            Kind::Empty => "empty".into(),
            Kind::Recording => "a gpumon recording".into(),
            Kind::Snapshot => "a gpumon snapshot".into(),
            Kind::Json => "JSON that is not a gpumon file".into(),
            Kind::Log => "a text log".into(),
            Kind::Binary(why) => format!("a binary file ({why})"),
        }
    }
}

const BOM: &[u8] = b"\xef\xbb\xbf";

/// Past this share of bytes that are not text (in the first block, its holes left out), a file is
/// binary.
const NOT_TEXT_PERCENT: usize = 30;

/// NUL bytes this many in a row or more are a hole (a sparse file's, a truncated log's); fewer
/// count as bytes that are not text.
const HOLE: usize = 8;

/// The kind of the input whose first bytes are `head` (`ended`: the input ends there).
pub fn kind(head: &[u8], ended: bool) -> Kind {
    let text = head.strip_prefix(BOM).unwrap_or(head);
    let Some(start) = text
        .iter()
        .position(|b| !b.is_ascii_whitespace() && *b != 0)
    else {
        return if ended { Kind::Empty } else { Kind::Log };
    };
    let body = &text[start..];
    let line_end = body.iter().position(|b| *b == b'\n');
    if body[0] == b'{' {
        if let Some((schema, end)) = first_key_schema(body) {
            if schema.starts_with(b"gpumon.snapshot/") {
                return Kind::Snapshot;
            }
            // A recording's header is its first line, whole.
            if schema.starts_with(b"gpumon.recording/") && line_end.is_none_or(|l| end <= l) {
                return Kind::Recording;
            }
        }
        // The schema under another key order: the first line is a whole JSON object.
        if let Some(line) = line_end.map(|l| &body[..l]).or(ended.then_some(body))
            && let Ok(v) = serde_json::from_slice::<serde_json::Value>(line)
            && let Some(s) = v.get("schema").and_then(|s| s.as_str())
        {
            if s.starts_with("gpumon.recording/") {
                return Kind::Recording;
            }
            if s.starts_with("gpumon.snapshot/") {
                return Kind::Snapshot;
            }
        }
    }
    if let Some(why) = binary(head) {
        return Kind::Binary(why);
    }
    if matches!(body[0], b'{' | b'[') {
        return Kind::Json;
    }
    Kind::Log
}

/// The value of `"schema"` when it is the object's first key, and where it ends in `body`.
fn first_key_schema(body: &[u8]) -> Option<(&[u8], usize)> {
    let mut i = 1;
    let skip = |i: &mut usize| {
        while body.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    };
    skip(&mut i);
    let rest = body.get(i..)?.strip_prefix(b"\"schema\"")?;
    i = body.len() - rest.len();
    skip(&mut i);
    if body.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    skip(&mut i);
    if body.get(i) != Some(&b'"') {
        return None;
    }
    let from = i + 1;
    let len = body[from..]
        .iter()
        .position(|b| matches!(b, b'"' | b'\\' | b'\n'))?;
    (body[from + len] == b'"').then(|| (&body[from..from + len], from + len))
}

/// Why `head` is not text: too many bytes that are neither UTF-8 text nor the control characters
/// logs hold (tab, newline, carriage return, form feed, backspace, escape). Runs of NULs
/// (`HOLE` or more) are left out of the count, both sides; a lone NUL counts against it.
pub fn binary(head: &[u8]) -> Option<String> {
    let mut kept = Vec::with_capacity(head.len());
    let mut i = 0;
    while let Some(b) = head.get(i) {
        let nuls = head[i..].iter().take_while(|b| **b == 0).count();
        if nuls == 0 {
            kept.push(*b);
            i += 1;
        } else {
            if nuls < HOLE {
                kept.extend_from_slice(&head[i..i + nuls]);
            }
            i += nuls;
        }
    }
    let mut odd = 0;
    for chunk in kept.utf8_chunks() {
        odd += chunk
            .valid()
            .chars()
            .filter(|c| {
                c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c' | '\x08' | '\x1b')
            })
            .count();
        odd += chunk.invalid().len();
    }
    (odd * 100 > kept.len() * NOT_TEXT_PERCENT).then(|| {
        format!(
            "{} % of its first {} bytes are not text",
            odd * 100 / kept.len(),
            head.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_from_its_first_bytes() {
        let cases: [(&[u8], Kind); 12] = [
            (b"", Kind::Empty),
            (b" \n\t\n", Kind::Empty),
            (
                b"{\"schema\":\"gpumon.recording/3\",\"interval_ms\":1000}\n{\"at_ms\"",
                Kind::Recording,
            ),
            (
                b"{\"interval_ms\":1000,\"schema\":\"gpumon.recording/1\"}\n",
                Kind::Recording,
            ),
            (
                b"\xef\xbb\xbf{\"schema\":\"gpumon.recording/3\"}\n",
                Kind::Recording,
            ),
            (b"{\n  \"schema\": \"gpumon.snapshot/3\",\n", Kind::Snapshot),
            // A pretty document naming a recording's schema is no recording (not one a line).
            (
                b"{\n  \"schema\": \"gpumon.recording/1\",\n  \"x\": 1\n}\n",
                Kind::Json,
            ),
            (b"{\"level\": \"info\", \"msg\": \"step 1\"}\n", Kind::Json),
            (b"[1, 2]\n", Kind::Json),
            (b"epoch 1 loss 0.3\n\x1b[32mok\x1b[0m\r\n", Kind::Log),
            (
                b"\x7fELF\x02\x01\x01\x00\x00\x00",
                Kind::Binary("70 % of its first 10 bytes are not text".into()),
            ),
            (
                b"\x01\x02\x03\x04\xff\xfe text",
                Kind::Binary("54 % of its first 11 bytes are not text".into()),
            ),
        ];
        for (head, want) in cases {
            assert_eq!(kind(head, true), want, "{}", String::from_utf8_lossy(head));
        }
        assert_eq!(kind(b"   ", false), Kind::Log, "white space, more to come");
    }

    #[test]
    fn a_few_odd_bytes_leave_a_log_a_log() {
        let mut latin1 = b"caf\xe9 au lait, ".repeat(20);
        latin1.extend_from_slice(b"\x07 bell\n");
        assert_eq!(kind(&latin1, true), Kind::Log);
    }

    #[test]
    fn nul_runs_are_holes_not_evidence() {
        // logrotate's copytruncate: 4 KiB of NULs, then the writer's next lines.
        let mut log = vec![0; 4096];
        log.extend_from_slice(b"step 9\ntorch.OutOfMemoryError: CUDA out of memory.\n");
        assert_eq!(kind(&log, true), Kind::Log);
        assert_eq!(kind(&[0; 8192], false), Kind::Log, "a hole, more to come");
        assert_eq!(kind(&[0; 100], true), Kind::Empty);
        // UTF-16 text: lone NULs between its characters are evidence.
        let utf16: Vec<u8> = "step 1 loss 0.3\n".bytes().flat_map(|b| [b, 0]).collect();
        assert!(matches!(kind(&utf16, true), Kind::Binary(_)));
    }
}
