//! A task's `environment/docker-compose.yaml` (or `.yml`) read the way Harbor's docker environment
//! uses it — pure: text and variables in, a plan of services out.
//!
//! Harbor runs `docker compose` with its own files first (`docker-compose-base.yaml`: the log
//! folders mounted and the CPU and memory limits on service `main`; `docker-compose-build.yaml`:
//! `main` built from `${CONTEXT_DIR}` running `sleep infinity`) and the task's file last, so the
//! task's file adds services and overrides `main`. Variables are substituted as Compose does
//! (compose-spec "Interpolation": `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`,
//! `${VAR:?err}`, `${VAR?err}`, `${VAR:+alt}`, `${VAR+alt}`, `$$` for a literal `$`; an unset
//! variable becomes empty). Harbor sets [`HARBOR_VARIABLES`]; every other variable comes from the
//! operator's environment only when listed with `--env`, and its value is never recorded.
//!
//! The file is parsed by `docker-compose-types`. Keys skillscope applies, ignores (with a note) or
//! refuses are listed in [`SERVICE_KEYS`], [`IGNORED_SERVICE_KEYS`] and [`TOP_LEVEL_KEYS`]; every
//! refused key of the file is named in one error.

mod interpolate;
mod service;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use docker_compose_types as dct;
use serde_yaml_ng::Value;

pub use self::interpolate::interpolate;
use self::interpolate::interpolate_tree;
pub(crate) use self::interpolate::matching_brace;
use self::service::{coerce_service, service_def};
pub use self::service::{parse_duration, parse_memory};

/// File names read in `environment/`, in order.
pub const COMPOSE_FILES: [&str; 2] = ["docker-compose.yaml", "docker-compose.yml"];
/// The service skillscope runs the agent and verifier in.
pub const MAIN: &str = "main";
/// Variables Harbor's docker environment sets for `docker compose`.
pub const HARBOR_VARIABLES: &[&str] = &[
    "CONTEXT_DIR",
    "MAIN_IMAGE_NAME",
    "HOST_VERIFIER_LOGS_PATH",
    "ENV_VERIFIER_LOGS_PATH",
    "HOST_AGENT_LOGS_PATH",
    "ENV_AGENT_LOGS_PATH",
    "HOST_ARTIFACTS_PATH",
    "ENV_ARTIFACTS_PATH",
    "CPUS",
    "MEMORY",
    "TEST_DIR",
];
/// Service keys skillscope applies.
pub const SERVICE_KEYS: &[&str] = &[
    "build",
    "image",
    "command",
    "entrypoint",
    "environment",
    "volumes",
    "depends_on",
    "healthcheck",
    "networks",
    "network_mode",
    "working_dir",
    "user",
    "hostname",
    "deploy",
    "labels",
    "extra_hosts",
    "tty",
    "stdin_open",
    "init",
];
/// Service keys skillscope ignores, with the reason written to the trial's `services.log`.
pub const IGNORED_SERVICE_KEYS: &[(&str, &str)] = &[
    (
        "expose",
        "every port is reachable on the trial's private network",
    ),
    (
        "ports",
        "not published on the host (concurrent trials would collide); services reach each other by name",
    ),
    ("restart", "a trial's services live as long as the trial"),
    ("container_name", "container names are made per trial"),
    ("stop_grace_period", "containers are removed by force"),
    ("stop_signal", "containers are removed by force"),
    ("logging", "container logs stay with the Docker daemon"),
    ("pull_policy", "images are built here or must already exist"),
];
/// Top-level keys skillscope reads (`x-*` extensions are always allowed).
pub const TOP_LEVEL_KEYS: &[&str] = &["version", "name", "services", "networks"];

/// Variables for interpolation: Harbor's and the operator's `--env` values.
pub type Variables = HashMap<String, String>;

/// How a dependency must be before its dependent starts (`depends_on.<svc>.condition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DependsOn {
    /// `service_started` (and the short list form).
    Started,
    /// `service_healthy`: its healthcheck passed.
    Healthy,
    /// `service_completed_successfully`: it exited with code 0.
    Completed,
}

