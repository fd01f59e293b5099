//! Keys as data: one table maps keys to actions per context. The help overlay and the footer hints
//! are generated from it, so they can never disagree with what the keys do.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where a binding applies. `Global` bindings apply unless a more specific one matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Context {
    /// Everywhere (except text input and dialogs).
    Global,
    /// The trial grid.
    Grid,
    /// The per-domain pass-rate pane.
    Domains,
    /// The trial detail view.
    Detail,
    /// The skill browser (learning spaces, skills, files, sessions).
    Skills,
    /// The Results view (pass rates, comparisons, breakdowns).
    Results,
    /// The event log pane.
    Events,
    /// A yes/no confirmation.
    Confirm,
}

impl Context {
    /// Heading in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Grid => "Trial grid",
            Context::Domains => "Domain pane",
            Context::Detail => "Trial detail",
            Context::Skills => "Skill browser",
            Context::Results => "Results",
            Context::Events => "Event log",
            Context::Confirm => "Confirmation",
        }
    }
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Leave the dashboard (asks first when that would stop a run).
    Quit,
    /// Show or hide the key list.
    Help,
    /// Next pane: grid → domains → event log.
    NextPane,
    /// Go to the event log pane.
    Events,
    /// Cursor up.
    Up,
    /// Cursor down.
    Down,
    /// Cursor left.
    Left,
    /// Cursor right.
    Right,
    /// One page up.
    PageUp,
    /// One page down.
    PageDown,
    /// To the first row.
    Top,
    /// To the last row.
    Bottom,
    /// Open the selected trial.
    Open,
    /// Close the current view, dialog or filter.
    Back,
    /// Type a filter (text, `domain:`, `status:`, `cond:`).
    Filter,
    /// Cycle the status filter (all, failed, running, queued, passed).
    CycleStatus,
    /// Cycle the row order.
    CycleSort,
    /// Domains ↔ difficulty rows.
    ToggleDifficulty,
    /// Retry the selected trial.
    Retry,
    /// Retry every failed trial in the current filter.
    RetryAllFailed,
    /// Cancel the selected running or queued trial.
    Cancel,
    /// Next tab.
    NextTab,
    /// Previous tab.
    PrevTab,
    /// Search in the text.
    Search,
    /// Next search match.
    NextMatch,
    /// Previous search match.
    PrevMatch,
    /// Follow the end of a growing log.
    ToggleFollow,
    /// Wrap long lines (or cut them at the edge).
    ToggleWrap,
    /// Open the skill browser.
    OpenSkills,
    /// Open the Results view.
    OpenResults,
    /// Close the current view at once (not one level back).
    CloseView,
    /// Show the diff curated → learned instead of the file.
    ToggleDiff,
    /// Answer yes.
    Yes,
    /// Answer no.
    No,
}

/// One row of the key table.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    /// Context.
    pub context: Context,
    /// Key names (`q`, `?`, `up`, `enter`, `pgdown`, `ctrl-c`, …).
    pub keys: &'static [&'static str],
    /// Action.
    pub action: Action,
    /// Help text.
    pub help: &'static str,
    /// One or two words for the footer.
    pub hint: &'static str,
}

const fn b(
    context: Context,
    keys: &'static [&'static str],
    action: Action,
    hint: &'static str,
    help: &'static str,
) -> Binding {
    Binding {
        context,
        keys,
        action,
        help,
        hint,
    }
}

use Action::*;
use Context::{Confirm, Detail, Domains, Events as EventLog, Global, Grid, Results, Skills};

