//! Embeds every file under `assets/`: writes `assets.rs` into `OUT_DIR`, a table of
//! `(path, bytes)` with each file's bytes included by `include_bytes!`, so a file
//! added to the page needs no change to the Rust code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("assets");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut found = Vec::new();
    files(&root, &mut found)?;
    found.sort();
    let mut table = String::from("&[\n");
    for path in &found {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path
            .strip_prefix(&root)?
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        writeln!(
            table,
            "    ({name:?}, include_bytes!({:?}) as &[u8]),",
            path.display().to_string()
        )?;
    }
    table.push(']');
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("assets.rs");
    std::fs::write(out, table)?;
    Ok(())
}
