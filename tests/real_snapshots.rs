//! Snapshots taken by `gpumon snapshot` on a real NVIDIA H100 (driver 580.159.04): the same JAX and
//! PyTorch jobs with JAX's default preallocation and with `XLA_PYTHON_CLIENT_PREALLOCATE=false`
//! (made by `scripts/gpu/snapshot_pair.sh`; their numbers matched nvidia-smi, see
//! `tests/fixtures/gpu/h100-snapshot-verify.txt`).

use std::path::Path;

use gpumon::snapshot::{self, diff};

const A: &str = "tests/fixtures/snapshots/h100-jax-prealloc.json";
const B: &str = "tests/fixtures/snapshots/h100-jax-noprealloc.json";

#[test]
fn real_snapshots_match_the_published_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("assets/snapshot.schema.json").unwrap())
            .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    for path in [A, B] {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{path}: {errors:?}");
        snapshot::read(Path::new(path)).unwrap();
    }
}

#[test]
fn diff_of_real_snapshots_explains_jax_preallocation() {
    let (a, b) = (snapshot::read(A).unwrap(), snapshot::read(B).unwrap());
    assert_eq!(
        a.gpus[0].memory.as_ref().unwrap().reserved,
        Some(480 << 20),
        "H100 reserves 480 MiB"
    );
    let d = diff::diff(&a, &b);
    let text = diff::render_text(&d);
    assert!(text.contains("XLA_PYTHON_CLIENT_PREALLOCATE"), "{text}");
    assert!(text.contains("A: unset"), "{text}");
    assert!(
        text.contains("B: XLA_PYTHON_CLIENT_PREALLOCATE=false"),
        "{text}"
    );
    assert!(text.contains("preallocat"), "{text}");
    assert!(
        text.contains("outside the JAX pool"),
        "the context overhead is sized: {text}"
    );
    let json: serde_json::Value = serde_json::from_str(&diff::render_json(&d)).unwrap();
    assert!(json.to_string().contains("XLA_PYTHON_CLIENT_PREALLOCATE"));
}
