//! Walkie driven from outside its window: `walkie --press`, `--release`, `--toggle`, `--show`
//! and `--hang-up` reach the running Walkie and act there.
//!
//! Why: where the global shortcut cannot reach (a Wayland session: the X11 grab sees keys only
//! while an X11 window has focus), the desktop's own shortcut settings can run a command
//! instead. The command is a second launch, which the single-instance plugin hands to the
//! first one over the session bus with its arguments ([`crate::desktop::single_instance`]), so
//! it costs no socket or protocol of Walkie's own. A launch with an action when no Walkie runs
//! starts Walkie (there is no call yet to press in).

use std::fmt;

/// What a launch asks of the running Walkie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteAction {
    /// The talk key goes down (as holding the global shortcut).
    Press,
    /// The talk key comes up: the turn is sent.
    Release,
    /// Down if it is up, up if it is down: for desktops whose shortcuts fire on press alone.
    Toggle,
    /// The window comes forward.
    Show,
    /// The call ends, and Walkie stays unconnected until Connect.
    HangUp,
}

impl RemoteAction {
    const ALL: [(&'static str, RemoteAction); 5] = [
        ("--press", RemoteAction::Press),
        ("--release", RemoteAction::Release),
        ("--toggle", RemoteAction::Toggle),
        ("--show", RemoteAction::Show),
        ("--hang-up", RemoteAction::HangUp),
    ];

    pub fn flag(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, action)| *action == self)
            .map(|(flag, _)| *flag)
            .expect("every action has a flag")
    }
}

/// How Walkie was launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Start (or bring the running Walkie forward), then do `action`, if any; `hidden`: start
    /// with the window in the tray (Start on login's entry).
    Run {
        action: Option<RemoteAction>,
        hidden: bool,
    },
    /// `--help`: print [`USAGE`] and exit.
    Help,
}

/// Arguments Walkie does not understand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgsError {
    /// Not one of Walkie's options.
    Unknown(String),
    /// Two actions at once.
    TwoActions(&'static str, &'static str),
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::Unknown(arg) => write!(f, "unknown option {arg:?}: see walkie --help"),
            ArgsError::TwoActions(first, second) => {
                write!(f, "{first} and {second} at once: give one of them")
            }
        }
    }
}

impl std::error::Error for ArgsError {}

pub const USAGE: &str = "\
Usage: walkie [--press | --release | --toggle | --show | --hang-up] [--hidden]

Starts Walkie, or, when it is running already, tells it:
  --press     the talk key goes down (start talking)
  --release   the talk key comes up (the turn is sent)
  --toggle    start talking, or send the turn when talking
  --show      bring the window forward
  --hang-up   end the call (Connect calls again)
  --hidden    start with the window hidden in the tray (where one shows)
Bind these in your desktop's keyboard shortcuts where Walkie's own shortcut does not reach
(Wayland). --help prints this.";

/// Reads the arguments after the program's name.
pub fn parse<I, S>(args: I) -> Result<Launch, ArgsError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut chosen: Option<RemoteAction> = None;
    let mut hidden = false;
    for arg in args {
        let arg = arg.as_ref();
        if arg == "--help" || arg == "-h" {
            return Ok(Launch::Help);
        }
        if arg == "--hidden" {
            hidden = true;
            continue;
        }
        let Some((_, action)) = RemoteAction::ALL.iter().find(|(flag, _)| *flag == arg) else {
            return Err(ArgsError::Unknown(arg.to_owned()));
        };
        if let Some(first) = chosen.filter(|first| first != action) {
            return Err(ArgsError::TwoActions(first.flag(), action.flag()));
        }
        chosen = Some(*action);
    }
    Ok(Launch::Run {
        action: chosen,
        hidden,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_arguments_start_walkie_and_each_flag_names_its_action() {
        let run = |action, hidden| Ok(Launch::Run { action, hidden });
        assert_eq!(parse::<_, &str>([]), run(None, false));
        for (flag, action) in RemoteAction::ALL {
            assert_eq!(parse([flag]), run(Some(action), false));
            assert_eq!(action.flag(), flag);
        }
        assert_eq!(
            parse(["--toggle", "--toggle"]),
            run(Some(RemoteAction::Toggle), false)
        );
        assert_eq!(parse(["--hidden"]), run(None, true));
        assert_eq!(parse(["--help"]), Ok(Launch::Help));
        assert_eq!(parse(["--press", "-h"]), Ok(Launch::Help));
    }

    #[test]
    fn an_unknown_option_or_two_actions_are_refused_by_name() {
        let unknown = parse(["--pres"]).unwrap_err();
        assert_eq!(unknown, ArgsError::Unknown("--pres".to_owned()));
        assert!(unknown.to_string().contains("\"--pres\""), "{unknown}");
        let two = parse(["--press", "--hang-up"]).unwrap_err();
        assert_eq!(
            two.to_string(),
            "--press and --hang-up at once: give one of them"
        );
    }
}
