//! Cranelift's incremental compilation cache, for every component an engine compiles: each
//! function's machine code by the hash of its compiler input. A component that shares most of
//! its code with one compiled before compiles only what is new: every Python plugin carries the
//! same CPython and every JavaScript plugin the same StarlingMonkey (12-18 MB of code, 14-17 s to
//! compile cold), and a policy edited and reloaded differs from its last version in a few
//! functions (BENCHMARKS.md "Policies in other languages").
//!
//! The entries live in memory for an engine without a disk cache, else beside the compiled
//! components, one file per function: `<dir>/functions/<2 hex>/<62 hex>`, the entry's bytes
//! followed by their SHA-256, checked on every read. An entry that is damaged or unreadable is a
//! miss (the function is compiled again and the entry rewritten), never used; Cranelift also
//! refuses entries of another compiler version. Files are written to a temporary name and
//! renamed. A directory that cannot be written is logged once and the cache works without it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::CacheStore;

/// How often compiling found a function's code in the cache, and how often it did not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FunctionCacheStats {
    pub hits: u64,
    pub misses: u64,
}

#[derive(Debug)]
pub(super) struct FunctionCache {
    store: Store,
    hits: AtomicU64,
    misses: AtomicU64,
    /// A write failed once (and was logged): later ones are not.
    unwritable: AtomicBool,
}

#[derive(Debug)]
enum Store {
    Memory(Mutex<HashMap<Vec<u8>, Vec<u8>>>),
    Disk(PathBuf),
}

const SEAL: usize = 32;

impl FunctionCache {
    pub(super) fn in_memory() -> FunctionCache {
        FunctionCache::with(Store::Memory(Mutex::default()))
    }

    /// Entries under `dir/functions`.
    pub(super) fn on_disk(dir: &Path) -> FunctionCache {
        FunctionCache::with(Store::Disk(dir.join("functions")))
    }

    fn with(store: Store) -> FunctionCache {
        FunctionCache {
            store,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            unwritable: AtomicBool::new(false),
        }
    }

    pub(super) fn stats(&self) -> FunctionCacheStats {
        FunctionCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    fn path(dir: &Path, key: &[u8]) -> PathBuf {
        let hex = hex(key);
        let (shard, rest) = hex.split_at(2.min(hex.len()));
        dir.join(shard).join(rest)
    }

    fn read(&self, key: &[u8]) -> Option<Vec<u8>> {
        match &self.store {
            Store::Memory(map) => map.lock().expect("function cache lock").get(key).cloned(),
            Store::Disk(dir) => {
                let mut bytes = std::fs::read(FunctionCache::path(dir, key)).ok()?;
                let split = bytes.len().checked_sub(SEAL)?;
                let sealed = Sha256::digest(&bytes[..split]);
                (sealed.as_slice() == &bytes[split..]).then(|| {
                    bytes.truncate(split);
                    bytes
                })
            }
        }
    }

    fn write(&self, key: &[u8], value: Vec<u8>) -> std::io::Result<()> {
        match &self.store {
            Store::Memory(map) => {
                map.lock()
                    .expect("function cache lock")
                    .insert(key.to_vec(), value);
                Ok(())
            }
            Store::Disk(dir) => {
                let path = FunctionCache::path(dir, key);
                let parent = path.parent().expect("sharded");
                std::fs::create_dir_all(parent)?;
                let mut sealed = value;
                let seal = Sha256::digest(&sealed);
                sealed.extend_from_slice(&seal);
                let tmp = parent.join(format!(
                    ".{}.{}.tmp",
                    path.file_name().expect("named").to_string_lossy(),
                    std::process::id()
                ));
                std::fs::write(&tmp, &sealed)?;
                std::fs::rename(&tmp, &path)
            }
        }
    }
}

impl CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let found = self.read(key);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found.map(Cow::Owned)
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        match self.write(key, value) {
            Ok(()) => true,
            Err(error) => {
                if !self.unwritable.swap(true, Ordering::Relaxed)
                    && let Store::Disk(dir) = &self.store
                {
                    tracing::warn!(
                        dir = %dir.display(),
                        %error,
                        "function cache not written; compiling without it"
                    );
                }
                false
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_comes_back_and_a_damaged_one_is_a_miss() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = FunctionCache::on_disk(dir.path());
        let key = [7u8; 32];
        assert!(cache.get(&key).is_none());
        assert!(cache.insert(&key, b"machine code".to_vec()));
        assert_eq!(cache.get(&key).as_deref(), Some(&b"machine code"[..]));
        let file = FunctionCache::path(&dir.path().join("functions"), &key);
        let mut bytes = std::fs::read(&file).expect("entry written");
        bytes[0] ^= 0xff;
        std::fs::write(&file, bytes).expect("damaged");
        assert!(cache.get(&key).is_none(), "a damaged entry is never used");
        assert_eq!(cache.stats(), FunctionCacheStats { hits: 1, misses: 2 });
        std::fs::write(&file, b"short").expect("truncated");
        assert!(cache.get(&key).is_none(), "nor a truncated one");
    }

    #[test]
    fn an_unwritable_directory_is_no_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "").expect("a file where the directory would be");
        let cache = FunctionCache::on_disk(&blocked);
        assert!(!cache.insert(&[1; 32], vec![1]));
        assert!(cache.get(&[1; 32]).is_none());
    }

    #[test]
    fn in_memory_entries_are_kept() {
        let cache = FunctionCache::in_memory();
        assert!(cache.insert(&[2; 32], vec![9]));
        assert_eq!(cache.get(&[2; 32]).as_deref(), Some(&[9u8][..]));
    }
}