/// The key table.
pub const KEYMAP: &[Binding] = &[
    b(
        Global,
        &["q", "ctrl-c"],
        Quit,
        "quit",
        "quit (asks when a run would stop)",
    ),
    b(Global, &["?"], Help, "help", "show / hide this help"),
    b(
        Global,
        &["tab"],
        NextPane,
        "pane",
        "next pane: grid, domains, events",
    ),
    b(
        Global,
        &["esc"],
        Back,
        "back",
        "close view, dialog or filter",
    ),
    b(Grid, &["up", "k"], Up, "up", "move up"),
    b(Grid, &["down", "j"], Down, "down", "move down"),
    b(Grid, &["left", "h"], Left, "left", "move left"),
    b(Grid, &["right", "l"], Right, "right", "move right"),
    b(Grid, &["pgup"], PageUp, "page up", "page up"),
    b(Grid, &["pgdown"], PageDown, "page down", "page down"),
    b(Grid, &["home", "g"], Top, "top", "first task"),
    b(Grid, &["end", "G"], Bottom, "bottom", "last task"),
    b(Grid, &["enter"], Open, "detail", "open trial detail"),
    b(
        Grid,
        &["/"],
        Filter,
        "filter",
        "filter: text domain: status: cond: diff:",
    ),
    b(Grid, &["f"], CycleStatus, "status", "cycle status filter"),
    b(Grid, &["s"], CycleSort, "sort", "cycle sort order"),
    b(Grid, &["r"], Retry, "retry", "retry selected failed trial"),
    b(
        Grid,
        &["R"],
        RetryAllFailed,
        "retry all",
        "retry all failed shown (confirm)",
    ),
    b(
        Grid,
        &["c"],
        Cancel,
        "cancel",
        "cancel selected trial (confirm)",
    ),
    b(
        Grid,
        &["K"],
        OpenSkills,
        "skills",
        "skill browser: spaces and skills",
    ),
    b(
        Grid,
        &["a"],
        OpenResults,
        "results",
        "results: pass rates, CIs, Δ, g",
    ),
    b(
        Grid,
        &["e"],
        Events,
        "events",
        "event log: what happened, when",
    ),
    b(Domains, &["up", "k"], Up, "up", "scroll up"),
    b(
        Domains,
        &["left", "h"],
        Left,
        "left",
        "columns off to the left",
    ),
    b(
        Domains,
        &["right", "l"],
        Right,
        "right",
        "columns off to the right",
    ),
    b(Domains, &["down", "j"], Down, "down", "scroll down"),
    b(
        Domains,
        &["d"],
        ToggleDifficulty,
        "by difficulty",
        "by domain ↔ by difficulty",
    ),
    b(
        Domains,
        &["K"],
        OpenSkills,
        "skills",
        "skill browser: spaces and skills",
    ),
    b(
        Domains,
        &["a"],
        OpenResults,
        "results",
        "results: pass rates, CIs, Δ, g",
    ),
    b(
        Domains,
        &["e"],
        Events,
        "events",
        "event log: what happened, when",
    ),
    b(EventLog, &["up", "k"], Up, "up", "scroll up (older)"),
    b(EventLog, &["down", "j"], Down, "down", "scroll down"),
    b(EventLog, &["pgup"], PageUp, "page up", "page up"),
    b(
        EventLog,
        &["pgdown", "space"],
        PageDown,
        "page down",
        "page down",
    ),
    b(EventLog, &["home", "g"], Top, "newest", "newest event"),
    b(EventLog, &["end", "G"], Bottom, "oldest", "oldest event"),
    b(
        EventLog,
        &["/"],
        Filter,
        "filter",
        "filter: text, level:warn",
    ),
    b(
        EventLog,
        &["K"],
        OpenSkills,
        "skills",
        "skill browser: spaces and skills",
    ),
    b(
        EventLog,
        &["a"],
        OpenResults,
        "results",
        "results: pass rates, CIs, Δ, g",
    ),
    b(Results, &["up", "k"], Up, "up", "scroll up"),
    b(Results, &["down", "j"], Down, "down", "scroll down"),
    b(
        Results,
        &["left", "h"],
        Left,
        "left",
        "columns off to the left",
    ),
    b(
        Results,
        &["right", "l"],
        Right,
        "right",
        "columns off to the right",
    ),
    b(Results, &["pgup"], PageUp, "page up", "page up"),
    b(
        Results,
        &["pgdown", "space"],
        PageDown,
        "page down",
        "page down",
    ),
    b(Results, &["home", "g"], Top, "top", "top"),
    b(Results, &["end", "G"], Bottom, "bottom", "bottom"),
    b(
        Results,
        &["d"],
        ToggleDifficulty,
        "by difficulty",
        "by domain ↔ by difficulty",
    ),
    b(Results, &["esc", "q"], Back, "back", "back to the grid"),
    b(
        Detail,
        &["tab", "right", "l"],
        NextTab,
        "next tab",
        "next tab",
    ),
    b(
        Detail,
        &["backtab", "left", "h"],
        PrevTab,
        "prev tab",
        "previous tab",
    ),
    b(Detail, &["up", "k"], Up, "up", "scroll up"),
    b(Detail, &["down", "j"], Down, "down", "scroll down"),
    b(Detail, &["pgup"], PageUp, "page up", "page up"),
    b(
        Detail,
        &["pgdown", "space"],
        PageDown,
        "page down",
        "page down",
    ),
    b(Detail, &["home", "g"], Top, "top", "top"),
    b(Detail, &["end", "G"], Bottom, "bottom", "bottom"),
    b(Detail, &["/"], Search, "search", "search"),
    b(Detail, &["n"], NextMatch, "next", "next match"),
    b(Detail, &["N"], PrevMatch, "prev", "previous match"),
    b(
        Detail,
        &["f"],
        ToggleFollow,
        "follow",
        "follow the log while it grows",
    ),
    b(
        Detail,
        &["w"],
        ToggleWrap,
        "wrap",
        "wrap long lines or cut them",
    ),
    b(Detail, &["r"], Retry, "retry", "retry this trial"),
    b(
        Detail,
        &["c"],
        Cancel,
        "cancel",
        "cancel this trial (confirm)",
    ),
    b(Detail, &["q", "esc"], Back, "back", "back to the grid"),
    b(Skills, &["up", "k"], Up, "up", "move up / scroll up"),
    b(
        Skills,
        &["down", "j"],
        Down,
        "down",
        "move down / scroll down",
    ),
    b(Skills, &["pgup"], PageUp, "page up", "page up"),
    b(
        Skills,
        &["pgdown", "space"],
        PageDown,
        "page down",
        "page down",
    ),
    b(Skills, &["home", "g"], Top, "top", "first row / top"),
    b(Skills, &["end", "G"], Bottom, "bottom", "last row / bottom"),
    b(
        Skills,
        &["enter", "right", "l"],
        Open,
        "open",
        "open: space › skill › file",
    ),
    b(
        Skills,
        &["esc", "left", "h"],
        Back,
        "back",
        "one level back (or close)",
    ),
    b(
        Skills,
        &["tab", "backtab"],
        NextTab,
        "sessions",
        "skills ↔ sessions of the space",
    ),
    b(
        Skills,
        &["d"],
        ToggleDiff,
        "diff",
        "diff curated → learned of the file",
    ),
    b(
        Skills,
        &["q"],
        CloseView,
        "close",
        "close the skill browser",
    ),
    b(Confirm, &["y", "enter"], Yes, "yes", "yes"),
    b(Confirm, &["n", "esc", "q"], No, "no", "no"),
];

