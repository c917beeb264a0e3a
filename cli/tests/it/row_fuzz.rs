//! Row fuzz through the command line: one column of one stored row of a real database
//! is damaged (see `stategraph_tests::rows`) and `threads`, `history` and `show` run on
//! it. Each exits 0 or with a clear error on standard error; none panics.

use crate::common;

use common::Fixture;
use rusqlite::types::Value;
use stategraph_tests::rows::{Case, Damage};

const CASES: u64 = 80;

#[tokio::test]
async fn damaged_rows_give_clear_errors_never_a_panic() {
    let f = Fixture::tickets().await;
    let raw = rusqlite::Connection::open(&f.db).unwrap();
    let (mut damaged, mut failures) = (0, 0);
    for seed in 0..CASES {
        let case = Case::new(seed);
        let (table, column) = (case.column.table, case.column.column);
        let rows: Vec<(i64, Value)> = raw
            .prepare(&format!(
                "SELECT rowid, {column} FROM {table} ORDER BY rowid"
            ))
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let Some((rowid, original)) = rows.get(case.row % rows.len().max(1)).cloned() else {
            continue;
        };
        let text = match &original {
            Value::Text(t) => Some(t.as_str()),
            _ => None,
        };
        let sql = format!("UPDATE OR IGNORE {table} SET {column} = ?1 WHERE rowid = ?2");
        damaged += match case.damage(text) {
            Damage::Text(text) => raw.execute(&sql, (text, rowid)),
            Damage::Integer(n) => raw.execute(&sql, (n, rowid)),
        }
        .unwrap();
        for args in [
            &["threads"][..],
            &["history", "ticket-open"],
            &["show", "ticket-open"],
            &["show", "ticket-done"],
        ] {
            let run = f.run(args);
            assert!(
                run.code != 101 && !run.stderr.contains("panicked"),
                "case {case:?}: `{}` panicked: {}",
                args.join(" "),
                run.stderr
            );
            if run.code != 0 {
                failures += 1;
                assert!(
                    !run.stderr.trim().is_empty() && run.stdout.is_empty(),
                    "case {case:?}: `{}` failed without an error",
                    args.join(" ")
                );
            }
        }
        raw.execute(&sql, (original, rowid)).unwrap();
    }
    println!("{damaged} of {CASES} cases damaged a row; {failures} commands failed cleanly");
    assert!(damaged as u64 > CASES / 2, "{damaged} of {CASES}");
    assert!(failures > 0, "no damage was detected");
}
