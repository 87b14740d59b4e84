//! The local provider's scripted model for function tools: it has no language model, so a
//! user's typed words name the call. "use add with {"a": 2, "b": 3}" makes the next response a
//! call of the session's `add` tool with those arguments; "use echo 3 times with {...}" makes
//! it three calls; a tool the session did not declare is never called. The outputs the client
//! sends back (`function_call_output`) are what the next reply says.

use walkie_openai::Tool;

/// The most calls one request makes ("use echo 100 times").
pub(crate) const MAX_CALLS_PER_REQUEST: usize = 200;

/// A call the user's words ask for: the tool, how many times, with what argument text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolRequest {
    pub name: String,
    pub count: usize,
    pub arguments: String,
}

/// The call `text` asks for, of a tool among `tools`: the last "use <name>" in it, the
/// longest declared name that follows, an optional "<N> times", an optional "with <JSON>"
/// (the rest of the text, sent as it is, valid JSON or not).
pub(crate) fn tool_request(text: &str, tools: &[Tool]) -> Option<ToolRequest> {
    let lower = text.to_lowercase();
    // `to_lowercase` may change byte lengths outside ASCII; only ASCII text is matched.
    if lower.len() != text.len() {
        return None;
    }
    // The last "use " that starts a word ("because " does not).
    let at = lower
        .match_indices("use ")
        .map(|(at, _)| at)
        .filter(|&at| at == 0 || lower[..at].ends_with(char::is_whitespace))
        .last()?
        + "use ".len();
    let rest = &text[at..];
    let name = tools
        .iter()
        .filter_map(|tool| match tool {
            Tool::Function { name, .. } => Some(name.as_str()),
            Tool::Other(_) => None,
        })
        .filter(|name| {
            rest.starts_with(name)
                && !rest[name.len()..]
                    .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
        .max_by_key(|name| name.len())?;
    let mut rest = rest[name.len()..].trim_start();
    let mut count = 1;
    if let Some((number, after)) = rest.split_once(' ')
        && let Ok(times) = number.parse::<usize>()
        && let Some(after) = after.trim_start().strip_prefix("times")
    {
        count = times.clamp(1, MAX_CALLS_PER_REQUEST);
        rest = after.trim_start();
    }
    let arguments = rest.strip_prefix("with").map_or("{}", str::trim).to_owned();
    Some(ToolRequest {
        name: name.to_owned(),
        count,
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools(names: &[&str]) -> Vec<Tool> {
        names
            .iter()
            .map(|name| Tool::Function {
                name: (*name).to_owned(),
                description: None,
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    #[test]
    fn the_words_name_a_declared_tool_its_count_and_its_arguments() {
        let declared = tools(&["add", "add_many", "echo"]);
        assert_eq!(
            tool_request(r#"Please use add with {"a": 2, "b": 3}"#, &declared),
            Some(ToolRequest {
                name: "add".to_owned(),
                count: 1,
                arguments: r#"{"a": 2, "b": 3}"#.to_owned()
            })
        );
        assert_eq!(
            tool_request("use add_many", &declared).map(|request| request.name),
            Some("add_many".to_owned()),
            "the longest declared name"
        );
        assert_eq!(
            tool_request(r#"use echo 100 times with {"text": "x"}"#, &declared),
            Some(ToolRequest {
                name: "echo".to_owned(),
                count: 100,
                arguments: r#"{"text": "x"}"#.to_owned()
            })
        );
        assert_eq!(
            tool_request("use echo 100000 times", &declared).map(|request| request.count),
            Some(MAX_CALLS_PER_REQUEST)
        );
    }

    #[test]
    fn words_that_name_no_declared_tool_call_nothing() {
        let declared = tools(&["add"]);
        assert_eq!(tool_request("use subtract with {}", &declared), None);
        assert_eq!(tool_request("use adder", &declared), None);
        assert_eq!(tool_request("What can you do?", &declared), None);
        assert_eq!(tool_request("use add", &[]), None);
        assert_eq!(tool_request("because add is fun", &declared), None);
    }
}
