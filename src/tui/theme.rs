//! Colours and glyphs as data: `themes/*.toml` (built in: `dark`, `light`, `mono`), or any TOML file
//! of the same shape given by path. `NO_COLOR` (any non-empty value, see no-color.org) strips every
//! colour and keeps modifiers, so state still reads through glyphs and bold/reverse.

use std::path::Path;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// Built-in themes, embedded at build time.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("mono", include_str!("../../themes/mono.toml")),
];

/// Theme errors.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    /// Not a built-in name and not a readable file.
    #[error("unknown theme {0:?} (built in: dark, light, mono; or a path to a .toml file)")]
    Unknown(String),
    /// The file does not parse.
    #[error("theme {path}: {message}")]
    Invalid {
        /// File or built-in name.
        path: String,
        /// Parser message.
        message: String,
    },
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct StyleSpec {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    modifiers: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    styles: std::collections::BTreeMap<String, StyleSpec>,
    glyphs: Glyphs,
}

/// One-character glyphs for trial states and bars. Every state has its own glyph, so the grid reads
/// without colour.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Glyphs {
    /// Waiting for a slot.
    pub queued: String,
    /// Image build / container start.
    pub building: String,
    /// Agent running.
    pub agent: String,
    /// Agent running but silent past the run's stall time. Optional in theme files: defaults
    /// to `‖`.
    #[serde(default = "default_stalled_glyph")]
    pub stalled: String,
    /// Verifier running.
    pub verifying: String,
    /// Passed.
    pub pass: String,
    /// Failed (wrong output).
    pub fail: String,
    /// Agent or verifier timeout.
    pub timeout: String,
    /// Build/runtime error or no reward.
    pub error: String,
    /// Cancelled by the operator.
    pub cancelled: String,
    /// No such trial.
    pub missing: String,
    /// Filled bar cell.
    pub bar_full: String,
    /// Empty bar cell.
    pub bar_empty: String,
    /// How pane borders are drawn: `plain` (box-drawing lines), `rounded` or `ascii` (`+-|`, for
    /// terminals and fonts without box drawing). Optional: defaults to `plain`.
    #[serde(default)]
    pub borders: Borders,
    /// The line between groups of columns and between tabs. Optional: defaults to `│`.
    #[serde(default = "default_divider")]
    pub divider: String,
    /// Marks that more lies off-screen to the left / right. Optional: default `‹` / `›`.
    #[serde(default = "default_more_left")]
    pub more_left: String,
    /// See `more_left`.
    #[serde(default = "default_more_right")]
    pub more_right: String,
}

/// How pane borders are drawn (the `borders` glyph of a theme).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Borders {
    /// Box-drawing lines `┌─┐│└┘`.
    #[default]
    Plain,
    /// Box-drawing lines with round corners `╭─╮│╰╯`.
    Rounded,
    /// `+-+|++`: no character outside ASCII.
    Ascii,
}

impl Borders {
    /// The ratatui border set.
    pub fn set(self) -> ratatui::symbols::border::Set<'static> {
        match self {
            Borders::Plain => ratatui::symbols::border::PLAIN,
            Borders::Rounded => ratatui::symbols::border::ROUNDED,
            Borders::Ascii => ratatui::symbols::border::Set {
                top_left: "+",
                top_right: "+",
                bottom_left: "+",
                bottom_right: "+",
                vertical_left: "|",
                vertical_right: "|",
                horizontal_top: "-",
                horizontal_bottom: "-",
            },
        }
    }
}

fn default_stalled_glyph() -> String {
    "‖".to_string()
}

fn default_divider() -> String {
    "│".to_string()
}

fn default_more_left() -> String {
    "‹".to_string()
}

fn default_more_right() -> String {
    "›".to_string()
}

