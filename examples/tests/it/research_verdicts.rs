//! The demo pipeline's human decisions: revise sends the draft back through writing
//! and review before asking again; reject ends the thread without a report.

use stategraph::prelude::*;
use stategraph_examples::research::{self, Research, Verdict};
use stategraph_sqlite::SqliteSaver;

#[tokio::test(flavor = "current_thread")]
async fn revise_rewrites_and_asks_again_then_reject_ends_without_a_report() {
    let graph = research::build(SqliteSaver::open_in_memory().expect("opens")).expect("builds");
    let thread = RunConfig::new().thread("verdicts");

    let first = graph
        .invoke(Research::update().topic(research::TOPIC), &thread)
        .await
        .expect("runs");
    assert_eq!(first.interrupts.len(), 1);
    assert_eq!(
        first.interrupts[0].value["question"],
        "publish this report?"
    );
    assert_eq!(first.values.drafts, 2);
    assert_eq!(
        first.interrupts[0].value["draft"].as_str(),
        Some(first.values.draft.as_str())
    );

    let revise = Verdict::Revise {
        feedback: "name the services to move first".into(),
    };
    let second = graph
        .invoke(Command::resume(revise.clone()), &thread)
        .await
        .expect("resumes");
    assert_eq!(second.interrupts.len(), 1, "asks again after the rewrite");
    assert_eq!(second.values.drafts, 3);
    assert_eq!(second.values.reviews, 3);
    assert_eq!(second.values.verdict, Some(revise));
    assert!(
        second
            .values
            .draft
            .contains("Reviewer note addressed: name the services to move first")
    );

    let third = graph
        .invoke(Command::resume(Verdict::Reject), &thread)
        .await
        .expect("resumes");
    assert!(third.interrupts.is_empty());
    assert_eq!(third.values.verdict, Some(Verdict::Reject));
    assert_eq!(third.values.report, None);
    let state = graph
        .get_state(&thread)
        .await
        .expect("reads")
        .expect("exists");
    assert!(state.tasks.is_empty(), "the thread is finished");
}

#[test]
fn options_parse_flags_and_default_to_the_demo_file() {
    let parse = |args: &[&str]| research::Options::parse(args.iter().map(|a| a.to_string()));
    let defaults = parse(&[]).expect("parses");
    assert_eq!(defaults.db, std::path::Path::new(research::DEFAULT_DB));
    assert_eq!(
        (defaults.thread, defaults.fresh, defaults.yes),
        (None, false, false)
    );

    let all = parse(&["--db", "x.sqlite", "--thread", "t", "--fresh", "--yes"]).expect("parses");
    assert_eq!(all.db, std::path::Path::new("x.sqlite"));
    assert_eq!(all.thread.as_deref(), Some("t"));
    assert!(all.fresh && all.yes);

    let err = parse(&["--db"]).expect_err("missing value");
    assert!(err.starts_with("`--db` needs a value"), "{err}");
}