/// A service's image build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildDef {
    /// Build context folder (absolute, inside the task's `environment/`).
    pub context: PathBuf,
    /// Dockerfile path relative to the context.
    pub dockerfile: String,
    /// Build arguments (`build.args`), sorted by name.
    pub args: BTreeMap<String, String>,
}

/// A service's healthcheck, as the Docker API takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthDef {
    /// `["CMD", …]`, `["CMD-SHELL", "…"]` or `["NONE"]`.
    pub test: Vec<String>,
    /// Between checks (Docker's default 30 s).
    pub interval: Option<Duration>,
    /// Per check (default 30 s).
    pub timeout: Option<Duration>,
    /// Failures before unhealthy (default 3).
    pub retries: Option<i64>,
    /// Grace period after start (default 0).
    pub start_period: Option<Duration>,
}

/// A bind mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindDef {
    /// Host path (absolute; relative sources are resolved against `environment/`).
    pub source: PathBuf,
    /// Path in the container.
    pub target: String,
    /// `:ro`.
    pub read_only: bool,
}

/// How a service is networked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkDef {
    /// The file's networks (by name in the file) with extra aliases; `default` when none listed.
    Project(Vec<(String, Vec<String>)>),
    /// `network_mode: bridge`: Docker's default bridge, outside the project's networks.
    Bridge,
    /// `network_mode: none`.
    None,
}

/// One service, after interpolation.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceDef {
    /// Name in the file (also its DNS name on the project networks).
    pub name: String,
    /// Image build (`None` for `main`, built by skillscope, and for image-only services).
    pub build: Option<BuildDef>,
    /// `image`: the image to run when there is no build.
    pub image: Option<String>,
    /// `command`, split into arguments.
    pub command: Option<Vec<String>>,
    /// `entrypoint`, split into arguments.
    pub entrypoint: Option<Vec<String>>,
    /// `environment`: `NAME=VALUE` (a bare `NAME` takes the value from the variables, and is left
    /// out when unset, as Compose does).
    pub environment: Vec<String>,
    /// Bind mounts.
    pub binds: Vec<BindDef>,
    /// Dependencies and how each must be.
    pub depends_on: Vec<(String, DependsOn)>,
    /// Healthcheck.
    pub healthcheck: Option<HealthDef>,
    /// Networking.
    pub network: NetworkDef,
    /// `working_dir`.
    pub working_dir: Option<String>,
    /// `user`.
    pub user: Option<String>,
    /// `hostname`.
    pub hostname: Option<String>,
    /// `deploy.resources.limits.cpus`, cores.
    pub cpus: Option<f64>,
    /// `deploy.resources.limits.memory`, bytes.
    pub memory_bytes: Option<i64>,
    /// `labels`.
    pub labels: BTreeMap<String, String>,
    /// `extra_hosts` (`host:ip`).
    pub extra_hosts: Vec<String>,
    /// `tty`.
    pub tty: bool,
    /// `stdin_open`.
    pub stdin_open: bool,
    /// `init`.
    pub init: bool,
}

/// A network the file declares (or the implicit `default`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectNetwork {
    /// Name in the file.
    pub name: String,
    /// `internal: true`.
    pub internal: bool,
}

/// What a compose file asks for, merged over Harbor's `main`.
#[derive(Debug, Clone, PartialEq)]
pub struct ComposePlan {
    /// The file read.
    pub file: PathBuf,
    /// `main`'s overrides (its build is skillscope's own image).
    pub main: ServiceDef,
    /// The other services, dependencies first.
    pub services: Vec<ServiceDef>,
    /// Networks used by `main` or a service.
    pub networks: Vec<ProjectNetwork>,
    /// Keys ignored and why, for the trial's log.
    pub notes: Vec<String>,
}

/// The compose file of a task's `environment/` folder, if it has one.
pub fn find(env_dir: &Path) -> Option<PathBuf> {
    COMPOSE_FILES
        .iter()
        .map(|f| env_dir.join(f))
        .find(|p| p.is_file())
}

