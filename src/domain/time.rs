//! Timestamps: every stored time is RFC 3339 UTC with milliseconds.

/// Current UTC time as RFC 3339 with milliseconds (the format of every stored timestamp).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
