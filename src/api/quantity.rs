//! Kubernetes resource quantities (`9`, `"500m"`, `36Gi`) as exact integers in milli-units.
//!
//! Every quota figure in wasq is an `i64` count of thousandths of the resource's base unit
//! (millicores for `cpu`, millibytes for `memory`, milli-GPUs for `nvidia.com/gpu`). Integer
//! arithmetic on one canonical unit keeps quota bookkeeping exact: there are no floats in quota.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A parsed quantity, in milli-units of its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Quantity(pub i64);

/// Why a quantity string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("empty quantity")]
    Empty,
    #[error(
        "invalid quantity {0:?}: expected a number with an optional suffix (m, k, M, G, Ki, Mi, Gi, ...)"
    )]
    Syntax(String),
    #[error("unknown suffix {suffix:?} in quantity {input:?}")]
    Suffix { input: String, suffix: String },
    #[error("quantity {0:?} is out of range")]
    Overflow(String),
    #[error("quantity {0:?} is finer than 1m, the smallest unit wasq tracks")]
    TooPrecise(String),
}

impl Quantity {
    pub const ZERO: Quantity = Quantity(0);

    /// A whole number of base units (`Quantity::units(2)` = `2` = `2000m`).
    pub const fn units(n: i64) -> Quantity {
        Quantity(n * 1000)
    }

    /// The value in milli-units.
    pub const fn milli(self) -> i64 {
        self.0
    }

    /// Multiplies by a pod count, failing on overflow.
    pub fn checked_mul(self, n: i64) -> Option<Quantity> {
        self.0.checked_mul(n).map(Quantity)
    }
}

/// `(numerator, denominator)` applied to milli-units, per suffix.
fn suffix_scale(suffix: &str) -> Option<(i128, i128)> {
    const KI: i128 = 1024;
    Some(match suffix {
        "" => (1000, 1),
        "m" => (1, 1),
        "k" => (1_000_000, 1),
        "M" => (1_000_000_000, 1),
        "G" => (1_000_000_000_000, 1),
        "T" => (1_000_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000_000, 1),
        "Ki" => (1000 * KI, 1),
        "Mi" => (1000 * KI.pow(2), 1),
        "Gi" => (1000 * KI.pow(3), 1),
        "Ti" => (1000 * KI.pow(4), 1),
        "Pi" => (1000 * KI.pow(5), 1),
        "Ei" => (1000 * KI.pow(6), 1),
        "u" => (1, 1000),
        "n" => (1, 1_000_000),
        _ => return None,
    })
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let s = input.trim();
        if s.is_empty() {
            return Err(QuantityError::Empty);
        }
        let (negative, body) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let num_end = body
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(body.len());
        let (number, suffix) = body.split_at(num_end);
        if number.is_empty() || number.matches('.').count() > 1 || number == "." {
            return Err(QuantityError::Syntax(input.to_string()));
        }
        // Decimal exponent forms (`1e3`, `1E-3`).
        let exponent = suffix
            .strip_prefix(['e', 'E'])
            .filter(|rest| !rest.is_empty());
        let (suffix_scale, exp10) = if let Some(exp) = exponent {
            let e: i32 = exp
                .parse()
                .map_err(|_| QuantityError::Syntax(input.to_string()))?;
            ((1000i128, 1i128), e)
        } else {
            let scale = suffix_scale(suffix).ok_or_else(|| QuantityError::Suffix {
                input: input.to_string(),
                suffix: suffix.to_string(),
            })?;
            (scale, 0)
        };
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        let digits = format!("{int_part}{frac_part}");
        let mantissa: i128 = digits
            .parse()
            .map_err(|_| QuantityError::Overflow(input.to_string()))?;
        let mut denom: i128 = 10i128
            .checked_pow(frac_part.len() as u32)
            .ok_or_else(|| QuantityError::Overflow(input.to_string()))?;
        let mut numer = mantissa
            .checked_mul(suffix_scale.0)
            .ok_or_else(|| QuantityError::Overflow(input.to_string()))?;
        denom *= suffix_scale.1;
        if exp10 >= 0 {
            numer = numer
                .checked_mul(
                    10i128
                        .checked_pow(exp10 as u32)
                        .ok_or_else(|| QuantityError::Overflow(input.to_string()))?,
                )
                .ok_or_else(|| QuantityError::Overflow(input.to_string()))?;
        } else {
            denom = denom
                .checked_mul(
                    10i128
                        .checked_pow((-exp10) as u32)
                        .ok_or_else(|| QuantityError::Overflow(input.to_string()))?,
                )
                .ok_or_else(|| QuantityError::Overflow(input.to_string()))?;
        }
        if numer % denom != 0 {
            return Err(QuantityError::TooPrecise(input.to_string()));
        }
        let value = numer / denom;
        let value = i64::try_from(value).map_err(|_| QuantityError::Overflow(input.to_string()))?;
        Ok(Quantity(if negative { -value } else { value }))
    }
}

