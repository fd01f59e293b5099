//! The SkillsBench paper's reference numbers (`data/skillsbench/paper_results.csv`, from
//! `shared/skillsbench/paper_results.csv`: paper version, table, harness, model, metric, value,
//! 95% CI, unit, source, confidence), and matching a run's agent and model to a paper
//! configuration.

use serde::Serialize;

/// The shipped CSV.
pub const PAPER_CSV: &str = include_str!("../../data/skillsbench/paper_results.csv");

/// One reference number.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperValue {
    /// Paper version (`v1` = the February 2026 paper, `v4` = the later leaderboard).
    pub version: String,
    /// Table (`main`, `aggregate`, `domain`, …).
    pub table: String,
    /// Harness (`Claude Code`, `Gemini CLI`, `Codex`, `all`).
    pub harness: String,
    /// Model (`Opus 4.6`, …).
    pub model: String,
    /// Metric (`pass_no_skills`, `pass_curated`, `normalized_gain`, `delta_curated`, …).
    pub metric: String,
    /// Value (percent or a count, see `unit`); `None` where the paper has none.
    pub value: Option<f64>,
    /// 95% CI half-width, when given.
    pub ci95: Option<f64>,
    /// `pct`, `pp`, `count`, …
    pub unit: String,
    /// Where the number comes from.
    pub source: String,
}

/// Every row of the shipped CSV.
///
/// # Panics
/// Never for the shipped file (a test parses it); malformed rows are skipped.
pub fn values() -> Vec<PaperValue> {
    let mut r = csv::ReaderBuilder::new().from_reader(PAPER_CSV.as_bytes());
    r.records()
        .filter_map(Result::ok)
        .filter(|rec| rec.len() >= 9)
        .map(|rec| PaperValue {
            version: rec[0].to_string(),
            table: rec[1].to_string(),
            harness: rec[2].to_string(),
            model: rec[3].to_string(),
            metric: rec[4].to_string(),
            value: rec[5].trim().parse().ok(),
            ci95: rec[6].trim().parse().ok(),
            unit: rec[7].to_string(),
            source: rec[8].to_string(),
        })
        .collect()
}

fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// True when a run of `agent` with `model` is the paper configuration `harness` + `paper_model`:
/// both compared lowercase without punctuation, the agent naming the harness
/// (`gemini-cli` ~ `Gemini CLI`) and the run's model containing the paper's
/// (`claude-opus-4-6` ~ `Opus 4.6`, `gemini-3-flash-preview` ~ `Gemini 3 Flash`).
pub fn matches(agent: &str, model: Option<&str>, harness: &str, paper_model: &str) -> bool {
    let (a, h) = (squash(agent), squash(harness));
    let (m, p) = (squash(model.unwrap_or("")), squash(paper_model));
    !h.is_empty() && !p.is_empty() && a.contains(&h) && m.contains(&p)
}

/// The main-table values (`pass_no_skills`, `pass_curated`, `normalized_gain`, …) of the
/// configuration a run of `agent`/`model` matches.
pub fn for_run(agent: &str, model: Option<&str>) -> Vec<PaperValue> {
    values()
        .into_iter()
        .filter(|v| v.table == "main" && matches(agent, model, &v.harness, &v.model))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_csv_parses() {
        let v = values();
        assert!(v.len() > 40);
        let g = v
            .iter()
            .find(|x| x.harness == "Gemini CLI" && x.metric == "pass_curated")
            .unwrap();
        assert_eq!(g.value, Some(48.7));
        assert_eq!(g.ci95, Some(3.1));
    }

    #[test]
    fn runs_match_their_paper_configuration() {
        assert!(matches(
            "claude-code",
            Some("claude-opus-4-6"),
            "Claude Code",
            "Opus 4.6"
        ));
        assert!(!matches(
            "claude-code",
            Some("claude-opus-4-5"),
            "Claude Code",
            "Opus 4.6"
        ));
        assert!(matches(
            "gemini-cli",
            Some("gemini-3-flash-preview"),
            "Gemini CLI",
            "Gemini 3 Flash"
        ));
        assert!(matches(
            "gemini-cli",
            Some("gemini3flash"),
            "Gemini CLI",
            "Gemini 3 Flash"
        ));
        assert!(!matches(
            "codex",
            Some("gpt-5.2"),
            "Claude Code",
            "Opus 4.6"
        ));
        assert!(!matches("oracle", None, "Claude Code", "Opus 4.6"));
        let rows = for_run("gemini-cli", Some("gemini3flash"));
        assert!(
            rows.iter()
                .any(|r| r.metric == "pass_no_skills" && r.value == Some(31.3))
        );
    }
}
