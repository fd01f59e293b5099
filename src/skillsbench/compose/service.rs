//! One service of a compose file: YAML values coerced to the shapes Compose's schema gives them,
//! then the typed service (`docker-compose-types`) turned into a [`ServiceDef`], with every
//! problem collected.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use docker_compose_types as dct;
use serde_yaml_ng::Value;

use super::{BindDef, BuildDef, DependsOn, HealthDef, MAIN, NetworkDef, ServiceDef, Variables};
use crate::skillsbench::dockerfile::heredoc::{raw_words, unquote};

/// What Compose's schema makes a string but YAML may have read as a number or bool (and the
/// reverse after interpolation): fixed so the typed parse accepts them.
pub(super) fn coerce_service(svc: &mut Value) {
    fn to_string(v: &mut Value) {
        let s = match v {
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return,
        };
        *v = Value::String(s);
    }
    fn to_number(v: &mut Value) {
        if let Value::String(s) = v
            && let Ok(n) = s.trim().parse::<i64>()
        {
            *v = Value::Number(n.into());
        }
    }
    fn to_bool(v: &mut Value) {
        if let Value::String(s) = v {
            match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => *v = Value::Bool(true),
                "false" | "no" | "0" | "" => *v = Value::Bool(false),
                _ => {}
            }
        }
    }
    let Value::Mapping(m) = svc else { return };
    for key in ["tty", "stdin_open", "init"] {
        if let Some(v) = m.get_mut(key) {
            to_bool(v);
        }
    }
    for key in ["expose", "extra_hosts"] {
        if let Some(Value::Sequence(items)) = m.get_mut(key) {
            items.iter_mut().for_each(to_string);
        }
    }
    for key in ["user", "hostname", "working_dir"] {
        if let Some(v) = m.get_mut(key) {
            to_string(v);
        }
    }
    if let Some(Value::Mapping(h)) = m.get_mut("healthcheck") {
        for key in ["interval", "timeout", "start_period", "start_interval"] {
            if let Some(v) = h.get_mut(key) {
                to_string(v);
            }
        }
        if let Some(v) = h.get_mut("test") {
            to_string(v);
        }
        if let Some(v) = h.get_mut("retries") {
            to_number(v);
        }
        if let Some(v) = h.get_mut("disable") {
            to_bool(v);
        }
    }
    if let Some(Value::Mapping(b)) = m.get_mut("build")
        && let Some(Value::Mapping(args)) = b.get_mut("args")
    {
        args.iter_mut().for_each(|(_, v)| to_string(v));
    }
    if let Some(Value::Mapping(labels)) = m.get_mut("labels") {
        labels.iter_mut().for_each(|(_, v)| to_string(v));
    }
    if let Some(Value::Mapping(d)) = m.get_mut("deploy")
        && let Some(Value::Mapping(r)) = d.get_mut("resources")
    {
        for part in ["limits", "reservations"] {
            if let Some(Value::Mapping(l)) = r.get_mut(part) {
                l.iter_mut().for_each(|(_, v)| to_string(v));
            }
        }
    }
    if let Some(Value::Mapping(deps)) = m.get_mut("depends_on") {
        for (_, d) in deps.iter_mut() {
            if let Value::Mapping(d) = d {
                for key in ["restart", "required"] {
                    if let Some(v) = d.get_mut(key) {
                        to_bool(v);
                    }
                }
            }
        }
    }
}

/// Parses a Go duration (`5s`, `1m30s`, `100ms`, `1h`) as Compose does; a bare number is seconds.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if let Ok(n) = s.parse::<f64>() {
        return (n >= 0.0).then(|| Duration::from_secs_f64(n));
    }
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..u] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * factor;
        rest = &rest[u..];
    }
    Some(Duration::from_secs_f64(total))
}

/// Parses a Compose memory size (`4096M`, `4g`, `512m`, `1gb`, `1073741824`) into bytes.
pub fn parse_memory(s: &str) -> Option<i64> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').filter(|x| !x.is_empty()).unwrap_or(&t);
    let (num, mult) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 1i64 << 10),
        'm' => (&t[..t.len() - 1], 1 << 20),
        'g' => (&t[..t.len() - 1], 1 << 30),
        't' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let n: f64 = num.trim().parse().ok()?;
    (n > 0.0).then_some((n * mult as f64) as i64)
}

/// Splits a string `command`/`entrypoint` into arguments as Compose does (shell words).
fn split_words(s: &str) -> Vec<String> {
    raw_words(s).iter().map(|w| unquote(w)).collect()
}