/// A loaded theme.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    /// Theme name.
    pub name: String,
    /// Body text.
    pub text: Style,
    /// Secondary text.
    pub dim: Style,
    /// Highlights (numbers that matter).
    pub accent: Style,
    /// Block titles.
    pub title: Style,
    /// Borders.
    pub border: Style,
    /// Border of the focused pane.
    pub focus: Style,
    /// Section headers (domains).
    pub header: Style,
    /// Cursor / selection.
    pub selected: Style,
    /// Search matches.
    pub matched: Style,
    /// Passed trials.
    pub pass: Style,
    /// Failed trials.
    pub fail: Style,
    /// Timeouts.
    pub timeout: Style,
    /// Errors.
    pub error: Style,
    /// Trials in progress.
    pub running: Style,
    /// A running agent marked stalled. Optional in theme files: defaults to `warn`.
    pub stalled: Style,
    /// Queued trials.
    pub queued: Style,
    /// Cancelled trials.
    pub cancelled: Style,
    /// Filled part of bars and gauges.
    pub bar: Style,
    /// Empty part of bars.
    pub bar_empty: Style,
    /// Warnings.
    pub warn: Style,
    /// Learned SOP entries in a SKILL.md (`## …` with `- Principle:`, `- When to Apply:`,
    /// `- Steps:`). Optional in theme files: defaults to `pass`.
    pub sop: Style,
    /// Learned Warning entries in a SKILL.md (`- Symptom:`, `- Root Cause:`,
    /// `- Correct Approach:`, `- Prevention:`). Optional in theme files: defaults to `warn`.
    pub warning: Style,
    /// A Δ above zero (results, pass-rate tables). Optional in theme files: defaults to `pass`.
    pub gain: Style,
    /// A Δ below zero. Optional in theme files: defaults to `fail`.
    pub loss: Style,
    /// Rubric tier Excellent (90–100). Optional: defaults to `pass`.
    pub tier_excellent: Style,
    /// Rubric tier Good (75–89). Optional: defaults to `pass`.
    pub tier_good: Style,
    /// Rubric tier Acceptable (60–74). Optional: defaults to `text`.
    pub tier_acceptable: Style,
    /// Rubric tier Below Average (40–59). Optional: defaults to `warn`.
    pub tier_below_average: Style,
    /// Rubric tier Poor (20–39). Optional: defaults to `fail`.
    pub tier_poor: Style,
    /// Rubric tier Failing (0–19). Optional: defaults to `error`.
    pub tier_failing: Style,
    /// Glyphs.
    pub glyphs: Glyphs,
}

fn parse_color(s: &str, theme: &str) -> Result<Color, ThemeError> {
    s.parse::<Color>().map_err(|_| ThemeError::Invalid {
        path: theme.to_string(),
        message: format!("unknown colour {s:?}"),
    })
}

fn parse_modifier(s: &str, theme: &str) -> Result<Modifier, ThemeError> {
    Ok(match s {
        "bold" => Modifier::BOLD,
        "dim" => Modifier::DIM,
        "italic" => Modifier::ITALIC,
        "underlined" => Modifier::UNDERLINED,
        "reversed" => Modifier::REVERSED,
        "crossed_out" => Modifier::CROSSED_OUT,
        other => {
            return Err(ThemeError::Invalid {
                path: theme.to_string(),
                message: format!("unknown modifier {other:?}"),
            });
        }
    })
}

impl Theme {
    /// Loads a built-in theme by name or a theme file by path.
    ///
    /// # Errors
    /// [`ThemeError`] for an unknown name, an unreadable file or a malformed theme.
    pub fn load(name_or_path: &str) -> Result<Theme, ThemeError> {
        if let Some((_, text)) = BUILT_IN.iter().find(|(n, _)| *n == name_or_path) {
            return Theme::parse(text, name_or_path);
        }
        let path = Path::new(name_or_path);
        let text = std::fs::read_to_string(path)
            .map_err(|_| ThemeError::Unknown(name_or_path.to_string()))?;
        Theme::parse(&text, name_or_path)
    }

