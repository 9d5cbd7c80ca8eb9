//! What an index query asks (`?family=…&sort=…&order=…&q=…&page=…`, every part optional), read
//! by one pure function for the page and the JSON alike: the family's index (`chess960`, the
//! default, or `shuffle`), its sort, order, search and page.

use super::query::{Column, Order, Paging, Search};
use super::shuffle;

/// A family with an index.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IndexFamily {
    /// The 960, every table.
    Chess960,
    /// The 5040 shuffle starts, perft d1–d6.
    Shuffle,
}

impl IndexFamily {
    /// `family` as a query gives it: absent or empty is Chess960.
    pub fn parse(text: Option<&str>) -> Result<IndexFamily, String> {
        match text.unwrap_or("") {
            "" | "chess960" => Ok(IndexFamily::Chess960),
            "shuffle" => Ok(IndexFamily::Shuffle),
            other => Err(format!(
                "family {other:?} has no index; chess960 or shuffle"
            )),
        }
    }
}

/// An index query's parts as given (each absent when the query has none).
#[derive(Clone, Debug, Default)]
pub struct Asked<'a> {
    /// `family`.
    pub family: Option<&'a str>,
    /// `sort`.
    pub sort: Option<&'a str>,
    /// `order`.
    pub order: Option<&'a str>,
    /// `q`.
    pub q: Option<&'a str>,
    /// `page`.
    pub page: Option<&'a str>,
}

/// An index query, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexRequest {
    /// Whose index.
    pub family: IndexFamily,
    /// The starts it lists.
    pub search: Search,
    /// Sorted by.
    pub column: Column,
    /// In this order.
    pub order: Order,
    /// The page, from 1 (whether it exists is known once the starts are listed).
    pub page: usize,
}

impl IndexRequest {
    /// A family's index by number, every start, page 1.
    pub fn first(family: IndexFamily) -> IndexRequest {
        IndexRequest {
            family,
            search: Search::All,
            column: Column::Number,
            order: Order::Asc,
            page: 1,
        }
    }

    /// Reads a query, or says why it cannot be answered (a `400 bad_query`).
    pub fn parse(a: &Asked) -> Result<IndexRequest, String> {
        let family = IndexFamily::parse(a.family)?;
        let sort = a.sort.unwrap_or("sp");
        let column = match family {
            IndexFamily::Chess960 => Column::parse(sort)?,
            IndexFamily::Shuffle => shuffle::column(sort)?,
        };
        let order = match a.order {
            None | Some("") => column.default_order(),
            Some(o) => Order::parse(o)?,
        };
        let text = a.q.unwrap_or("");
        let search = match family {
            IndexFamily::Chess960 => Search::parse(text)?,
            IndexFamily::Shuffle => shuffle::search(text)?,
        };
        let page = Paging::parse(a.page)?;
        Ok(IndexRequest {
            family,
            search,
            column,
            order,
            page,
        })
    }

    /// The index shown under a refusal of `a`: its family's first page when the family is
    /// known, else the Chess960 index's.
    pub fn fallback(a: &Asked) -> IndexRequest {
        IndexRequest::first(IndexFamily::parse(a.family).unwrap_or(IndexFamily::Chess960))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(
        family: Option<&str>,
        sort: Option<&str>,
        q: Option<&str>,
    ) -> Result<IndexRequest, String> {
        IndexRequest::parse(&Asked {
            family,
            sort,
            q,
            ..Asked::default()
        })
    }

    #[test]
    fn each_family_reads_its_own_sorts_and_searches() {
        let r = IndexRequest::parse(&Asked::default()).unwrap();
        assert_eq!(r, IndexRequest::first(IndexFamily::Chess960));
        let r = parse(Some("shuffle"), Some("d6"), Some("4000")).unwrap();
        assert_eq!(
            (r.family, r.column, r.order, r.search),
            (
                IndexFamily::Shuffle,
                Column::Perft(6),
                Order::Desc,
                Search::Number(4000)
            )
        );
        assert!(parse(Some("shuffle"), Some("d9"), None).is_err());
        assert!(parse(Some("shuffle"), Some("record"), None).is_err());
        assert!(parse(None, Some("record"), None).is_ok());
        assert!(parse(None, None, Some("4000")).is_err(), "past the 960");
        assert!(parse(Some("bishops"), None, None).is_err());
        assert!(parse(Some("Shuffle"), None, None).is_err());
        let paged = Asked {
            family: Some("shuffle"),
            page: Some("10"),
            ..Asked::default()
        };
        assert_eq!(IndexRequest::parse(&paged).unwrap().page, 10);
        let zero = Asked {
            page: Some("0"),
            ..paged.clone()
        };
        assert!(IndexRequest::parse(&zero).is_err());
        assert_eq!(IndexRequest::fallback(&zero).family, IndexFamily::Shuffle);
        let unknown = Asked {
            family: Some("atomic"),
            ..Asked::default()
        };
        assert_eq!(
            IndexRequest::fallback(&unknown).family,
            IndexFamily::Chess960
        );
    }
}
