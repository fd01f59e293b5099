//! Model list prices, dated, and the cost of a run's tokens in USD.
//!
//! The table is `data/model-prices.csv`, compiled in. One row is one model's list price from one
//! date on: `provider, model, input_usd_per_mtok, cached_input_usd_per_mtok,
//! cache_write_usd_per_mtok, output_usd_per_mtok, effective_date, source_url`. Prices are USD per
//! million tokens (MTok) on the provider's standard (pay-as-you-go) tier; `effective_date` is the
//! first day the row applies (the model's public release, as its source or the provider's model
//! page gives it); `source_url` is where the figures were read. A price change is a new row with a
//! later date: [`PriceTable::lookup`] picks the latest row on or before the run's date.
//!
//! What a row covers, and what it does not:
//! - `input` is fresh input: Anthropic's `usage.input_tokens` (which excludes cache reads and
//!   writes); for OpenAI/Gemini, prompt tokens minus cached tokens.
//! - `cached_input` is a cache hit (Anthropic "cache hits & refreshes", OpenAI "cached input",
//!   Gemini "context caching price").
//! - `cache_write` is Anthropic's 5-minute cache write (1.25 × input). Empty for providers with no
//!   separate write charge: such tokens cost the input rate. Anthropic's 1-hour writes (2 × input)
//!   are not modelled, nor long-context (> 200K-token prompt) premiums, batch discounts, Gemini
//!   cache storage per hour, or regional-endpoint uplifts — the harness's own reported cost (Claude
//!   Code's `total_cost_usd`) is recorded beside ours for that reason.
//!
//! Arithmetic: `usd = (input·p_in + cached·p_cached + cache_write·p_write + output·p_out) / 10⁶`.
//! Claude Code's own per-model `costUSD` agrees with it to the last digit (e.g. Opus 4.5 with
//! 1,281 / 45,563 written / 577,047 read / 4,962 output tokens → $0.70374725, in a published
//! SkillsBench trajectory, `benchflow-ai/skillsbench-trajectories`).

use std::sync::OnceLock;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// The compiled-in table.
const TABLE_CSV: &str = include_str!("../../data/model-prices.csv");
/// Where [`TABLE_CSV`] comes from, for error messages.
const TABLE_ORIGIN: &str = "data/model-prices.csv";

/// One dated price row. Prices are USD per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriceRow {
    /// `anthropic`, `openai`, `google`.
    pub provider: String,
    /// The provider's model id (`claude-opus-4-6`, `gpt-5.2`, `gemini-3-flash-preview`).
    pub model: String,
    /// Fresh (uncached) input, USD/MTok.
    pub input_usd_per_mtok: f64,
    /// Cache hits, USD/MTok.
    pub cached_input_usd_per_mtok: f64,
    /// Cache writes (Anthropic 5-minute), USD/MTok; `None` when the provider has no separate
    /// write charge (those tokens then cost the input rate).
    pub cache_write_usd_per_mtok: Option<f64>,
    /// Output (thinking included), USD/MTok.
    pub output_usd_per_mtok: f64,
    /// First day this row applies.
    pub effective_date: NaiveDate,
    /// Where the figures were read.
    pub source_url: String,
}

impl PriceRow {
    /// `provider/model@YYYY-MM-DD`: names the dated row a cost was computed from.
    pub fn label(&self) -> String {
        format!("{}/{}@{}", self.provider, self.model, self.effective_date)
    }

    /// Cost of `tokens` at this row's prices, USD (formula in the module docs).
    pub fn cost_usd(&self, tokens: &TokenCounts) -> f64 {
        let write = self
            .cache_write_usd_per_mtok
            .unwrap_or(self.input_usd_per_mtok);
        (tokens.input as f64 * self.input_usd_per_mtok
            + tokens.cached_input as f64 * self.cached_input_usd_per_mtok
            + tokens.cache_write as f64 * write
            + tokens.output as f64 * self.output_usd_per_mtok)
            / 1_000_000.0
    }
}

/// Token counts of a run (or one model's share of it), split the way prices are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Fresh input tokens: excludes cache hits and cache writes.
    pub input: u64,
    /// Input tokens served from the prompt cache.
    pub cached_input: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Output tokens (thinking included).
    pub output: u64,
}

impl TokenCounts {
    /// All input tokens: fresh + cache hits + cache writes (what ATIF calls `prompt_tokens`).
    pub fn prompt_total(&self) -> u64 {
        self.input + self.cached_input + self.cache_write
    }
}

