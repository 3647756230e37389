//! Column selection: `--columns` lists (by name or 1-based index, like xsv) and the
//! single-column options (`--sample-weights`), resolved against the input's header.

use std::fmt;

/// One item of a column list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnSelector {
    /// A 1-based column index.
    Index(usize),
    /// An inclusive range of 1-based indices (`2-4`).
    Range(usize, usize),
    /// A column named in the header.
    Name(String),
}

impl fmt::Display for ColumnSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnSelector::Index(i) => write!(f, "{i}"),
            ColumnSelector::Range(a, b) => write!(f, "{a}-{b}"),
            ColumnSelector::Name(name) => write!(f, "{name:?}"),
        }
    }
}

/// Parses one selector: a bare integer is an index (as in xsv, even when a header field is
/// spelled like that integer); `a-b` with integers is a range; anything else is a name.
pub fn parse_selector(text: &str) -> Result<ColumnSelector, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty column name".to_string());
    }
    if let Some(index) = parse_index(text)? {
        return Ok(ColumnSelector::Index(index));
    }
    if let Some((from, to)) = text.split_once('-')
        && let (Some(from), Some(to)) = (parse_index(from.trim())?, parse_index(to.trim())?)
    {
        if from > to {
            return Err(format!("range {from}-{to} is backwards"));
        }
        return Ok(ColumnSelector::Range(from, to));
    }
    Ok(ColumnSelector::Name(text.to_string()))
}

/// `Some(index)` if `text` is all digits; an error for index 0 or an absurd number.
fn parse_index(text: &str) -> Result<Option<usize>, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    match text.parse::<usize>() {
        Ok(0) => Err("column indices start at 1".to_string()),
        Ok(index) => Ok(Some(index)),
        Err(_) => Err(format!("column index {text} is too large")),
    }
}

/// Parses a comma-separated column list.
pub fn parse_column_list(text: &str) -> Result<Vec<ColumnSelector>, String> {
    text.split(',').map(parse_selector).collect()
}

/// What the columns of the input are called, for resolving names and for messages.
#[derive(Clone, Debug)]
pub struct ColumnNames<'a> {
    /// The input's name in messages.
    pub source: &'a str,
    /// The header, if the input has one.
    pub header: Option<&'a [String]>,
    /// The number of fields per row.
    pub width: usize,
}

