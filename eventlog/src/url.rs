//! Database URLs as the commands meet them: a SQLite file that is not there, and a URL fit to show.

use std::path::Path;

/// The file a SQLite URL or path names when it does not exist (`None` for PostgreSQL, in-memory
/// databases and files that exist): what a command that must not create a log refuses.
pub fn missing_sqlite_file(url: &str) -> Option<&str> {
    sqlite_path(url).filter(|path| !Path::new(path).exists())
}

/// The file of a SQLite URL or path (`None` for PostgreSQL and in-memory databases).
fn sqlite_path(url: &str) -> Option<&str> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return None;
    }
    let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
    let path = path.split('?').next().unwrap_or(path);
    (!path.is_empty() && path != ":memory:").then_some(path)
}

/// `url` for messages and logs: a password, in its authority (`user:password@`) or in a
/// `password=` parameter, as `***`; the rest (user, host, database) as given.
pub fn redact(url: &str) -> String {
    let (head, query) = match url.find('?') {
        Some(q) => (&url[..q], Some(&url[q + 1..])),
        None => (url, None),
    };
    let mut out = match head.find("://") {
        Some(scheme) => {
            let rest = &head[scheme + 3..];
            let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
            match authority.rfind('@').and_then(|at| authority[..at].find(':').map(|colon| (colon, at))) {
                Some((colon, at)) => format!("{}{}:***{}", &head[..scheme + 3], &authority[..colon], &rest[at..]),
                None => head.to_string(),
            }
        }
        None => head.to_string(),
    };
    if let Some(query) = query {
        let params: Vec<&str> = query
            .split('&')
            .map(|p| if p.get(..9).is_some_and(|k| k.eq_ignore_ascii_case("password=")) { "password=***" } else { p })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{missing_sqlite_file, redact, sqlite_path};

    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(redact("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(redact("postgres://u:p@ss@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact("postgres://h/db?user=u&Password=secret&sslmode=require"),
            "postgres://h/db?user=u&password=***&sslmode=require"
        );
        assert_eq!(redact("postgres://h/db?application_name=a@b:c"), "postgres://h/db?application_name=a@b:c");
        assert_eq!(redact("sqlite:agentlog.db"), "sqlite:agentlog.db");
        // A parameter whose ninth byte is inside a character is left as it is, not a panic.
        assert_eq!(redact("postgres://h/db?passwordé=x"), "postgres://h/db?passwordé=x");
        assert_eq!(redact("postgres://h/db?ééééé=x"), "postgres://h/db?ééééé=x");
    }

    #[test]
    fn sqlite_paths() {
        assert_eq!(sqlite_path("sqlite:agentlog.db"), Some("agentlog.db"));
        assert_eq!(sqlite_path("sqlite:///tmp/a.db?mode=rwc"), Some("/tmp/a.db"));
        assert_eq!(sqlite_path("/tmp/a.db"), Some("/tmp/a.db"));
        assert_eq!(sqlite_path("postgres://u@h/db"), None);
        assert_eq!(sqlite_path("sqlite::memory:"), None);
        assert_eq!(missing_sqlite_file("sqlite:/nonexistent-dir/a.db"), Some("/nonexistent-dir/a.db"));
        assert_eq!(missing_sqlite_file("sqlite:/"), None, "it exists");
        assert_eq!(missing_sqlite_file("postgres://u@h/db"), None);
    }
}