impl std::ops::Add for TokenCounts {
    type Output = TokenCounts;
    fn add(self, o: TokenCounts) -> TokenCounts {
        TokenCounts {
            input: self.input + o.input,
            cached_input: self.cached_input + o.cached_input,
            cache_write: self.cache_write + o.cache_write,
            output: self.output + o.output,
        }
    }
}

/// A cost and the dated row it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Costed {
    /// USD.
    pub usd: f64,
    /// The row used.
    pub row: PriceRow,
}

/// Errors loading the table or pricing a model.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PricingError {
    /// A row of the price table is malformed.
    #[error("{origin} row {row}: {field}: {message}")]
    Table {
        /// The file.
        origin: String,
        /// 1-based data row (the header is row 0).
        row: usize,
        /// The column.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// No row for this model id or any alias of it.
    #[error("no price for model {model:?} (normalized {normalized:?})")]
    UnknownModel {
        /// As asked.
        model: String,
        /// After [`normalize_model`].
        normalized: String,
    },
    /// The model has rows, but none in effect on the date.
    #[error("no price for model {model:?} on {date}: its earliest row is from {earliest}")]
    NotYetPriced {
        /// As asked.
        model: String,
        /// The run's date.
        date: NaiveDate,
        /// The earliest row's date.
        earliest: NaiveDate,
    },
}

/// Raw CSV record (numbers and dates validated by hand for clear errors).
#[derive(Deserialize)]
struct RawRow {
    provider: String,
    model: String,
    input_usd_per_mtok: String,
    cached_input_usd_per_mtok: String,
    cache_write_usd_per_mtok: String,
    output_usd_per_mtok: String,
    effective_date: String,
    source_url: String,
}

/// A price table.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    rows: Vec<PriceRow>,
}

impl PriceTable {
    /// The compiled-in `data/model-prices.csv` (checked by a unit test, so it always parses).
    pub fn builtin() -> &'static PriceTable {
        static TABLE: OnceLock<PriceTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            PriceTable::parse(TABLE_CSV, TABLE_ORIGIN).expect(
                "data/model-prices.csv is validated by pricing::tests::builtin_table_parses",
            )
        })
    }

    /// Parses a table in the CSV shape of the module docs; `origin` names it in errors.
    ///
    /// # Errors
    /// [`PricingError::Table`] naming the row and column of a missing, negative or non-numeric
    /// price, a date that is not `YYYY-MM-DD`, an empty model or source, or a duplicate
    /// (model, date).
    pub fn parse(csv_text: &str, origin: &str) -> Result<PriceTable, PricingError> {
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(csv_text.as_bytes());
        let mut rows: Vec<PriceRow> = Vec::new();
        for (i, rec) in reader.deserialize::<RawRow>().enumerate() {
            let row_no = i + 1;
            let err = |field: &str, message: String| PricingError::Table {
                origin: origin.to_string(),
                row: row_no,
                field: field.to_string(),
                message,
            };
            let raw = rec.map_err(|e| err("(record)", e.to_string()))?;
            let price = |field: &str, v: &str| -> Result<f64, PricingError> {
                let p: f64 = v
                    .parse()
                    .map_err(|_| err(field, format!("{v:?} is not a number")))?;
                if !p.is_finite() || p < 0.0 {
                    return Err(err(field, format!("{v:?} is not a price ≥ 0")));
                }
                Ok(p)
            };
            if raw.model.is_empty() {
                return Err(err("model", "empty".into()));
            }
            if raw.provider.is_empty() {
                return Err(err("provider", "empty".into()));
            }
            if !raw.source_url.starts_with("https://") {
                return Err(err("source_url", "must be an https:// address".into()));
            }
            let row = PriceRow {
                input_usd_per_mtok: price("input_usd_per_mtok", &raw.input_usd_per_mtok)?,
                cached_input_usd_per_mtok: price(
                    "cached_input_usd_per_mtok",
                    &raw.cached_input_usd_per_mtok,
                )?,
                cache_write_usd_per_mtok: if raw.cache_write_usd_per_mtok.is_empty() {
                    None
                } else {
                    Some(price(
                        "cache_write_usd_per_mtok",
                        &raw.cache_write_usd_per_mtok,
                    )?)
                },
                output_usd_per_mtok: price("output_usd_per_mtok", &raw.output_usd_per_mtok)?,
                effective_date: NaiveDate::parse_from_str(&raw.effective_date, "%Y-%m-%d")
                    .map_err(|_| {
                        err(
                            "effective_date",
                            format!("{:?} is not YYYY-MM-DD", raw.effective_date),
                        )
                    })?,
                provider: raw.provider,
                model: raw.model,
                source_url: raw.source_url,
            };
            if rows
                .iter()
                .any(|r| r.model == row.model && r.effective_date == row.effective_date)
            {
                return Err(err(
                    "model",
                    format!("{} has two rows for {}", row.model, row.effective_date),
                ));
            }
            rows.push(row);
        }
        Ok(PriceTable { rows })
    }

    /// All rows, in file order.
    pub fn rows(&self) -> &[PriceRow] {
        &self.rows
    }

    /// The row for `model` in effect on `on` (the latest row dated on or before it), or the
    /// latest row when `on` is `None`. `model` matches a row's id exactly, else by
    /// [`normalize_model`] on both sides (`anthropic/claude-opus-4-6`, `claude-opus-4-6-20260101`,
    /// `us.anthropic.claude-opus-4-6-v1:0` and `claude-opus-4.6` all find `claude-opus-4-6`).
    ///
    /// # Errors
    /// [`PricingError::UnknownModel`] when nothing matches; [`PricingError::NotYetPriced`] when
    /// every matching row is dated after `on`.
    pub fn lookup(&self, model: &str, on: Option<NaiveDate>) -> Result<&PriceRow, PricingError> {
        let wanted = model.trim();
        let mut matches: Vec<&PriceRow> = self.rows.iter().filter(|r| r.model == wanted).collect();
        let normalized = normalize_model(wanted);
        if matches.is_empty() {
            matches = self
                .rows
                .iter()
                .filter(|r| normalize_model(&r.model) == normalized)
                .collect();
        }
        if matches.is_empty() {
            return Err(PricingError::UnknownModel {
                model: model.to_string(),
                normalized,
            });
        }
        let in_effect = matches
            .iter()
            .filter(|r| on.is_none_or(|d| r.effective_date <= d))
            .max_by_key(|r| r.effective_date);
        match in_effect {
            Some(r) => Ok(r),
            None => Err(PricingError::NotYetPriced {
                model: model.to_string(),
                date: on.unwrap_or_default(),
                earliest: matches
                    .iter()
                    .map(|r| r.effective_date)
                    .min()
                    .unwrap_or_default(),
            }),
        }
    }

    /// Cost of `tokens` of `model` on `on`, USD, with the row used.
    ///
    /// # Errors
    /// As [`PriceTable::lookup`].
    pub fn cost(
        &self,
        model: &str,
        on: Option<NaiveDate>,
        tokens: &TokenCounts,
    ) -> Result<Costed, PricingError> {
        let row = self.lookup(model, on)?;
        Ok(Costed {
            usd: row.cost_usd(tokens),
            row: row.clone(),
        })
    }
}

