//! Schema migrations (applied in order by `rusqlite_migration`; the version is `PRAGMA user_version`).

use rusqlite_migration::{M, Migrations};

/// The migrations' SQL, oldest first: migration N (`PRAGMA user_version` N) runs `UP[N - 1]`.
/// Never edit a released migration; append a new one.
const UP: &[&str] = &[
        r#"
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    created_at    TEXT NOT NULL,
    tasks_dir     TEXT NOT NULL,
    agent         TEXT NOT NULL,
    model         TEXT,
    n_trials      INTEGER NOT NULL,
    conditions    TEXT NOT NULL,            -- JSON array of condition keys
    jobs_dir      TEXT NOT NULL,
    status        TEXT NOT NULL,            -- running | stopped | finished
    started_at    TEXT,
    finished_at   TEXT,
    owner_pid     INTEGER,
    owner_host    TEXT,
    heartbeat_at  TEXT,
    settings      TEXT NOT NULL DEFAULT '{}' -- JSON, never secret values
);

CREATE TABLE run_tasks (
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL,
    domain      TEXT NOT NULL,
    difficulty  TEXT NOT NULL,
    path        TEXT NOT NULL,
    problems    TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
    PRIMARY KEY (run_id, task_id)
);

CREATE TABLE trials (
    id                    INTEGER PRIMARY KEY,
    run_id                INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    task_id               TEXT NOT NULL,
    condition             TEXT NOT NULL,
    trial_index           INTEGER NOT NULL,
    attempt               INTEGER NOT NULL,
    superseded            INTEGER NOT NULL DEFAULT 0,
    status                TEXT NOT NULL,
    outcome               TEXT,
    reward                REAL,
    rewards               TEXT,
    agent                 TEXT NOT NULL,
    model                 TEXT,
    host                  TEXT,
    image                 TEXT,
    container_id          TEXT,
    trial_name            TEXT NOT NULL,
    trial_dir             TEXT,
    queued_at             TEXT NOT NULL,
    started_at            TEXT,
    finished_at           TEXT,
    build_started_at      TEXT,
    build_finished_at     TEXT,
    agent_started_at      TEXT,
    agent_finished_at     TEXT,
    verifier_started_at   TEXT,
    verifier_finished_at  TEXT,
    agent_exit_code       INTEGER,
    verifier_exit_code    INTEGER,
    error                 TEXT,
    UNIQUE (run_id, task_id, condition, trial_index, attempt)
);
CREATE INDEX trials_by_run_state ON trials (run_id, superseded, status);

CREATE TABLE commands (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,              -- retry | cancel
    trial_id    INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    created_at  TEXT NOT NULL,
    state       TEXT NOT NULL DEFAULT 'pending', -- pending | done | rejected
    handled_at  TEXT,
    note        TEXT
);
CREATE INDEX commands_pending ON commands (run_id, state);

CREATE TABLE run_events (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    at       TEXT NOT NULL,
    level    TEXT NOT NULL,                 -- info | warn | error
    message  TEXT NOT NULL
);
"#,
        // A covering index for the dashboard's bulk read of latest attempts (queries::current_briefs):
        // 10,000 trials without a table lookup per row.
        "CREATE INDEX trials_brief ON trials (run_id, superseded, task_id, condition, trial_index, attempt,
                                                  status, outcome, reward, finished_at);",
        // A unique id per run: container labels use it, so two databases that happen to hold runs
        // of the same name never clean up each other's containers.
        "ALTER TABLE runs ADD COLUMN uid TEXT;
             UPDATE runs SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL;",
        // Harbor interop: where a run came from, token use and cost, the imported trial's id (so a
        // re-import adds nothing), its trajectory, step and tool-call counts, CTRF test counts, and
        // which skills each trial used.
        "ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'native';
             ALTER TABLE trials ADD COLUMN n_input_tokens INTEGER;
             ALTER TABLE trials ADD COLUMN n_cache_tokens INTEGER;
             ALTER TABLE trials ADD COLUMN n_output_tokens INTEGER;
             ALTER TABLE trials ADD COLUMN cost_usd REAL;
             ALTER TABLE trials ADD COLUMN import_key TEXT;
             ALTER TABLE trials ADD COLUMN trajectory_path TEXT;
             ALTER TABLE trials ADD COLUMN n_steps INTEGER;
             ALTER TABLE trials ADD COLUMN n_tool_calls INTEGER;
             ALTER TABLE trials ADD COLUMN tests_total INTEGER;
             ALTER TABLE trials ADD COLUMN tests_passed INTEGER;
             CREATE UNIQUE INDEX trials_import_key ON trials (import_key) WHERE import_key IS NOT NULL;
             CREATE TABLE skill_uses (
                 trial_id    INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
                 skill       TEXT NOT NULL,
                 kind        TEXT NOT NULL,          -- read | resource | shell | invoke
                 first_step  INTEGER,
                 count       INTEGER NOT NULL,
                 PRIMARY KEY (trial_id, skill, kind)
             );
             CREATE INDEX skill_uses_by_skill ON skill_uses (skill);",
        // Acontext: learning spaces and where each trial is in the learning pipeline (so a crash
        // or a dead server resumes at the exact step), the curated skills uploaded into a space,
        // every exported or curated skill version with its files (for diffs), which trials changed
        // which skill, exports, and experiments (the two-round pipeline and its phase).
        r#"
