//! Kubernetes resource quantities (`"2"`, `"1500m"`, `"24Gi"`, `"25165824Ki"`, `"1e9"`) as
//! numbers, and back. Format: the API's `resource.Quantity` (decimal SI suffixes `n u m k M G T
//! P E`, binary suffixes `Ki Mi Gi Ti Pi Ei`, or a decimal exponent).

/// The value of a quantity (CPU in cores, memory in bytes); `None` when it is not one.
pub fn parse(q: &str) -> Option<f64> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    let base: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse::<i32>().ok()?),
        _ => return None,
    };
    let v = base * factor;
    v.is_finite().then_some(v)
}

/// A CPU amount in cores as a quantity in millicores (`1.5` → `"1500m"`), at least `1m`.
pub fn cpu(cores: f64) -> String {
    format!("{}m", ((cores * 1000.0).round() as i64).max(1))
}

/// A memory amount in bytes as a quantity (`"536870912"`).
pub fn memory(bytes: i64) -> String {
    bytes.max(1).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_api_s_suffixes() {
        assert_eq!(parse("2"), Some(2.0));
        assert_eq!(parse("1500m"), Some(1.5));
        assert_eq!(parse("24Gi"), Some(24.0 * 1024.0 * 1024.0 * 1024.0));
        assert_eq!(parse("25165824Ki"), Some(25165824.0 * 1024.0));
        assert_eq!(parse("1e9"), Some(1e9));
        assert_eq!(parse("129M"), Some(129e6));
        assert_eq!(parse("0.5"), Some(0.5));
        assert_eq!(parse("12Qi"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("Gi"), None);
    }

    #[test]
    fn writes_cpu_in_millicores_and_memory_in_bytes() {
        assert_eq!(cpu(1.5), "1500m");
        assert_eq!(cpu(2.0), "2000m");
        assert_eq!(cpu(0.0), "1m");
        assert_eq!(memory(512 * 1024 * 1024), "536870912");
        assert_eq!(parse(&cpu(0.25)), Some(0.25));
    }
}