/// Converts one typed service, collecting every problem (paths relative to the service).
pub(super) fn service_def(
    name: &str,
    svc: &dct::Service,
    env_dir: &Path,
    vars: &Variables,
    notes: &mut Vec<String>,
) -> Result<ServiceDef, Vec<String>> {
    let mut errors = Vec::new();
    let build = build_def(svc, env_dir, vars, &mut errors);
    if build.is_none() && svc.image.is_none() && name != MAIN {
        errors.push("has neither build nor image".into());
    }
    let words = |c: &dct::Command| match c {
        dct::Command::Simple(s) => split_words(s),
        dct::Command::Args(a) => a.clone(),
    };
    let command = svc.command.as_ref().map(words);
    let entrypoint = svc.entrypoint.as_ref().map(|e| match e {
        dct::Entrypoint::Simple(s) => split_words(s),
        dct::Entrypoint::List(a) => a.clone(),
    });
    let environment = environment(svc, vars);
    let binds = binds(name, svc, env_dir, &mut errors, notes);
    let depends_on = depends_on(svc, &mut errors);
    let healthcheck = healthcheck(svc, &mut errors);
    let network = network(svc, &mut errors);
    let (cpus, memory_bytes) = limits(name, svc, &mut errors, notes);
    let labels = labels(svc);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(ServiceDef {
        name: name.to_string(),
        build,
        image: svc.image.clone(),
        command,
        entrypoint,
        environment,
        binds,
        depends_on,
        healthcheck,
        network,
        working_dir: svc.working_dir.clone(),
        user: svc.user.clone(),
        hostname: svc.hostname.clone(),
        cpus,
        memory_bytes,
        labels,
        extra_hosts: svc.extra_hosts.clone(),
        tty: svc.tty,
        stdin_open: svc.stdin_open,
        init: svc.init,
    })
}

/// A path of the file: absolute as written, else relative to `environment/`.
fn resolve(env_dir: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        env_dir.join(p)
    }
}

/// `build` (short or long form), its context inside `environment/` and its Dockerfile a file there.
fn build_def(
    svc: &dct::Service,
    env_dir: &Path,
    vars: &Variables,
    errors: &mut Vec<String>,
) -> Option<BuildDef> {
    let resolve = |p: &str| resolve(env_dir, p);
    let build = match &svc.build_ {
        None => None,
        Some(dct::BuildStep::Simple(ctx)) => Some(BuildDef {
            context: resolve(ctx),
            dockerfile: "Dockerfile".into(),
            args: BTreeMap::new(),
        }),
        Some(dct::BuildStep::Advanced(b)) => {
            for (set, key) in [
                (b.dockerfile_inline.is_some(), "dockerfile_inline"),
                (b.target.is_some(), "target"),
                (b.network.is_some(), "network"),
                (!b.cache_from.is_empty(), "cache_from"),
                (b.shm_size.is_some(), "shm_size"),
            ] {
                if set {
                    errors.push(format!("build.{key} is not supported"));
                }
            }
            let mut args = BTreeMap::new();
            match &b.args {
                None => {}
                Some(dct::BuildArgs::Simple(a)) => {
                    args.insert(a.clone(), vars.get(a).cloned().unwrap_or_default());
                }
                Some(dct::BuildArgs::List(list)) => {
                    for a in list {
                        match a.split_once('=') {
                            Some((k, v)) => args.insert(k.to_string(), v.to_string()),
                            None => {
                                args.insert(a.clone(), vars.get(a).cloned().unwrap_or_default())
                            }
                        };
                    }
                }
                Some(dct::BuildArgs::KvPair(m)) => {
                    for (k, v) in m {
                        args.insert(k.clone(), v.clone());
                    }
                }
            }
            Some(BuildDef {
                context: resolve(if b.context.is_empty() {
                    "."
                } else {
                    &b.context
                }),
                dockerfile: b.dockerfile.clone().unwrap_or_else(|| "Dockerfile".into()),
                args,
            })
        }
    };
    if let Some(b) = &build {
        let inside = std::fs::canonicalize(&b.context)
            .ok()
            .zip(std::fs::canonicalize(env_dir).ok())
            .is_some_and(|(c, e)| c.starts_with(e));
        if !inside {
            errors.push(format!(
                "build.context {} is not a folder inside the task's environment/",
                b.context.display()
            ));
        } else if Path::new(&b.dockerfile).is_absolute()
            || b.dockerfile.split('/').any(|p| p == "..")
            || !b.context.join(&b.dockerfile).is_file()
        {
            errors.push(format!(
                "build.dockerfile `{}` is not a file in the build context {}",
                b.dockerfile,
                b.context.display()
            ));
        }
    }
    build
}

