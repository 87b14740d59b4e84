//! Full-text search over every saved conversation: SQLite's FTS5 (through rusqlite, SQLite
//! bundled), in one file beside the conversations.
//!
//! Why a cache and not a second truth: the journals stay what a conversation is. The index
//! keeps, for each conversation, the size of the journal it read; [`SearchIndex::refresh`]
//! reads again a conversation whose journal changed size (a new one, one still being written,
//! one repaired), drops one that is gone, and an index file that cannot be opened is thrown
//! away and built again. A journal that cannot be read is left out and counted, never fatal.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::StoreError;
use crate::journal::JOURNAL_FILE;
use crate::library::Store;

/// The index's file, in the conversations folder (a file: the store lists folders only).
pub const INDEX_FILE: &str = ".search-index.sqlite3";

/// What the schema is; an index of another version is built again.
const SCHEMA_VERSION: i64 = 3;

/// Marks around a matched word in [`SearchHit::snippet`]'s text as SQLite returns it.
const MATCH_START: char = '\u{2}';
const MATCH_END: char = '\u{3}';

/// Words of context a hit shows around its match.
const SNIPPET_WORDS: i64 = 12;

/// The index over one store's conversations.
pub struct SearchIndex {
    connection: Connection,
    path: PathBuf,
}

/// One message that matches, and where.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub conversation_id: String,
    pub message_id: String,
    /// "user", "assistant", … as the message's role is spelt; "title" for the conversation's
    /// name (its `message_id` empty).
    pub role: String,
    /// The words around the match, the matched ones marked.
    pub snippet: Vec<SnippetPart>,
}

/// A piece of a hit's context: matched words, or the text between them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SnippetPart {
    pub text: String,
    pub matched: bool,
}

/// What a refresh did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefreshReport {
    /// Conversations read (again).
    pub indexed: usize,
    /// Conversations gone from the folder, dropped from the index.
    pub dropped: usize,
    /// Conversations whose journal could not be read: not findable until it can.
    pub unreadable: Vec<String>,
}