/// The alias form of a model id used for matching: lowercased; a `[1m]`-style suffix, a Vertex
/// `@version`, any `provider/` prefix and a Bedrock `….anthropic.` prefix and `-v1:0` suffix
/// removed; dots made dashes (`4.6` → `4-6`, `5.2` → `5-2`); then a trailing release date
/// (`-20251101`, `-2025-12-11`) and a trailing `-latest` or `-preview` removed.
pub fn normalize_model(model: &str) -> String {
    let mut m = model.trim().to_ascii_lowercase();
    if let Some(i) = m.find('[') {
        m.truncate(i);
    }
    if let Some(i) = m.find('@') {
        m.truncate(i);
    }
    if let Some(i) = m.rfind('/') {
        m = m[i + 1..].to_string();
    }
    if let Some(i) = m.rfind("anthropic.") {
        m = m[i + "anthropic.".len()..].to_string();
    }
    // Bedrock's `-v1:0` (the colon tells it from a model's own `-v3`).
    if let Some(i) = m.rfind("-v") {
        let tail = &m[i + 2..];
        if tail.contains(':') && tail.chars().all(|c| c.is_ascii_digit() || c == ':') {
            m.truncate(i);
        }
    }
    let mut m = m.replace('.', "-");
    loop {
        let before = m.len();
        for suffix in ["-latest", "-preview"] {
            if let Some(s) = m.strip_suffix(suffix) {
                m = s.to_string();
            }
        }
        m = strip_date_suffix(&m).to_string();
        if m.len() == before {
            break;
        }
    }
    m
}

