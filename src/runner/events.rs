//! What a running attempt tells whoever runs it, as typed events (as nextest's executor sends
//! `ExecutorEvent`s to its dispatcher): the phase it entered, what it learned on the way (the
//! image, the container, the agent's exit code and trajectory, the verifier's tests) and how long
//! each step took. The runner knows nothing of how they are recorded: the engine
//! (`engine/attempt.rs`) turns them into writes of the run's ledger, and judges what a failure
//! was. The verdict itself comes back with the attempt's end ([`super::TrialEnd`]).

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;

use crate::skillsbench::selfgen::GeneratedSkills;

/// One thing an attempt reports while it runs, in the order it happens.
#[derive(Debug, Clone)]
pub enum TrialEvent {
    /// The attempt began: its environment is being set up (phase `building`).
    Started {
        /// When, RFC 3339.
        at: String,
        /// The Docker host it runs on.
        host: String,
        /// Its trial folder.
        trial_dir: PathBuf,
        /// The agent's settings (harness, version, model, sampling), JSON.
        agent_settings: serde_json::Value,
    },
    /// Values the task needs that nobody set (names only; their values are never reported).
    MissingEnv(Vec<String>),
    /// The trial's image is ready.
    Image {
        /// Its tag.
        tag: String,
        /// The images built or reused for it and their build seconds, JSON.
        builds: Option<serde_json::Value>,
    },
    /// The task's CPU or memory request was cut to the host's, JSON (`None`: not cut).
    Clamped(Option<serde_json::Value>),
    /// The trial's main container started.
    ContainerStarted {
        /// Its id.
        id: String,
    },
    /// The environment is ready and the agent starts (phase `agent`).
    AgentStarted {
        /// When, RFC 3339 (also the end of the environment setup).
        at: String,
    },
    /// What the running agent is doing (every `live_every`, whether or not anything changed).
    Live(Live),
    /// The skills a self-generated trial's agent wrote.
    GeneratedSkills(GeneratedSkills),
    /// The agent's session ended (however it ended).
    AgentEnded {
        /// When, RFC 3339.
        at: String,
    },
    /// The agent's process exited with this code (an agent that returned).
    AgentExit(Option<i64>),
    /// The agent's ATIF trajectory was written.
    Trajectory(TrajectoryFacts),
    /// A session of the trial other than the solving one (two-phase self-generation's
    /// skill-writing session) cost this much more.
    ExtraSession(SessionTotals),
    /// The verifier starts (phase `verifying`).
    VerifierStarted {
        /// When, RFC 3339.
        at: String,
    },
    /// The verifier ended.
    VerifierEnded {
        /// When, RFC 3339.
        at: String,
        /// Its exit code, when it exited.
        exit_code: Option<i64>,
    },
    /// The verifier's CTRF report counted these tests.
    Tests {
        /// Tests run.
        total: i64,
        /// Tests passed.
        passed: i64,
    },
    /// One step of the attempt took this long (for `skillscope bench runner`).
    Step(Step, Duration),
}

/// The steps an attempt's time is spent in, in the order they happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// The image built or found.
    Image,
    /// What the image holds read (its files by content and search paths; once per image).
    Facts,
    /// The agent prepared (a harness CLI's volume, …).
    PrepareAgent,
    /// The trial's site opened: a compose task's services, an `allow_internet` trial's own
    /// network.
    Site,
    /// The agent's environment created and started.
    Start,
    /// The skills visible to the agent read in its environment: an exec of its own, or (an
    /// agent that takes it as its exec's prelude) this side's reading of what that exec found.
    Exposure,
    /// The agent's session (its execs).
    Agent,
    /// Every process of the agent ended (`kill -9 -1` from skillscope's shell) and confirmed —
    /// and, when the trial goes on to its verifier, what the agent changed read in the same exec.
    Kill,
    /// What the agent changed sorted by content against the image (work, toolchain).
    Collect,
    /// `/logs/agent` copied out and `agent/tamper.json` written.
    Evidence,
    /// The verifier's environment created and started from the task's image.
    VerifierStart,
    /// The agent's work carried into the verifier's environment, the task's tests with it.
    Carry,
    /// The verifier's copies of skills uploaded (the tests arrive with the work: [`Step::Carry`]).
    Upload,
    /// The verifier (its execs).
    Verifier,
    /// What the tests left running ended (and noted).
    Sweep,
    /// The verifier's `/logs/verifier` and `/logs/artifacts` copied out.
    Download,
    /// The run's ledger written (progress and the end).
    Store,
    /// The trial's environments (and a compose task's services) removed, in the background
    /// after the attempt.
    Remove,
}

impl Step {
    /// Every step, in order.
    pub const ALL: [Step; 18] = [
        Step::Image,
        Step::Facts,
        Step::PrepareAgent,
        Step::Site,
        Step::Start,
        Step::Exposure,
        Step::Agent,
        Step::Kill,
        Step::Collect,
        Step::Evidence,
        Step::VerifierStart,
        Step::Carry,
        Step::Upload,
        Step::Verifier,
        Step::Sweep,
        Step::Download,
        Step::Store,
        Step::Remove,
    ];

    /// Its name in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Image => "image",
            Step::Facts => "image facts",
            Step::PrepareAgent => "prepare agent",
            Step::Site => "site (services, network)",
            Step::Start => "agent environment",
            Step::Exposure => "exposure scan",
            Step::Agent => "agent exec",
            Step::Kill => "end agent + read changes",
            Step::Collect => "sort changes",
            Step::Evidence => "copy out + record",
            Step::VerifierStart => "verifier environment",
            Step::Carry => "carry work",
            Step::Upload => "uploads",
            Step::Verifier => "verifier exec",
            Step::Sweep => "end test leftovers",
            Step::Download => "download /logs",
            Step::Store => "store writes",
            Step::Remove => "remove (background)",
        }
    }
}

/// What the agent's trajectory says of the session: counts, tokens and cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrajectoryFacts {
    /// Where it was written.
    pub path: PathBuf,
    /// Steps.
    pub steps: i64,
    /// Tool calls.
    pub tool_calls: i64,
    /// Steps that look failed.
    pub error_steps: i64,
    /// The agent ended with a message.
    pub final_message: bool,
    /// Tokens and cost of the session.
    pub totals: SessionTotals,
}

/// Token counts and cost of one agent session, from its trajectory (`None`: not reported).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SessionTotals {
    /// Input tokens (cached included).
    pub input: Option<i64>,
    /// Cached input tokens.
    pub cached: Option<i64>,
    /// Output tokens.
    pub output: Option<i64>,
    /// Cost, USD.
    pub cost: Option<f64>,
}

/// What a running attempt's agent is doing, reported every few seconds while it runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// When the agent last wrote output (its files in `agent/` last grew; the agent's start
    /// until then), RFC 3339.
    pub last_output_at: String,
    /// What its log says it did so far (LLM harnesses).
    pub activity: Option<super::agents::Activity>,
}

/// Receives the events of running attempts.
#[async_trait]
pub trait TrialEvents: Send + Sync {
    /// Attempt `attempt_id` reports `event`.
    async fn event(&self, attempt_id: i64, event: TrialEvent);
}