impl fmt::Display for Quantity {
    /// Canonical short form: whole units when exact (`2`), binary suffixes for exact powers of
    /// 1024 at Ki and above (`36Gi`), otherwise milli-units (`500m`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        if m % 1000 != 0 {
            return write!(f, "{m}m");
        }
        let units = m / 1000;
        if units != 0 {
            for (suffix, scale) in [
                ("Ei", 1i64 << 60),
                ("Pi", 1 << 50),
                ("Ti", 1 << 40),
                ("Gi", 1 << 30),
                ("Mi", 1 << 20),
                ("Ki", 1 << 10),
            ] {
                if units.abs() >= scale && units % scale == 0 {
                    return write!(f, "{}{suffix}", units / scale);
                }
            }
        }
        write!(f, "{units}")
    }
}

/// The schema Kubernetes uses for quantities: an integer or a string
/// (`x-kubernetes-int-or-string`), as in Kueue's CRDs.
impl schemars::JsonSchema for Quantity {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Quantity".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
            "x-kubernetes-int-or-string": true
        })
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct QuantityVisitor;
        impl Visitor<'_> for QuantityVisitor {
            type Value = Quantity;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a quantity such as 9, \"500m\" or \"36Gi\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
                v.checked_mul(1000)
                    .map(Quantity)
                    .ok_or_else(|| E::custom(QuantityError::Overflow(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
                i64::try_from(v)
                    .ok()
                    .and_then(|v| v.checked_mul(1000))
                    .map(Quantity)
                    .ok_or_else(|| E::custom(QuantityError::Overflow(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Quantity, E> {
                // YAML `0.5` arrives as a float: re-read its shortest decimal form exactly.
                self.visit_str(&v.to_string())
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
                v.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_any(QuantityVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> i64 {
        s.parse::<Quantity>().unwrap().milli()
    }

    #[test]
    fn parses_kubernetes_notation() {
        assert_eq!(q("9"), 9000);
        assert_eq!(q("500m"), 500);
        assert_eq!(q("1.5"), 1500);
        assert_eq!(q("36Gi"), 36 * (1 << 30) * 1000);
        assert_eq!(q("1k"), 1_000_000);
        assert_eq!(q("2M"), 2_000_000_000);
        assert_eq!(q("1e3"), 1_000_000);
        assert_eq!(q("0"), 0);
        assert_eq!(q("100Mi"), 100 * (1 << 20) * 1000);
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        assert_eq!("".parse::<Quantity>(), Err(QuantityError::Empty));
        assert!(matches!(
            "abc".parse::<Quantity>(),
            Err(QuantityError::Syntax(_))
        ));
        assert!(matches!(
            "5Xi".parse::<Quantity>(),
            Err(QuantityError::Suffix { .. })
        ));
        assert!(matches!(
            "1.0001m".parse::<Quantity>(),
            Err(QuantityError::TooPrecise(_))
        ));
        assert!(matches!(
            "9E".parse::<Quantity>(),
            Err(QuantityError::Overflow(_))
        ));
    }

    #[test]
    fn displays_canonically_and_round_trips() {
        for s in ["9", "500m", "36Gi", "1Ki", "1500m", "0", "1000"] {
            let parsed: Quantity = s.parse().unwrap();
            assert_eq!(parsed.to_string(), s);
            assert_eq!(parsed.to_string().parse::<Quantity>().unwrap(), parsed);
        }
    }

    #[test]
    fn deserializes_numbers_and_strings() {
        let v: Vec<Quantity> = serde_json::from_str(r#"[9, "500m", 0.5, "36Gi"]"#).unwrap();
        assert_eq!(v[0].milli(), 9000);
        assert_eq!(v[1].milli(), 500);
        assert_eq!(v[2].milli(), 500);
        assert_eq!(v[3], "36Gi".parse().unwrap());
    }
}