    /// The default theme (`dark`).
    pub fn default_theme() -> Theme {
        Theme::load("dark").expect("built-in theme parses")
    }

    /// Parses theme TOML; `origin` names it in errors.
    ///
    /// # Errors
    /// [`ThemeError::Invalid`].
    pub fn parse(text: &str, origin: &str) -> Result<Theme, ThemeError> {
        let file: ThemeFile = toml::from_str(text).map_err(|e| ThemeError::Invalid {
            path: origin.to_string(),
            message: e.to_string(),
        })?;
        let parse_spec = |spec: &StyleSpec| -> Result<Style, ThemeError> {
            let mut s = Style::default();
            if let Some(fg) = &spec.fg {
                s = s.fg(parse_color(fg, origin)?);
            }
            if let Some(bg) = &spec.bg {
                s = s.bg(parse_color(bg, origin)?);
            }
            for m in &spec.modifiers {
                s = s.add_modifier(parse_modifier(m, origin)?);
            }
            Ok(s)
        };
        let style = |key: &str| -> Result<Style, ThemeError> {
            let spec = file.styles.get(key).ok_or_else(|| ThemeError::Invalid {
                path: origin.to_string(),
                message: format!("missing style {key:?}"),
            })?;
            parse_spec(spec)
        };
        // Keys added after the first themes: optional, with a default from an older key.
        let style_or = |key: &str, default: &str| -> Result<Style, ThemeError> {
            match file.styles.get(key) {
                Some(spec) => parse_spec(spec),
                None => style(default),
            }
        };
        let theme = Theme {
            name: file.name.clone(),
            text: style("text")?,
            dim: style("dim")?,
            accent: style("accent")?,
            title: style("title")?,
            border: style("border")?,
            focus: style("focus")?,
            header: style("header")?,
            selected: style("selected")?,
            matched: style("match")?,
            pass: style("pass")?,
            fail: style("fail")?,
            timeout: style("timeout")?,
            error: style("error")?,
            running: style("running")?,
            stalled: style_or("stalled", "warn")?,
            queued: style("queued")?,
            cancelled: style("cancelled")?,
            bar: style("bar")?,
            bar_empty: style("bar_empty")?,
            warn: style("warn")?,
            sop: style_or("sop", "pass")?,
            warning: style_or("warning", "warn")?,
            gain: style_or("gain", "pass")?,
            loss: style_or("loss", "fail")?,
            tier_excellent: style_or("tier_excellent", "pass")?,
            tier_good: style_or("tier_good", "pass")?,
            tier_acceptable: style_or("tier_acceptable", "text")?,
            tier_below_average: style_or("tier_below_average", "warn")?,
            tier_poor: style_or("tier_poor", "fail")?,
            tier_failing: style_or("tier_failing", "error")?,
            glyphs: file.glyphs,
        };
        for (k, g) in [
            ("pass", &theme.glyphs.pass),
            ("fail", &theme.glyphs.fail),
            ("queued", &theme.glyphs.queued),
            ("stalled", &theme.glyphs.stalled),
        ] {
            if unicode_width(g) != 1 {
                return Err(ThemeError::Invalid {
                    path: origin.to_string(),
                    message: format!("glyph {k} must be one column wide"),
                });
            }
        }
        Ok(theme)
    }

    /// The same theme without any colour (for `NO_COLOR`): modifiers stay, and the selection
    /// becomes reversed video so the cursor remains visible.
    pub fn without_colors(mut self) -> Theme {
        for s in [
            &mut self.text,
            &mut self.dim,
            &mut self.accent,
            &mut self.title,
            &mut self.border,
            &mut self.focus,
            &mut self.header,
            &mut self.selected,
            &mut self.matched,
            &mut self.pass,
            &mut self.fail,
            &mut self.timeout,
            &mut self.error,
            &mut self.running,
            &mut self.stalled,
            &mut self.queued,
            &mut self.cancelled,
            &mut self.bar,
            &mut self.bar_empty,
            &mut self.warn,
            &mut self.sop,
            &mut self.warning,
            &mut self.gain,
            &mut self.loss,
            &mut self.tier_excellent,
            &mut self.tier_good,
            &mut self.tier_acceptable,
            &mut self.tier_below_average,
            &mut self.tier_poor,
            &mut self.tier_failing,
        ] {
            s.fg = None;
            s.bg = None;
        }
        self.selected = self.selected.add_modifier(Modifier::REVERSED);
        self.matched = self.matched.add_modifier(Modifier::REVERSED);
        self
    }