/// Reads and parses the task's compose file, if any.
///
/// # Errors
/// Every problem found, as one message naming the file and the keys.
pub fn load(env_dir: &Path, vars: &Variables) -> Result<Option<ComposePlan>, String> {
    let Some(file) = find(env_dir) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    parse(&text, &file, env_dir, vars)
        .map(Some)
        .map_err(|errors| format!("{}: {}", file.display(), errors.join("; ")))
}

/// Parses compose text (see the module docs). `file` names the file in notes, `env_dir` anchors
/// relative paths.
///
/// # Errors
/// Every problem found: malformed YAML, failed interpolation, unsupported keys (named by path,
/// e.g. `services.db.secrets`), unknown dependencies or networks, dependency cycles.
pub fn parse(
    text: &str,
    file: &Path,
    env_dir: &Path,
    vars: &Variables,
) -> Result<ComposePlan, Vec<String>> {
    let mut root: Value = serde_yaml_ng::from_str(text).map_err(|e| vec![e.to_string()])?;
    let mut errors = Vec::new();
    let mut notes = Vec::new();
    interpolate_tree(&mut root, vars, "", &mut errors);
    let Value::Mapping(mut top) = root else {
        return Err(vec!["the file is not a mapping".into()]);
    };
    for (k, _) in top.iter() {
        let key = k.as_str().unwrap_or("?");
        if !TOP_LEVEL_KEYS.contains(&key) && !key.starts_with("x-") {
            errors.push(format!("top-level key `{key}` is not supported"));
        }
    }
    top.retain(|k, _| k.as_str().is_some_and(|k| TOP_LEVEL_KEYS.contains(&k)));
    if let Some(Value::Mapping(services)) = top.get_mut("services") {
        for (name, svc) in services.iter_mut() {
            let name = name.as_str().unwrap_or("?").to_string();
            if let Value::Mapping(m) = svc {
                for (k, _) in m.iter() {
                    let key = k.as_str().unwrap_or("?");
                    if key.starts_with("x-") || SERVICE_KEYS.contains(&key) {
                        continue;
                    }
                    match IGNORED_SERVICE_KEYS.iter().find(|(i, _)| *i == key) {
                        Some((_, why)) => {
                            notes.push(format!("services.{name}.{key} ignored: {why}"));
                        }
                        None => errors.push(format!("services.{name}.{key} is not supported")),
                    }
                }
                m.retain(|k, _| {
                    k.as_str()
                        .is_some_and(|k| SERVICE_KEYS.contains(&k) || k.starts_with("x-"))
                });
            }
            coerce_service(svc);
        }
    }
    // Typed per service, so a value of the wrong shape is named with its service.
    let mut defs: Vec<ServiceDef> = Vec::new();
    let services = top.remove("services").unwrap_or(Value::Null);
    if let Value::Mapping(services) = services {
        for (name, svc) in services {
            let name = name.as_str().unwrap_or("?").to_string();
            let svc: dct::Service = if svc.is_null() {
                dct::Service::default()
            } else {
                match serde_yaml_ng::from_value(svc) {
                    Ok(s) => s,
                    Err(e) => {
                        errors.push(format!("services.{name}: {e}"));
                        continue;
                    }
                }
            };
            match service_def(&name, &svc, env_dir, vars, &mut notes) {
                Ok(d) => defs.push(d),
                Err(es) => errors.extend(es.into_iter().map(|e| format!("services.{name}.{e}"))),
            }
        }
    } else if !services.is_null() {
        errors.push("services is not a mapping".into());
    }
    let networks_value = top.remove("networks").unwrap_or(Value::Null);
    let declared_networks: dct::ComposeNetworks = if networks_value.is_null() {
        dct::ComposeNetworks::default()
    } else {
        match serde_yaml_ng::from_value(networks_value) {
            Ok(n) => n,
            Err(e) => {
                errors.push(format!("networks: {e}"));
                dct::ComposeNetworks::default()
            }
        }
    };
    // Networks declared at the top level.
    let mut declared: BTreeMap<String, bool> = BTreeMap::new();
    for (name, net) in declared_networks.0.iter() {
        let settings: Option<dct::NetworkSettings> = net.clone().into();
        let s = settings.unwrap_or_default();
        let mut bad = Vec::new();
        if s.driver.as_deref().is_some_and(|d| d != "bridge") {
            bad.push("driver (only bridge)");
        }
        if s.external.is_some() {
            bad.push("external");
        }
        if s.ipam.is_some() {
            bad.push("ipam");
        }
        if !s.driver_opts.is_empty() {
            bad.push("driver_opts");
        }
        if s.enable_ipv6 {
            bad.push("enable_ipv6");
        }
        for b in bad {
            errors.push(format!("networks.{name}.{b} is not supported"));
        }
        if s.name.is_some() {
            notes.push(format!(
                "networks.{name}.name ignored: networks are made per trial"
            ));
        }
        declared.insert(name.clone(), s.internal);
    }
    let main = match defs.iter().position(|d| d.name == MAIN) {
        Some(i) => defs.remove(i),
        None => ServiceDef::main_default(),
    };
    check_main(&main, env_dir, &mut errors, &mut notes);
    // Dependencies must exist; nothing may depend on main; no cycles.
    let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
    for d in defs.iter().chain(std::iter::once(&main)) {
        for (dep, _) in &d.depends_on {
            if dep == MAIN {
                errors.push(format!(
                    "services.{}.depends_on: `main` starts last in skillscope",
                    d.name
                ));
            } else if !names.contains(dep) {
                errors.push(format!(
                    "services.{}.depends_on: no service named `{dep}`",
                    d.name
                ));
            }
        }
    }
    let services = match topo_order(defs) {
        Ok(s) => s,
        Err(e) => {
            errors.push(e);
            Vec::new()
        }
    };
    // Networks in use.
    let mut networks: Vec<ProjectNetwork> = Vec::new();
    for d in std::iter::once(&main).chain(services.iter()) {
        if let NetworkDef::Project(nets) = &d.network {
            for (n, _) in nets {
                let internal = match declared.get(n) {
                    Some(i) => *i,
                    None if n == "default" => false,
                    None => {
                        errors.push(format!(
                            "services.{}.networks: `{n}` is not declared under networks",
                            d.name
                        ));
                        continue;
                    }
                };
                if !networks.iter().any(|x| &x.name == n) {
                    networks.push(ProjectNetwork {
                        name: n.clone(),
                        internal,
                    });
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(ComposePlan {
        file: file.to_path_buf(),
        main,
        services,
        networks,
        notes,
    })
}

impl ServiceDef {
    /// Harbor's `main` when the task's file does not mention it.
    fn main_default() -> ServiceDef {
        ServiceDef {
            name: MAIN.to_string(),
            build: None,
            image: None,
            command: None,
            entrypoint: None,
            environment: Vec::new(),
            binds: Vec::new(),
            depends_on: Vec::new(),
            healthcheck: None,
            network: NetworkDef::Project(vec![("default".into(), Vec::new())]),
            working_dir: None,
            user: None,
            hostname: None,
            cpus: None,
            memory_bytes: None,
            labels: BTreeMap::new(),
            extra_hosts: Vec::new(),
            tty: false,
            stdin_open: false,
            init: false,
        }
    }
}

/// What `main` may override: its build must stay Harbor's (the task's `environment/Dockerfile`),
/// its command must keep it idle (`sleep infinity`), and it has no healthcheck to wait for.
fn check_main(
    main: &ServiceDef,
    env_dir: &Path,
    errors: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    if let Some(b) = &main.build
        && (!same_dir(&b.context, env_dir) || b.dockerfile != "Dockerfile" || !b.args.is_empty())
    {
        errors.push(
            "services.main.build: main is built from environment/Dockerfile without build args"
                .into(),
        );
    }
    if main.image.is_some() {
        notes.push("services.main.image ignored: main runs skillscope's own image".into());
    }
    if let Some(cmd) = &main.command {
        let joined = cmd.join(" ");
        if !joined.ends_with("sleep infinity") {
            errors.push(format!(
                "services.main.command `{joined}`: main must stay idle (sleep infinity) for the agent"
            ));
        }
    }
    if main.entrypoint.is_some() {
        errors.push("services.main.entrypoint is not supported".into());
    }
    if main.healthcheck.is_some() {
        errors.push("services.main.healthcheck is not supported".into());
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

/// Services ordered so each comes after its dependencies.
///
/// # Errors
/// A dependency cycle, naming its services.
fn topo_order(mut defs: Vec<ServiceDef>) -> Result<Vec<ServiceDef>, String> {
    let mut out: Vec<ServiceDef> = Vec::new();
    while !defs.is_empty() {
        let ready = defs.iter().position(|d| {
            d.depends_on
                .iter()
                .all(|(dep, _)| dep == MAIN || out.iter().any(|o| &o.name == dep))
                || d.depends_on.iter().any(|(dep, _)| {
                    dep != MAIN && !defs.iter().chain(out.iter()).any(|o| &o.name == dep)
                })
        });
        match ready {
            Some(i) => out.push(defs.remove(i)),
            None => {
                let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
                return Err(format!(
                    "depends_on forms a cycle among {}",
                    names.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Variables {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn interpolation_follows_compose() {
        let v = vars(&[("A", "x"), ("EMPTY", "")]);
        let i = |s: &str| interpolate(s, &v).unwrap();
        assert_eq!(i("${A}/$A/$$A"), "x/x/$A");
        assert_eq!(i("${UNSET}"), "");
        assert_eq!(i("${UNSET:-d}|${EMPTY:-d}|${EMPTY-d}|${UNSET-d}"), "d|d||d");
        assert_eq!(i("${A:+alt}|${EMPTY:+alt}|${EMPTY+alt}"), "alt||alt");
        assert_eq!(i("${UNSET:-${A}-y}"), "x-y");
        assert_eq!(i("cost $5"), "cost $5");
        assert!(
            interpolate("${UNSET:?set it}", &v)
                .unwrap_err()
                .contains("set it")
        );
        assert!(interpolate("${A", &v).is_err());
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("10"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("5x"), None);
        assert_eq!(parse_memory("4096M"), Some(4096 << 20));
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("512"), Some(512));
        assert_eq!(parse_memory("lots"), None);
    }

    fn env_dir() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let env = t.path().join("environment");
        std::fs::create_dir_all(env.join("api")).unwrap();
        std::fs::write(env.join("Dockerfile"), "FROM x\n").unwrap();
        std::fs::write(env.join("Dockerfile.api"), "FROM x\n").unwrap();
        std::fs::write(env.join("api/Dockerfile"), "FROM x\n").unwrap();
        (t, env)
    }

    #[test]
    fn sidecar_over_harbor_main() {
        let (_t, env) = env_dir();
        let text = r#"
services:
  main:
    build:
      context: ${CONTEXT_DIR}
    image: ${MAIN_IMAGE_NAME}
    command: ["sh", "-c", "sleep infinity"]
    environment:
      - TOKEN=${TOKEN}
      - FIXED=1
    volumes:
      - ${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}
      - ./data:/data:ro
    depends_on:
      api:
        condition: service_healthy
    networks: [task-net]
    deploy:
      resources:
        limits:
          cpus: ${CPUS}
          memory: ${MEMORY}
  api:
    build:
      context: .
      dockerfile: Dockerfile.api
      args:
        PORT: 4000
    expose: ["4000"]
    healthcheck:
      test: ["CMD", "wget", "-q", "-O-", "http://localhost:4000/"]
      interval: 1s
      retries: 5
    networks:
      task-net:
        aliases: [backend]
networks:
  task-net:
    driver: bridge
"#;
        let v = vars(&[
            ("CONTEXT_DIR", env.to_str().unwrap()),
            ("MAIN_IMAGE_NAME", "img"),
            ("HOST_VERIFIER_LOGS_PATH", "/trial/verifier"),
            ("ENV_VERIFIER_LOGS_PATH", "/logs/verifier"),
            ("CPUS", "2"),
            ("MEMORY", "4096M"),
        ]);
        let p = parse(text, &env.join("docker-compose.yaml"), &env, &v).unwrap();
        assert_eq!(p.main.environment, vec!["TOKEN=", "FIXED=1"]);
        assert_eq!(p.main.cpus, Some(2.0));
        assert_eq!(p.main.memory_bytes, Some(4096 << 20));
        assert_eq!(p.main.binds[0].source, PathBuf::from("/trial/verifier"));
        assert_eq!(p.main.binds[1].source, env.join("./data"));
        assert!(p.main.binds[1].read_only);
        assert_eq!(
            p.main.depends_on,
            vec![("api".to_string(), DependsOn::Healthy)]
        );
        assert_eq!(p.services.len(), 1);
        let api = &p.services[0];
        assert_eq!(api.build.as_ref().unwrap().dockerfile, "Dockerfile.api");
        assert_eq!(api.build.as_ref().unwrap().args["PORT"], "4000");
        assert_eq!(
            api.healthcheck.as_ref().unwrap().interval,
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            api.network,
            NetworkDef::Project(vec![("task-net".into(), vec!["backend".into()])])
        );
        assert_eq!(
            p.networks,
            vec![ProjectNetwork {
                name: "task-net".into(),
                internal: false
            }]
        );
        assert!(
            p.notes.iter().any(|n| n.contains("services.api.expose")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn services_without_main_use_the_default_network_in_dependency_order() {
        let (_t, env) = env_dir();
        let text = "version: '3.8'\nservices:\n  web:\n    build: ./api\n    depends_on:\n      db:\n        condition: service_healthy\n    ports: ['3000:3000']\n  db:\n    image: skillscope/busybox:1\n    command: sleep 1000\n    healthcheck:\n      test: true\n";
        let p = parse(
            text,
            &env.join("docker-compose.yml"),
            &env,
            &Variables::new(),
        )
        .unwrap();
        let names: Vec<&str> = p.services.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["db", "web"]);
        assert_eq!(
            p.services[0].command,
            Some(vec!["sleep".into(), "1000".into()])
        );
        assert_eq!(
            p.services[0].healthcheck.as_ref().unwrap().test,
            vec!["CMD-SHELL", "true"]
        );
        assert_eq!(p.networks[0].name, "default");
        assert_eq!(
            p.main.network,
            NetworkDef::Project(vec![("default".into(), vec![])])
        );
    }

    #[test]
    fn every_unsupported_key_is_named() {
        let (_t, env) = env_dir();
        let text = "services:\n  a:\n    image: x\n    privileged: true\n    secrets: [s]\n    volumes: [data:/data]\n  main:\n    command: python app.py\nsecrets:\n  s:\n    file: x\n";
        let e = parse(
            text,
            &env.join("docker-compose.yaml"),
            &env,
            &Variables::new(),
        )
        .unwrap_err();
        let all = e.join("\n");
        for want in [
            "top-level key `secrets`",
            "services.a.privileged",
            "services.a.secrets",
            "named volume `data`",
            "services.main.command",
        ] {
            assert!(all.contains(want), "{want} missing in {all}");
        }
    }

    #[test]
    fn an_empty_bind_source_is_left_out_not_the_task_folder() {
        let (_t, env) = env_dir();
        let text =
            "services:\n  main:\n    volumes:\n      - ${GOOGLE_AUTH_PATH}:/root/google-auth\n";
        let p = parse(text, &env.join("c.yaml"), &env, &Variables::new()).unwrap();
        assert!(p.main.binds.is_empty(), "{:?}", p.main.binds);
        assert!(
            p.notes.iter().any(|n| n.contains("host path is empty")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn dependency_problems() {
        let (_t, env) = env_dir();
        let cyc = "services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on: [a]\n";
        let e = parse(cyc, &env.join("c.yaml"), &env, &Variables::new()).unwrap_err();
        assert!(e.join(" ").contains("cycle"), "{e:?}");
        let missing = "services:\n  a:\n    image: x\n    depends_on: [nope]\n";
        let e = parse(missing, &env.join("c.yaml"), &env, &Variables::new()).unwrap_err();
        assert!(e.join(" ").contains("no service named `nope`"), "{e:?}");
    }
}
