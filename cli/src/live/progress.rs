//! Drives one of the pure renderers from events: owns the model, decides
//! the mode (auto → tty or plain), and writes to the terminal.
//! tty and plain go to stderr (like BuildKit), json lines to stdout.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant, SystemTime};

use trident_proto::v1::LogLevel;

use crate::args::{ProgressMode, Verbosity};
use crate::render::event::Event;
use crate::render::json;
use crate::render::model::Model;
use crate::render::plain::PlainView;
use crate::render::tty::{self, TtyStyle};

/// Environment variable that turns colour off (<https://no-color.org>).
pub const NO_COLOR_ENV: &str = "NO_COLOR";
/// Least time between two tty redraws.
const REDRAW_INTERVAL: Duration = Duration::from_millis(100);

/// The resolved mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Tty,
    Plain,
    Json,
}

impl Mode {
    pub fn resolve(mode: ProgressMode) -> Mode {
        match mode {
            ProgressMode::Tty => Mode::Tty,
            ProgressMode::Plain => Mode::Plain,
            ProgressMode::Json => Mode::Json,
            ProgressMode::Auto if std::io::stderr().is_terminal() => Mode::Tty,
            ProgressMode::Auto => Mode::Plain,
        }
    }
}

/// The most verbose log level shown for a verbosity.
pub fn max_level(verbosity: Verbosity) -> Option<LogLevel> {
    Some(match verbosity {
        Verbosity::Off => LogLevel::Unspecified,
        Verbosity::Error => LogLevel::Error,
        Verbosity::Warn => LogLevel::Warn,
        Verbosity::Info => LogLevel::Info,
        Verbosity::Debug => LogLevel::Debug,
        Verbosity::Trace => return None,
    })
}

/// The live view of one operation.
#[derive(Debug)]
pub struct Progress {
    mode: Mode,
    pub model: Model,
    plain: PlainView,
    style: TtyStyle,
    drawn_lines: usize,
    last_draw: Option<Instant>,
    dirty: bool,
    level: Option<LogLevel>,
}

impl Progress {
    pub fn new(mode: ProgressMode, verbosity: Verbosity) -> Self {
        let mode = Mode::resolve(mode);
        let color = mode == Mode::Tty
            && std::env::var_os(NO_COLOR_ENV).is_none_or(|v| v.is_empty())
            && std::io::stderr().is_terminal();
        let (height, width) = console::Term::stderr().size();
        let level = max_level(verbosity);
        Progress {
            mode,
            model: Model::new(level),
            plain: PlainView::default(),
            style: TtyStyle {
                color,
                width: usize::from(width).max(40),
                height: usize::from(height).max(10),
            },
            drawn_lines: 0,
            last_draw: None,
            dirty: false,
            level,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Feeds one event and shows what changed.
    pub fn feed(&mut self, event: &Event) {
        self.model.apply(event);
        match self.mode {
            Mode::Json => {
                if let Event::Log(line) = event
                    && !level_kept(self.level, line.level)
                {
                    return;
                }
                // A closed pipe (`| head`) must not panic the view.
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", json::line(event)).and_then(|()| out.flush());
            }
            Mode::Plain => self.flush_plain(),
            Mode::Tty => {
                self.dirty = true;
                self.tick();
            }
        }
    }

    /// Redraws the tty frame if something changed (or time passed).
    pub fn tick(&mut self) {
        if self.mode != Mode::Tty {
            return;
        }
        let due = self
            .last_draw
            .is_none_or(|at| at.elapsed() >= REDRAW_INTERVAL);
        if due {
            self.draw();
        }
    }

    fn draw(&mut self) {
        let frame = tty::frame(&self.model, SystemTime::now(), &self.style);
        let mut err = std::io::stderr().lock();
        let mut text = String::new();
        if self.drawn_lines > 0 {
            text.push_str(&format!("\x1b[{}A\r", self.drawn_lines));
        }
        for line in &frame {
            text.push_str(line);
            text.push_str("\x1b[K\n");
        }
        text.push_str("\x1b[J");
        // A terminal write error leaves nothing else to tell the user on.
        let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
        self.drawn_lines = frame.len();
        self.last_draw = Some(Instant::now());
        self.dirty = false;
    }

    fn flush_plain(&mut self) {
        let lines = self.plain.lines(&self.model);
        if lines.is_empty() {
            return;
        }
        let mut err = std::io::stderr().lock();
        for line in lines {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Final output: the last frame and, on failure, the structured error
    /// with the failed phase's last log lines.
    pub fn finish(&mut self) {
        match self.mode {
            Mode::Tty => {
                self.draw();
                let block = tty::failure_block(&self.model, &self.style);
                let mut err = std::io::stderr().lock();
                for line in block {
                    let _ = writeln!(err, "{line}");
                }
            }
            Mode::Plain => self.flush_plain(),
            Mode::Json => {}
        }
    }

    /// Whether a redraw is pending.
    pub fn dirty(&self) -> bool {
        self.dirty
    }
}

fn level_kept(max: Option<LogLevel>, level: LogLevel) -> bool {
    match max {
        None => true,
        Some(max) => {
            let level = if level == LogLevel::Unspecified {
                LogLevel::Info
            } else {
                level
            };
            (level as i32) <= (max as i32)
        }
    }
}