    /// The style of a rubric tier.
    pub fn tier(&self, tier: crate::analysis::rubric::Tier) -> Style {
        use crate::analysis::rubric::Tier;
        match tier {
            Tier::Excellent => self.tier_excellent,
            Tier::Good => self.tier_good,
            Tier::Acceptable => self.tier_acceptable,
            Tier::BelowAverage => self.tier_below_average,
            Tier::Poor => self.tier_poor,
            Tier::Failing => self.tier_failing,
        }
    }

    /// The style of a difference: `gain` above zero, `loss` below, `dim` at zero (within
    /// `1e-9`) or when it is not a number.
    pub fn delta(&self, d: f64) -> Style {
        if d > 1e-9 {
            self.gain
        } else if d < -1e-9 {
            self.loss
        } else {
            self.dim
        }
    }

    /// Loads `name_or_path` and applies `NO_COLOR` from the environment.
    ///
    /// # Errors
    /// As [`Theme::load`].
    pub fn from_env(name_or_path: &str) -> Result<Theme, ThemeError> {
        let t = Theme::load(name_or_path)?;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Ok(if no_color { t.without_colors() } else { t })
    }
}

fn unicode_width(s: &str) -> usize {
    ratatui::text::Span::raw(s).width()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_themes_parse_and_glyphs_are_distinct() {
        for (name, _) in BUILT_IN {
            let t = Theme::load(name).unwrap();
            let g = &t.glyphs;
            let all = [
                &g.queued,
                &g.building,
                &g.agent,
                &g.stalled,
                &g.verifying,
                &g.pass,
                &g.fail,
                &g.timeout,
                &g.error,
                &g.cancelled,
            ];
            let set: std::collections::BTreeSet<&String> = all.iter().copied().collect();
            assert_eq!(
                set.len(),
                all.len(),
                "{name}: glyphs must differ so states read without colour"
            );
        }
    }

    #[test]
    fn no_color_removes_colours_keeps_modifiers() {
        let t = Theme::load("dark").unwrap().without_colors();
        assert_eq!(t.pass.fg, None);
        assert!(t.selected.add_modifier.contains(Modifier::REVERSED));
        assert!(t.accent.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn entry_styles_are_optional_and_default_to_older_keys() {
        let dark = BUILT_IN.iter().find(|(n, _)| *n == "dark").unwrap().1;
        let old: String = dark
            .lines()
            .filter(|l| {
                !["sop ", "warning ", "gain ", "loss ", "tier_", "stalled "]
                    .iter()
                    .any(|k| l.starts_with(k))
            })
            .collect::<Vec<_>>()
            .join("\n");
        let t = Theme::parse(&old, "old.toml").unwrap();
        assert_eq!((t.sop, t.warning), (t.pass, t.warn));
        assert_eq!((t.gain, t.loss), (t.pass, t.fail));
        assert_eq!((t.tier_good, t.tier_failing), (t.pass, t.error));
        assert_eq!((t.stalled, t.glyphs.stalled.as_str()), (t.warn, "‖"));
        let built_in = Theme::load("dark").unwrap();
        assert_ne!(built_in.sop, Style::default());
    }

    #[test]
    fn bad_themes_are_named() {
        let e = Theme::parse("name = \"x\"\n[styles]\n[glyphs]\n", "my.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("my.toml"), "{e}");
        assert!(Theme::load("no-such-theme").is_err());
    }
}
