//! A task's difficulty, from a closed set: `easy`, `medium`, `hard` (SkillsBench's
//! `metadata.difficulty` and catalog column). Spellings met in real data are normalised —
//! `middle` (one task of the shipped catalog) is `medium` — and so are the evaluation plan's tier
//! names for the same three levels in the same order (Core, Extended, Extreme). Anything else is
//! an error where it is loaded, naming the file and row, so one level never becomes two table
//! rows.

use serde::Serialize;

/// A difficulty level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Difficulty {
    /// `easy` (plan: Core).
    Easy,
    /// `medium` (also `middle`; plan: Extended).
    Medium,
    /// `hard` (plan: Extreme).
    Hard,
}

impl Difficulty {
    /// Every level, easiest first.
    pub const ALL: [Difficulty; 3] = [Difficulty::Easy, Difficulty::Medium, Difficulty::Hard];

    /// The level `text` names (trimmed, any case), `None` outside the closed set.
    pub fn parse(text: &str) -> Option<Difficulty> {
        match text.trim().to_ascii_lowercase().as_str() {
            "easy" | "core" => Some(Difficulty::Easy),
            "medium" | "middle" | "extended" => Some(Difficulty::Medium),
            "hard" | "extreme" => Some(Difficulty::Hard),
            _ => None,
        }
    }

    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Difficulty::Easy => "easy",
            Difficulty::Medium => "medium",
            Difficulty::Hard => "hard",
        }
    }

    /// 0 for easy, 1 medium, 2 hard.
    pub fn rank(self) -> u8 {
        self as u8
    }

    /// The canonical name of `text`, or `text` itself when it is not a level (data recorded
    /// before levels were checked, `unknown`).
    pub fn normalize(text: &str) -> String {
        Difficulty::parse(text).map_or_else(|| text.to_string(), |d| d.as_str().to_string())
    }

    /// Why `text` is not a level: the message a loader puts beside the file and row.
    pub fn unknown(text: &str) -> String {
        format!("unknown difficulty {text:?} (expected easy, medium or hard)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_a_closed_set_with_their_real_spellings() {
        assert_eq!(Difficulty::parse("middle"), Some(Difficulty::Medium));
        assert_eq!(Difficulty::parse(" Hard "), Some(Difficulty::Hard));
        assert_eq!(Difficulty::parse("extreme"), Some(Difficulty::Hard));
        assert_eq!(Difficulty::parse("impossible"), None);
        assert_eq!(Difficulty::normalize("middle"), "medium");
        assert_eq!(Difficulty::normalize("unknown"), "unknown");
        assert!(Difficulty::Easy.rank() < Difficulty::Hard.rank());
    }
}