/// `environment` as `NAME=VALUE`: a bare `NAME` takes its value from `vars`, left out when unset.
fn environment(svc: &dct::Service, vars: &Variables) -> Vec<String> {
    let mut environment = Vec::new();
    match &svc.environment {
        dct::Environment::List(list) => {
            for e in list {
                match e.split_once('=') {
                    Some(_) => environment.push(e.clone()),
                    None => {
                        if let Some(v) = vars.get(e) {
                            environment.push(format!("{e}={v}"));
                        }
                    }
                }
            }
        }
        dct::Environment::KvPair(m) => {
            for (k, v) in m {
                match v {
                    Some(v) => environment.push(format!("{k}={v}")),
                    None => {
                        if let Some(v) = vars.get(k) {
                            environment.push(format!("{k}={v}"));
                        }
                    }
                }
            }
        }
    }
    environment
}

/// `volumes`: bind mounts only (short `host:container[:mode]` or long `type: bind`).
fn binds(
    name: &str,
    svc: &dct::Service,
    env_dir: &Path,
    errors: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Vec<BindDef> {
    let resolve = |p: &str| resolve(env_dir, p);
    let mut binds = Vec::new();
    for (i, v) in svc.volumes.iter().enumerate() {
        match v {
            dct::Volumes::Simple(s) => {
                let parts: Vec<&str> = s.split(':').collect();
                let (src, dst, mode) = match parts.as_slice() {
                    [src, dst] => (*src, *dst, ""),
                    [src, dst, mode] => (*src, *dst, *mode),
                    _ => {
                        errors.push(format!(
                            "volumes[{i}] `{s}`: only host:container[:mode] bind mounts are supported"
                        ));
                        continue;
                    }
                };
                let is_path = src.starts_with('/') || src.starts_with('.') || src.is_empty();
                if !is_path {
                    errors.push(format!(
                        "volumes[{i}]: named volume `{src}` is not supported (bind mounts only)"
                    ));
                    continue;
                }
                let modes: Vec<&str> = mode.split(',').filter(|m| !m.is_empty()).collect();
                if modes.iter().any(|m| {
                    !matches!(
                        *m,
                        "ro" | "rw" | "z" | "Z" | "cached" | "delegated" | "consistent"
                    )
                }) {
                    errors.push(format!("volumes[{i}]: mode `{mode}` is not supported"));
                    continue;
                }
                if src.is_empty() {
                    notes.push(format!(
                        "services.{name}.volumes[{i}] not mounted: its host path is empty (an unset variable)"
                    ));
                    continue;
                }
                binds.push(BindDef {
                    source: resolve(src),
                    target: dst.to_string(),
                    read_only: modes.contains(&"ro"),
                });
            }
            dct::Volumes::Advanced(a) => {
                if a._type != "bind" || a.volume.is_some() || a.tmpfs.is_some() {
                    errors.push(format!(
                        "volumes[{i}]: type `{}` is not supported (bind mounts only)",
                        a._type
                    ));
                    continue;
                }
                let Some(src) = &a.source else {
                    errors.push(format!("volumes[{i}]: a bind mount needs a source"));
                    continue;
                };
                binds.push(BindDef {
                    source: resolve(src),
                    target: a.target.clone(),
                    read_only: a.read_only,
                });
            }
        }
    }
    binds
}

/// `depends_on` (list or conditions) with how each dependency must be.
fn depends_on(svc: &dct::Service, errors: &mut Vec<String>) -> Vec<(String, DependsOn)> {
    let mut depends_on = Vec::new();
    match &svc.depends_on {
        dct::DependsOnOptions::Simple(list) => {
            depends_on.extend(list.iter().map(|d| (d.clone(), DependsOn::Started)));
        }
        dct::DependsOnOptions::Conditional(m) => {
            for (dep, c) in m {
                let cond = match c.condition.as_str() {
                    "service_started" => DependsOn::Started,
                    "service_healthy" => DependsOn::Healthy,
                    "service_completed_successfully" => DependsOn::Completed,
                    other => {
                        errors.push(format!(
                            "depends_on.{dep}.condition `{other}` is not supported"
                        ));
                        continue;
                    }
                };
                depends_on.push((dep.clone(), cond));
            }
        }
    }
    depends_on
}

/// `healthcheck`, as the Docker API takes it.
fn healthcheck(svc: &dct::Service, errors: &mut Vec<String>) -> Option<HealthDef> {
    match &svc.healthcheck {
        None => None,
        Some(h) => {
            let dur = |key: &str, v: &Option<String>, errors: &mut Vec<String>| {
                v.as_ref().and_then(|s| {
                    let d = parse_duration(s);
                    if d.is_none() {
                        errors.push(format!("healthcheck.{key} `{s}` is not a duration"));
                    }
                    d
                })
            };
            let test = if h.disable {
                vec!["NONE".to_string()]
            } else {
                match &h.test {
                    Some(dct::HealthcheckTest::Single(s)) => vec!["CMD-SHELL".into(), s.clone()],
                    Some(dct::HealthcheckTest::Multiple(v)) => v.clone(),
                    None => Vec::new(),
                }
            };
            if !test.is_empty() && !matches!(test[0].as_str(), "CMD" | "CMD-SHELL" | "NONE") {
                errors.push(format!(
                    "healthcheck.test must start with CMD, CMD-SHELL or NONE, not `{}`",
                    test[0]
                ));
            }
            Some(HealthDef {
                test,
                interval: dur("interval", &h.interval, errors),
                timeout: dur("timeout", &h.timeout, errors),
                retries: (h.retries > 0).then_some(h.retries),
                start_period: dur("start_period", &h.start_period, errors),
            })
        }
    }
}

/// `network_mode` or `networks` (with aliases).
fn network(svc: &dct::Service, errors: &mut Vec<String>) -> NetworkDef {
    let network = match svc.network_mode.as_deref() {
        None | Some("") => {
            let nets = match &svc.networks {
                dct::Networks::Simple(list) if list.is_empty() => {
                    vec![("default".to_string(), Vec::new())]
                }
                dct::Networks::Simple(list) => {
                    list.iter().map(|n| (n.clone(), Vec::new())).collect()
                }
                dct::Networks::Advanced(adv) => adv
                    .0
                    .iter()
                    .map(|(n, s)| {
                        let s: Option<dct::AdvancedNetworkSettings> = s.clone().into();
                        let s = s.unwrap_or_default();
                        if s.ipv4_address.is_some() || s.ipv6_address.is_some() {
                            errors.push(format!("networks.{n}: fixed addresses are not supported"));
                        }
                        (n.clone(), s.aliases)
                    })
                    .collect(),
            };
            NetworkDef::Project(nets)
        }
        Some("bridge") | Some("default") => NetworkDef::Bridge,
        Some("none") => NetworkDef::None,
        Some(other) => {
            errors.push(format!("network_mode `{other}` is not supported"));
            NetworkDef::None
        }
    };
    if svc.network_mode.is_some() && !svc.networks.is_empty() {
        errors.push("network_mode and networks cannot both be set".into());
    }
    network
}

/// `deploy.resources.limits`: CPUs (cores) and memory (bytes); other `deploy` keys refused.
fn limits(
    name: &str,
    svc: &dct::Service,
    errors: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> (Option<f64>, Option<i64>) {
    let (mut cpus, mut memory_bytes) = (None, None);
    if let Some(d) = &svc.deploy {
        for (set, key) in [
            (d.mode.is_some(), "mode"),
            (d.replicas.is_some_and(|r| r != 1), "replicas"),
            (d.update_config.is_some(), "update_config"),
            (d.restart_policy.is_some(), "restart_policy"),
            (d.placement.is_some(), "placement"),
        ] {
            if set {
                errors.push(format!("deploy.{key} is not supported"));
            }
        }
        if let Some(r) = &d.resources {
            if r.reservations.is_some() {
                notes.push(format!(
                    "services.{name}.deploy.resources.reservations ignored: only limits apply"
                ));
            }
            if let Some(l) = &r.limits {
                if let Some(c) = &l.cpus {
                    match c.trim().parse::<f64>() {
                        Ok(v) if v > 0.0 => cpus = Some(v),
                        _ => errors.push(format!(
                            "deploy.resources.limits.cpus `{c}` is not a positive number"
                        )),
                    }
                }
                if let Some(m) = &l.memory {
                    match parse_memory(m) {
                        Some(b) => memory_bytes = Some(b),
                        None => errors.push(format!(
                            "deploy.resources.limits.memory `{m}` is not a size"
                        )),
                    }
                }
                if l.devices.is_some() {
                    errors.push("deploy.resources.limits.devices is not supported".into());
                }
            }
        }
    }
    (cpus, memory_bytes)
}

/// `labels` (list or map).
fn labels(svc: &dct::Service) -> BTreeMap<String, String> {
    match &svc.labels {
        dct::Labels::List(list) => list
            .iter()
            .map(|l| match l.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (l.clone(), String::new()),
            })
            .collect(),
        dct::Labels::Map(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    }
}