impl ColumnNames<'_> {
    /// The 0-based index of one column. A name must name exactly one column: a header that
    /// repeats it is ambiguous, and refused rather than resolved to the first.
    pub fn resolve_one(&self, selector: &ColumnSelector) -> Result<usize, String> {
        match selector {
            ColumnSelector::Index(index) => self.check_index(*index),
            ColumnSelector::Range(..) => {
                Err(format!("expected one column, got the range {selector}"))
            }
            ColumnSelector::Name(name) => {
                let header = self.header_for(name)?;
                let mut matches = header
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| *h == name)
                    .map(|(i, _)| i);
                match (matches.next(), matches.next()) {
                    (Some(index), None) => Ok(index),
                    (Some(first), Some(second)) => Err(self.ambiguous(name, first, second)),
                    (None, _) => Err(self.unknown(name, header)),
                }
            }
        }
    }

    fn header_for(&self, name: &str) -> Result<&[String], String> {
        self.header.ok_or_else(|| {
            format!(
                "{name:?} is not a column index, and '{}' has no header",
                self.source
            )
        })
    }

    fn ambiguous(&self, name: &str, first: usize, second: usize) -> String {
        format!(
            "the name {name:?} is ambiguous: columns {} and {} of '{}' both have it (choose \
             by index, or rename one in the header)",
            first + 1,
            second + 1,
            self.source
        )
    }

    fn unknown(&self, name: &str, header: &[String]) -> String {
        // A wide header is listed in part: the message must stay readable.
        let shown: Vec<String> = header.iter().take(20).map(|h| format!("{h:?}")).collect();
        let more = if header.len() > shown.len() {
            ", ..."
        } else {
            ""
        };
        format!(
            "no column named {name:?} in '{}' (its columns: {}{more})",
            self.source,
            shown.join(", ")
        )
    }

    /// The 0-based indices of a column list, in order; a column may appear only once. Linear
    /// in the length of the list and of the header.
    pub fn resolve_list(&self, selectors: &[ColumnSelector]) -> Result<Vec<usize>, String> {
        use std::collections::HashMap;
        let names = selectors
            .iter()
            .filter(|s| matches!(s, ColumnSelector::Name(_)))
            .count();
        // Many names: look them up in a map of the header (each name's first two columns).
        let lookup: Option<HashMap<&str, (usize, Option<usize>)>> =
            (names > 8).then(|| match self.header {
                Some(header) => {
                    let mut map: HashMap<&str, (usize, Option<usize>)> = HashMap::new();
                    for (index, name) in header.iter().enumerate() {
                        map.entry(name.as_str())
                            .and_modify(|e| {
                                e.1.get_or_insert(index);
                            })
                            .or_insert((index, None));
                    }
                    map
                }
                None => HashMap::new(),
            });
        let mut indices = Vec::new();
        for selector in selectors {
            match (selector, &lookup) {
                (ColumnSelector::Range(from, to), _) => {
                    self.check_index(*to)?;
                    indices.extend(from - 1..*to);
                }
                (ColumnSelector::Name(name), Some(map)) => {
                    let header = self.header_for(name)?;
                    match map.get(name.as_str()) {
                        Some(&(index, None)) => indices.push(index),
                        Some(&(first, Some(second))) => {
                            return Err(self.ambiguous(name, first, second));
                        }
                        None => return Err(self.unknown(name, header)),
                    }
                }
                (other, _) => indices.push(self.resolve_one(other)?),
            }
        }
        let mut seen = vec![false; self.width];
        for &index in &indices {
            if std::mem::replace(&mut seen[index], true) {
                return Err(format!("column {} is selected twice", self.describe(index)));
            }
        }
        Ok(indices)
    }

    fn check_index(&self, index: usize) -> Result<usize, String> {
        if index >= 1 && index <= self.width {
            Ok(index - 1)
        } else {
            Err(format!(
                "there is no column {index}: '{}' has {} column{}",
                self.source,
                self.width,
                if self.width == 1 { "" } else { "s" }
            ))
        }
    }

    /// A column as messages name it: `2 ("waiting")`, or `2` without a header.
    pub fn describe(&self, index: usize) -> String {
        match self.header.and_then(|h| h.get(index)) {
            Some(name) => format!("{} ({name:?})", index + 1),
            None => format!("{}", index + 1),
        }
    }

    /// A column's label in reports and figures: its header name, or `column N`.
    pub fn label(&self, index: usize) -> String {
        match self.header.and_then(|h| h.get(index)) {
            Some(name) if !name.is_empty() => name.clone(),
            _ => format!("column {}", index + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_like_xsv() {
        assert_eq!(
            parse_column_list("2, waiting,1-3").unwrap(),
            vec![
                ColumnSelector::Index(2),
                ColumnSelector::Name("waiting".into()),
                ColumnSelector::Range(1, 3)
            ]
        );
        assert_eq!(
            parse_selector("a-b").unwrap(),
            ColumnSelector::Name("a-b".into())
        );
        assert!(parse_column_list("1,,2").is_err());
        assert!(parse_selector("0").is_err());
        assert!(parse_selector("3-1").is_err());
        assert!(parse_selector("99999999999999999999999").is_err());
    }

    #[test]
    fn resolution_names_the_problem() {
        let header = vec!["eruptions".to_string(), "waiting".to_string()];
        let names = ColumnNames {
            source: "faithful.csv",
            header: Some(&header),
            width: 2,
        };
        assert_eq!(
            names.resolve_list(&parse_column_list("waiting,1").unwrap()),
            Ok(vec![1, 0])
        );
        let error = names
            .resolve_list(&parse_column_list("wait").unwrap())
            .unwrap_err();
        assert!(error.contains("no column named \"wait\""), "{error}");
        let error = names.resolve_list(&[ColumnSelector::Index(3)]).unwrap_err();
        assert!(error.contains("has 2 columns"), "{error}");
        let error = names
            .resolve_list(&parse_column_list("1,eruptions").unwrap())
            .unwrap_err();
        assert!(error.contains("selected twice"), "{error}");
        let bare = ColumnNames {
            source: "x.csv",
            header: None,
            width: 2,
        };
        assert!(bare.resolve_one(&ColumnSelector::Name("a".into())).is_err());
        assert_eq!(bare.describe(1), "2");
        assert_eq!(names.describe(1), "2 (\"waiting\")");
    }
}
