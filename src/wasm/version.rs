//! Which `wasq:policy` versions this host serves, and the promise it keeps to plugin authors
//! (docs/plugin-contract.md): within a major version a minor version only adds, so a plugin
//! built against any 1.x up to the host's own is served the requests of its own version
//! (what it cannot see is not sent; what it cannot answer takes Kueue's default), and a plugin
//! of another major version, or of a newer minor, is refused, naming both versions.
//!
//! [`SERVED`] lists the minor versions the host serves, oldest first. A minor version that
//! only adds interfaces (1.1 added `dispatch`) is served by the newest bindings
//! (`bindings.rs`): wasmtime matches `wasq:policy/…@1.0.0` to `@1.1.0` semver-compatibly and
//! checks the types structurally, and none of 1.0's types changed. A minor version that
//! changes an existing record needs bindings of its own for the versions before it.

/// A `major.minor.patch` version of the WIT package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

impl Version {
    /// Parses `1.2.3` (no pre-release or build suffix: the package has none).
    pub fn parse(text: &str) -> Option<Version> {
        let mut parts = text.split('.').map(|p| p.parse::<u64>().ok());
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Some(major)), Some(Some(minor)), Some(Some(patch)), None) => Some(Version {
                major,
                minor,
                patch,
            }),
            _ => None,
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The minor versions this host has bindings for, oldest first; the last is the host's own.
pub const SERVED: &[Version] = &[
    Version {
        major: 1,
        minor: 0,
        patch: 0,
    },
    Version {
        major: 1,
        minor: 1,
        patch: 0,
    },
];

/// The host's own version: the newest it serves.
pub fn host() -> Version {
    *SERVED.last().expect("at least one version")
}

/// Why a plugin's version is not served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error(
        "built against wasq:policy@{plugin}, but this host speaks wasq:policy@{host} (a \
         different major version: incompatible by definition); rebuild the plugin against \
         {host_major}.x"
    , host_major = host.major)]
    OtherMajor { plugin: String, host: Version },
    #[error(
        "built against wasq:policy@{plugin}, newer than this host's wasq:policy@{host}; \
         upgrade wasq, or rebuild the plugin against {host} (a plugin built against an older \
         minor version keeps loading on newer hosts, not the other way round)"
    )]
    NewerMinor { plugin: Version, host: Version },
    #[error("names wasq:policy at two versions, {0} and {1}: a plugin is built against one")]
    Mixed(String, String),
}

/// The version this host serves a plugin whose `wasq:policy` imports and exports name
/// `versions`, given the versions the host has bindings for (`served`, oldest first): the
/// newest served minor of the same major that is not newer than the plugin's.
///
/// # Errors
/// A plugin naming two versions, another major version, or a minor newer than the host's.
pub fn negotiate<'a>(
    versions: impl IntoIterator<Item = &'a str>,
    served: &[Version],
) -> Result<Version, VersionError> {
    let mut named: Option<&str> = None;
    for v in versions {
        match named {
            None => named = Some(v),
            Some(first) if first != v => {
                return Err(VersionError::Mixed(first.to_string(), v.to_string()));
            }
            Some(_) => {}
        }
    }
    let newest = *served.last().expect("at least one version");
    let text = named.unwrap_or("");
    let plugin = Version::parse(text)
        .filter(|v| v.major == newest.major)
        .ok_or_else(|| VersionError::OtherMajor {
            plugin: text.to_string(),
            host: newest,
        })?;
    served
        .iter()
        .rev()
        .find(|s| s.major == plugin.major && s.minor <= plugin.minor)
        .filter(|_| plugin.minor <= newest.minor)
        .copied()
        .ok_or(VersionError::NewerMinor {
            plugin,
            host: newest,
        })
}

#[cfg(test)]
mod tests {
    use super::{Version, VersionError, negotiate};

    fn v(text: &str) -> Version {
        Version::parse(text).expect("version")
    }

    #[test]
    fn a_plugin_of_an_older_or_equal_minor_is_served_its_own_minor() {
        let served = [v("1.0.0"), v("1.1.0"), v("1.2.0")];
        assert_eq!(negotiate(["1.0.0", "1.0.0"], &served), Ok(v("1.0.0")));
        assert_eq!(negotiate(["1.1.0"], &served), Ok(v("1.1.0")));
        // A patch release changes no type: served by its minor's bindings.
        assert_eq!(negotiate(["1.1.3"], &served), Ok(v("1.1.0")));
        assert_eq!(negotiate(["1.2.0"], &served), Ok(v("1.2.0")));
    }

    #[test]
    fn this_host_serves_1_0_and_1_1_with_one_set_of_bindings() {
        assert_eq!(negotiate(["1.0.0"], super::SERVED), Ok(v("1.0.0")));
        assert_eq!(negotiate(["1.1.0"], super::SERVED), Ok(v("1.1.0")));
        assert_eq!(super::host(), v("1.1.0"));
        assert!(matches!(
            negotiate(["1.2.0"], super::SERVED),
            Err(VersionError::NewerMinor { .. })
        ));
    }

    #[test]
    fn another_major_or_a_newer_minor_is_refused_naming_both_versions() {
        let served = [v("1.0.0")];
        let old = negotiate(["0.12.0"], &served).expect_err("refused");
        assert!(matches!(old, VersionError::OtherMajor { .. }));
        let text = old.to_string();
        assert!(text.contains("wasq:policy@0.12.0") && text.contains("wasq:policy@1.0.0"));
        let next = negotiate(["2.0.0"], &served).expect_err("refused");
        assert!(next.to_string().contains("wasq:policy@2.0.0"), "{next}");
        let newer = negotiate(["1.1.0"], &served).expect_err("refused");
        assert_eq!(
            newer,
            VersionError::NewerMinor {
                plugin: v("1.1.0"),
                host: v("1.0.0")
            }
        );
        assert!(newer.to_string().contains("1.1.0") && newer.to_string().contains("1.0.0"));
        assert!(matches!(
            negotiate(["1.0.0", "1.1.0"], &served),
            Err(VersionError::Mixed(..))
        ));
        assert!(matches!(
            negotiate(["1.0.0-rc1"], &served),
            Err(VersionError::OtherMajor { .. })
        ));
    }
}
