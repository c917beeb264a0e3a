//! An import that brings in a type named like the generated `<State>Update`.

mod drafts {
    pub enum ReportUpdate {
        Draft,
    }
}

use drafts::ReportUpdate;

#[derive(Clone, Debug, Default, stategraph::GraphState)]
struct Report {
    title: String,
}

fn main() {
    let _ = ReportUpdate::Draft;
}