impl SearchIndex {
    /// Opens the index of `store`, or makes it. One that cannot be opened is removed and made
    /// anew: when it was damaged the reason comes back to be said once; one of another version
    /// (an older Walkie's) is made anew without a word.
    pub fn open(store: &Store) -> Result<(SearchIndex, Option<String>), StoreError> {
        let path = store.root().join(INDEX_FILE);
        match Self::open_at(&path) {
            Ok(index) => Ok((index, None)),
            Err(failure) => {
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    let file = PathBuf::from(format!("{}{suffix}", path.display()));
                    match std::fs::remove_file(&file) {
                        Ok(()) => {}
                        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                        Err(error) => return Err(StoreError::io("remove", &file, error)),
                    }
                }
                let index = Self::open_at(&path).map_err(|failure| StoreError::Index {
                    path: path.clone(),
                    reason: failure.to_string(),
                })?;
                match failure {
                    OpenFailure::Damaged(reason) => Ok((index, Some(reason))),
                    OpenFailure::OtherVersion { .. } => Ok((index, None)),
                }
            }
        }
    }

    fn open_at(path: &Path) -> Result<SearchIndex, OpenFailure> {
        // Made the user's alone before SQLite opens it (its WAL files take its mode).
        if !path.exists() {
            crate::files::create_private_file(path)
                .map_err(|error| OpenFailure::Damaged(error.to_string()))?;
        }
        let connection =
            Connection::open(path).map_err(|error| OpenFailure::Damaged(error.to_string()))?;
        let index = SearchIndex {
            connection,
            path: path.to_owned(),
        };
        index.prepare()?;
        Ok(index)
    }

    /// Makes the tables, or checks that the ones there are this version's.
    fn prepare(&self) -> Result<(), OpenFailure> {
        let damaged = |error: rusqlite::Error| OpenFailure::Damaged(error.to_string());
        let version: i64 = self
            .connection
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(damaged)?;
        let tables: i64 = self
            .connection
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |row| row.get(0),
            )
            .map_err(damaged)?;
        if tables > 0 && version != SCHEMA_VERSION {
            return Err(OpenFailure::OtherVersion { found: version });
        }
        self.prepare_tables().map_err(damaged)
    }

    fn prepare_tables(&self) -> rusqlite::Result<()> {
        self.connection.execute_batch(&format!(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE IF NOT EXISTS conversations (
                 id TEXT PRIMARY KEY,
                 journal_bytes INTEGER NOT NULL,
                 first_row INTEGER,
                 last_row INTEGER
             );
             CREATE VIRTUAL TABLE IF NOT EXISTS messages USING fts5(
                 text,
                 conversation_id UNINDEXED,
                 message_id UNINDEXED,
                 role UNINDEXED,
                 tokenize = 'unicode61 remove_diacritics 2'
             );
             PRAGMA user_version = {SCHEMA_VERSION};"
        ))?;
        // A read that fails here is a damaged file: found now, not at the first search.
        self.connection
            .query_row("SELECT count(*) FROM messages", [], |row| {
                row.get::<_, i64>(0)
            })?;
        Ok(())
    }

    /// Reads again every conversation of `store` whose journal changed since, and drops the
    /// ones that are gone.
    pub fn refresh(&mut self, store: &Store) -> Result<RefreshReport, StoreError> {
        let on_disk = store.folders()?;
        let path = self.path.clone();
        let index_error = |error: rusqlite::Error| StoreError::Index {
            path: path.clone(),
            reason: error.to_string(),
        };
        let indexed: BTreeMap<String, u64> = {
            let mut statement = self
                .connection
                .prepare("SELECT id, journal_bytes FROM conversations")
                .map_err(index_error)?;
            statement
                .query_map([], |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as u64)))
                .map_err(index_error)?
                .collect::<rusqlite::Result<_>>()
                .map_err(index_error)?
        };
        let present: std::collections::BTreeSet<&str> =
            on_disk.iter().map(|(id, _)| id.as_str()).collect();
        let mut report = RefreshReport::default();
        let transaction = self.connection.transaction().map_err(index_error)?;
        for id in indexed.keys() {
            if !present.contains(id.as_str()) {
                forget(&transaction, id).map_err(index_error)?;
                report.dropped += 1;
            }
        }
        for (id, dir) in &on_disk {
            reindex(
                &transaction,
                store,
                id,
                dir,
                indexed.get(id).copied(),
                &mut report,
            )
            .map_err(index_error)?;
        }
        transaction.commit().map_err(index_error)?;
        Ok(report)
    }

    /// Reads conversation `id` again if its journal changed since (the one going on: a
    /// search finds what was said a moment ago without looking at every other).
    pub fn refresh_conversation(
        &mut self,
        store: &Store,
        id: &str,
    ) -> Result<RefreshReport, StoreError> {
        let dir = store.dir_of(id)?;
        let path = self.path.clone();
        let index_error = |error: rusqlite::Error| StoreError::Index {
            path: path.clone(),
            reason: error.to_string(),
        };
        let indexed: Option<u64> = self
            .connection
            .query_row(
                "SELECT journal_bytes FROM conversations WHERE id = ?1",
                [id],
                |row| row.get::<_, i64>(0),
            )
            .optional()
            .map_err(index_error)?
            .map(|bytes| bytes as u64);
        let mut report = RefreshReport::default();
        let transaction = self.connection.transaction().map_err(index_error)?;
        reindex(&transaction, store, id, &dir, indexed, &mut report).map_err(index_error)?;
        transaction.commit().map_err(index_error)?;
        Ok(report)
    }

    /// The messages that hold every word of `typed` (the last one also as the start of a
    /// word, as the user types it; "quoted words" as a phrase), the last indexed first (the
    /// newest conversations, and the one going on), at most `limit`. Not by relevance: ranking
    /// scores every match before the first is shown, and a common word typed as a prefix
    /// matches a large part of a long history.
    pub fn search(&self, typed: &str, limit: usize) -> Result<Vec<SearchHit>, StoreError> {
        let Some(query) = fts_query(typed) else {
            return Ok(Vec::new());
        };
        let index_error = |error: rusqlite::Error| StoreError::Index {
            path: self.path.clone(),
            reason: error.to_string(),
        };
        let mut statement = self
            .connection
            .prepare_cached(&format!(
                "SELECT conversation_id, message_id, role,
                        snippet(messages, 0, char(2), char(3), '…', {SNIPPET_WORDS})
                 FROM messages WHERE messages MATCH ?1
                 ORDER BY rowid DESC LIMIT ?2"
            ))
            .map_err(index_error)?;
        statement
            .query_map(params![query, limit as i64], |row| {
                Ok(SearchHit {
                    conversation_id: row.get(0)?,
                    message_id: row.get(1)?,
                    role: row.get(2)?,
                    snippet: snippet_parts(&row.get::<_, String>(3)?),
                })
            })
            .map_err(index_error)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(index_error)
    }

    /// How many conversations the index holds.
    pub fn conversation_count(&self) -> Result<usize, StoreError> {
        self.connection
            .query_row("SELECT count(*) FROM conversations", [], |row| {
                row.get::<_, i64>(0)
            })
            .optional()
            .map(|count| count.unwrap_or(0) as usize)
            .map_err(|error| StoreError::Index {
                path: self.path.clone(),
                reason: error.to_string(),
            })
    }
}

