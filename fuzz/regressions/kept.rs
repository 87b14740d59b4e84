//! The inputs kept in `fuzz/regressions/<target>/`, for the regression tests of the crates that
//! own each fuzzed function (included with `#[path]`, so no crate depends on the fuzz package).

use std::path::PathBuf;

/// (file name, bytes) of every input kept for `target`, in name order; never empty.
pub fn kept_inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a readable directory entry").path();
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
            let name = path.file_name().expect("a file").to_string_lossy().into();
            (name, bytes)
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs kept in {}", dir.display());
    inputs
}

/// The same, as text: the text decoders' fuzz targets only ever pass UTF-8.
#[allow(dead_code)]
pub fn kept_texts(target: &str) -> Vec<(String, String)> {
    kept_inputs(target)
        .into_iter()
        .map(|(name, bytes)| {
            let text = String::from_utf8(bytes)
                .unwrap_or_else(|error| panic!("{target}/{name} is not UTF-8 text: {error}"));
            (name, text)
        })
        .collect()
}