CREATE TABLE learning_spaces (
    id             INTEGER PRIMARY KEY,
    label          TEXT NOT NULL,            -- LS-A, LS-B, …
    run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    condition      TEXT NOT NULL,            -- condition key of the trials it learns from
    experiment     TEXT,                     -- experiment name, when part of one
    base_url       TEXT NOT NULL,
    remote_id      TEXT,                     -- Acontext learning space UUID
    curated        INTEGER NOT NULL,         -- starts with the tasks' curated skills
    keep_defaults  INTEGER NOT NULL,         -- keeps daily-logs and user-general-facts
    status_mode    TEXT,                     -- patch | criteria, once detected
    state          TEXT NOT NULL,            -- setup | learning | learned
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    error          TEXT,
    UNIQUE (run_id, label)
);

CREATE TABLE learn_steps (
    space_id         INTEGER NOT NULL REFERENCES learning_spaces(id) ON DELETE CASCADE,
    trial_id         INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    seq              INTEGER NOT NULL,       -- learning order within the space
    task_id          TEXT NOT NULL,
    trial_index      INTEGER NOT NULL,
    verdict          TEXT NOT NULL,          -- success | failed (from the verifier)
    session_id       TEXT NOT NULL,          -- the session's use_uuid
    step             TEXT NOT NULL,          -- see store::learning::Step
    mode             TEXT,                   -- patch | criteria
    task_ids         TEXT NOT NULL DEFAULT '[]',
    task_statuses    TEXT NOT NULL DEFAULT '[]',
    learning_status  TEXT,
    skills_before    TEXT,                   -- JSON {skill name: updated_at} before learning
    tries            INTEGER NOT NULL DEFAULT 0,
    error            TEXT,
    updated_at       TEXT NOT NULL,
    finished_at      TEXT,
    PRIMARY KEY (space_id, trial_id)
);
CREATE INDEX learn_steps_order ON learn_steps (space_id, seq);