/// `x-20251101` → `x`; `x-2025-12-11` → `x`; anything else unchanged.
fn strip_date_suffix(m: &str) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, tail)) = m.rsplit_once('-')
        && tail.len() == 8
        && digits(tail)
        && tail.starts_with("20")
    {
        return head;
    }
    let parts: Vec<&str> = m.rsplitn(4, '-').collect();
    if parts.len() == 4
        && parts[2].len() == 4
        && parts[2].starts_with("20")
        && [parts[0], parts[1], parts[2]].iter().all(|p| digits(p))
        && parts[1].len() == 2
        && parts[0].len() == 2
    {
        return parts[3];
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn builtin_table_parses() {
        let t = PriceTable::parse(TABLE_CSV, TABLE_ORIGIN).unwrap();
        assert!(t.rows().len() >= 9);
        assert!(
            t.rows()
                .iter()
                .all(|r| r.source_url.starts_with("https://"))
        );
        // Every Anthropic row carries a 5-minute write price of 1.25 × input and a hit price of
        // 0.1 × input (the provider's published multipliers); others carry no write price.
        for r in t.rows() {
            if r.provider == "anthropic" {
                assert!(close(
                    r.cache_write_usd_per_mtok.unwrap(),
                    r.input_usd_per_mtok * 1.25
                ));
                assert!(close(
                    r.cached_input_usd_per_mtok,
                    r.input_usd_per_mtok * 0.1
                ));
            } else {
                assert_eq!(r.cache_write_usd_per_mtok, None, "{}", r.model);
            }
        }
        assert_eq!(PriceTable::builtin(), &t);
    }

    #[test]
    fn normalizes_aliases() {
        for alias in [
            "claude-opus-4-6",
            "anthropic/claude-opus-4-6",
            "claude-opus-4-6-20260101",
            "Claude-Opus-4.6",
            "claude-opus-4-6[1m]",
            "claude-opus-4-6@20260205",
            "us.anthropic.claude-opus-4-6-v1:0",
            "global.anthropic.claude-opus-4-6-20260205-v1:0",
            "openrouter/anthropic/claude-opus-4.6",
        ] {
            assert_eq!(normalize_model(alias), "claude-opus-4-6", "{alias}");
        }
        assert_eq!(normalize_model("gpt-5.2-2025-12-11"), "gpt-5-2");
        assert_eq!(normalize_model("openai/gpt-5.2"), "gpt-5-2");
        assert_eq!(
            normalize_model("models/gemini-3-flash-preview"),
            "gemini-3-flash"
        );
        // A version number is not a date.
        assert_eq!(normalize_model("claude-opus-4-5"), "claude-opus-4-5");
        assert_eq!(normalize_model("gpt-5"), "gpt-5");
        assert_eq!(normalize_model("deepseek-v3"), "deepseek-v3");
    }

    #[test]
    fn looks_up_exact_and_alias_ids() {
        let t = PriceTable::builtin();
        for (asked, row) in [
            ("claude-opus-4-6", "claude-opus-4-6"),
            ("anthropic/claude-opus-4-6", "claude-opus-4-6"),
            ("claude-opus-4-6-20260101", "claude-opus-4-6"),
            ("claude-opus-4-5-20251101", "claude-opus-4-5"),
            (
                "us.anthropic.claude-opus-4-5-20251101-v1:0",
                "claude-opus-4-5",
            ),
            ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
            ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
            ("openai/gpt-5.2", "gpt-5.2"),
            ("gpt-5.2-codex", "gpt-5.2-codex"),
            ("gemini-3-flash", "gemini-3-flash-preview"),
        ] {
            assert_eq!(t.lookup(asked, None).unwrap().model, row, "{asked}");
        }
        // No prefix matching: Opus 4 is not Opus 4.6, GPT-5 is not GPT-5.2.
        assert!(matches!(
            t.lookup("claude-opus-4", None),
            Err(PricingError::UnknownModel { .. })
        ));
        assert!(matches!(
            t.lookup("gpt-5", None),
            Err(PricingError::UnknownModel { .. })
        ));
    }

    #[test]
    fn picks_the_row_in_effect_on_the_date() {
        let csv = "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,cache_write_usd_per_mtok,output_usd_per_mtok,effective_date,source_url\n\
                   openai,gpt-x,2,0.2,,16,2026-01-01,https://example.com/a\n\
                   openai,gpt-x,1.5,0.15,,10,2026-04-01,https://example.com/b\n";
        let t = PriceTable::parse(csv, "test.csv").unwrap();
        let on = |d| t.lookup("gpt-x", Some(day(d))).unwrap();
        assert_eq!(on("2026-01-01").input_usd_per_mtok, 2.0);
        assert_eq!(on("2026-03-31").input_usd_per_mtok, 2.0);
        assert_eq!(on("2026-04-01").input_usd_per_mtok, 1.5);
        assert_eq!(on("2026-04-01").label(), "openai/gpt-x@2026-04-01");
        assert_eq!(
            t.lookup("gpt-x", None).unwrap().effective_date,
            day("2026-04-01")
        );
        assert_eq!(
            t.lookup("gpt-x", Some(day("2025-12-31"))),
            Err(PricingError::NotYetPriced {
                model: "gpt-x".into(),
                date: day("2025-12-31"),
                earliest: day("2026-01-01"),
            })
        );
    }

    #[test]
    fn computes_costs_by_hand() {
        let t = PriceTable::builtin();
        // Opus 4.6: 1,000 fresh × $5 + 20,000 hits × $0.50 + 3,000 writes × $6.25
        //           + 500 out × $25 = 5,000 + 10,000 + 18,750 + 12,500 = 46,250 µ$ → $0.04625.
        let tokens = TokenCounts {
            input: 1_000,
            cached_input: 20_000,
            cache_write: 3_000,
            output: 500,
        };
        let c = t
            .cost("claude-opus-4-6", Some(day("2026-03-01")), &tokens)
            .unwrap();
        assert!(close(c.usd, 0.04625), "{}", c.usd);
        assert_eq!(c.row.label(), "anthropic/claude-opus-4-6@2026-02-05");
        assert_eq!(tokens.prompt_total(), 24_000);

        // Claude Code's own figure for Opus 4.5 (published SkillsBench run): $0.70374725.
        let opus45 = TokenCounts {
            input: 1_281,
            cached_input: 577_047,
            cache_write: 45_563,
            output: 4_962,
        };
        let c = t
            .cost("us.anthropic.claude-opus-4-5-20251101-v1:0", None, &opus45)
            .unwrap();
        assert!(close(c.usd, 0.70374725), "{}", c.usd);
        // …and for its Haiku 4.5 side calls: 276,477 in × $1 + 4,342 out × $5 = $0.298187.
        let haiku = TokenCounts {
            input: 276_477,
            output: 4_342,
            ..Default::default()
        };
        let c = t
            .cost("us.anthropic.claude-haiku-4-5-20251001-v1:0", None, &haiku)
            .unwrap();
        assert!(close(c.usd, 0.298187), "{}", c.usd);

        // GPT-5.2: no write price, so writes cost the input rate. 10,000 fresh × $1.75
        // + 90,000 hits × $0.175 + 100 writes × $1.75 + 2,000 out × $14
        // = 17,500 + 15,750 + 175 + 28,000 = 61,425 µ$ → $0.061425.
        let c = t
            .cost(
                "gpt-5.2",
                None,
                &TokenCounts {
                    input: 10_000,
                    cached_input: 90_000,
                    cache_write: 100,
                    output: 2_000,
                },
            )
            .unwrap();
        assert!(close(c.usd, 0.061425), "{}", c.usd);

        // Gemini 3 Flash: 200,000 fresh × $0.50 + 50,000 hits × $0.05 + 8,000 out × $3
        // = 100,000 + 2,500 + 24,000 = 126,500 µ$ → $0.1265.
        let c = t
            .cost(
                "gemini-3-flash-preview",
                None,
                &TokenCounts {
                    input: 200_000,
                    cached_input: 50_000,
                    cache_write: 0,
                    output: 8_000,
                },
            )
            .unwrap();
        assert!(close(c.usd, 0.1265), "{}", c.usd);
    }

    #[test]
    fn bad_tables_name_row_and_field() {
        let head = "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,cache_write_usd_per_mtok,output_usd_per_mtok,effective_date,source_url\n";
        let bad = |row: &str| PriceTable::parse(&format!("{head}{row}\n"), "p.csv").unwrap_err();
        let e = bad("anthropic,m,five,0.5,6.25,25,2026-01-01,https://x");
        assert_eq!(
            e.to_string(),
            "p.csv row 1: input_usd_per_mtok: \"five\" is not a number"
        );
        assert!(matches!(
            bad("anthropic,m,5,-1,6.25,25,2026-01-01,https://x"),
            PricingError::Table { ref field, .. } if field == "cached_input_usd_per_mtok"
        ));
        assert!(matches!(
            bad("anthropic,m,5,0.5,6.25,25,01/02/2026,https://x"),
            PricingError::Table { ref field, .. } if field == "effective_date"
        ));
        assert!(matches!(
            bad("anthropic,m,5,0.5,6.25,25,2026-01-01,"),
            PricingError::Table { ref field, .. } if field == "source_url"
        ));
        let dup = PriceTable::parse(
            &format!(
                "{head}a,m,1,0.1,,2,2026-01-01,https://x\na,m,1,0.1,,2,2026-01-01,https://y\n"
            ),
            "p.csv",
        )
        .unwrap_err();
        assert!(matches!(dup, PricingError::Table { row: 2, .. }));
    }
}