/// The name of a key event as written in [`KEYMAP`] (`None` for keys never bound).
pub fn key_name(k: &KeyEvent) -> Option<String> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    let name = match k.code {
        KeyCode::Char(' ') => "space".to_string(),
        KeyCode::Char(c) if ctrl => format!("ctrl-{}", c.to_ascii_lowercase()),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Up => "up".into(),
        KeyCode::Down => "down".into(),
        KeyCode::Left => "left".into(),
        KeyCode::Right => "right".into(),
        KeyCode::PageUp => "pgup".into(),
        KeyCode::PageDown => "pgdown".into(),
        KeyCode::Home => "home".into(),
        KeyCode::End => "end".into(),
        KeyCode::Enter => "enter".into(),
        KeyCode::Esc => "esc".into(),
        KeyCode::Tab => "tab".into(),
        KeyCode::BackTab => "backtab".into(),
        KeyCode::Backspace => "backspace".into(),
        _ => return None,
    };
    Some(name)
}

/// The action for a key in `context`: the context's own binding first, then a global one
/// (dialogs take only their own keys).
pub fn lookup(context: Context, key: &KeyEvent) -> Option<Action> {
    let name = key_name(key)?;
    let find = |ctx: Context| {
        KEYMAP
            .iter()
            .find(|b| b.context == ctx && b.keys.contains(&name.as_str()))
            .map(|b| b.action)
    };
    find(context).or_else(|| {
        if context == Context::Confirm {
            None
        } else {
            find(Context::Global)
        }
    })
}

/// A key name as the help shows it: arrows as arrows, `PgUp`, `S-Tab`, `C-c`.
pub fn key_label(k: &str) -> String {
    match k {
        "up" => "↑".into(),
        "down" => "↓".into(),
        "left" => "←".into(),
        "right" => "→".into(),
        "pgup" => "PgUp".into(),
        "pgdown" => "PgDn".into(),
        "home" => "Home".into(),
        "end" => "End".into(),
        "enter" => "Enter".into(),
        "esc" => "Esc".into(),
        "tab" => "Tab".into(),
        "backtab" => "S-Tab".into(),
        "space" => "Space".into(),
        k => match k.strip_prefix("ctrl-") {
            Some(c) => format!("C-{c}"),
            None => k.to_string(),
        },
    }
}