CREATE TABLE space_uploads (
    space_id         INTEGER NOT NULL REFERENCES learning_spaces(id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    content_hash     TEXT NOT NULL,
    source_task      TEXT NOT NULL,
    remote_skill_id  TEXT,
    state            TEXT NOT NULL,          -- uploaded | included | skipped
    note             TEXT,
    PRIMARY KEY (space_id, name)
);

CREATE TABLE skill_versions (
    id            INTEGER PRIMARY KEY,
    space_id      INTEGER NOT NULL REFERENCES learning_spaces(id) ON DELETE CASCADE,
    origin        TEXT NOT NULL,             -- curated | learned
    name          TEXT NOT NULL,
    description   TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    remote_id     TEXT,
    dir           TEXT,
    recorded_at   TEXT NOT NULL,
    problems      TEXT NOT NULL DEFAULT '[]',
    UNIQUE (space_id, origin, name, content_hash)
);

CREATE TABLE skill_files (
    version_id  INTEGER NOT NULL REFERENCES skill_versions(id) ON DELETE CASCADE,
    path        TEXT NOT NULL,
    size        INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    text        TEXT,
    PRIMARY KEY (version_id, path)
);

CREATE TABLE skill_sources (
    space_id  INTEGER NOT NULL REFERENCES learning_spaces(id) ON DELETE CASCADE,
    skill     TEXT NOT NULL,
    trial_id  INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    change    TEXT NOT NULL,                 -- created | updated
    PRIMARY KEY (space_id, skill, trial_id)
);

CREATE TABLE space_exports (
    id           INTEGER PRIMARY KEY,
    space_id     INTEGER NOT NULL REFERENCES learning_spaces(id) ON DELETE CASCADE,
    dir          TEXT NOT NULL,
    exported_at  TEXT NOT NULL,
    n_skills     INTEGER NOT NULL,
    refused      TEXT NOT NULL DEFAULT '[]'  -- JSON [{skill, path, reason}]
);

CREATE TABLE experiments (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    plan        TEXT NOT NULL,               -- JSON, never secret values
    phase       TEXT NOT NULL,               -- round1 | learn | export | round2 | done
    round1_run  TEXT NOT NULL,
    round2_run  TEXT NOT NULL,
    note        TEXT
);
"#,
        // Analysis: error observations and a closing message per trajectory (rubric completion),
        // trials synthesized from published aggregates (`passCount` of n trials), and skill
        // invocations scored with the skill rubric — named as the rubric's own SQL names them, so
        // its dashboard queries run unchanged.
        "ALTER TABLE trials ADD COLUMN n_error_steps INTEGER;
             ALTER TABLE trials ADD COLUMN final_message INTEGER;
             ALTER TABLE trials ADD COLUMN aggregated INTEGER NOT NULL DEFAULT 0;
             CREATE TABLE skill_invocations (
                 trial_id                 INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
                 skill_name               TEXT NOT NULL,
                 run_id                   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                 timestamp                TEXT NOT NULL,
                 completion_score         INTEGER NOT NULL,
                 efficiency_score         INTEGER NOT NULL,
                 quality_score_component  INTEGER NOT NULL,
                 satisfaction_score       INTEGER NOT NULL,
                 quality_score            INTEGER NOT NULL,
                 errored                  INTEGER NOT NULL,
                 PRIMARY KEY (trial_id, skill_name)
             );
             CREATE INDEX skill_invocations_by_skill ON skill_invocations (skill_name, timestamp);",
        // Analysis at scale. Which conditions hold published aggregates: a tiny partial index, so
        // the results pass stays index-only. `skill_invocations` holds derived scores (rebuilt by
        // `score_run` from the trials), so it is recreated as one B-tree keyed by run, trial and
        // skill: a run's invocations are one range, written in key order — 400,000 rows cost a
        // fraction of the three B-trees the first layout updated per row.
        "CREATE INDEX trials_aggregated ON trials (run_id, condition) WHERE aggregated = 1;
             DROP TABLE skill_invocations;
             CREATE TABLE skill_invocations (
                 run_id                   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                 trial_id                 INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
                 skill_name               TEXT NOT NULL,
                 timestamp                TEXT NOT NULL,
                 completion_score         INTEGER NOT NULL,
                 efficiency_score         INTEGER NOT NULL,
                 quality_score_component  INTEGER NOT NULL,
                 satisfaction_score       INTEGER NOT NULL,
                 quality_score            INTEGER NOT NULL,
                 errored                  INTEGER NOT NULL,
                 PRIMARY KEY (run_id, trial_id, skill_name)
             ) WITHOUT ROWID;
             CREATE TABLE skill_scoring (
                 run_id  INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
                 marker  TEXT NOT NULL
             );",
        // A run survives its infrastructure: why a run stopped, when it has been waiting for
        // Docker (and why), a stop asked for from another process, the command that resumes it,
        // the health of each Docker host, and the fault that interrupted an attempt.
        "ALTER TABLE runs ADD COLUMN stop_reason TEXT;
             ALTER TABLE runs ADD COLUMN waiting_since TEXT;
             ALTER TABLE runs ADD COLUMN waiting_reason TEXT;
             ALTER TABLE runs ADD COLUMN stop_requested_at TEXT;
             ALTER TABLE runs ADD COLUMN resume_command TEXT;
             ALTER TABLE trials ADD COLUMN fault TEXT;
             CREATE TABLE run_hosts (
                 run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                 host        TEXT NOT NULL,
                 state       TEXT NOT NULL,       -- up | down | draining
                 since       TEXT NOT NULL,
                 last_error  TEXT,
                 slots       INTEGER NOT NULL,
                 running     INTEGER NOT NULL DEFAULT 0,
                 checked_at  TEXT NOT NULL,
                 PRIMARY KEY (run_id, host)
             );",
        // Evaluation metrics. `trial_plans`: the trials an imported source planned per
        // task and condition (a Harbor job's `n_attempts` for every task it lists, a published
        // file's trials) — a task's planned trials are the sum over its sources, so uneven jobs are
        // not scored against the run's largest count. `failure_category`: the evaluation plan's
        // category of a judged failure (timeout | execution | coherence | verification |
        // unclassified), decided when the trial finishes or is imported. `agent_settings`: what
        // decides the agent's behaviour in the trial (harness and version, model, sampling
        // settings), JSON.
        "CREATE TABLE trial_plans (
                 run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                 source     TEXT NOT NULL,
                 task_id    TEXT NOT NULL,
                 condition  TEXT NOT NULL,
                 n_trials   INTEGER NOT NULL,
                 PRIMARY KEY (run_id, source, task_id, condition)
             ) WITHOUT ROWID;
             ALTER TABLE trials ADD COLUMN failure_category TEXT;
             ALTER TABLE trials ADD COLUMN agent_settings TEXT;",
        // Running the real thing: what a running agent is doing (steps so far, its last tool
        // call, when it last wrote output, since when it is stalled — its tokens and cost so far
        // go into the trial's token and cost columns), the run's cost budget and the current
        // limit on concurrent agent sessions per provider.
        "ALTER TABLE trials ADD COLUMN live_steps INTEGER;
             ALTER TABLE trials ADD COLUMN live_tool TEXT;
             ALTER TABLE trials ADD COLUMN last_output_at TEXT;
             ALTER TABLE trials ADD COLUMN stalled_at TEXT;
             ALTER TABLE runs ADD COLUMN max_cost_usd REAL;
             ALTER TABLE runs ADD COLUMN provider_limit INTEGER;",
        // The comparisons the hypotheses need. `generated_skills`: what the agent of a
        // self-generated trial wrote, validated (JSON, `skillsbench::selfgen::GeneratedSkills`).
        // `experiments.split`: an experiment's held-out split (JSON, `experiment::split::Split`).
        // `round2_skills`: the skills each task received in round 2 (`round2_skills` selection).
        "ALTER TABLE trials ADD COLUMN generated_skills TEXT;
             ALTER TABLE experiments ADD COLUMN split TEXT;
             CREATE TABLE round2_skills (
                 experiment  TEXT NOT NULL,
                 label       TEXT NOT NULL,       -- the learning space (LS-A, LS-B)
                 task_id     TEXT NOT NULL,
                 mode        TEXT NOT NULL,       -- all | domain | task
                 n_skills    INTEGER NOT NULL,
                 skills      TEXT NOT NULL,       -- JSON array of skill folder names
                 PRIMARY KEY (experiment, label, task_id)
             ) WITHOUT ROWID;",
        // What an attempt's environment was, beside its verdict (issue 27): `missing_env`, the
        // names (never the values) of needed environment values that were empty because the run
        // allowed it (`--allow-missing-env`), JSON array; `clamped`, the task's CPU or memory
        // request cut to what the Docker host has, JSON (`runner::trial::Clamped`);
        // `image_builds`, each image of the trial's chain with the seconds its build took (0 when
        // reused), JSON (`runner::image::ImageBuild`).
        "ALTER TABLE trials ADD COLUMN missing_env TEXT;
             ALTER TABLE trials ADD COLUMN clamped TEXT;
             ALTER TABLE trials ADD COLUMN image_builds TEXT;",
        // Skill exposure: what each attempt's agent could see of skills when it started
        // (`skillsbench::exposure::SkillExposure`, also in the trial's `agent/skill-exposure.json`)
        // and whether its trajectory can say which it used (`skill_use`: known | unknown).
        "CREATE TABLE trial_exposures (
                 trial_id     INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,
                 captured_at  TEXT NOT NULL,
                 skill_use    TEXT NOT NULL,       -- known | unknown
                 builtins     TEXT,                -- JSON skillsbench::exposure::Builtins; NULL: no harness
                 error        TEXT                 -- the skill folders could not be read
             );
             CREATE TABLE exposed_skills (
                 trial_id  INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
                 dir       TEXT NOT NULL,          -- folder name
                 sha256    TEXT NOT NULL,          -- skillsbench::skill::folder_hash
                 name      TEXT NOT NULL,
                 origin    TEXT NOT NULL,          -- task | learned | generated | harness | other
                 enabled   INTEGER NOT NULL,       -- 0: a harness built-in switched off
                 path      TEXT NOT NULL,
                 paths     TEXT NOT NULL,          -- JSON array of container paths
                 files     INTEGER NOT NULL,
                 bytes     INTEGER NOT NULL,
                 PRIMARY KEY (trial_id, dir, sha256)
             ) WITHOUT ROWID;",
        // While Acontext is away (issue 26): since when a learning space waits for it, the last
        // error and when the next retry is made (RFC 3339), cleared when it answers again — what
        // `status` and the dashboard's overview show instead of a line per request.
        "ALTER TABLE learning_spaces ADD COLUMN waiting_since TEXT;
             ALTER TABLE learning_spaces ADD COLUMN waiting_reason TEXT;
             ALTER TABLE learning_spaces ADD COLUMN next_retry_at TEXT;",
        // An imported run's status is `imported`, not `finished`: nothing ran here, and its
        // planned trials are what its sources held.
        "UPDATE runs SET status = 'imported' WHERE source <> 'native' AND status = 'finished';",
        // The field's task identity (issue 39): `trials.task_digest`, Harbor 0.26's digest of the
        // task folder the attempt ran (`sha256:<hex>`, `skillsbench::digest::task_digest`; for an
        // imported trial, its `lock.json`'s `task.digest`); `run_tasks.digest`, the digest each
        // task had when the run began (resume refuses a folder whose digests changed);
        // `runs.task_set`, the pinned task set the run was checked against (`--task-set`), JSON
        // `domain::TaskSetPin`.
        "ALTER TABLE trials ADD COLUMN task_digest TEXT;
             ALTER TABLE run_tasks ADD COLUMN digest TEXT;
             ALTER TABLE runs ADD COLUMN task_set TEXT;",
        // Tamper evidence (issue 35): what an attempt's agent changed where a task's work never
        // goes (`domain::TamperFlag`, JSON: how many changes were flagged and the first paths;
        // the whole record is the trial's `agent/tamper.json`). NULL: nothing flagged. A flagged
        // attempt is judged a failure of the agent.
        "ALTER TABLE trials ADD COLUMN tamper TEXT;",
        // The few flagged attempts of a run, found without visiting the others (issue 37: the
        // report's tamper section read every latest attempt of the run to find none).
        "CREATE INDEX trials_tampered ON trials (run_id, superseded) WHERE tamper IS NOT NULL;",
        // A reused baseline (issue 38): the stored run an experiment took round 1's conditions
        // from (`experiment --baseline-from RUN`) instead of running them — its name and id,
        // where it came from (`native`, or the import's source), the database it was read in,
        // when it was checked, and the differences `--allow-drift FIELD` accepted (JSON array of
        // `domain::provenance::Mismatch`).
        "CREATE TABLE experiment_baselines (
                 experiment  TEXT PRIMARY KEY,
                 run         TEXT NOT NULL,
                 run_id      INTEGER NOT NULL,
                 source      TEXT NOT NULL,
                 db          TEXT NOT NULL,
                 checked_at  TEXT NOT NULL,
                 accepted    TEXT NOT NULL DEFAULT '[]'
             );",
        // Early stopping (issue 38): a run's group-sequential design (`sequential_designs`), each
        // look at a stage boundary (`sequential_looks`: the comparison, the stage, Z, the bound
        // crossed or not, the decision and why, the stopping-adjusted estimate) and each condition
        // stopped by one (`early_stops`: the trials per task it keeps, the trials not run).
        "CREATE TABLE sequential_designs (
                 run_id        INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
                 stages        INTEGER NOT NULL,
                 alpha         REAL NOT NULL,
                 beta          REAL NOT NULL,
                 stage_trials  TEXT NOT NULL,      -- JSON array: trials per task at each stage
                 efficacy      TEXT NOT NULL,      -- JSON array: efficacy bounds, z
                 futility      TEXT NOT NULL,      -- JSON array: futility bounds, z (none at the last)
                 comparisons   TEXT NOT NULL,      -- JSON array of engine::stopping::Comparison
                 early_stop    INTEGER NOT NULL,   -- 0: --no-early-stop, looks recorded only
                 note          TEXT                -- why some conditions never stop
             );
             CREATE TABLE sequential_looks (
                 id          INTEGER PRIMARY KEY,
                 run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                 comparison  TEXT NOT NULL,        -- e.g. A'-A
                 stage       INTEGER NOT NULL,     -- 1-based
                 trials      INTEGER NOT NULL,     -- trials per task and condition used
                 n_tasks     INTEGER NOT NULL,
                 mean_diff   REAL,                 -- fraction
                 se          REAL,
                 z           REAL,                 -- NULL: undefined (fewer than 2 tasks)
                 bound       REAL,                 -- the bound crossed, or the efficacy bound not reached
                 decision    TEXT NOT NULL,        -- continue | efficacy | futility
                 reason      TEXT NOT NULL,
                 adjusted    REAL,                 -- median-unbiased estimate, fraction
                 ci_low      REAL,
                 ci_high     REAL,
                 p_value     REAL,
                 at          TEXT NOT NULL,
                 UNIQUE (run_id, comparison, stage)
             );
             CREATE TABLE early_stops (
                 run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                 condition   TEXT NOT NULL,
                 trials      INTEGER NOT NULL,     -- trials per task it keeps
                 comparison  TEXT NOT NULL,        -- the look that answered its last question
                 stage       INTEGER NOT NULL,
                 not_run     INTEGER NOT NULL,     -- queued trials that left the queue
                 cost_saved  REAL,                 -- USD: not_run × the condition's mean finished-trial cost (NULL: none priced)
                 at          TEXT NOT NULL,
                 PRIMARY KEY (run_id, condition)
             );",
        // Each (run, task, condition)'s trial facts packed for the analysis (issue 37:
        // `store/slot_facts.rs`): the packed rows, the groups marked for repacking, and the
        // triggers that mark them (their `UPDATE OF` list is `trial_facts::PASS_COLUMNS` and
        // `run_id`; a test holds the two together). Every group already in the store starts
        // marked. `INSERT … WHERE NOT EXISTS`, not `INSERT OR IGNORE`: an outer statement's
        // conflict clause would override a trigger's own.
        "CREATE TABLE slot_facts (
                 id          INTEGER PRIMARY KEY,
                 run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                 task_id     TEXT NOT NULL,
                 condition   TEXT NOT NULL,
                 trials      INTEGER NOT NULL,   -- its rows in `trials` when packed
                 format      INTEGER NOT NULL,   -- slot_facts::FORMAT; 0: read from the table
                 facts       BLOB,
                 UNIQUE (run_id, task_id, condition)
             );
             CREATE TABLE slot_facts_dirty (
                 run_id      INTEGER NOT NULL,
                 task_id     TEXT NOT NULL,
                 condition   TEXT NOT NULL,
                 PRIMARY KEY (run_id, task_id, condition)
             ) WITHOUT ROWID;
             INSERT INTO slot_facts_dirty (run_id, task_id, condition)
                 SELECT DISTINCT run_id, task_id, condition FROM trials;
             CREATE TRIGGER trials_mark_slot_insert AFTER INSERT ON trials BEGIN
                 INSERT INTO slot_facts_dirty (run_id, task_id, condition)
                 SELECT NEW.run_id, NEW.task_id, NEW.condition
                 WHERE NOT EXISTS (SELECT 1 FROM slot_facts_dirty
                                   WHERE run_id = NEW.run_id AND task_id = NEW.task_id
                                     AND condition = NEW.condition);
             END;
             CREATE TRIGGER trials_mark_slot_delete AFTER DELETE ON trials BEGIN
                 INSERT INTO slot_facts_dirty (run_id, task_id, condition)
                 SELECT OLD.run_id, OLD.task_id, OLD.condition
                 WHERE NOT EXISTS (SELECT 1 FROM slot_facts_dirty
                                   WHERE run_id = OLD.run_id AND task_id = OLD.task_id
                                     AND condition = OLD.condition);
             END;
             CREATE TRIGGER trials_mark_slot_update AFTER UPDATE OF
                 id, run_id, task_id, condition, trial_index, attempt, superseded, status, outcome,
                 reward, aggregated, failure_category, trial_dir, agent_exit_code, agent_settings,
                 missing_env, clamped, task_digest
             ON trials BEGIN
                 INSERT INTO slot_facts_dirty (run_id, task_id, condition)
                 SELECT g.r, g.t, g.c
                 FROM (SELECT OLD.run_id AS r, OLD.task_id AS t, OLD.condition AS c
                       UNION SELECT NEW.run_id, NEW.task_id, NEW.condition) AS g
                 WHERE NOT EXISTS (SELECT 1 FROM slot_facts_dirty AS d
                                   WHERE d.run_id = g.r AND d.task_id = g.t
                                     AND d.condition = g.c);
             END;",
        // A design fixed as data (issue 47): the fractions its α is spent at, the stage its
        // futility bounds apply from, the statistic (JSON `domain::sequential::Statistic`; the
        // paired z of the runs before), the fewest tasks it judges. A look's reason as data
        // (`why`, `domain::sequential::LookWhy`) with both bounds: `bound` is the efficacy bound,
        // `futility_bound` the stage's futility bound; the sentence it replaced is dropped.
        "ALTER TABLE sequential_designs ADD COLUMN fractions TEXT;      -- JSON array; NULL: k_s/n
             ALTER TABLE sequential_designs ADD COLUMN futility_from INTEGER; -- 1-based; NULL: no futility
             ALTER TABLE sequential_designs ADD COLUMN statistic TEXT NOT NULL DEFAULT '{\"kind\":\"paired-z\"}';
             ALTER TABLE sequential_designs ADD COLUMN min_tasks INTEGER NOT NULL DEFAULT 2;
             ALTER TABLE sequential_designs ADD COLUMN spending TEXT NOT NULL DEFAULT 'obrien-fleming';
             UPDATE sequential_designs SET futility_from = 1 WHERE futility != '[]';
             ALTER TABLE sequential_looks ADD COLUMN why TEXT NOT NULL DEFAULT 'below-efficacy';
             ALTER TABLE sequential_looks ADD COLUMN futility_bound REAL;
             UPDATE sequential_looks SET why = CASE
                 WHEN decision = 'efficacy' THEN 'efficacy-crossed'
                 WHEN z IS NULL THEN 'undefined'
                 WHEN decision = 'futility' AND stage = (SELECT d.stages FROM sequential_designs d
                                                         WHERE d.run_id = sequential_looks.run_id)
                     THEN 'last-stage-below'
                 WHEN decision = 'futility' THEN 'futility-crossed'
                 WHEN reason LIKE '%between%' THEN 'between-bounds'
                 ELSE 'below-efficacy' END;
             UPDATE sequential_looks SET futility_bound = bound,
                 bound = (SELECT json_extract(d.efficacy, '$[' || (sequential_looks.stage - 1) || ']')
                          FROM sequential_designs d WHERE d.run_id = sequential_looks.run_id)
                 WHERE why = 'futility-crossed';
             UPDATE sequential_looks SET futility_bound =
                 (SELECT json_extract(d.futility, '$[' || (sequential_looks.stage - 1) || ']')
                  FROM sequential_designs d WHERE d.run_id = sequential_looks.run_id)
                 WHERE why = 'between-bounds';
             ALTER TABLE sequential_looks DROP COLUMN reason;",
];

/// All migrations, oldest first ([`UP`]).
pub fn migrations() -> Migrations<'static> {
    Migrations::new(UP.iter().map(|sql| M::up(sql)).collect())
}

/// A new in-memory database at the latest schema, for unit tests.
#[cfg(test)]
pub(crate) fn migrated_in_memory() -> rusqlite::Connection {
    let mut c = rusqlite::Connection::open_in_memory().unwrap();
    migrations().to_latest(&mut c).unwrap();
    c
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_are_valid() {
        super::migrations().validate().unwrap();
    }
}
