//! An async tool's future must be `Send`: agents run tools on any worker thread.

use std::rc::Rc;

use stategraph_agent::tool;

async fn lookup(city: &str) -> String {
    city.to_string()
}

/// Get the weather.
#[tool]
async fn get_weather(city: String) -> String {
    let shared = Rc::new(city);
    lookup(&shared).await
}

fn main() {}