/// Actions the help shows on one row when a context binds both, with the row's text.
const PAIRS: [(Action, Action, &str); 6] = [
    (Action::Up, Action::Down, "up / down"),
    (Action::Left, Action::Right, "left / right"),
    (Action::PageUp, Action::PageDown, "page up / down"),
    (Action::NextTab, Action::PrevTab, "next / previous tab"),
    (
        Action::NextMatch,
        Action::PrevMatch,
        "next / previous match",
    ),
    (Action::Yes, Action::No, "yes / no"),
];

/// Help rows grouped by context, in table order: (context title, [(keys, help)]). Every binding
/// is on a row; pairs such as up/down share one (`↑ k / ↓ j  up / down`), and `Home`/`End` too
/// when their helps differ only in the direction, so the whole table fits a 120×40 screen.
pub fn help_sections() -> Vec<(&'static str, Vec<(String, String)>)> {
    let keys_of = |b: &Binding| {
        b.keys
            .iter()
            .map(|k| key_label(k))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out: Vec<(&'static str, Vec<(String, String)>)> = Vec::new();
    let mut done: Vec<(Context, Action)> = Vec::new();
    for b in KEYMAP {
        if done.contains(&(b.context, b.action)) {
            continue;
        }
        let partner = PAIRS.iter().find_map(|(x, y, help)| {
            let other = if b.action == *x {
                *y
            } else if b.action == *y {
                *x
            } else {
                return None;
            };
            KEYMAP
                .iter()
                .find(|o| o.context == b.context && o.action == other)
                .map(|o| (o, *help))
        });
        let row = match partner {
            Some((o, help)) => {
                done.push((o.context, o.action));
                (format!("{} / {}", keys_of(b), keys_of(o)), help.to_string())
            }
            None => (keys_of(b), b.help.to_string()),
        };
        match out.iter_mut().find(|(t, _)| *t == b.context.title()) {
            Some((_, rows)) => rows.push(row),
            None => out.push((b.context.title(), vec![row])),
        }
    }
    out
}

/// Short hints for the footer: the first key of each listed action in `context`.
pub fn hints(context: Context, actions: &[Action]) -> Vec<(String, &'static str)> {
    actions
        .iter()
        .filter_map(|a| {
            KEYMAP
                .iter()
                .find(|b| b.action == *a && (b.context == context || b.context == Context::Global))
                .map(|b| (b.keys[0].to_string(), b.hint))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn context_binding_wins_then_global() {
        assert_eq!(
            lookup(Context::Grid, &key(KeyCode::Char('j'))),
            Some(Action::Down)
        );
        assert_eq!(
            lookup(Context::Grid, &key(KeyCode::Char('q'))),
            Some(Action::Quit)
        );
        assert_eq!(
            lookup(Context::Detail, &key(KeyCode::Char('q'))),
            Some(Action::Back)
        );
        assert_eq!(lookup(Context::Confirm, &key(KeyCode::Char('?'))), None);
        assert_eq!(
            lookup(
                Context::Grid,
                &KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)
            ),
            Some(Action::Quit)
        );
        assert_eq!(
            lookup(Context::Grid, &key(KeyCode::Char('R'))),
            Some(Action::RetryAllFailed)
        );
    }

    #[test]
    fn no_key_is_bound_twice_in_one_context() {
        let mut seen = std::collections::HashSet::new();
        for b in KEYMAP {
            for k in b.keys {
                assert!(
                    seen.insert((b.context, *k)),
                    "{k} bound twice in {:?}",
                    b.context
                );
            }
        }
    }

    #[test]
    fn the_filter_help_names_every_key_the_filter_takes() {
        let filter = KEYMAP
            .iter()
            .find(|b| b.context == Context::Grid && b.action == Action::Filter)
            .expect("/ in the grid");
        for key in crate::tui::model::FILTER_KEYS {
            assert!(
                filter.help.contains(&format!("{key}:")),
                "{key}: missing from {:?}",
                filter.help
            );
        }
    }

    #[test]
    fn help_lists_every_binding() {
        let sections = help_sections();
        for b in KEYMAP {
            let (_, rows) = sections
                .iter()
                .find(|(t, _)| *t == b.context.title())
                .expect("section");
            let keys = b
                .keys
                .iter()
                .map(|k| key_label(k))
                .collect::<Vec<_>>()
                .join(" ");
            assert!(
                rows.iter()
                    .any(|(k, _)| k.split(" / ").any(|part| part == keys)),
                "{:?} {:?} missing from the help",
                b.context,
                b.keys
            );
        }
        // Pairs make the table shorter than the key list.
        let n: usize = sections.iter().map(|(_, rows)| rows.len()).sum();
        assert!(n < KEYMAP.len(), "{n}");
    }
}