/// Why an index file could not be used.
#[derive(Debug)]
enum OpenFailure {
    /// Made by another version of Walkie (its tables are another shape).
    OtherVersion { found: i64 },
    /// Not readable as this version's index.
    Damaged(String),
}

impl std::fmt::Display for OpenFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenFailure::OtherVersion { found } => {
                write!(f, "it is version {found}'s, not {SCHEMA_VERSION}'s")
            }
            OpenFailure::Damaged(reason) => f.write_str(reason),
        }
    }
}

/// Reads conversation `id` (in `dir`) into the index when its journal is not the size the
/// index read (`indexed_bytes`), replacing what the index held of it.
fn reindex(
    transaction: &rusqlite::Transaction<'_>,
    store: &Store,
    id: &str,
    dir: &Path,
    indexed_bytes: Option<u64>,
    report: &mut RefreshReport,
) -> rusqlite::Result<()> {
    let Ok(metadata) = std::fs::metadata(dir.join(JOURNAL_FILE)) else {
        return Ok(());
    };
    let journal_bytes = metadata.len();
    if indexed_bytes == Some(journal_bytes) {
        return Ok(());
    }
    if indexed_bytes.is_some() {
        forget(transaction, id)?;
    }
    let Ok(conversation) = store.open(id) else {
        report.unreadable.push(id.to_owned());
        return Ok(());
    };
    let mut insert = transaction.prepare_cached(
        "INSERT INTO messages (text, conversation_id, message_id, role) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut rows: Option<(i64, i64)> = None;
    let said = conversation.messages().iter().filter_map(|message| {
        let text = message.content().filter(|text| !text.trim().is_empty())?;
        Some((text, message.id(), message.role_name()))
    });
    // Its name (the user's or the model's) is found as what was said is.
    let named = conversation.title().map(|title| (title, "", "title"));
    for (text, message_id, role) in said.chain(named) {
        insert.execute(params![text, id, message_id, role])?;
        let row = transaction.last_insert_rowid();
        rows = Some(rows.map_or((row, row), |(first, _)| (first, row)));
    }
    transaction.execute(
        "INSERT INTO conversations (id, journal_bytes, first_row, last_row)
         VALUES (?1, ?2, ?3, ?4)",
        params![
            id,
            journal_bytes as i64,
            rows.map(|(first, _)| first),
            rows.map(|(_, last)| last)
        ],
    )?;
    report.indexed += 1;
    Ok(())
}

/// Takes conversation `id` out of the index: its messages, found by their rows (a text
/// search's own columns have no index to find them by).
fn forget(transaction: &rusqlite::Transaction<'_>, id: &str) -> rusqlite::Result<()> {
    let rows: Option<(Option<i64>, Option<i64>)> = transaction
        .query_row(
            "SELECT first_row, last_row FROM conversations WHERE id = ?1",
            [id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    if let Some((Some(first), Some(last))) = rows {
        transaction.execute(
            "DELETE FROM messages WHERE rowid BETWEEN ?1 AND ?2",
            params![first, last],
        )?;
    }
    transaction.execute("DELETE FROM conversations WHERE id = ?1", [id])?;
    Ok(())
}

/// `typed` as an FTS5 query: every word must be there, the last one as a prefix (the user is
/// still typing it); words in double quotes are a phrase. `None` when nothing is left to look
/// for. Every word is quoted, so nothing typed is read as FTS5 syntax.
pub fn fts_query(typed: &str) -> Option<String> {
    let mut terms = Vec::new();
    for (index, piece) in typed.split('"').enumerate() {
        let in_quotes = index % 2 == 1;
        let words: Vec<String> = piece
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .map(|word| word.trim_matches('\''))
            .filter(|word| !word.is_empty())
            .map(str::to_owned)
            .collect();
        if words.is_empty() {
            continue;
        }
        if in_quotes {
            terms.push((format!("\"{}\"", words.join(" ").replace('"', "")), false));
        } else {
            terms.extend(words.into_iter().map(|word| (format!("\"{word}\""), true)));
        }
    }
    let last = terms.len().checked_sub(1)?;
    let ends_in_a_word = typed
        .chars()
        .last()
        .is_some_and(|c| c.is_alphanumeric() || c == '\'');
    Some(
        terms
            .into_iter()
            .enumerate()
            .map(|(index, (term, bare))| {
                if index == last && bare && ends_in_a_word {
                    format!("{term}*")
                } else {
                    term
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// SQLite's snippet, its match marks turned into parts.
fn snippet_parts(marked: &str) -> Vec<SnippetPart> {
    let mut parts = Vec::new();
    let mut rest = marked;
    while let Some(start) = rest.find(MATCH_START) {
        if start > 0 {
            parts.push(SnippetPart {
                text: rest[..start].to_owned(),
                matched: false,
            });
        }
        let after = &rest[start + MATCH_START.len_utf8()..];
        let end = after.find(MATCH_END).unwrap_or(after.len());
        parts.push(SnippetPart {
            text: after[..end].to_owned(),
            matched: true,
        });
        rest = after.get(end + MATCH_END.len_utf8()..).unwrap_or("");
    }
    if !rest.is_empty() {
        parts.push(SnippetPart {
            text: rest.to_owned(),
            matched: false,
        });
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_typed_becomes_a_query_of_quoted_words_the_last_a_prefix() {
        assert_eq!(
            fts_query("blue whale").as_deref(),
            Some("\"blue\" \"whale\"*")
        );
        assert_eq!(
            fts_query("blue whale ").as_deref(),
            Some("\"blue\" \"whale\"")
        );
        assert_eq!(
            fts_query("\"blue whale\" song").as_deref(),
            Some("\"blue whale\" \"song\"*")
        );
        assert_eq!(
            fts_query("\"blue whale\"").as_deref(),
            Some("\"blue whale\"")
        );
        assert_eq!(
            fts_query("NEAR(a b) OR c*").as_deref(),
            Some("\"NEAR\" \"a\" \"b\" \"OR\" \"c\""),
            "FTS5's own syntax is read as words"
        );
        assert_eq!(fts_query("  \"\" ... "), None);
        assert_eq!(fts_query("what's").as_deref(), Some("\"what's\"*"));
    }

    #[test]
    fn a_snippets_marks_become_matched_parts() {
        assert_eq!(
            snippet_parts("we saw a \u{2}blue\u{3} \u{2}whale\u{3} there…"),
            vec![
                SnippetPart {
                    text: "we saw a ".to_owned(),
                    matched: false
                },
                SnippetPart {
                    text: "blue".to_owned(),
                    matched: true
                },
                SnippetPart {
                    text: " ".to_owned(),
                    matched: false
                },
                SnippetPart {
                    text: "whale".to_owned(),
                    matched: true
                },
                SnippetPart {
                    text: " there…".to_owned(),
                    matched: false
                },
            ]
        );
    }
}
