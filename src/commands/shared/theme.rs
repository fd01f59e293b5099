//! The dashboard's theme: the flag, else the config file, else `dark`, with `NO_COLOR` applied.

use color_eyre::eyre::Result;

use crate::config::FileConfig;
use crate::tui::theme::Theme;

/// The theme from the flag, else the config file, else `dark`; `NO_COLOR` applied.
///
/// # Errors
/// An unknown theme or a bad theme file.
pub fn pick_theme(flag: Option<&str>, file: &FileConfig) -> Result<Theme> {
    let name = flag.or(file.ui.theme.as_deref()).unwrap_or("dark");
    Ok(Theme::from_env(name)?)
}
