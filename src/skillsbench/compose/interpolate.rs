//! Compose's variable interpolation (compose-spec "Interpolation"): `$VAR`, `${VAR}`,
//! `${VAR:-default}`, `${VAR-default}`, `${VAR:?err}`, `${VAR?err}`, `${VAR:+alt}`, `${VAR+alt}`,
//! `$$` for a literal `$`; an unset variable becomes empty.

use serde_yaml_ng::Value;

use super::Variables;

/// Substitutes variables in one string as Compose does.
///
/// # Errors
/// The message of a `${VAR:?err}`/`${VAR?err}` whose variable is missing, or of a malformed
/// `${…}`.
pub fn interpolate(s: &str, vars: &Variables) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = rest.strip_prefix('{') {
            let end = matching_brace(r).ok_or_else(|| format!("unclosed ${{ in {s:?}"))?;
            out.push_str(&braced(&r[..end], vars)?);
            rest = &r[end + 1..];
        } else {
            let n = rest
                .char_indices()
                .take_while(|(k, c)| {
                    c.is_ascii_alphabetic() || *c == '_' || (*k > 0 && c.is_ascii_digit())
                })
                .count();
            if n == 0 {
                out.push('$');
            } else {
                out.push_str(vars.get(&rest[..n]).map(String::as_str).unwrap_or(""));
                rest = &rest[n..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Index of the `}` closing a `${` whose inside starts `s`, nested `${…}` skipped.
pub(crate) fn matching_brace(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'$' if b.get(i + 1) == Some(&b'{') => {
                depth += 1;
                i += 1;
            }
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The inside of one `${…}`.
fn braced(inner: &str, vars: &Variables) -> Result<String, String> {
    let n = inner
        .char_indices()
        .take_while(|(k, c)| c.is_ascii_alphabetic() || *c == '_' || (*k > 0 && c.is_ascii_digit()))
        .count();
    let (name, op) = inner.split_at(n);
    if name.is_empty() {
        return Err(format!("invalid variable ${{{inner}}}"));
    }
    let value = vars.get(name);
    let set = value.is_some();
    let non_empty = value.is_some_and(|v| !v.is_empty());
    let value = value.cloned().unwrap_or_default();
    let arg = |a: &str| interpolate(a, vars);
    Ok(if op.is_empty() {
        value
    } else if let Some(d) = op.strip_prefix(":-") {
        if non_empty { value } else { arg(d)? }
    } else if let Some(d) = op.strip_prefix('-') {
        if set { value } else { arg(d)? }
    } else if let Some(e) = op.strip_prefix(":?") {
        if non_empty {
            value
        } else {
            return Err(format!("required variable {name} is missing: {}", arg(e)?));
        }
    } else if let Some(e) = op.strip_prefix('?') {
        if set {
            value
        } else {
            return Err(format!("required variable {name} is missing: {}", arg(e)?));
        }
    } else if let Some(a) = op.strip_prefix(":+") {
        if non_empty { arg(a)? } else { String::new() }
    } else if let Some(a) = op.strip_prefix('+') {
        if set { arg(a)? } else { String::new() }
    } else {
        return Err(format!("invalid variable ${{{inner}}}"));
    })
}

/// Interpolates every string value (not keys) of a YAML tree.
pub(super) fn interpolate_tree(
    v: &mut Value,
    vars: &Variables,
    path: &str,
    errors: &mut Vec<String>,
) {
    match v {
        Value::String(s) => match interpolate(s, vars) {
            Ok(new) => *s = new,
            Err(e) => errors.push(format!("{path}: {e}")),
        },
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                interpolate_tree(item, vars, &format!("{path}[{i}]"), errors);
            }
        }
        Value::Mapping(m) => {
            for (k, item) in m.iter_mut() {
                let key = k.as_str().unwrap_or("?");
                interpolate_tree(item, vars, &format!("{path}.{key}"), errors);
            }
        }
        Value::Tagged(t) => interpolate_tree(&mut t.value, vars, path, errors),
        _ => {}
    }
}
